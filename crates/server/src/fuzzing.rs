//! Entry point for the fuzz target `pgwire` (`fuzz/` at the repository root) and for the test
//! that replays its corpus: arbitrary bytes as what a client sends on one connection, read by
//! the server's own decoders and message loop against a database in memory. Not part of the
//! API; it returns normally on any input, and a panic in it is a bug in the server.

use crate::backend::Backend;
use crate::protocol::{self, Startup};
use crate::server::{Config, Shared, message_loop};
use crate::watchdog::Watchdog;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Largest message the fuzzed session accepts (the server's default is 256 MiB; a fuzzer's
/// inputs are a few KiB).
const MAX_MESSAGE_SIZE: usize = 64 << 10;
/// Startup packets read before giving up (SSLRequest and GSSENCRequest may repeat).
const MAX_STARTUP_PACKETS: usize = 4;

/// One watchdog for every fuzzed session: each would otherwise start a thread.
fn watchdog() -> Watchdog {
    static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(Watchdog::start).clone()
}

/// Runs `bytes` as the stream a client sends: startup packets until a StartupMessage (as the
/// server reads them; authentication is skipped, as for a trusted local user), then messages
/// until Terminate or the end of the input, answered by the server's message loop.
/// Statements time out after `statement_timeout`, through the server's own watchdog.
pub fn session(bytes: &[u8], statement_timeout: Duration) {
    let mut input = bytes;
    let mut params = None;
    for _ in 0..MAX_STARTUP_PACKETS {
        match protocol::read_startup(&mut input) {
            Ok(Startup::Start { params: start }) => {
                params = Some(start);
                break;
            }
            Ok(Startup::Ssl | Startup::GssEnc) => continue,
            Ok(Startup::Cancel { .. }) | Err(_) => return,
        }
    }
    let Some(params) = params else { return };
    let param = |name: &str| params.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    let Some(user) = param("user") else { return };
    let database = param("database").unwrap_or_else(|| user.clone());
    let options = tern::Options {
        buffer_pool_size: 1 << 20,
        memtable_size: 256 << 10,
        result_cache_size: 0,
        query_memory_limit: 16 << 20,
        tune_allocator: false,
        sync: tern::SyncPolicy::Never,
        ..tern::Options::default()
    };
    let Ok(db) = tern::Database::open_in_memory_with(options) else { return };
    let config = Config {
        statement_timeout: Some(statement_timeout),
        max_message_size: MAX_MESSAGE_SIZE,
        priority: false,
        ..Config::default()
    };
    let shared = Arc::new(Shared::new(db, config, watchdog()));
    let Ok(backend) = Backend::new(shared.clone(), &user, &database, &params) else { return };
    let _ = message_loop(&mut input, &mut std::io::sink(), None, backend, &shared);
}

/// A message of type `tag` with `body`.
pub fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A StartupMessage for protocol 3.0 with `params`.
pub fn startup(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (name, value) in params {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = (body.len() as i32 + 4).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}
