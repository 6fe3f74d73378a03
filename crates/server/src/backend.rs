//! One connection's engine-side state and everything it does with the engine: simple and
//! extended queries, COPY, the server's own commands, and PostgreSQL's transaction states.
//! Methods run on a blocking thread (the connection task hands the backend over for each
//! request) and append backend messages to an [`Out`].

use crate::compat::{self, Command};
use crate::copy::{self, CopySpec, Format, RowReader, Source};
use crate::protocol::{Out, ProtocolError, Reader};
use crate::result_stream::ResultStream;
use crate::server::{Priority, Shared};
use crate::types;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tern_sql::{Error, Outcome, Session, Value};

/// What the connection does after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on reading messages.
    Continue,
    /// COPY FROM STDIN started: read CopyData until CopyDone or CopyFail.
    CopyIn,
}

enum Kind {
    /// An empty query string.
    Empty,
    Sql(Box<Mutex<tern_sql::Statement>>),
    Command(Command),
}

/// A parsed statement (named, or the unnamed one).
struct Prepared {
    kind: Kind,
    /// Parameter types: the client's, or inferred.
    param_oids: Vec<u32>,
    /// Result columns (name, type OID); `None` when only running the statement tells.
    columns: Option<Vec<ResultColumn>>,
}

/// A bound statement and, once executed, its remaining rows.
struct Portal {
    prepared: Arc<Prepared>,
    params: Vec<Value>,
    result_formats: Vec<i16>,
    result: Option<PortalResult>,
}

struct PortalResult {
    columns: Vec<ResultColumn>,
    rows: VecDeque<Vec<Value>>,
    tag: String,
}

/// COPY FROM STDIN in progress.
struct CopyIn {
    reader: RowReader,
    /// The binary format's reader, for `FORMAT binary`.
    binary: Option<crate::copy_binary::BinaryReader>,
    table: String,
    oids: Vec<u32>,
    insert: tern_sql::Statement,
    /// The COPY began its own transaction (none was open).
    wrapped: bool,
    rows: u64,
    error: Option<Error>,
    /// Started by Execute (extended protocol): no ReadyForQuery at its end.
    extended: bool,
}

pub struct Backend {
    session: Session,
    shared: Arc<Shared>,
    statements: HashMap<String, Arc<Prepared>>,
    portals: HashMap<String, Portal>,
    /// In a transaction block that failed: only ROLLBACK (or COMMIT, which rolls back) runs.
    failed: bool,
    /// After an error in the extended protocol, messages are skipped until Sync.
    skip_until_sync: bool,
    copy: Option<CopyIn>,
    /// The statements of a simple query still to run after its COPY.
    remaining: Vec<(usize, String)>,
    /// The full text of the simple query being run (for error positions).
    query_text: String,
    /// Set by the connection when the statement timeout fired.
    pub timed_out: Arc<AtomicBool>,
    /// ParameterStatus messages owed after SET.
    reported: std::collections::HashMap<String, String>,
    /// The settings as the session started (defaults, then the startup packet's): what RESET
    /// returns to.
    initial: HashMap<String, String>,
}

/// Parameters reported to the client when they change (PostgreSQL's GUC_REPORT), with the
/// spelling PostgreSQL uses.
const REPORTED: [(&str, &str); 8] = [
    ("application_name", "application_name"),
    ("client_encoding", "client_encoding"),
    ("datestyle", "DateStyle"),
    ("timezone", "TimeZone"),
    ("intervalstyle", "IntervalStyle"),
    ("standard_conforming_strings", "standard_conforming_strings"),
    ("is_superuser", "is_superuser"),
    ("session_authorization", "session_authorization"),
];

/// Settings a client may SET besides names with a dot (custom ones), with their defaults.
fn defaults(user: &str, database: &str) -> Vec<(&'static str, String)> {
    vec![
        ("server_version", crate::SERVER_VERSION.into()),
        ("server_version_num", crate::SERVER_VERSION_NUM.into()),
        ("server_encoding", "UTF8".into()),
        ("client_encoding", "UTF8".into()),
        ("datestyle", "ISO, MDY".into()),
        ("timezone", "UTC".into()),
        ("intervalstyle", "postgres".into()),
        ("integer_datetimes", "on".into()),
        ("standard_conforming_strings", "on".into()),
        ("is_superuser", "on".into()),
        ("session_authorization", user.into()),
        ("application_name", String::new()),
        ("search_path", "\"$user\", public".into()),
        ("transaction_isolation", "serializable".into()),
        ("default_transaction_isolation", "serializable".into()),
        ("transaction_read_only", "off".into()),
        ("default_transaction_read_only", "off".into()),
        ("statement_timeout", "0".into()),
        ("idle_in_transaction_session_timeout", "0".into()),
        ("lock_timeout", "0".into()),
        ("extra_float_digits", "1".into()),
        ("client_min_messages", "notice".into()),
        ("bytea_output", "hex".into()),
        ("synchronous_commit", "on".into()),
        ("max_identifier_length", "63".into()),
        ("lc_messages", "C".into()),
        ("lc_monetary", "C".into()),
        ("lc_numeric", "C".into()),
        ("lc_time", "C".into()),
        ("work_mem", "4MB".into()),
        ("jit", "off".into()),
        // Set by pg_dump, and by psql -f of its output.
        ("synchronize_seqscans", "on".into()),
        ("quote_all_identifiers", "off".into()),
        ("check_function_bodies", "on".into()),
        ("xmloption", "content".into()),
        ("default_tablespace", String::new()),
        ("default_table_access_method", "heap".into()),
        ("default_toast_compression", "pglz".into()),
        ("maintenance_work_mem", "64MB".into()),
        ("row_security", "on".into()),
        ("tern.priority", "latency".into()),
        ("tern.version", format!("PostgreSQL {} (Tern {})", crate::SERVER_VERSION, env!("CARGO_PKG_VERSION"))),
        ("tern.database", database.into()),
        ("tern.schema", "public".into()),
        ("tern.user", user.into()),
    ]
}

/// Parses a duration setting: milliseconds, or a number with a unit (ms, s, min, h, d).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let millis = match unit.trim() {
        "" | "ms" => number,
        "s" => number * 1e3,
        "min" => number * 60e3,
        "h" => number * 3600e3,
        "d" => number * 86_400e3,
        "us" => number / 1e3,
        _ => return None,
    };
    (millis.is_finite() && millis >= 0.0).then(|| Duration::from_micros((millis * 1e3) as u64))
}

