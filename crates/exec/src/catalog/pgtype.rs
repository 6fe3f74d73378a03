//! PostgreSQL's built-in types as Tern describes its values to PostgreSQL clients: each type's
//! OID (`pg_type.oid`), its name, the OID a declared column type maps to, and the type
//! modifier (`atttypmod`) and display name (`format_type`) of a declared type.
//!
//! The server describes result columns with these OIDs; the system catalog (`crate::catalog::system`)
//! lists them in `pg_type` and `pg_attribute`. OIDs are PostgreSQL's own, so clients that know
//! them (libpq, JDBC, tokio-postgres, psycopg) decode values without asking the catalog.

use crate::value::Affinity;

/// The first OID of an object Tern's catalog makes (tables, sequences, types), as PostgreSQL's
/// `FirstNormalObjectId`.
pub const FIRST_USER_OID: u32 = 16_384;
pub const BOOL: u32 = 16;
pub const BYTEA: u32 = 17;
pub const CHAR: u32 = 18;
pub const NAME: u32 = 19;
pub const INT8: u32 = 20;
pub const INT2: u32 = 21;
pub const INT4: u32 = 23;
pub const TEXT: u32 = 25;
pub const OID: u32 = 26;
pub const FLOAT4: u32 = 700;
pub const FLOAT8: u32 = 701;
pub const UNKNOWN: u32 = 705;
pub const BPCHAR: u32 = 1042;
pub const VARCHAR: u32 = 1043;
pub const DATE: u32 = 1082;
pub const TIME: u32 = 1083;
pub const TIMESTAMP: u32 = 1114;
pub const TIMESTAMPTZ: u32 = 1184;
pub const INTERVAL: u32 = 1186;
pub const NUMERIC: u32 = 1700;
pub const REGCLASS: u32 = 2205;
/// An anonymous row value, `ROW(...)`.
pub const RECORD: u32 = 2249;
pub const JSON: u32 = 114;
pub const JSONB: u32 = 3802;
pub const UUID: u32 = 2950;

/// The OID of the default collation (`pg_collation`), carried by text types.
pub const DEFAULT_COLLATION: i64 = 100;
/// The "C" collation, carried by `name`.
pub const C_COLLATION: i64 = 950;

/// Every type the catalog lists: OID, `typname`, `typlen`, `typcategory`, collation.
pub const BUILT_IN: &[(u32, &str, i64, &str, i64)] = &[
    (BOOL, "bool", 1, "B", 0),
    (BYTEA, "bytea", -1, "U", 0),
    (CHAR, "char", 1, "Z", 0),
    (NAME, "name", 64, "S", C_COLLATION),
    (INT8, "int8", 8, "N", 0),
    (INT2, "int2", 2, "N", 0),
    (INT4, "int4", 4, "N", 0),
    (TEXT, "text", -1, "S", DEFAULT_COLLATION),
    (OID, "oid", 4, "N", 0),
    (FLOAT4, "float4", 4, "N", 0),
    (FLOAT8, "float8", 8, "N", 0),
    (UNKNOWN, "unknown", -2, "X", 0),
    (BPCHAR, "bpchar", -1, "S", DEFAULT_COLLATION),
    (VARCHAR, "varchar", -1, "S", DEFAULT_COLLATION),
    (DATE, "date", 4, "D", 0),
    (TIME, "time", 8, "D", 0),
    (TIMESTAMP, "timestamp", 8, "D", 0),
    (TIMESTAMPTZ, "timestamptz", 8, "D", 0),
    (INTERVAL, "interval", 16, "T", 0),
    (NUMERIC, "numeric", -1, "N", 0),
    (REGCLASS, "regclass", 4, "N", 0),
    (RECORD, "record", -1, "P", 0),
    (JSON, "json", -1, "U", 0),
    (JSONB, "jsonb", -1, "U", 0),
    (UUID, "uuid", 16, "U", 0),
];

