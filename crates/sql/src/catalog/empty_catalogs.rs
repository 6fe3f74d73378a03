//! Catalog relations of PostgreSQL's that Tern has no objects for (foreign tables, casts,
//! operators, text search, ...): listed, with PostgreSQL 15's columns, and empty, so that
//! clients that read them (pg_dump) find no rows rather than an error. Types Tern does not
//! have (`int2vector`, `pg_node_tree`, `aclitem[]`, `regproc`) are given as `text` or `oid`.

/// The empty relations of `pg_catalog`: name and columns.
const RELATIONS: &[(&str, &[(&str, &str)])] = &[
    ("pg_foreign_table", PG_FOREIGN_TABLE),
    ("pg_partitioned_table", PG_PARTITIONED_TABLE),
    ("pg_cast", PG_CAST),
    ("pg_conversion", PG_CONVERSION),
    ("pg_operator", PG_OPERATOR),
    ("pg_opfamily", PG_OPFAMILY),
    ("pg_amop", PG_AMOP),
    ("pg_amproc", PG_AMPROC),
    ("pg_transform", PG_TRANSFORM),
    ("pg_ts_config", PG_TS_CONFIG),
    ("pg_ts_dict", PG_TS_DICT),
    ("pg_ts_parser", PG_TS_PARSER),
    ("pg_ts_template", PG_TS_TEMPLATE),
    ("pg_foreign_data_wrapper", PG_FOREIGN_DATA_WRAPPER),
    ("pg_foreign_server", PG_FOREIGN_SERVER),
    ("pg_user_mappings", PG_USER_MAPPINGS),
    ("pg_default_acl", PG_DEFAULT_ACL),
    ("pg_event_trigger", PG_EVENT_TRIGGER),
    ("pg_init_privs", PG_INIT_PRIVS),
    ("pg_largeobject_metadata", PG_LARGEOBJECT_METADATA),
    ("pg_subscription", PG_SUBSCRIPTION),
    ("pg_db_role_setting", PG_DB_ROLE_SETTING),
    ("pg_aggregate", PG_AGGREGATE),
    ("pg_seclabel", PG_SECLABEL),
    ("pg_seclabels", PG_SECLABELS),
    ("pg_shseclabel", PG_SHSECLABEL),
    ("pg_shdescription", PG_SHDESCRIPTION),
];

/// The columns of an empty catalog relation of `pg_catalog`, by name.
pub fn columns(name: &str) -> Option<&'static [(&'static str, &'static str)]> {
    RELATIONS.iter().find(|(known, _)| *known == name).map(|(_, columns)| *columns)
}

/// The names of the empty catalog relations.
pub fn names() -> impl Iterator<Item = &'static str> {
    RELATIONS.iter().map(|(name, _)| *name)
}

const PG_FOREIGN_TABLE: &[(&str, &str)] = &[("ftrelid", "oid"), ("ftserver", "oid"), ("ftoptions", "text")];

const PG_PARTITIONED_TABLE: &[(&str, &str)] = &[
    ("partrelid", "oid"),
    ("partstrat", "\"char\""),
    ("partnatts", "smallint"),
    ("partdefid", "oid"),
    ("partattrs", "text"),
    ("partclass", "text"),
    ("partcollation", "text"),
    ("partexprs", "text"),
];

const PG_CAST: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("castsource", "oid"),
    ("casttarget", "oid"),
    ("castfunc", "oid"),
    ("castcontext", "\"char\""),
    ("castmethod", "\"char\""),
];

const PG_CONVERSION: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("conname", "name"),
    ("connamespace", "oid"),
    ("conowner", "oid"),
    ("conforencoding", "integer"),
    ("contoencoding", "integer"),
    ("conproc", "oid"),
    ("condefault", "boolean"),
];

const PG_OPERATOR: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("oprname", "name"),
    ("oprnamespace", "oid"),
    ("oprowner", "oid"),
    ("oprkind", "\"char\""),
    ("oprcanmerge", "boolean"),
    ("oprcanhash", "boolean"),
    ("oprleft", "oid"),
    ("oprright", "oid"),
    ("oprresult", "oid"),
    ("oprcom", "oid"),
    ("oprnegate", "oid"),
    ("oprcode", "oid"),
    ("oprrest", "oid"),
    ("oprjoin", "oid"),
];

const PG_OPFAMILY: &[(&str, &str)] =
    &[("oid", "oid"), ("opfmethod", "oid"), ("opfname", "name"), ("opfnamespace", "oid"), ("opfowner", "oid")];

const PG_AMOP: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("amopfamily", "oid"),
    ("amoplefttype", "oid"),
    ("amoprighttype", "oid"),
    ("amopstrategy", "smallint"),
    ("amoppurpose", "\"char\""),
    ("amopopr", "oid"),
    ("amopmethod", "oid"),
    ("amopsortfamily", "oid"),
];

const PG_AMPROC: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("amprocfamily", "oid"),
    ("amproclefttype", "oid"),
    ("amprocrighttype", "oid"),
    ("amprocnum", "smallint"),
    ("amproc", "oid"),
];

const PG_TRANSFORM: &[(&str, &str)] =
    &[("oid", "oid"), ("trftype", "oid"), ("trflang", "oid"), ("trffromsql", "oid"), ("trftosql", "oid")];