impl Backend {
    pub fn new(
        shared: Arc<Shared>,
        user: &str,
        database: &str,
        startup: &[(String, String)],
    ) -> Result<Backend, Error> {
        let mut session = shared.db.engine().session();
        session.set_dialect(shared.config.dialect);
        {
            let settings = session.settings();
            let mut settings = settings.write();
            for (name, value) in defaults(user, database) {
                settings.insert(name.to_string(), value);
            }
        }
        let mut backend = Backend {
            session,
            shared,
            statements: HashMap::new(),
            portals: HashMap::new(),
            failed: false,
            skip_until_sync: false,
            copy: None,
            remaining: Vec::new(),
            query_text: String::new(),
            timed_out: Arc::new(AtomicBool::new(false)),
            reported: std::collections::HashMap::new(),
            initial: HashMap::new(),
        };
        for (name, value) in startup {
            if matches!(name.as_str(), "user" | "database" | "replication") {
                continue;
            }
            if name == "options" {
                // -c name=value pairs (libpq's PGOPTIONS).
                for pair in value.split_whitespace().filter(|word| *word != "-c") {
                    let pair = pair.trim_start_matches("--").trim_start_matches("-c");
                    if let Some((name, value)) = pair.split_once('=') {
                        backend.set(&name.replace('-', "_"), Some(value.to_string()))?;
                    }
                }
                continue;
            }
            backend.set(name, Some(value.clone()))?;
        }
        // What the startup parameters tell the client: later changes are reported against it.
        backend.reported =
            REPORTED.iter().map(|(name, _)| (name.to_string(), backend.setting(name).unwrap_or_default())).collect();
        backend.initial = backend.session.settings().read().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(backend)
    }

    /// The connection's backend PID (the one its BackendKeyData gives) and the client's
    /// address, for `pg_backend_pid()` and `pg_stat_activity`.
    pub fn note_connection(&self, pid: i32, peer: std::net::SocketAddr) {
        let settings = self.session.settings();
        let mut settings = settings.write();
        settings.insert("tern.pid".into(), pid.to_string());
        settings.insert("tern.client_addr".into(), peer.ip().to_string());
        settings.insert("tern.client_port".into(), peer.port().to_string());
    }

    pub fn interrupt_handle(&self) -> tern_sql::InterruptHandle {
        self.session.interrupt_handle()
    }

    /// The parameters a new connection is told of.
    pub fn startup_parameters(&self) -> Vec<(String, String)> {
        let settings = self.session.settings();
        let settings = settings.read();
        let mut parameters: Vec<(String, String)> = REPORTED
            .iter()
            .map(|(name, spelled)| (spelled.to_string(), settings.get(*name).cloned().unwrap_or_default()))
            .collect();
        for name in ["server_version", "server_encoding", "integer_datetimes"] {
            parameters.push((name.to_string(), settings.get(name).cloned().unwrap_or_default()));
        }
        parameters
    }

    pub fn setting(&self, name: &str) -> Option<String> {
        self.session.settings().read().get(name).cloned()
    }

    /// The statement timeout in force (`None`: none).
    pub fn statement_timeout(&self) -> Option<Duration> {
        self.setting("statement_timeout")
            .and_then(|text| parse_duration(&text))
            .filter(|timeout| !timeout.is_zero())
            .or(self.shared.config.statement_timeout)
    }

    pub fn idle_in_transaction_timeout(&self) -> Option<Duration> {
        self.setting("idle_in_transaction_session_timeout")
            .and_then(|text| parse_duration(&text))
            .filter(|timeout| !timeout.is_zero())
            .or(self.shared.config.idle_in_transaction_timeout)
    }

    pub fn priority(&self) -> Priority {
        match self.setting("tern.priority").as_deref() {
            Some("best_effort") => Priority::BestEffort,
            _ => Priority::Latency,
        }
    }

    /// ReadyForQuery's status byte.
    pub fn status(&self) -> u8 {
        if self.failed {
            b'E'
        } else if self.session.in_transaction() {
            b'T'
        } else {
            b'I'
        }
    }

    pub fn in_copy(&self) -> bool {
        self.copy.is_some()
    }

    // ---- simple query ----------------------------------------------------------------------

    pub fn simple_query(&mut self, sql: &str, out: &mut Out) -> Flow {
        self.query_text = sql.to_string();
        self.session.note_query(sql);
        let pieces: Vec<(usize, String)> =
            compat::split(sql).into_iter().map(|piece| (piece.start, piece.text.to_string())).collect();
        if pieces.is_empty() {
            out.empty_query();
            out.ready(self.status());
            return Flow::Continue;
        }
        self.remaining = pieces;
        self.run_remaining(out)
    }

    /// Runs the simple query's statements until one fails, a COPY FROM waits for data, or
    /// all have run.
    fn run_remaining(&mut self, out: &mut Out) -> Flow {
        while !self.remaining.is_empty() {
            let (start, text) = self.remaining.remove(0);
            match self.run_simple(&text, out) {
                Ok(Flow::CopyIn) => return Flow::CopyIn,
                Ok(Flow::Continue) => {}
                Err(error) => {
                    self.error(out, &error, Some((start, &text)));
                    self.remaining.clear();
                }
            }
        }
        self.flush_reported(out);
        out.ready(self.status());
        Flow::Continue
    }

    fn run_simple(&mut self, text: &str, out: &mut Out) -> Result<Flow, Error> {
        if let Some(command) = compat::classify(text) {
            return self.command(&command, &[], &[], out, false);
        }
        let recovering = self.admit(text)?;
        // Statements that differ only in their literals share one parse and plan.
        let (mut statement, params) = self.session.prepare_text(text)?;
        let outcome = self.run_simple_statement(&mut statement, &params, out).map_err(|mut error| {
            if !params.is_empty() {
                // Positions are in the text with the literals lifted, not in what was sent.
                error.position = None;
            }
            error
        })?;
        self.failed &= !recovering;
        // Column types only matter when there are rows to describe (binding again costs).
        let description = match outcome {
            Outcome::Rows { .. } => self.session.describe(&statement).ok().flatten(),
            _ => None,
        };
        if !params.is_empty() {
            self.session.keep_text(statement);
        }
        self.send_outcome(text, outcome, declared_types(description), &[], out)?;
        Ok(Flow::Continue)
    }

    /// Runs a simple query's statement: a query's rows go to the client as they come
    /// (`result_stream.rs`), with the types its description declares.
    fn run_simple_statement(
        &mut self,
        statement: &mut tern_sql::Statement,
        params: &[Value],
        out: &mut Out,
    ) -> Result<Outcome, Error> {
        if !statement.is_query() {
            return self.run_statement(statement, params, None);
        }
        let declared = declared_types(self.session.describe(statement).ok().flatten());
        let mut rows = ResultStream::simple(out, declared, self.session.catalog());
        let outcome = self.run_statement(statement, params, Some(&mut rows))?;
        // Rows held to learn their types go out in the session's time zone, as the others did.
        let _zone = self.session.enter_time_zone();
        rows.finish()?;
        Ok(outcome)
    }

