//! `tern serve`: the PostgreSQL wire-protocol server.

use anyhow::Context;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The data directory (created if missing; the database is tern.db in it).
    #[arg(long, default_value = "tern-data")]
    data: PathBuf,
    /// Address to listen on (loopback only by default).
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: SocketAddr,
    /// trust-loopback: clients on loopback need no password unless their user has one;
    /// scram: every client authenticates with SCRAM-SHA-256.
    #[arg(long, value_enum, default_value_t = Auth::TrustLoopback)]
    auth: Auth,
    /// Users file: lines `name:password` or `name:SCRAM-SHA-256$...`.
    #[arg(long, value_name = "FILE")]
    users: Option<PathBuf>,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Cancel statements running longer than this (e.g. 30s, 500ms; default: none).
    #[arg(long, value_name = "DURATION")]
    statement_timeout: Option<String>,
    /// Close connections idle inside a transaction longer than this.
    #[arg(long, value_name = "DURATION")]
    idle_in_transaction_timeout: Option<String>,
    /// Largest message a client may send, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    max_message_mib: usize,
    /// Serve Prometheus metrics on this address.
    #[arg(long, value_name = "ADDRESS")]
    metrics: Option<SocketAddr>,
    /// Treat best-effort statements like latency-sensitive ones.
    #[arg(long)]
    no_priority: bool,
    /// The SQL dialect sessions start in: postgres (PostgreSQL's answers) or sqlite; a session
    /// changes it with `SET tern.dialect = ...`.
    #[arg(long, default_value = "postgres", value_parser = parse_dialect)]
    dialect: tern_sql::Dialect,
    /// Run within this much memory, in MiB (as `tern shell --memory-budget`).
    #[arg(long, value_name = "MIB")]
    memory_budget: Option<usize>,
    /// PEM certificate chain for TLS (with --tls-key): clients asking for TLS get it.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Refuse clients that do not use TLS (needs --tls-cert and --tls-key).
    #[arg(long, requires = "tls_cert")]
    tls_required: bool,
    /// TLS policy when a certificate is configured: `prefer` (the default: clients that ask get
    /// TLS) or `required` (the same as --tls-required).
    #[arg(long, value_enum, requires = "tls_cert")]
    tls: Option<TlsMode>,
    /// When commits reach the disk: every-commit (fsync, group commit) or never (the
    /// operating system decides; a machine crash may lose recent commits).
    #[arg(long, value_enum, default_value_t = Sync::EveryCommit)]
    sync: Sync,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Auth {
    TrustLoopback,
    Scram,
}

/// `--tls`: whether plaintext clients are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TlsMode {
    Prefer,
    Required,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Sync {
    EveryCommit,
    Never,
}

fn duration(text: &Option<String>, flag: &str) -> anyhow::Result<Option<Duration>> {
    text.as_deref()
        .map(|text| {
            tern_server::parse_duration(text)
                .with_context(|| format!("--{flag} {text}: expected e.g. 500ms, 30s, 5min"))
        })
        .transpose()
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let users = match &args.users {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            tern_server::read_users(&text)?
        }
        None => Default::default(),
    };
    let options = tern::Options {
        memory_budget: args.memory_budget.map(|mib| mib.saturating_mul(1 << 20)),
        sync: match args.sync {
            Sync::EveryCommit => tern::SyncPolicy::EveryCommit,
            Sync::Never => tern::SyncPolicy::Never,
        },
        ..tern::Options::default()
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tern_server::load_tls(cert, key)?),
        _ => None,
    };
    let config = tern_server::Config {
        tls,
        tls_required: args.tls_required || args.tls == Some(TlsMode::Required),
        listen: args.listen,
        data: args.data.clone(),
        options,
        auth: match args.auth {
            Auth::TrustLoopback => tern_server::AuthMethod::TrustLoopback,
            Auth::Scram => tern_server::AuthMethod::Scram,
        },
        users,
        max_connections: args.max_connections,
        statement_timeout: duration(&args.statement_timeout, "statement-timeout")?,
        idle_in_transaction_timeout: duration(&args.idle_in_transaction_timeout, "idle-in-transaction-timeout")?,
        max_message_size: args.max_message_mib.saturating_mul(1 << 20),
        metrics: args.metrics,
        priority: !args.no_priority,
        dialect: args.dialect,
        ..tern_server::Config::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the runtime")?;
    runtime.block_on(async move {
        let server = tern_server::Server::bind(config).await?;
        eprintln!("tern: serving {} on {} (PostgreSQL protocol 3.0)", args.data.display(), server.local_addr());
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut terminate =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("a SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("tern: shutting down");
            let _ = stop.send(true);
        });
        server.run(stopped).await?;
        eprintln!("tern: stopped");
        anyhow::Ok(())
    })
}

fn parse_dialect(value: &str) -> Result<tern_sql::Dialect, String> {
    tern_sql::Dialect::parse(value).map_err(|error| error.message.clone())
}