/// The array type of each built-in element type: (array OID, element OID). Arrays print as
/// PostgreSQL's array literals (`{1,2}`), which is how Tern keeps them ([`crate::types::array`]).
pub const ARRAYS: &[(u32, u32)] = &[
    (1000, BOOL),
    (1001, BYTEA),
    (1002, CHAR),
    (1003, NAME),
    (1016, INT8),
    (1005, INT2),
    (1007, INT4),
    (1009, TEXT),
    (1028, OID),
    (1021, FLOAT4),
    (1022, FLOAT8),
    (1014, BPCHAR),
    (1015, VARCHAR),
    (1182, DATE),
    (1183, TIME),
    (1115, TIMESTAMP),
    (1185, TIMESTAMPTZ),
    (1187, INTERVAL),
    (1231, NUMERIC),
    (199, JSON),
    (3807, JSONB),
    (2951, UUID),
];

/// The array type whose elements are of type `element`.
pub fn array_of(element: u32) -> Option<u32> {
    ARRAYS.iter().find(|(_, of)| *of == element).map(|(array, _)| *array)
}

/// The element type of an array type.
pub fn element_of(array: u32) -> Option<u32> {
    ARRAYS.iter().find(|(oid, _)| *oid == array).map(|(_, element)| *element)
}

/// A float in PostgreSQL's text form: the shortest digits that read back, `NaN`, `Infinity`.
pub fn float_text(real: f64) -> String {
    if real.is_nan() {
        "NaN".into()
    } else if real.is_infinite() {
        if real > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        format!("{real}")
    }
}

/// An OID stable for a name across runs and builds (FNV-1a; the standard library's hasher is
/// not stable): `base` plus 28 bits of the hash.
pub fn name_oid(base: i64, name: &str) -> i64 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    base + i64::from(hash & 0x0fff_ffff)
}

/// Text in `bytea`'s input forms: `\x` and hex digit pairs (white space between pairs
/// allowed), or the escape form, where `\\` is a backslash and `\nnn` an octal byte; `None`
/// when malformed (a lone backslash, an odd hex digit).
pub fn parse_bytea(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text.strip_prefix("\\x") {
        // Pairs of hex digits, white space between pairs only.
        let digit = |byte: u8| char::from(byte).to_digit(16).map(|value| value as u8);
        let mut bytes = hex.bytes();
        let mut out = Vec::with_capacity(hex.len() / 2);
        while let Some(high) = bytes.next() {
            if high.is_ascii_whitespace() {
                continue;
            }
            let low = bytes.next()?;
            out.push(digit(high)? << 4 | digit(low)?);
        }
        return Some(out);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            out.push(bytes[at]);
            at += 1;
        } else if bytes.get(at + 1) == Some(&b'\\') {
            out.push(b'\\');
            at += 2;
        } else {
            let octal = bytes.get(at + 1..at + 4)?;
            if !octal.iter().all(|digit| (b'0'..=b'7').contains(digit)) || octal[0] > b'3' {
                return None;
            }
            out.push(octal.iter().fold(0u8, |byte, digit| byte * 8 + (digit - b'0')));
            at += 4;
        }
    }
    Some(out)
}

/// [`parse_bytea`] with PostgreSQL's errors: 22023 for bad hex data, 22P02 for a bad escape.
pub fn bytea_input(text: &str) -> crate::error::Result<Vec<u8>> {
    parse_bytea(text).ok_or_else(|| {
        if text.starts_with("\\x") {
            crate::error::Error::new("22023", format!("invalid hexadecimal data in bytea: \"{text}\""))
        } else {
            crate::error::Error::new("22P02", format!("invalid input syntax for type bytea: \"{text}\""))
        }
    })
}

/// The type name PostgreSQL spells for an OID (`pg_type.typname`).
pub fn name_of(oid: u32) -> &'static str {
    if let Some(element) = element_of(oid) {
        // PostgreSQL's names of array types: `_int4`, `_text`, ...
        return ARRAY_NAMES.iter().find(|(of, _)| *of == element).map_or("unknown", |(_, name)| name);
    }
    BUILT_IN.iter().find(|(known, ..)| *known == oid).map_or("unknown", |(_, name, ..)| name)
}

