//! Tern against PostgreSQL 15 itself: the statements of `tests/pg/*.sql` go to `tern serve`
//! (in its default, PostgreSQL, dialect) and to a PostgreSQL server this test starts, through
//! the simple query protocol; each statement's outcome must be the same on both: the same rows
//! as text, or an error with the same SQLSTATE.
//!
//! Each script runs in a fresh database on both sides, in one session. Statements end with a
//! `;` at the end of a line; lines starting with `--` are comments. Queries whose row order
//! matters say ORDER BY. A statement that runs before a result is compared (setup) is compared
//! too: everything counts.
//!
//! PostgreSQL is a peer, kept out of the plain test run: the test runs when
//! `TERN_PG_DIFFERENTIAL=1` is set (`.ci/run` sets it where PostgreSQL is installed) and needs
//! PostgreSQL 15's server programs in `/usr/lib/postgresql/15/bin` (Debian's `postgresql-15`);
//! otherwise it says so and passes. As root, the server runs as the `postgres` user.
//!
//! ```text
//! TERN_PG_DIFFERENTIAL=1 cargo test -p tern-server --test postgres_differential -- --nocapture
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tern_server::{Config, Server};
use tokio::sync::watch;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// What a statement gave: its rows as text (NULL as `None`), or its SQLSTATE.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rows(Vec<Vec<Option<String>>>),
    Error(String),
}

async fn run(client: &Client, sql: &str) -> Outcome {
    match client.simple_query(sql).await {
        Ok(messages) => Outcome::Rows(
            messages
                .iter()
                .filter_map(|message| match message {
                    SimpleQueryMessage::Row(row) => {
                        Some((0..row.len()).map(|at| row.get(at).map(str::to_string)).collect())
                    }
                    _ => None,
                })
                .collect(),
        ),
        Err(error) => {
            Outcome::Error(error.code().map_or_else(|| format!("no SQLSTATE: {error}"), |code| code.code().into()))
        }
    }
}

/// The statements of a script.
fn statements(text: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("--") || (current.is_empty() && line.trim().is_empty()) {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if line.trim_end().ends_with(';') {
            statements.push(std::mem::take(&mut current).trim().trim_end_matches(';').to_string());
        }
    }
    if !current.trim().is_empty() {
        statements.push(current.trim().to_string());
    }
    statements
}

/// A PostgreSQL server in a temporary directory, stopped when dropped.
struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a PostgreSQL program (as the `postgres` user when this is root).
fn pg_command(program: &str, args: &[&str], as_postgres: bool) -> Result<(), String> {
    let path = Path::new(PG_BIN).join(program);
    let output = if as_postgres {
        let line = std::iter::once(path.to_string_lossy().into_owned())
            .chain(args.iter().map(|arg| format!("'{}'", arg.replace('\'', "'\\''"))))
            .collect::<Vec<_>>()
            .join(" ");
        Command::new("su").args(["postgres", "-s", "/bin/sh", "-c", &line]).output()
    } else {
        Command::new(&path).args(args).output()
    }
    .map_err(|error| format!("{program}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl Postgres {
    /// `None` when the run is not asked for or PostgreSQL 15 is not installed.
    fn start() -> Option<Postgres> {
        if std::env::var_os("TERN_PG_DIFFERENTIAL").is_none() {
            eprintln!("skipped: set TERN_PG_DIFFERENTIAL=1 to compare with PostgreSQL 15");
            return None;
        }
        if !Path::new(PG_BIN).join("initdb").exists() {
            eprintln!("skipped: PostgreSQL 15 is not installed in {PG_BIN}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let as_postgres = is_root();
        if as_postgres {
            // The postgres user owns the data directory and reaches it.
            Command::new("chown").args(["-R", "postgres"]).arg(dir.path()).status().unwrap();
            let mut ancestor = dir.path().parent();
            while let Some(parent) = ancestor {
                let _ = Command::new("chmod").arg("o+x").arg(parent).status();
                ancestor = parent.parent();
            }
        }
        let data = dir.path().join("data");
        let data_text = data.to_string_lossy().into_owned();
        pg_command(
            "initdb",
            &["-D", &data_text, "-A", "trust", "-U", "tern", "-E", "UTF8", "--no-locale"],
            as_postgres,
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let options =
            format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c TimeZone=UTC", dir.path().display());
        let log = dir.path().join("server.log").to_string_lossy().into_owned();
        pg_command("pg_ctl", &["-D", &data_text, "-l", &log, "-o", &options, "-w", "start"], as_postgres).unwrap();
        Some(Postgres { dir, port, as_postgres })
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").to_string_lossy().into_owned();
        let _ = pg_command("pg_ctl", &["-D", &data, "-m", "immediate", "stop"], self.as_postgres);
    }
}

async fn connect(port: u16, database: &str) -> Client {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(port).user("tern").dbname(database).connect_timeout(Duration::from_secs(10));
    let (client, connection) = config.connect(NoTls).await.unwrap_or_else(|error| panic!("connect to {port}: {error}"));
    tokio::spawn(connection);
    client
}

/// A Tern server in a temporary directory; stops when `stop` is sent.
async fn start_tern() -> (SocketAddr, watch::Sender<bool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data: dir.path().to_path_buf(),
        options: tern::Options { sync: tern::SyncPolicy::Never, ..tern::Options::default() },
        ..Config::default()
    };
    let server = Server::bind(config).await.unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(server.run(stopped));
    (addr, stop, dir)
}

fn scripts() -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pg");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sql"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_give_what_postgresql_gives() {
    let Some(postgres) = Postgres::start() else { return };
    let admin = connect(postgres.port, "postgres").await;
    let (mut total, mut matched) = (0, 0);
    let mut mismatches = Vec::new();
    for (number, script) in scripts().iter().enumerate() {
        let database = format!("script{number}");
        admin.simple_query(&format!("CREATE DATABASE {database}")).await.unwrap();
        let pg = connect(postgres.port, &database).await;
        let (addr, stop, _dir) = start_tern().await;
        let tern = connect(addr.port(), "tern").await;
        let name = script.file_name().unwrap().to_string_lossy().into_owned();
        for sql in statements(&std::fs::read_to_string(script).unwrap()) {
            let expected = run(&pg, &sql).await;
            let actual = run(&tern, &sql).await;
            total += 1;
            if expected == actual {
                matched += 1;
            } else {
                mismatches.push(format!("{name}: {sql}\n  postgres: {expected:?}\n  tern:     {actual:?}"));
            }
        }
        let _ = stop.send(true);
    }
    println!("postgres differential: {total} statements, {matched} give PostgreSQL's outcome");
    assert!(total >= 100, "the scripts under tests/pg have {total} statements");
    assert!(mismatches.is_empty(), "{} of {total} differ:\n{}", mismatches.len(), mismatches.join("\n"));
}