const PG_TS_CONFIG: &[(&str, &str)] =
    &[("oid", "oid"), ("cfgname", "name"), ("cfgnamespace", "oid"), ("cfgowner", "oid"), ("cfgparser", "oid")];

const PG_TS_DICT: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("dictname", "name"),
    ("dictnamespace", "oid"),
    ("dictowner", "oid"),
    ("dicttemplate", "oid"),
    ("dictinitoption", "text"),
];

const PG_TS_PARSER: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("prsname", "name"),
    ("prsnamespace", "oid"),
    ("prsstart", "oid"),
    ("prstoken", "oid"),
    ("prsend", "oid"),
    ("prsheadline", "oid"),
    ("prslextype", "oid"),
];

const PG_TS_TEMPLATE: &[(&str, &str)] =
    &[("oid", "oid"), ("tmplname", "name"), ("tmplnamespace", "oid"), ("tmplinit", "oid"), ("tmpllexize", "oid")];

const PG_FOREIGN_DATA_WRAPPER: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("fdwname", "name"),
    ("fdwowner", "oid"),
    ("fdwhandler", "oid"),
    ("fdwvalidator", "oid"),
    ("fdwacl", "text"),
    ("fdwoptions", "text"),
];

const PG_FOREIGN_SERVER: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("srvname", "name"),
    ("srvowner", "oid"),
    ("srvfdw", "oid"),
    ("srvtype", "text"),
    ("srvversion", "text"),
    ("srvacl", "text"),
    ("srvoptions", "text"),
];

const PG_USER_MAPPINGS: &[(&str, &str)] = &[
    ("umid", "oid"),
    ("srvid", "oid"),
    ("srvname", "name"),
    ("umuser", "oid"),
    ("usename", "name"),
    ("umoptions", "text"),
];

const PG_DEFAULT_ACL: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("defaclrole", "oid"),
    ("defaclnamespace", "oid"),
    ("defaclobjtype", "\"char\""),
    ("defaclacl", "text"),
];

const PG_EVENT_TRIGGER: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("evtname", "name"),
    ("evtevent", "name"),
    ("evtowner", "oid"),
    ("evtfoid", "oid"),
    ("evtenabled", "\"char\""),
    ("evttags", "text"),
];

const PG_INIT_PRIVS: &[(&str, &str)] =
    &[("objoid", "oid"), ("classoid", "oid"), ("objsubid", "integer"), ("privtype", "\"char\""), ("initprivs", "text")];

const PG_LARGEOBJECT_METADATA: &[(&str, &str)] = &[("oid", "oid"), ("lomowner", "oid"), ("lomacl", "text")];

const PG_SUBSCRIPTION: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("subdbid", "oid"),
    ("subskiplsn", "text"),
    ("subname", "name"),
    ("subowner", "oid"),
    ("subenabled", "boolean"),
    ("subbinary", "boolean"),
    ("substream", "boolean"),
    ("subtwophasestate", "\"char\""),
    ("subdisableonerr", "boolean"),
    ("subconninfo", "text"),
    ("subslotname", "name"),
    ("subsynccommit", "text"),
    ("subpublications", "text"),
];

const PG_DB_ROLE_SETTING: &[(&str, &str)] = &[("setdatabase", "oid"), ("setrole", "oid"), ("setconfig", "text")];

const PG_AGGREGATE: &[(&str, &str)] = &[
    ("aggfnoid", "oid"),
    ("aggkind", "\"char\""),
    ("aggnumdirectargs", "smallint"),
    ("aggtransfn", "oid"),
    ("aggfinalfn", "oid"),
    ("aggcombinefn", "oid"),
    ("aggserialfn", "oid"),
    ("aggdeserialfn", "oid"),
    ("aggmtransfn", "oid"),
    ("aggminvtransfn", "oid"),
    ("aggmfinalfn", "oid"),
    ("aggfinalextra", "boolean"),
    ("aggmfinalextra", "boolean"),
    ("aggfinalmodify", "\"char\""),
    ("aggmfinalmodify", "\"char\""),
    ("aggsortop", "oid"),
    ("aggtranstype", "oid"),
    ("aggtransspace", "integer"),
    ("aggmtranstype", "oid"),
    ("aggmtransspace", "integer"),
    ("agginitval", "text"),
    ("aggminitval", "text"),
];

const PG_SECLABEL: &[(&str, &str)] =
    &[("objoid", "oid"), ("classoid", "oid"), ("objsubid", "integer"), ("provider", "text"), ("label", "text")];

const PG_SHSECLABEL: &[(&str, &str)] =
    &[("objoid", "oid"), ("classoid", "oid"), ("provider", "text"), ("label", "text")];

const PG_SHDESCRIPTION: &[(&str, &str)] = &[("objoid", "oid"), ("classoid", "oid"), ("description", "text")];

const PG_SECLABELS: &[(&str, &str)] = &[
    ("objoid", "oid"),
    ("classoid", "oid"),
    ("objsubid", "integer"),
    ("objtype", "text"),
    ("objnamespace", "oid"),
    ("objname", "text"),
    ("provider", "text"),
    ("label", "text"),
];