    /// Runs a statement through the scheduler, with metrics, and notes a failed transaction;
    /// with a sink, the rows it returns go there as they come.
    fn run_statement(
        &mut self,
        statement: &mut tern_sql::Statement,
        params: &[Value],
        sink: Option<&mut dyn tern_sql::RowSink>,
    ) -> Result<Outcome, Error> {
        let was_in_transaction = self.session.in_transaction();
        let started = Instant::now();
        let result = match sink {
            Some(sink) => self.session.stream_prepared(statement, params, sink),
            None => self.session.execute_prepared(statement, params),
        };
        let in_transaction = self.session.in_transaction();
        self.shared.metrics.statement(started.elapsed(), result.as_ref().err(), !was_in_transaction && !in_transaction);
        result.map_err(|error| {
            if in_transaction {
                self.failed = true;
            }
            self.explain(error)
        })
    }

    /// Gives interrupts their PostgreSQL wording.
    fn explain(&self, mut error: Error) -> Error {
        if error.sqlstate == "57014" {
            error.message = if self.timed_out.swap(false, Ordering::Relaxed) {
                "canceling statement due to statement timeout".into()
            } else {
                "canceling statement due to user request".into()
            };
        }
        error
    }

    /// Whether the engine may run `sql` now: in a failed block only `ROLLBACK TO SAVEPOINT`,
    /// which returns the block to a working state when it succeeds (`Ok(true)`: the caller
    /// clears the failed state then). The text is looked at only in a failed block.
    fn admit(&self, sql: &str) -> Result<bool, Error> {
        if self.failed && compat::is_rollback_to(sql) {
            return Ok(true);
        }
        self.refuse_if_failed()?;
        Ok(false)
    }