/// `typname` of each array type, by element type.
const ARRAY_NAMES: &[(u32, &str)] = &[
    (BOOL, "_bool"),
    (BYTEA, "_bytea"),
    (CHAR, "_char"),
    (NAME, "_name"),
    (INT8, "_int8"),
    (INT2, "_int2"),
    (INT4, "_int4"),
    (TEXT, "_text"),
    (OID, "_oid"),
    (FLOAT4, "_float4"),
    (FLOAT8, "_float8"),
    (BPCHAR, "_bpchar"),
    (VARCHAR, "_varchar"),
    (DATE, "_date"),
    (TIME, "_time"),
    (TIMESTAMP, "_timestamp"),
    (TIMESTAMPTZ, "_timestamptz"),
    (INTERVAL, "_interval"),
    (NUMERIC, "_numeric"),
    (JSON, "_json"),
    (JSONB, "_jsonb"),
    (UUID, "_uuid"),
];

/// The OID of a type named as PostgreSQL accepts it (`int4`, `integer`, `character varying`,
/// `pg_catalog.text`, ...), or `None` (what `to_regtype` returns NULL for).
pub fn oid_of_name(name: &str) -> Option<u32> {
    let lower = name.trim().to_ascii_lowercase();
    let lower = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
    if let Some(element) = array_element_name(lower) {
        return array_of(oid_of_name(element)?);
    }
    let aliases: &[(&str, u32)] = &[
        ("int", INT4),
        ("integer", INT4),
        ("smallint", INT2),
        ("bigint", INT8),
        ("real", FLOAT4),
        ("float", FLOAT8),
        ("double precision", FLOAT8),
        ("decimal", NUMERIC),
        ("boolean", BOOL),
        ("character varying", VARCHAR),
        ("character", BPCHAR),
        ("char", BPCHAR),
        ("\"char\"", CHAR),
        ("time without time zone", TIME),
        ("timestamp without time zone", TIMESTAMP),
        ("timestamp with time zone", TIMESTAMPTZ),
    ];
    aliases
        .iter()
        .find(|(alias, _)| *alias == lower)
        .map(|(_, oid)| *oid)
        .or_else(|| BUILT_IN.iter().find(|(_, typname, ..)| *typname == lower).map(|(oid, ..)| *oid))
}

/// Whether PostgreSQL knows a type by this name (modifiers such as `(10,2)`, `with time zone`
/// and `[]` allowed).
pub fn is_type_name(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    let base = lower.split(['(', '[']).next().unwrap_or_default().trim();
    let base =
        base.strip_suffix("with time zone").or_else(|| base.strip_suffix("without time zone")).unwrap_or(base).trim();
    // Catalog types (`information_schema.sql_identifier`, `pg_catalog.aclitem`) are accepted.
    (base.contains('.') && !base.starts_with("public."))
        || oid_of_name(base).is_some()
        || crate::types::temporal::TemporalKind::of_type_name(&lower).is_some()
        || matches!(
            base,
            "double"
                | "dec"
                | "serial"
                | "bigserial"
                | "smallserial"
                | "int2"
                | "int4"
                | "int8"
                | "float"
                | "json"
                | "jsonb"
                | "uuid"
                | "regtype"
                | "regnamespace"
                | "regproc"
                | "xid"
        )
}

