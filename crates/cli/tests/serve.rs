//! `tern serve` as a process: SIGTERM with clients connected stops accepting, lets the running
//! statement end, rolls back open transactions, flushes, and exits 0 with every acknowledged
//! commit on disk.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

const TERN: &str = env!("CARGO_BIN_EXE_tern");

/// Starts `tern serve` on a free loopback port; returns the child and its address.
fn serve(data: &std::path::Path) -> (Child, String, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(TERN)
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0", "--sync", "every-commit"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // "tern: serving DIR on 127.0.0.1:PORT (PostgreSQL protocol 3.0)"
    let address = line.split(" on ").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap_or_default();
    assert!(address.starts_with("127.0.0.1:"), "{line}");
    (child, address.to_string(), stderr)
}

async fn connect(address: &str) -> tokio_postgres::Client {
    let (host, port) = address.split_once(':').unwrap();
    let (client, connection) =
        tokio_postgres::connect(&format!("host={host} port={port} user=tern dbname=tern"), NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

fn wait_for_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("tern serve did not stop within {limit:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_with_clients_connected_keeps_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, address, mut stderr) = serve(dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let running = runtime.block_on(async {
        let writer = connect(&address).await;
        writer.batch_execute("CREATE TABLE acked(id INT PRIMARY KEY)").await.unwrap();
        for id in 1..=50 {
            writer.execute("INSERT INTO acked VALUES ($1)", &[&id]).await.unwrap();
        }
        let open = connect(&address).await;
        open.batch_execute("BEGIN; INSERT INTO acked VALUES (1000)").await.unwrap();
        // A statement still running when the signal arrives.
        let busy = connect(&address).await;
        let running = tokio::spawn(async move {
            let result = busy.query_one("SELECT count(*) FROM generate_series(1, 2000000)", &[]).await;
            (result, busy)
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        (writer, open, running)
    });
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = wait_for_exit(&mut child, Duration::from_secs(90));
    assert!(exit.success(), "exit status {exit}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rest.contains("tern: stopped"), "{rest}");
    let (writer, open, running) = running;
    runtime.block_on(async {
        // The running statement either finished or was stopped with a shutdown error: no hang.
        let (result, _busy) = tokio::time::timeout(Duration::from_secs(10), running).await.unwrap().unwrap();
        match result {
            Ok(row) => assert_eq!(row.get::<_, i64>(0), 2_000_000),
            Err(error) => assert!(
                error.is_closed() || matches!(error.code().map(|code| code.code()), Some("57P01" | "57014")),
                "{error}"
            ),
        }
        assert!(writer.simple_query("SELECT 1").await.is_err(), "the server is gone");
        assert!(open.simple_query("COMMIT").await.is_err());
    });
    let db = tern::Database::open(dir.path().join("tern.db"), tern::Options::default()).unwrap();
    let ids: Vec<i64> =
        db.connect().query("SELECT id FROM acked ORDER BY id", ()).unwrap().map(|row| row.get(0)).unwrap();
    assert_eq!(ids, (1..=50).collect::<Vec<i64>>(), "every acknowledged insert, and not the open transaction's");
}
