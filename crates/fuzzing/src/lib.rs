//! The bodies of Tern's fuzz targets. `fuzz/` at the repository root holds the `cargo fuzz`
//! package (nightly, libFuzzer) whose targets call these functions; `tests/fuzz_corpus.rs`
//! runs the same functions on stable over every seed input and every saved crash, so a fixed
//! crash stays fixed. `fuzz/README.md` says how to run the fuzzers.
//!
//! Each function takes arbitrary bytes and must return normally: an error from the engine is
//! an expected outcome, a panic, an abort, a stack overflow or a hang is a bug.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod timer;

/// Bytes of SQL one input may hold: enough for a few dozen statements; longer inputs would
/// mostly measure the cost of big statements.
pub const MAX_SQL_BYTES: usize = 4096;
/// Statements one input may run.
const MAX_STATEMENTS: usize = 64;
/// A statement still running after this is interrupted (the engine's own interrupt): a
/// statement that does not stop then is a hang the fuzzer reports (`-timeout`).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(2);
/// Entries an end-to-end WAL input reads back.
const MAX_SCAN: usize = 10_000;

/// `sql`: the input (lossy UTF-8, at most [`MAX_SQL_BYTES`]) as statements separated by `;`,
/// run one after another on one connection to a database in memory.
pub fn sql(data: &[u8]) {
    let text = String::from_utf8_lossy(&data[..data.len().min(MAX_SQL_BYTES)]);
    let options = tern::Options {
        buffer_pool_size: 1 << 20,
        memtable_size: 256 << 10,
        result_cache_size: 1 << 20,
        query_memory_limit: 16 << 20,
        tune_allocator: false,
        sync: tern::SyncPolicy::Never,
        retry_attempts: 2,
        ..tern::Options::default()
    };
    let db = tern::Database::open_in_memory_with(options).expect("valid options");
    let connection = db.connect();
    for statement in split_statements(&text).into_iter().take(MAX_STATEMENTS) {
        let _alarm = timer::arm(connection.interrupt_handle(), STATEMENT_TIMEOUT);
        let _ = connection.run_script(statement, |_| Ok(()));
    }
}

/// Splits `text` at the semicolons outside quotes ('...', "...") and comments (`--`).
pub fn split_statements(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut quote, mut comment) = (0, None, false);
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        match (quote, c) {
            _ if comment => comment = c != '\n',
            (Some(open), _) if c == open => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '-') if chars.peek().is_some_and(|&(_, next)| next == '-') => comment = true,
            (None, ';') => {
                pieces.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces.retain(|piece| !piece.trim().is_empty());
    pieces
}

/// `wal`: the first byte chooses how, the rest is a log file. Bit 0: rewrite the records'
/// checksums first (so mutations get past them); bits 1-2: the flushed sequence the replay
/// starts from (0, 1, 5 or 1000); bit 3: also open a database whose only file is this log,
/// read it back, write to it and close it; bit 4: the log is the next log
/// (`.tern-wal.next`) instead of the current one.
pub fn wal(data: &[u8]) {
    let Some((&flags, log)) = data.split_first() else { return };
    let mut log = log.to_vec();
    if flags & 1 != 0 {
        tern_lsm::fuzzing::fix_wal_checksums(&mut log);
    }
    let flushed = [0, 1, 5, 1000][(flags >> 1 & 3) as usize];
    tern_lsm::fuzzing::wal_replay(&log, flushed);
    if flags & 8 != 0 {
        open_with_log(log, flags & 16 != 0);
    }
}

/// Opens a fresh database on a file system in memory whose only file is `log`.
fn open_with_log(log: Vec<u8>, next: bool) {
    let vfs = tern_pagestore::MemoryVfs::new();
    let path = Path::new("fuzz.tern");
    let [current, next_log] = tern_lsm::log_paths(path);
    vfs.set_contents(if next { &next_log } else { &current }, log);
    let options = tern_lsm::Options {
        pool: tern_lsm::PoolConfig { partitions: 1, prefetch_degree: 0, ..tern_lsm::PoolConfig::with_size(64 * 4096) },
        memtable_size: 64 << 10,
        table_target_size: 64 << 10,
        base_level_size: 256 << 10,
        sync: tern_lsm::SyncPolicy::Never,
        ..tern_lsm::Options::default()
    };
    let Ok(db) = tern_lsm::Db::open_with(Arc::new(vfs), path, options) else { return };
    let mut first = None;
    for entry in db.iter(None).take(MAX_SCAN) {
        let Ok((key, _)) = entry else { break };
        first.get_or_insert(key);
    }
    if let Some(key) = &first {
        let _ = db.get(key, None);
        let _ = db.delete(key);
    }
    let _ = db.put(b"fuzz", b"value");
    let _ = db.iter(None).rev().take(MAX_SCAN).count();
    let _ = db.close();
}

/// `block`: the first byte chooses the decoder, the rest is its input: a data block, a table
/// (manifest entry and pages), a manifest or root record, a page, a page file, or a page file
/// with its checksums rewritten.
pub fn block(data: &[u8]) {
    let Some((&which, bytes)) = data.split_first() else { return };
    match which % 6 {
        0 => tern_lsm::fuzzing::data_block(bytes),
        1 => tern_lsm::fuzzing::table(bytes),
        2 => tern_lsm::fuzzing::manifest(bytes),
        3 => tern_pagestore::fuzzing::page(bytes),
        4 => tern_pagestore::fuzzing::file(bytes, false),
        _ => tern_pagestore::fuzzing::file(bytes, true),
    }
}

/// `pgwire`: the input is everything a client sends on one connection.
pub fn pgwire(data: &[u8]) {
    tern_server::fuzzing::session(data, STATEMENT_TIMEOUT);
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name, for the corpus test.
pub const TARGETS: [(&str, Target); 4] = [("sql", sql), ("wal", wal), ("block", block), ("pgwire", pgwire)];