    fn refuse_if_failed(&self) -> Result<(), Error> {
        if self.failed {
            return Err(Error::new(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    /// Sends a statement's outcome: rows (with a RowDescription unless `described` is set
    /// to skip it: extended protocol) and the command tag.
    fn send_outcome(
        &mut self,
        text: &str,
        outcome: Outcome,
        declared: Option<Declared>,
        formats: &[i16],
        out: &mut Out,
    ) -> Result<(), Error> {
        let tag = command_tag(text, &outcome);
        if let Outcome::Rows { columns, rows } = outcome {
            let columns = column_types(columns, declared, &rows);
            out.row_description(&describe_columns(&columns, formats));
            let catalog = self.session.catalog();
            // TIMESTAMPTZ values are written in the session's time zone.
            let _zone = self.session.enter_time_zone();
            for row in &rows {
                send_row(out, row, &columns, formats, &catalog)?;
            }
        }
        out.command_complete(&tag);
        Ok(())
    }

    // ---- the server's own commands ---------------------------------------------------------

    fn command(
        &mut self,
        command: &Command,
        _params: &[Value],
        formats: &[i16],
        out: &mut Out,
        extended: bool,
    ) -> Result<Flow, Error> {
        match command {
            Command::Commit | Command::Rollback if self.failed => {
                self.failed = false;
                self.session.execute("ROLLBACK", &[]).ok();
                self.shared.metrics.rolled_back();
                out.command_complete("ROLLBACK");
                return Ok(Flow::Continue);
            }
            _ => self.refuse_if_failed()?,
        }
        match command {
            Command::Begin => {
                if self.session.in_transaction() {
                    out.notice("25001", "there is already a transaction in progress");
                } else {
                    self.session.execute("BEGIN", &[])?;
                }
                out.command_complete("BEGIN");
            }
            Command::Commit => {
                if !self.session.in_transaction() {
                    out.notice("25P01", "there is no transaction in progress");
                } else {
                    let started = Instant::now();
                    let result = self.session.execute("COMMIT", &[]);
                    self.shared.metrics.committed(started.elapsed(), result.as_ref().err());
                    result.map_err(|error| self.explain(error))?;
                }
                out.command_complete("COMMIT");
            }
            Command::Rollback => {
                if !self.session.in_transaction() {
                    out.notice("25P01", "there is no transaction in progress");
                } else {
                    self.session.execute("ROLLBACK", &[])?;
                    self.shared.metrics.rolled_back();
                }
                out.command_complete("ROLLBACK");
            }
            Command::Set { name, value, local } => {
                if *local && !self.session.in_transaction() {
                    out.notice("25P01", "SET LOCAL can only be used in transaction blocks");
                } else {
                    self.set_scoped(name, value.clone(), *local)?;
                }
                self.flush_reported(out);
                out.command_complete("SET");
            }
            Command::Reset(name) => {
                match name {
                    Some(name) => self.set_scoped(name, None, false)?,
                    None => self.reset_all(),
                }
                self.flush_reported(out);
                out.command_complete("RESET");
            }
            Command::Show(name) if name.eq_ignore_ascii_case("all") => {
                // Every setting: name, value, description (PostgreSQL's three columns).
                let columns: Vec<ResultColumn> = ["name", "setting", "description"]
                    .into_iter()
                    .map(|column| ResultColumn::new(column.to_string(), types::TEXT))
                    .collect();
                if !extended {
                    out.row_description(&describe_columns(&columns, formats));
                }
                let settings: Vec<(String, String)> =
                    self.session.settings().read().iter().map(|(name, value)| (name.clone(), value.clone())).collect();
                let catalog = self.session.catalog();
                for (name, value) in &settings {
                    let row = [Value::Text(name.clone()), Value::Text(value.clone()), Value::Text(String::new())];
                    send_row(out, &row, &columns, formats, &catalog)?;
                }
                out.command_complete("SHOW");
            }
            Command::Show(name) => {
                let name = name.to_ascii_lowercase();
                let value = self
                    .setting(&name)
                    .ok_or_else(|| Error::new("42704", format!("unrecognized configuration parameter \"{name}\"")))?;
                let columns = vec![ResultColumn::new(name.clone(), types::TEXT)];
                if !extended {
                    out.row_description(&describe_columns(&columns, formats));
                }
                send_row(out, &[Value::Text(value)], &columns, formats, &self.session.catalog())?;
                out.command_complete("SHOW");
            }
            Command::NoOp(tag) => out.command_complete(tag),
            Command::Discard => {
                if self.session.in_transaction() {
                    return Err(Error::new("25001", "DISCARD ALL cannot run inside a transaction block"));
                }
                self.reset_all();
                self.statements.clear();
                self.portals.clear();
                self.flush_reported(out);
                out.command_complete("DISCARD ALL");
            }
            Command::Prepare { name, body } => {
                if self.statements.contains_key(name) {
                    return Err(Error::new("42P05", format!("prepared statement \"{name}\" already exists")));
                }
                let prepared = self.prepare_sql(body, &[])?;
                self.statements.insert(name.clone(), Arc::new(prepared));
                out.command_complete("PREPARE");
            }
            // Through Parse/Bind, the statement's own Bind runs it (its rows need a Describe).
            Command::Execute { .. } if extended => {
                return Err(Error::new(
                    "0A000",
                    "EXECUTE in the extended protocol: bind the prepared statement instead",
                ));
            }
            Command::Execute { name, arguments } => return self.execute_sql(name, arguments, out),
            Command::Deallocate(name) => {
                match name {
                    None => self.statements.clear(),
                    Some(name) => {
                        self.statements.remove(name).ok_or_else(|| {
                            Error::new("26000", format!("prepared statement \"{name}\" does not exist"))
                        })?;
                    }
                }
                out.command_complete(if name.is_some() { "DEALLOCATE" } else { "DEALLOCATE ALL" });
            }
            Command::Copy(spec) => return self.copy(spec, out, extended),
            Command::CreateUser { name, password } => {
                crate::server::write_role(&self.shared, name, password.as_deref(), RoleChange::Create)?;
                out.command_complete("CREATE ROLE");
            }
            Command::AlterUser { name, password } => {
                crate::server::write_role(&self.shared, name, password.as_deref(), RoleChange::Alter)?;
                out.command_complete("ALTER ROLE");
            }
            Command::DropUser { names, if_exists } => {
                for name in names {
                    match crate::server::write_role(&self.shared, name, None, RoleChange::Drop) {
                        Err(error) if *if_exists && error.sqlstate == "42704" => {
                            out.notice("00000", &format!("role \"{name}\" does not exist, skipping"))
                        }
                        other => other?,
                    }
                }
                out.command_complete("DROP ROLE");
            }
            Command::Unsupported(what) => {
                return Err(Error::new("0A000", format!("{what} is not supported by Tern")));
            }
            Command::Invalid(message) => return Err(Error::syntax(message.clone())),
            Command::Failed(sqlstate, message) => return Err(Error::new(sqlstate, message.clone())),
        }
        Ok(Flow::Continue)
    }

    /// SET name = value (`None`: back to the default).
    /// SET (or SET LOCAL): the session notes the old value, which comes back at ROLLBACK (and
    /// at COMMIT after SET LOCAL).
    fn set_scoped(&mut self, name: &str, value: Option<String>, local: bool) -> Result<(), Error> {
        let name = name.to_ascii_lowercase();
        let before = self.setting(&name);
        self.set(&name, value)?;
        self.session.note_setting_change(&name, before, local);
        Ok(())
    }

    fn set(&mut self, name: &str, value: Option<String>) -> Result<(), Error> {
        let name = name.to_ascii_lowercase();
        let invalid = |value: &str| Error::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""));
        let settings = self.session.settings();
        let known = settings.read().contains_key(&name);
        if !known && !name.contains('.') {
            return Err(Error::new("42704", format!("unrecognized configuration parameter \"{name}\"")));
        }
        if matches!(
            name.as_str(),
            "server_version"
                | "server_version_num"
                | "server_encoding"
                | "integer_datetimes"
                | "max_identifier_length"
                | "is_superuser"
                | "lc_messages"
                | "tern.version"
        ) {
            return Err(Error::new("55P02", format!("parameter \"{name}\" cannot be changed")));
        }
        let value = match value {
            None => self.initial.get(&name).cloned().unwrap_or_default(),
            Some(value) => value,
        };
        let value = match name.as_str() {
            "client_encoding" => {
                // PostgreSQL compares encoding names by their letters and digits only, so
                // `utf-8`, `UTF_8` and asyncpg's quoted `'utf-8'` are all UTF8.
                let normalized: String =
                    value.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_uppercase();
                if !matches!(normalized.as_str(), "UTF8" | "UNICODE") {
                    return Err(Error::new(
                        "22023",
                        format!("client encoding \"{value}\" is not supported: Tern speaks UTF8 only"),
                    ));
                }
                "UTF8".to_string()
            }
            "standard_conforming_strings" => {
                if !matches!(value.to_ascii_lowercase().as_str(), "on" | "true" | "1") {
                    return Err(Error::new("0A000", "standard_conforming_strings is always on in Tern"));
                }
                "on".to_string()
            }
            "bytea_output" if !value.eq_ignore_ascii_case("hex") => return Err(invalid(&value)),
            "timezone" => {
                tern_exec::types::temporal::session_zone::of_setting(&value)?;
                value
            }
            "datestyle" => tern_exec::types::temporal::session_zone::date_style(&value)?,
            "intervalstyle" => tern_exec::types::temporal::session_zone::interval_style(&value)?,
            "statement_timeout" | "idle_in_transaction_session_timeout" | "lock_timeout" => {
                parse_duration(&value).ok_or_else(|| invalid(&value))?;
                value
            }
            "tern.dialect" => {
                let dialect = tern_sql::Dialect::parse(&value)?;
                self.session.set_dialect(dialect);
                dialect.name().to_string()
            }
            "tern.priority" => match value.to_ascii_lowercase().replace('-', "_").as_str() {
                "latency" | "latency_sensitive" | "default" => "latency".to_string(),
                "best_effort" | "analytics" => "best_effort".to_string(),
                _ => return Err(invalid(&value)),
            },
            "transaction_isolation" | "default_transaction_isolation" => match value.to_ascii_lowercase().as_str() {
                "serializable" | "repeatable read" | "read committed" | "read uncommitted" => {
                    value.to_ascii_lowercase()
                }
                _ => return Err(invalid(&value)),
            },
            _ => value,
        };
        settings.write().insert(name.clone(), value.clone());
        Ok(())
    }

    fn reset_all(&mut self) {
        let names: Vec<String> = self.session.settings().read().keys().cloned().collect();
        for name in names {
            // Read-only and session-identity settings stay as they are.
            let _ = self.set_scoped(&name, None, false);
        }
    }

    /// Tells the client of every reported parameter whose value changed since it was last told
    /// (by SET, RESET, `set_config` or DISCARD), as PostgreSQL does before ReadyForQuery.
    fn flush_reported(&mut self, out: &mut Out) {
        for (name, spelled) in REPORTED {
            let value = self.setting(name).unwrap_or_default();
            if self.reported.get(name) != Some(&value) {
                out.parameter_status(spelled, &value);
                self.reported.insert(name.to_string(), value);
            }
        }
    }

    // ---- COPY ------------------------------------------------------------------------------

    fn copy(&mut self, spec: &CopySpec, out: &mut Out, extended: bool) -> Result<Flow, Error> {
        let catalog = self.session.catalog();
        let _zone = self.session.enter_time_zone();
        if !spec.from {
            let query = match &spec.source {
                Source::Query(query) => query.clone(),
                Source::Table { name, columns } => {
                    let list = if columns.is_empty() {
                        "*".to_string()
                    } else {
                        columns.iter().map(|column| tern::quote_identifier(column)).collect::<Vec<_>>().join(", ")
                    };
                    format!("SELECT {list} FROM {}", tern::quote_identifier(name))
                }
            };
            let mut statement = self.session.prepare(&query)?;
            let description = self.session.describe(&statement).ok().flatten();
            let outcome = self.run_statement(&mut statement, &[], None)?;
            let Outcome::Rows { columns, rows } = outcome else {
                return Err(Error::new("42601", "COPY (query) TO needs a query that returns rows"));
            };
            let columns = column_types(columns, declared_types(description), &rows);
            if spec.format == Format::Binary {
                return copy_out_binary(&columns, &rows, &self.session.catalog(), out);
            }
            out.copy_response(b'H', columns.len(), false);
            let mut data = Vec::new();
            if spec.header && spec.format == Format::Csv {
                let names: Vec<Option<String>> = columns.iter().map(|column| Some(column.name.clone())).collect();
                copy::write_row(spec, &names, &mut data);
                out.copy_data(&data);
            }
            for row in &rows {
                data.clear();
                let fields: Vec<Option<String>> = row
                    .iter()
                    .zip(&columns)
                    .map(|(value, column)| {
                        types::encode_text(value, column.oid, &catalog)
                            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    })
                    .collect();
                copy::write_row(spec, &fields, &mut data);
                out.copy_data(&data);
            }
            out.copy_done();
            out.command_complete(&format!("COPY {}", rows.len()));
            return Ok(Flow::Continue);
        }
        let Source::Table { name, columns } = &spec.source else {
            return Err(Error::new("0A000", "COPY (query) FROM is not possible"));
        };
        let table = catalog.table(&name.to_ascii_lowercase()).cloned().ok_or_else(|| Error::undefined_table(name))?;
        let positions: Vec<usize> = if columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            columns
                .iter()
                .map(|column| table.column_index(column).ok_or_else(|| Error::undefined_column(column)))
                .collect::<Result<_, _>>()?
        };
        let names: Vec<String> =
            positions.iter().map(|&position| tern::quote_identifier(&table.columns[position].name)).collect();
        let placeholders: Vec<String> = (1..=positions.len()).map(|number| format!("?{number}")).collect();
        // COPY stores the values given for an identity column, GENERATED ALWAYS too.
        let insert = self.session.prepare(&format!(
            "INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE VALUES ({})",
            tern::quote_identifier(&table.name),
            names.join(", "),
            placeholders.join(", ")
        ))?;
        // A column of a type CREATE TYPE made reads its values as that type (its declared
        // name alone, `mood` or `public.mood`, names no built-in type).
        let oids = positions
            .iter()
            .map(|&position| {
                let column = &table.columns[position];
                match column.affinity {
                    tern_exec::value::Affinity::Enum(id) => id.get().oid,
                    tern_exec::value::Affinity::Composite(id) => id.get().oid,
                    _ => types::declared_oid(&column.declared_type),
                }
            })
            .collect();
        let wrapped = !self.session.in_transaction();
        if wrapped {
            self.session.execute("BEGIN", &[])?;
        }
        self.copy = Some(CopyIn {
            reader: RowReader::new(spec),
            binary: (spec.format == Format::Binary).then(crate::copy_binary::BinaryReader::default),
            table: table.name.clone(),
            oids,
            insert,
            wrapped,
            rows: 0,
            error: None,
            extended,
        });
        out.copy_response(b'G', positions.len(), spec.format == Format::Binary);
        Ok(Flow::CopyIn)
    }

    /// A CopyData message's rows are inserted as they come.
    pub fn copy_data(&mut self, data: &[u8]) {
        let Some(mut copy) = self.copy.take() else { return };
        if copy.error.is_none() {
            let result = match &mut copy.binary {
                Some(binary) => binary.feed(data).map(|tuples| (tuples, true)),
                None => copy.reader.feed(data).map(|rows| (text_fields(rows), false)),
            };
            let result = result.map_err(|message| Error::new("22P04", message));
            if let Err(error) = result.and_then(|(rows, binary)| self.insert_rows(&mut copy, rows, binary)) {
                copy.error = Some(error);
            }
        }
        self.copy = Some(copy);
    }

    fn insert_rows(
        &mut self,
        copy: &mut CopyIn,
        rows: Vec<crate::copy_binary::Tuple>,
        binary: bool,
    ) -> Result<(), Error> {
        for fields in rows {
            let line = copy.binary.as_ref().map_or(copy.reader.line, |binary| binary.tuples);
            let context = |error: Error| {
                Error::new(error.sqlstate, format!("{} (COPY {}, line {line})", error.message, copy.table))
            };
            if fields.len() != copy.oids.len() {
                return Err(context(Error::new(
                    "22P04",
                    if fields.len() > copy.oids.len() {
                        "extra data after last expected column".to_string()
                    } else {
                        format!("missing data for column {}", fields.len() + 1)
                    },
                )));
            }
            let mut values = Vec::with_capacity(fields.len());
            let catalog = self.session.catalog();
            // Text without an offset reads in the session's time zone.
            let _zone = self.session.enter_time_zone();
            for (field, oid) in fields.iter().zip(&copy.oids) {
                values.push(match field {
                    None => Value::Null,
                    Some(bytes) if binary => types::decode_binary(bytes, *oid, &catalog).map_err(context)?,
                    Some(text) => types::decode_text(text, *oid).map_err(context)?,
                });
            }
            self.session.execute_prepared(&mut copy.insert, &values).map_err(|error| context(self.explain(error)))?;
            copy.rows += 1;
        }
        Ok(())
    }

    /// CopyDone (`failure` None) or CopyFail: ends the COPY, then goes on with the simple
    /// query's other statements.
    pub fn copy_end(&mut self, failure: Option<String>, out: &mut Out) -> Flow {
        let Some(mut copy) = self.copy.take() else { return Flow::Continue };
        if copy.error.is_none() {
            copy.error = match failure {
                Some(message) => Some(Error::new("57014", format!("COPY from stdin failed: {message}"))),
                None => match &copy.binary {
                    Some(binary) => binary.finish().err().map(|message| Error::new("22P04", message)),
                    None => match copy.reader.finish() {
                        Ok(rows) => self.insert_rows(&mut copy, text_fields(rows), false).err(),
                        Err(message) => Some(Error::new("22P04", message)),
                    },
                },
            };
        }
        let result = match copy.error.take() {
            Some(error) => {
                if copy.wrapped {
                    self.session.execute("ROLLBACK", &[]).ok();
                } else {
                    self.failed = true;
                }
                Err(error)
            }
            None if copy.wrapped => {
                let started = Instant::now();
                let result = self.session.execute("COMMIT", &[]);
                self.shared.metrics.committed(started.elapsed(), result.as_ref().err());
                result.map(drop)
            }
            None => Ok(()),
        };
        match result {
            Ok(()) => out.command_complete(&format!("COPY {}", copy.rows)),
            Err(error) => {
                self.error(out, &error, None);
                self.remaining.clear();
                if copy.extended {
                    self.skip_until_sync = true;
                }
            }
        }
        if copy.extended { Flow::Continue } else { self.run_remaining(out) }
    }

    // ---- extended query --------------------------------------------------------------------

    /// Parse, Bind, Describe, Execute, Close and Sync. After an error, messages up to the
    /// next Sync are skipped.
    pub fn extended(&mut self, tag: u8, body: &[u8], out: &mut Out) -> Result<Flow, ProtocolError> {
        if tag == b'S' {
            self.skip_until_sync = false;
            self.flush_reported(out);
            out.ready(self.status());
            return Ok(Flow::Continue);
        }
        if self.skip_until_sync {
            return Ok(Flow::Continue);
        }
        let mut reader = Reader::new(body);
        let result = match tag {
            b'P' => self.parse(&mut reader, out),
            b'B' => self.bind(&mut reader, out),
            b'D' => self.describe(&mut reader, out),
            b'E' => self.execute(&mut reader, out),
            b'C' => self.close(&mut reader, out),
            _ => return Err(ProtocolError::invalid(format!("unexpected message type {:?}", tag as char))),
        };
        match result {
            Ok(flow) => Ok(flow),
            Err(Failure::Protocol(error)) => Err(error),
            Err(Failure::Sql(error)) => {
                self.error(out, &error, None);
                self.skip_until_sync = true;
                Ok(Flow::Continue)
            }
        }
    }

    fn parse(&mut self, reader: &mut Reader<'_>, out: &mut Out) -> Result<Flow, Failure> {
        let name = reader.cstr()?;
        let query = reader.cstr()?;
        let count = reader.count16()?;
        let mut client_oids = Vec::with_capacity(count);
        for _ in 0..count {
            client_oids.push(reader.i32()? as u32);
        }
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(Error::new("42P05", format!("prepared statement \"{name}\" already exists")).into());
        }
        self.query_text = query.clone();
        let pieces = compat::split(&query);
        if pieces.len() > 1 {
            return Err(Error::syntax("cannot insert multiple commands into a prepared statement").into());
        }
        let prepared = match pieces.first() {
            None => Prepared { kind: Kind::Empty, param_oids: client_oids, columns: Some(Vec::new()) },
            Some(piece) => match compat::classify(piece.text) {
                Some(command) => {
                    let columns = match &command {
                        Command::Show(name) if name.eq_ignore_ascii_case("all") => Some(
                            ["name", "setting", "description"]
                                .into_iter()
                                .map(|column| ResultColumn::new(column.to_string(), types::TEXT))
                                .collect(),
                        ),
                        Command::Show(name) => Some(vec![ResultColumn::new(name.to_ascii_lowercase(), types::TEXT)]),
                        _ => Some(Vec::new()),
                    };
                    Prepared { kind: Kind::Command(command), param_oids: client_oids, columns }
                }
                None => self.prepare_sql(piece.text, &client_oids)?,
            },
        };
        self.statements.insert(name, Arc::new(prepared));
        out.parse_complete();
        Ok(Flow::Continue)
    }

