//! Counters for Prometheus (`--metrics ADDRESS`): connections, statements, transactions,
//! statement latency, and the engine's buffer pool, LSM and certifier statistics.

use crate::server::Shared;
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tern_sql::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 14] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default)]
pub struct Metrics {
    connections_opened: AtomicU64,
    connections_closed: AtomicU64,
    statements: AtomicU64,
    statement_errors: AtomicU64,
    serialization_failures: AtomicU64,
    committed: AtomicU64,
    rolled_back: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_sum_micros: AtomicU64,
}

impl Metrics {
    pub fn connection_opened(&self) {
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.connections_closed.fetch_add(1, Ordering::Relaxed);
    }

    /// A statement ran; `autocommit`: it was its own transaction.
    pub fn statement(&self, elapsed: Duration, error: Option<&Error>, autocommit: bool) {
        self.statements.fetch_add(1, Ordering::Relaxed);
        let seconds = elapsed.as_secs_f64();
        if let Some(bucket) = BUCKETS.iter().position(|&bound| seconds <= bound) {
            self.latency_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
        self.latency_sum_micros.fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        if let Some(error) = error {
            self.statement_errors.fetch_add(1, Ordering::Relaxed);
            if error.sqlstate == "40001" {
                self.serialization_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        if autocommit {
            if error.is_none() { &self.committed } else { &self.rolled_back }.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A COMMIT ran.
    pub fn committed(&self, elapsed: Duration, error: Option<&Error>) {
        self.statement(elapsed, error, true);
    }

    pub fn rolled_back(&self) {
        self.rolled_back.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of these counters and the engine's.
    pub fn render(&self, shared: &Shared) -> String {
        let mut text = String::new();
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut counter = |name: &str, help: &str, kind: &str, value: f64| {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        let opened = load(&self.connections_opened);
        let closed = load(&self.connections_closed);
        counter("tern_connections_total", "Connections accepted.", "counter", opened as f64);
        counter("tern_connections_active", "Connections open now.", "gauge", opened.saturating_sub(closed) as f64);
        counter("tern_statements_total", "Statements run.", "counter", load(&self.statements) as f64);
        counter(
            "tern_statement_errors_total",
            "Statements that failed.",
            "counter",
            load(&self.statement_errors) as f64,
        );
        counter(
            "tern_serialization_failures_total",
            "Statements or commits refused with SQLSTATE 40001.",
            "counter",
            load(&self.serialization_failures) as f64,
        );
        counter(
            "tern_transactions_committed_total",
            "Transactions committed.",
            "counter",
            load(&self.committed) as f64,
        );
        counter(
            "tern_transactions_rolled_back_total",
            "Transactions rolled back or failed.",
            "counter",
            load(&self.rolled_back) as f64,
        );
        let stats = shared.db.stats();
        counter(
            "tern_buffer_pool_hits_total",
            "Buffer pool pins served from memory.",
            "counter",
            stats.storage.pool.hits as f64,
        );
        counter(
            "tern_buffer_pool_misses_total",
            "Buffer pool pins that read a page.",
            "counter",
            stats.storage.pool.misses as f64,
        );
        counter(
            "tern_buffer_pool_evictions_total",
            "Pages evicted from the buffer pool.",
            "counter",
            stats.storage.pool.evictions as f64,
        );
        counter(
            "tern_lsm_memtable_bytes",
            "Bytes in the active memtable.",
            "gauge",
            stats.storage.memtable_bytes as f64,
        );
        counter("tern_lsm_flushes_total", "Memtable flushes.", "counter", stats.storage.flushes as f64);
        counter("tern_lsm_compactions_total", "Compactions.", "counter", stats.storage.compactions as f64);
        counter("tern_lsm_wal_syncs_total", "Log syncs.", "counter", stats.storage.wal_syncs as f64);
        counter("tern_lsm_wal_bytes_total", "Bytes written to the log.", "counter", stats.storage.wal_bytes as f64);
        counter(
            "tern_txn_commits_total",
            "Transactions with writes the certifier committed.",
            "counter",
            stats.transactions.commits as f64,
        );
        let _ = writeln!(
            text,
            "# HELP tern_statement_duration_seconds Statement latency.\n# TYPE tern_statement_duration_seconds histogram"
        );
        let mut cumulative = 0;
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            cumulative += load(bucket);
            let _ = writeln!(text, "tern_statement_duration_seconds_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let count = load(&self.statements);
        let _ = writeln!(text, "tern_statement_duration_seconds_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(text, "tern_statement_duration_seconds_sum {}", load(&self.latency_sum_micros) as f64 / 1e6);
        let _ = writeln!(text, "tern_statement_duration_seconds_count {count}");
        text
    }
}

/// Answers every HTTP request on `listener` with the metrics.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => return,
        };
        let Ok((mut stream, _)) = accepted else { continue };
        let shared = shared.clone();
        tokio::spawn(async move {
            // Read the request head (bounded), whatever it asks for.
            let mut request = vec![0u8; 4096];
            let mut read = 0;
            while read < request.len() {
                match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut request[read..])).await {
                    Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => read += n,
                }
                if request[..read].windows(4).any(|window| window == b"\r\n\r\n") {
                    break;
                }
            }
            let body = tokio::task::spawn_blocking(move || shared.metrics.render(&shared)).await.unwrap_or_default();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
