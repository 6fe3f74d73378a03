//! Tern's PostgreSQL wire-protocol server (`tern serve`): PostgreSQL clients (psql, libpq,
//! psycopg, JDBC, tokio-postgres, pgbench) use Tern unchanged. See `docs/server.md` and
//! `docs/design/server.md`.

pub mod auth;
mod backend;
pub mod compat;
pub mod copy;
mod metrics;
mod pool;
pub mod protocol;
mod server;
pub mod types;
mod watchdog;

pub use auth::Verifier;
pub use backend::parse_duration;
pub use server::{AuthMethod, Config, Priority, Server};

/// The PostgreSQL version the server reports (clients choose their SQL by it).
pub const SERVER_VERSION: &str = "15.0";
pub const SERVER_VERSION_NUM: &str = "150000";

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Database(String),
    #[error("{0}")]
    Config(String),
}

/// Reads a users file: one user per line, `name:password` or `name:SCRAM-SHA-256$...` (a
/// verifier, as PostgreSQL's `pg_authid.rolpassword` holds). Blank lines and lines starting
/// with `#` are skipped.
pub fn read_users(text: &str) -> Result<std::collections::HashMap<String, Verifier>, ServeError> {
    let mut users = std::collections::HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, secret) = line
            .split_once(':')
            .ok_or_else(|| ServeError::Config(format!("users file line {}: expected name:password", number + 1)))?;
        let verifier = if secret.starts_with("SCRAM-SHA-256$") {
            Verifier::decode(secret).ok_or_else(|| {
                ServeError::Config(format!("users file line {}: malformed SCRAM verifier", number + 1))
            })?
        } else {
            Verifier::new(secret)
        };
        users.insert(name.trim().to_string(), verifier);
    }
    Ok(users)
}