    /// A SQL statement prepared and described: its parameters' types (the client's where it
    /// gave them, else inferred) and result columns.
    fn prepare_sql(&mut self, text: &str, client_oids: &[u32]) -> Result<Prepared, Error> {
        let statement = self.session.prepare(text)?;
        let description = self.session.describe(&statement)?;
        let (params, columns) = match description {
            Some(description) => {
                let origins = description.origins.clone();
                let columns = description
                    .columns
                    .into_iter()
                    .enumerate()
                    .map(|(index, (name, kind))| {
                        ResultColumn::new(name, types::oid_of(&kind)).reading(origins.get(index).copied().flatten())
                    })
                    .collect();
                (description.parameters, Some(columns))
            }
            None => (Vec::new(), None),
        };
        let count = params.len().max(client_oids.len());
        let param_oids = (0..count)
            .map(|index| match client_oids.get(index) {
                Some(&oid) if oid != 0 => oid,
                _ => params.get(index).map_or(types::TEXT, types::oid_of),
            })
            .collect();
        Ok(Prepared { kind: Kind::Sql(Box::new(Mutex::new(statement))), param_oids, columns })
    }

    /// `EXECUTE name (arguments)`: the arguments evaluated (as a SELECT of them), read as the
    /// parameters' types as a text-format Bind reads them, then the statement run and its rows
    /// sent as a simple query's.
    fn execute_sql(&mut self, name: &str, arguments: &str, out: &mut Out) -> Result<Flow, Error> {
        let prepared = self
            .statements
            .get(name)
            .cloned()
            .ok_or_else(|| Error::new("26000", format!("prepared statement \"{name}\" does not exist")))?;
        let Kind::Sql(statement) = &prepared.kind else {
            return Err(Error::new("0A000", format!("prepared statement \"{name}\" is not a query EXECUTE can run")));
        };
        let values = if arguments.is_empty() {
            Vec::new()
        } else {
            let (mut select, params) = self.session.prepare_text(&format!("SELECT {arguments}"))?;
            match self.run_statement(&mut select, &params, None)? {
                Outcome::Rows { mut rows, .. } => rows.pop().unwrap_or_default(),
                _ => Vec::new(),
            }
        };
        if values.len() != prepared.param_oids.len() {
            return Err(Error::new(
                "42601",
                format!(
                    "wrong number of parameters for prepared statement \"{name}\": expected {}, got {}",
                    prepared.param_oids.len(),
                    values.len()
                ),
            ));
        }
        let params = values
            .iter()
            .zip(&prepared.param_oids)
            .map(|(value, &oid)| match value {
                Value::Null => Ok(Value::Null),
                value => types::decode_text(value.to_text().as_bytes(), oid),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let text = statement.lock().sql().to_string();
        let recovering = self.admit(&text)?;
        let outcome = {
            let mut statement = statement.lock();
            self.run_statement(&mut statement, &params, None)?
        };
        self.failed &= !recovering;
        let description = match outcome {
            Outcome::Rows { .. } => self.session.describe(&statement.lock()).ok().flatten(),
            _ => None,
        };
        self.send_outcome(&text, outcome, declared_types(description), &[], out)?;
        Ok(Flow::Continue)
    }

    fn bind(&mut self, reader: &mut Reader<'_>, out: &mut Out) -> Result<Flow, Failure> {
        let portal_name = reader.cstr()?;
        let statement_name = reader.cstr()?;
        let format_count = reader.count16()?;
        let mut formats = Vec::with_capacity(format_count);
        for _ in 0..format_count {
            formats.push(reader.i16()?);
        }
        let value_count = reader.count16()?;
        let mut raw = Vec::with_capacity(value_count);
        for _ in 0..value_count {
            raw.push(reader.value()?);
        }
        let result_count = reader.count16()?;
        let mut result_formats = Vec::with_capacity(result_count);
        for _ in 0..result_count {
            result_formats.push(reader.i16()?);
        }
        let prepared =
            self.statements.get(&statement_name).cloned().ok_or_else(|| {
                Error::new("26000", format!("prepared statement \"{statement_name}\" does not exist"))
            })?;
        if !portal_name.is_empty() && self.portals.contains_key(&portal_name) {
            return Err(Error::new("42P03", format!("portal \"{portal_name}\" already exists")).into());
        }
        if raw.len() != prepared.param_oids.len() && matches!(prepared.kind, Kind::Sql(_)) {
            return Err(Failure::Protocol(ProtocolError::invalid(format!(
                "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires {}",
                raw.len(),
                prepared.param_oids.len()
            ))));
        }
        if !(formats.len() <= 1 || formats.len() == raw.len()) {
            return Err(Failure::Protocol(ProtocolError::invalid(
                "bind message has a wrong number of parameter formats",
            )));
        }
        let mut params = Vec::with_capacity(raw.len());
        let catalog = self.session.catalog();
        let _zone = self.session.enter_time_zone();
        for (index, value) in raw.iter().enumerate() {
            let format = formats.get(if formats.len() == 1 { 0 } else { index }).copied().unwrap_or(0);
            let oid = prepared.param_oids.get(index).copied().unwrap_or(types::TEXT);
            params.push(match (value, format) {
                (None, _) => Value::Null,
                (Some(bytes), 0) => types::decode_text(bytes, oid)?,
                (Some(bytes), 1) => types::decode_binary(bytes, oid, &catalog)?,
                (Some(_), other) => {
                    return Err(Failure::Protocol(ProtocolError::invalid(format!("unsupported format code {other}"))));
                }
            });
        }
        self.portals.insert(portal_name, Portal { prepared, params, result_formats, result: None });
        out.bind_complete();
        Ok(Flow::Continue)
    }

    fn describe(&mut self, reader: &mut Reader<'_>, out: &mut Out) -> Result<Flow, Failure> {
        let kind = reader.u8()?;
        let name = reader.cstr()?;
        match kind {
            b'S' => {
                let prepared = self
                    .statements
                    .get(&name)
                    .ok_or_else(|| Error::new("26000", format!("prepared statement \"{name}\" does not exist")))?;
                out.parameter_description(&prepared.param_oids);
                match &prepared.columns {
                    Some(columns) if !columns.is_empty() => out.row_description(&describe_columns(columns, &[])),
                    _ => out.no_data(),
                }
            }
            b'P' => {
                let portal = self
                    .portals
                    .get(&name)
                    .ok_or_else(|| Error::new("34000", format!("portal \"{name}\" does not exist")))?;
                match &portal.prepared.columns {
                    Some(columns) if !columns.is_empty() => {
                        out.row_description(&describe_columns(columns, &portal.result_formats))
                    }
                    _ => out.no_data(),
                }
            }
            other => return Err(Failure::Protocol(ProtocolError::invalid(format!("Describe of {:?}", other as char)))),
        }
        Ok(Flow::Continue)
    }

    fn execute(&mut self, reader: &mut Reader<'_>, out: &mut Out) -> Result<Flow, Failure> {
        let name = reader.cstr()?;
        let max_rows = reader.i32()?;
        let mut portal = self
            .portals
            .remove(&name)
            .ok_or_else(|| Error::new("34000", format!("portal \"{name}\" does not exist")))?;
        let result = self.execute_portal(&mut portal, max_rows, out);
        // The unnamed portal, and any portal run to completion inside no transaction, ends
        // here; a suspended one stays for the next Execute.
        if portal.result.as_ref().is_some_and(|result| !result.rows.is_empty()) || !name.is_empty() {
            self.portals.insert(name, portal);
        }
        result
    }

    fn execute_portal(&mut self, portal: &mut Portal, max_rows: i32, out: &mut Out) -> Result<Flow, Failure> {
        if portal.result.is_none() {
            let prepared = portal.prepared.clone();
            match &prepared.kind {
                Kind::Empty => {
                    out.empty_query();
                    return Ok(Flow::Continue);
                }
                Kind::Command(command) => {
                    return Ok(self.command(command, &portal.params, &portal.result_formats, out, true)?);
                }
                Kind::Sql(statement) => {
                    self.session.note_query(statement.lock().sql());
                    let recovering = self.admit(statement.lock().sql())?;
                    if max_rows <= 0 && statement.lock().is_query() {
                        // All its rows at once: they go to the client as they come.
                        let mut statement = statement.lock();
                        let mut rows = ResultStream::portal(
                            out,
                            prepared.columns.clone(),
                            &portal.result_formats,
                            self.session.catalog(),
                        );
                        let outcome = self.run_statement(&mut statement, &portal.params, Some(&mut rows))?;
                        let _zone = self.session.enter_time_zone();
                        rows.finish()?;
                        self.failed &= !recovering;
                        out.command_complete(&command_tag(statement.sql(), &outcome));
                        // Run to completion: the next Execute of this portal returns nothing.
                        let tag = "SELECT 0".to_string();
                        portal.result = Some(PortalResult { columns: Vec::new(), rows: VecDeque::new(), tag });
                        return Ok(Flow::Continue);
                    }
                    let outcome = {
                        let mut statement = statement.lock();
                        self.run_statement(&mut statement, &portal.params, None)?
                    };
                    self.failed &= !recovering;
                    let text = match &prepared.kind {
                        Kind::Sql(statement) => statement.lock().sql().to_string(),
                        _ => String::new(),
                    };
                    let tag = command_tag(&text, &outcome);
                    let (columns, rows) = match outcome {
                        // Exactly the types Describe announced, when it could.
                        Outcome::Rows { columns, rows } => match &prepared.columns {
                            Some(described) if described.len() == columns.len() => (described.clone(), rows),
                            _ => (column_types(columns, None, &rows), rows),
                        },
                        _ => (Vec::new(), Vec::new()),
                    };
                    portal.result = Some(PortalResult { columns, rows: rows.into(), tag });
                }
            }
        }
        let result = portal.result.as_mut().expect("the portal has run");
        let limit = if max_rows <= 0 { usize::MAX } else { max_rows as usize };
        let mut sent = 0;
        let catalog = self.session.catalog();
        let _zone = self.session.enter_time_zone();
        while sent < limit
            && let Some(row) = result.rows.pop_front()
        {
            send_row(out, &row, &result.columns, &portal.result_formats, &catalog)?;
            sent += 1;
        }
        if result.rows.is_empty() {
            out.command_complete(&result.tag);
            // Run to completion: the next Execute of this portal returns nothing more.
            result.tag = result.tag.split(' ').next().map(|word| format!("{word} 0")).unwrap_or_default();
        } else {
            out.portal_suspended();
        }
        Ok(Flow::Continue)
    }

    fn close(&mut self, reader: &mut Reader<'_>, out: &mut Out) -> Result<Flow, Failure> {
        let kind = reader.u8()?;
        let name = reader.cstr()?;
        match kind {
            b'S' => {
                self.statements.remove(&name);
            }
            b'P' => {
                self.portals.remove(&name);
            }
            other => return Err(Failure::Protocol(ProtocolError::invalid(format!("Close of {:?}", other as char)))),
        }
        out.close_complete();
        Ok(Flow::Continue)
    }

    /// Sends an ErrorResponse; `piece` places the error's position in the query text.
    fn error(&mut self, out: &mut Out, error: &Error, piece: Option<(usize, &str)>) {
        let position = piece.and_then(|(start, text)| {
            let (line, column) = error.position?;
            Some(character_offset(&self.query_text, start, text, line, column))
        });
        out.error("ERROR", error.sqlstate, &error.message, position);
    }
}

/// How a role changes (CREATE, ALTER or DROP USER).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleChange {
    Create,
    Alter,
    Drop,
}

/// Errors of an extended-protocol step: SQL errors are reported and the connection goes on;
/// protocol errors end it.
enum Failure {
    Sql(Error),
    Protocol(ProtocolError),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::Sql(error)
    }
}

