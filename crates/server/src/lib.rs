//! Tern's PostgreSQL wire-protocol server (`tern serve`): PostgreSQL clients (psql, libpq,
//! psycopg, JDBC, tokio-postgres, pgbench) use Tern unchanged. See `docs/server.md` and
//! `docs/design/server.md`.

mod array_binary;
pub mod auth;
mod backend;
pub mod compat;
pub mod copy;
pub mod copy_binary;
#[doc(hidden)]
pub mod fuzzing;
mod metrics;
mod pool;
pub mod protocol;
mod record_binary;
mod result_stream;
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

/// TLS settings from a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or SEC1).
pub fn load_tls(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<std::sync::Arc<rustls::ServerConfig>, ServeError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|error| ServeError::Config(format!("reading certificates from {}: {error}", cert.display())))?;
    if certs.is_empty() {
        return Err(ServeError::Config(format!("no certificate in {}", cert.display())));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|error| ServeError::Config(format!("reading the private key from {}: {error}", key.display())))?;
    let config =
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| ServeError::Config(format!("TLS: {error}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|error| ServeError::Config(format!("TLS certificate and key: {error}")))?;
    Ok(std::sync::Arc::new(config))
}