/// A declared type name's OID: PostgreSQL's names first, then SQLite's affinity rules.
pub fn declared_oid(declared: &str) -> u32 {
    let lower = declared.to_ascii_lowercase();
    // `integer[]`, `text[3]`, `int ARRAY`: the element type's array type.
    if let Some(element) = array_element_name(&lower) {
        return array_of(declared_oid(element)).unwrap_or(TEXT_ARRAY);
    }
    let base = lower.split('(').next().unwrap_or_default().trim();
    let base = base.strip_prefix("pg_catalog.").unwrap_or(base);
    match base {
        "smallint" | "int2" | "tinyint" | "smallserial" => INT2,
        "int" | "integer" | "int4" | "mediumint" | "serial" | "serial4" => INT4,
        "bigint" | "int8" | "bigserial" | "serial8" => INT8,
        "real" | "float4" => FLOAT4,
        "double" | "double precision" | "float8" | "float" => FLOAT8,
        "numeric" | "decimal" | "dec" => NUMERIC,
        "text" | "clob" => TEXT,
        "varchar" | "character varying" | "nvarchar" | "varying character" => VARCHAR,
        "char" | "character" | "bpchar" | "nchar" => BPCHAR,
        "\"char\"" => CHAR,
        "bool" | "boolean" => BOOL,
        "bytea" | "blob" => BYTEA,
        "date" => DATE,
        "time" | "time without time zone" => TIME,
        "timestamp" | "timestamp without time zone" | "datetime" => TIMESTAMP,
        "timestamptz" | "timestamp with time zone" => TIMESTAMPTZ,
        "interval" => INTERVAL,
        "name" => NAME,
        "oid" => OID,
        "regclass" => REGCLASS,
        "json" => JSON,
        "jsonb" => JSONB,
        "uuid" => UUID,
        _ => match Affinity::of_declared_type(declared) {
            Affinity::Integer | Affinity::Int(8) => INT8,
            Affinity::Int(2) => INT2,
            Affinity::Int(_) => INT4,
            Affinity::Boolean => BOOL,
            Affinity::Float => FLOAT8,
            Affinity::Number => NUMERIC,
            Affinity::Bytea => BYTEA,
            Affinity::Uuid => UUID,
            Affinity::Json(false) => JSON,
            Affinity::Json(true) => JSONB,
            Affinity::Temporal(kind) => temporal_oid(kind),
            Affinity::Enum(id) => id.get().oid,
            Affinity::Composite(id) => id.get().oid,
            Affinity::Real => FLOAT8,
            Affinity::Decimal(..) | Affinity::Numeric => NUMERIC,
            Affinity::Text => TEXT,
            Affinity::Blob => {
                if declared.trim().is_empty() {
                    TEXT
                } else {
                    BYTEA
                }
            }
        },
    }
}

/// A UUID's canonical text (lower-case hex, hyphens after the 8th, 12th, 16th and 20th digit)
/// from text PostgreSQL reads as one: hex digits with hyphens between groups of four (or none),
/// braces around; `None` otherwise.
pub fn uuid_text(text: &str) -> Option<String> {
    let trimmed = text.trim();
    let inner = match trimmed.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => trimmed,
    };
    let mut digits = String::with_capacity(32);
    let mut since_hyphen = 0;
    for (at, c) in inner.chars().enumerate() {
        if c == '-' {
            // A hyphen only after a group of four digits, never first or doubled.
            if at == 0 || since_hyphen % 4 != 0 || since_hyphen == 0 {
                return None;
            }
            since_hyphen = 0;
            continue;
        }
        if !c.is_ascii_hexdigit() {
            return None;
        }
        digits.push(c.to_ascii_lowercase());
        since_hyphen += 1;
    }
    if digits.len() != 32 || inner.ends_with('-') {
        return None;
    }
    Some(format!("{}-{}-{}-{}-{}", &digits[..8], &digits[8..12], &digits[12..16], &digits[16..20], &digits[20..]))
}

/// `text[]`, what an array of a type without an array type of its own is described as.
pub const TEXT_ARRAY: u32 = 1009;