impl From<ProtocolError> for Failure {
    fn from(error: ProtocolError) -> Failure {
        Failure::Protocol(error)
    }
}

/// The 1-based character position in `query` of (line, column) of the statement `text` that
/// starts at byte `start`.
fn character_offset(query: &str, start: usize, text: &str, line: u64, column: u64) -> usize {
    let mut offset = query.get(..start).map_or(0, |before| before.chars().count());
    for (number, content) in text.split('\n').enumerate() {
        if number as u64 + 1 == line {
            return offset + column.max(1) as usize;
        }
        offset += content.chars().count() + 1;
    }
    offset + 1
}

/// The command tag PostgreSQL sends for a statement's outcome.
fn command_tag(text: &str, outcome: &Outcome) -> String {
    let first = text
        .split(|c: char| c.is_whitespace() || c == '(')
        .find(|word| !word.is_empty())
        .unwrap_or("")
        .to_ascii_uppercase();
    let count = match outcome {
        Outcome::Rows { rows, .. } => rows.len() as u64,
        Outcome::Sent { rows, .. } => *rows,
        Outcome::Changed(count) => *count,
        Outcome::Done(tag) => return tag.to_string(),
    };
    match first.as_str() {
        "INSERT" | "REPLACE" => format!("INSERT 0 {count}"),
        "UPDATE" => format!("UPDATE {count}"),
        "DELETE" => format!("DELETE {count}"),
        "MERGE" => format!("MERGE {count}"),
        _ => format!("SELECT {count}"),
    }
}