/// The element type's name of an array type's declared name (`int[]`, `text[3]`,
/// `int ARRAY`, `_int4`), or `None` if it names no array type.
pub fn array_element_name(lower: &str) -> Option<&str> {
    let trimmed = lower.trim();
    if let Some(at) = trimmed.find('[') {
        return Some(trimmed[..at].trim_end());
    }
    if let Some(element) = trimmed.strip_suffix(" array") {
        return Some(element.trim_end());
    }
    let name = trimmed.strip_prefix("pg_catalog.").unwrap_or(trimmed).strip_prefix('_')?;
    ARRAY_NAMES.iter().any(|(_, array)| array[1..] == *name).then_some(name)
}

/// The OID of a date/time type.
pub fn temporal_oid(kind: crate::types::temporal::TemporalKind) -> u32 {
    use crate::types::temporal::TemporalKind;
    match kind {
        TemporalKind::Date => DATE,
        TemporalKind::Time => TIME,
        TemporalKind::Timestamp => TIMESTAMP,
        TemporalKind::TimestampTz => TIMESTAMPTZ,
        TemporalKind::Interval => INTERVAL,
    }
}

/// The type modifier of a declared type (`atttypmod`): the length of `VARCHAR(n)`/`CHAR(n)`
/// and the precision and scale of `NUMERIC(p,s)`, encoded as PostgreSQL does; -1 for none.
pub fn declared_typmod(declared: &str) -> i64 {
    let Some((_, arguments)) = declared.split_once('(') else { return -1 };
    let numbers: Vec<i64> =
        arguments.trim_end_matches(')').split(',').filter_map(|number| number.trim().parse().ok()).collect();
    match (declared_oid(declared), numbers.as_slice()) {
        (VARCHAR | BPCHAR, [length]) if (0..=10_485_760).contains(length) => length + 4,
        (NUMERIC, [precision]) if (1..=1000).contains(precision) => (precision << 16) + 4,
        (NUMERIC, [precision, scale]) if (1..=1000).contains(precision) && (0..=1000).contains(scale) => {
            ((precision << 16) | scale) + 4
        }
        _ => -1,
    }
}

/// `format_type(oid, typmod)`: the SQL name of a type with its modifier, as `\d` shows it.
pub fn format_type(oid: u32, typmod: i64) -> String {
    let base = match oid {
        BOOL => "boolean",
        CHAR => "\"char\"",
        INT8 => "bigint",
        INT2 => "smallint",
        INT4 => "integer",
        FLOAT4 => "real",
        FLOAT8 => "double precision",
        BPCHAR => "character",
        VARCHAR => "character varying",
        TIME => "time without time zone",
        TIMESTAMP => "timestamp without time zone",
        TIMESTAMPTZ => "timestamp with time zone",
        other if element_of(other).is_some() => {
            let element = element_of(other).unwrap_or(TEXT);
            return format!("{}[]", format_type(element, -1));
        }
        other => match name_of(other) {
            "unknown" if other != UNKNOWN => return "???".to_string(),
            name => name,
        },
    };
    match oid {
        VARCHAR | BPCHAR if typmod >= 4 => format!("{base}({})", typmod - 4),
        NUMERIC if typmod >= 4 => {
            let packed = typmod - 4;
            format!("{base}({},{})", packed >> 16, packed & 0xffff)
        }
        _ => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_format_as_postgres_shows_them() {
        for (declared, shown) in [
            ("INT", "integer"),
            ("BIGINT", "bigint"),
            ("VARCHAR(20)", "character varying(20)"),
            ("NUMERIC(10,2)", "numeric(10,2)"),
            ("DECIMAL(7)", "numeric(7,0)"),
            ("TEXT", "text"),
            ("TIMESTAMP", "timestamp without time zone"),
            ("", "text"),
            ("BLOB", "bytea"),
        ] {
            assert_eq!(format_type(declared_oid(declared), declared_typmod(declared)), shown, "{declared}");
        }
        assert_eq!(format_type(4242, -1), "???");
        assert_eq!(oid_of_name("int4"), Some(INT4));
        assert_eq!(oid_of_name("pg_catalog.Character Varying"), Some(VARCHAR));
        assert_eq!(oid_of_name("no_such_type"), None);
    }
}