/// A result column as RowDescription describes it: its name, type, and the table column it
/// reads unchanged (table OID and column number, 0 when none).
#[derive(Debug, Clone)]
pub(crate) struct ResultColumn {
    name: String,
    oid: u32,
    table: u32,
    attnum: i16,
}

impl ResultColumn {
    fn new(name: String, oid: u32) -> ResultColumn {
        ResultColumn { name, oid, table: 0, attnum: 0 }
    }

    fn reading(mut self, origin: Option<(u32, i16)>) -> ResultColumn {
        if let Some((table, attnum)) = origin {
            (self.table, self.attnum) = (table, attnum);
        }
        self
    }
}

/// What a description says of each result column: its type OID where known, and its origin.
pub(crate) type Declared = Vec<(Option<u32>, Option<(u32, i16)>)>;

/// Result columns with type OIDs: the declared ones where known (`Some`), else the type the
/// rows' values all have, else text.
pub(crate) fn column_types(names: Vec<String>, declared: Option<Declared>, rows: &[Vec<Value>]) -> Vec<ResultColumn> {
    let declared = declared.filter(|declared| declared.len() == names.len());
    names
        .into_iter()
        .enumerate()
        .map(|(index, name)| {
            let (oid, origin) = declared.as_ref().map_or((None, None), |declared| declared[index]);
            let oid = oid
                .or_else(|| {
                    let mut kinds = rows.iter().filter_map(|row| row.get(index).and_then(types::oid_of_value));
                    let first = kinds.next()?;
                    kinds.all(|kind| kind == first).then_some(first)
                })
                .unwrap_or(types::TEXT);
            ResultColumn::new(name, oid).reading(origin)
        })
        .collect()
}

/// The declared result types and origins of a description (`None` where unknown).
fn declared_types(description: Option<tern_sql::Description>) -> Option<Declared> {
    description.map(|description| {
        let origins = description.origins;
        description
            .columns
            .into_iter()
            .enumerate()
            .map(|(index, (_, kind))| {
                let oid = (kind != tern_sql::SqlType::Unknown).then(|| types::oid_of(&kind));
                (oid, origins.get(index).copied().flatten())
            })
            .collect()
    })
}

pub(crate) fn describe_columns(columns: &[ResultColumn], formats: &[i16]) -> Vec<crate::protocol::Field> {
    columns
        .iter()
        .enumerate()
        .map(|(index, column)| crate::protocol::Field {
            name: column.name.clone(),
            table: column.table,
            attnum: column.attnum,
            oid: column.oid,
            size: types::size_of(column.oid),
            format: format_of(formats, index),
        })
        .collect()
}

/// Text COPY rows as the fields `insert_rows` takes.
fn text_fields(rows: Vec<copy::Fields>) -> Vec<crate::copy_binary::Tuple> {
    rows.into_iter().map(|row| row.into_iter().map(|field| field.map(String::into_bytes)).collect()).collect()
}

/// COPY ... TO STDOUT (FORMAT binary): each value in its column type's binary form.
fn copy_out_binary(
    columns: &[ResultColumn],
    rows: &[Vec<Value>],
    catalog: &tern_exec::catalog::Catalog,
    out: &mut Out,
) -> Result<Flow, Error> {
    out.copy_response(b'H', columns.len(), true);
    // The header travels with the first tuple (or the trailer), as PostgreSQL sends it and as
    // clients expect it.
    let mut data = Vec::new();
    crate::copy_binary::header(&mut data);
    for row in rows {
        let fields = row
            .iter()
            .zip(columns)
            .map(|(value, column)| types::encode_binary(value, column.oid, catalog))
            .collect::<Result<Vec<_>, Error>>()?;
        crate::copy_binary::write_tuple(&fields, &mut data);
        out.copy_data(&data);
        data.clear();
    }
    crate::copy_binary::trailer(&mut data);
    out.copy_data(&data);
    out.copy_done();
    out.command_complete(&format!("COPY {}", rows.len()));
    Ok(Flow::Continue)
}

fn format_of(formats: &[i16], index: usize) -> i16 {
    match formats {
        [] => 0,
        [one] => *one,
        many => many.get(index).copied().unwrap_or(0),
    }
}

pub(crate) fn send_row(
    out: &mut Out,
    row: &[Value],
    columns: &[ResultColumn],
    formats: &[i16],
    catalog: &tern_exec::catalog::Catalog,
) -> Result<(), Error> {
    let mut values = Vec::with_capacity(row.len());
    for (index, value) in row.iter().enumerate() {
        let oid = columns.get(index).map_or(types::TEXT, |column| column.oid);
        values.push(if format_of(formats, index) == 1 {
            types::encode_binary(value, oid, catalog)?
        } else {
            types::encode_text(value, oid, catalog)
        });
    }
    out.data_row(&values);
    Ok(())
}
