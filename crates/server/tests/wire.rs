//! The server through a real PostgreSQL client (tokio-postgres): both query protocols, every
//! supported type in text and binary, errors and their SQLSTATEs, COPY both ways, SCRAM,
//! cancel and timeouts, limits, concurrent clients with serialization retries, metrics, and a
//! shutdown with clients connected.

use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use tern_server::{AuthMethod, Config, Server};
use tokio::sync::watch;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    done: tokio::task::JoinHandle<Result<(), tern_server::ServeError>>,
    _dir: Option<tempfile::TempDir>,
}

async fn start_with(edit: impl FnOnce(&mut Config)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data: dir.path().to_path_buf(),
        options: tern::Options { sync: tern::SyncPolicy::Never, ..tern::Options::default() },
        shutdown_grace: Duration::from_secs(5),
        ..Config::default()
    };
    edit(&mut config);
    let server = Server::bind(config).await.unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = watch::channel(false);
    let done = tokio::spawn(server.run(stopped));
    Running { addr, stop, done, _dir: Some(dir) }
}

async fn start() -> Running {
    start_with(|_| {}).await
}

async fn connect_as(running: &Running, user: &str, password: Option<&str>) -> Result<Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(running.addr.port()).user(user).dbname("tern");
    if let Some(password) = password {
        config.password(password);
    }
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

async fn connect(running: &Running) -> Client {
    connect_as(running, "tern", None).await.unwrap()
}

fn code(error: &tokio_postgres::Error) -> String {
    error.code().map(|code| code.code().to_string()).unwrap_or_else(|| format!("no SQLSTATE: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_and_extended_queries_with_every_type() {
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute(
            "CREATE TABLE t(i INT PRIMARY KEY, b BIGINT, s SMALLINT, r REAL, d DOUBLE PRECISION, t TEXT, v VARCHAR(10),
                            f BOOLEAN, y BYTEA, n NUMERIC(10,2), dt DATE, ts TIMESTAMP)",
        )
        .await
        .unwrap();
    let date = chrono::NaiveDate::from_ymd_opt(2026, 11, 23).unwrap();
    let stamp = date.and_hms_micro_opt(12, 34, 56, 789).unwrap();
    let decimal: rust_decimal::Decimal = "1234.56".parse().unwrap();
    // Extended protocol: parameters and results in binary (tokio-postgres's choice).
    let inserted = client
        .execute(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &[
                &1i32,
                &(1i64 << 40),
                &-7i16,
                &1.5f32,
                &2.25f64,
                &"héllo",
                &"short",
                &true,
                &vec![0u8, 255, 7],
                &decimal,
                &date,
                &stamp,
            ],
        )
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    client.execute("INSERT INTO t (i, t) VALUES ($1, $2)", &[&2i32, &None::<String>]).await.unwrap();
    let row = client.query_one("SELECT * FROM t WHERE i = $1", &[&1i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>("i"), 1);
    assert_eq!(row.get::<_, i64>("b"), 1 << 40);
    assert_eq!(row.get::<_, i16>("s"), -7);
    assert_eq!(row.get::<_, f32>("r"), 1.5);
    assert_eq!(row.get::<_, f64>("d"), 2.25);
    assert_eq!(row.get::<_, String>("t"), "héllo");
    assert_eq!(row.get::<_, String>("v"), "short");
    assert!(row.get::<_, bool>("f"));
    assert_eq!(row.get::<_, Vec<u8>>("y"), vec![0, 255, 7]);
    assert_eq!(row.get::<_, rust_decimal::Decimal>("n"), decimal);
    assert_eq!(row.get::<_, chrono::NaiveDate>("dt"), date);
    assert_eq!(row.get::<_, chrono::NaiveDateTime>("ts"), stamp);
    let row = client.query_one("SELECT t, b FROM t WHERE i = 2", &[]).await.unwrap();
    assert_eq!(row.get::<_, Option<String>>(0), None);
    assert_eq!(row.get::<_, Option<i64>>(1), None);
    // Expressions: counts are bigint, comparisons boolean, arithmetic follows its operands.
    let row = client
        .query_one("SELECT count(*), 1 = 1, i + 1, d * 2, 'a' || 'b' FROM t WHERE i = 1 GROUP BY i, d", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
    assert!(row.get::<_, bool>(1));
    assert_eq!(row.get::<_, f64>(3), 4.5);
    assert_eq!(row.get::<_, String>(4), "ab");
    // A prepared statement runs again with new parameters; RETURNING gives rows.
    let statement = client.prepare("UPDATE t SET b = b + $1 WHERE i = $2 RETURNING b").await.unwrap();
    let rows = client.query(&statement, &[&1i64, &1i32]).await.unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), (1 << 40) + 1);
    // Simple protocol: text values, several statements in one message.
    let messages = client.simple_query("SELECT i, f, y FROM t ORDER BY i; SELECT 'x' AS x").await.unwrap();
    let rows: Vec<Vec<Option<String>>> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|at| row.get(at).map(str::to_string)).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![Some("1".into()), Some("t".into()), Some("\\x00ff07".into())],
            vec![Some("2".into()), None, None],
            vec![Some("x".into())],
        ]
    );
    // The PostgreSQL surface clients look at.
    let row = client
        .query_one("SELECT version(), current_database(), current_setting('server_version'), current_user", &[])
        .await
        .unwrap();
    assert!(row.get::<_, String>(0).starts_with("PostgreSQL 15.0 (Tern"));
    assert_eq!(row.get::<_, String>(1), "tern");
    assert_eq!(row.get::<_, String>(2), "15.0");
    client.batch_execute("SET application_name = 'wire test'").await.unwrap();
    let shown = client.query_one("SHOW application_name", &[]).await.unwrap();
    assert_eq!(shown.get::<_, String>(0), "wire test");
    client.batch_execute("RESET ALL").await.unwrap();
    let row = client
        .query_one("SELECT current_user, current_database(), current_setting('application_name')", &[])
        .await
        .unwrap();
    assert_eq!((row.get::<_, String>(0).as_str(), row.get::<_, String>(1).as_str()), ("tern", "tern"));
    assert_eq!(row.get::<_, String>(2), "", "back to the session's start");
    let error = client.batch_execute("SET no_such_setting = 1").await.unwrap_err();
    assert_eq!(code(&error), "42704");
    let error = client.batch_execute("SET client_encoding = 'LATIN1'").await.unwrap_err();
    assert_eq!(code(&error), "22023");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_their_sqlstate_and_transactions_behave_as_postgres() {
    let running = start().await;
    let client = connect(&running).await;
    for (sql, expected) in [
        ("SELEC 1", "42601"),
        ("SELECT * FROM missing", "42P01"),
        ("SELECT nope FROM (SELECT 1 AS a)", "42703"),
        ("LISTEN channel", "0A000"),
        ("COPY t FROM '/etc/passwd'", "42601"),
    ] {
        let error = client.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&error), expected, "{sql}");
        let error = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(code(&error), expected, "{sql} (extended)");
    }
    client.batch_execute("CREATE TABLE u(k INT PRIMARY KEY)").await.unwrap();
    client.execute("INSERT INTO u VALUES ($1)", &[&1i32]).await.unwrap();
    let error = client.execute("INSERT INTO u VALUES ($1)", &[&1i32]).await.unwrap_err();
    assert_eq!(code(&error), "23505");
    // Text that is not a number cast to an integer: 22P02, as PostgreSQL's casts are strict.
    let error = client.simple_query("SELECT CAST('x' AS INTEGER) + 1").await.unwrap_err();
    assert_eq!(code(&error), "22P02");
    // After an error in a transaction block, only ROLLBACK/COMMIT are accepted (25P02);
    // COMMIT then rolls back.
    client.batch_execute("BEGIN; INSERT INTO u VALUES (2)").await.unwrap();
    assert_eq!(code(&client.batch_execute("INSERT INTO u VALUES (1)").await.unwrap_err()), "23505");
    assert_eq!(code(&client.batch_execute("SELECT 1").await.unwrap_err()), "25P02");
    let done = client.simple_query("COMMIT").await.unwrap();
    assert!(matches!(&done[0], SimpleQueryMessage::CommandComplete(0)));
    let count: i64 = client.query_one("SELECT count(*) FROM u", &[]).await.unwrap().get(0);
    assert_eq!(count, 1, "the failed transaction's insert is gone");
    // The connection is still usable after all that.
    assert_eq!(client.query_one("SELECT 2", &[]).await.unwrap().get::<_, i64>(0), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_and_out_in_text_and_csv() {
    let running = start().await;
    let client = connect(&running).await;
    client.batch_execute("CREATE TABLE c(id INT, name TEXT, score REAL, ok BOOLEAN)").await.unwrap();
    let sink = client.copy_in("COPY c FROM STDIN").await.unwrap();
    let mut sink = std::pin::pin!(sink);
    // Rows split across messages, escapes, NULL.
    for chunk in ["1\tann\t1.5\tt\n2\tb\\tob\t\\N\tf\n", "3\tc", "arl\t3\tt\n"] {
        sink.send(bytes::Bytes::from(chunk)).await.unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 3);
    let sink = client.copy_in("COPY c (id, name) FROM STDIN WITH (FORMAT csv, HEADER true)").await.unwrap();
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from("id,name\n4,\"d, \"\"quoted\"\"\"\n5,\n")).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 2);
    let rows = client.query("SELECT id, name, score, ok FROM c ORDER BY id", &[]).await.unwrap();
    let names: Vec<Option<String>> = rows.iter().map(|row| row.get(1)).collect();
    assert_eq!(
        names,
        [Some("ann".into()), Some("b\tob".into()), Some("carl".into()), Some("d, \"quoted\"".into()), None]
    );
    assert_eq!(rows[1].get::<_, Option<f32>>(2), None);
    assert!(!rows[1].get::<_, bool>(3));
    // Out, in both formats.
    let stream = client.copy_out("COPY (SELECT id, name FROM c WHERE id <= 2 ORDER BY id) TO STDOUT").await.unwrap();
    let chunks: Vec<bytes::Bytes> = stream.map(|chunk| chunk.unwrap()).collect().await;
    assert_eq!(chunks.concat(), b"1\tann\n2\tb\\tob\n");
    let stream = client.copy_out("COPY c (id, name) TO STDOUT WITH (FORMAT csv, HEADER)").await.unwrap();
    let text = String::from_utf8(stream.map(|chunk| chunk.unwrap()).collect::<Vec<_>>().await.concat()).unwrap();
    assert!(text.starts_with("id,name\n1,ann\n"), "{text}");
    assert!(text.contains("4,\"d, \"\"quoted\"\"\"\n5,\n"), "{text}");
    // A bad row fails the whole COPY: nothing of it stays.
    let sink = client.copy_in("COPY c FROM STDIN").await.unwrap();
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from("6\tf\t1\tt\n7\tonly two\n")).await.unwrap();
    let error = sink.finish().await.unwrap_err();
    assert_eq!(code(&error), "22P04");
    let count: i64 = client.query_one("SELECT count(*) FROM c", &[]).await.unwrap().get(0);
    assert_eq!(count, 5);
    // COPY into an unknown table, or with an unknown option.
    assert_eq!(code(&client.simple_query("COPY nope FROM STDIN").await.unwrap_err()), "42P01");
    assert_eq!(code(&client.simple_query("COPY c FROM STDIN (bogus)").await.unwrap_err()), "42601");
    assert_eq!(client.query_one("SELECT 1", &[]).await.unwrap().get::<_, i64>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_passwords_and_trust_on_loopback() {
    let users = tern_server::read_users("# users\nalice:secret\n").unwrap();
    let running = start_with(|config| config.users = users).await;
    // A user with a password must give it, even on loopback.
    let alice = connect_as(&running, "alice", Some("secret")).await.unwrap();
    assert_eq!(alice.query_one("SELECT current_user", &[]).await.unwrap().get::<_, String>(0), "alice");
    let error = connect_as(&running, "alice", Some("wrong")).await.err().unwrap();
    assert_eq!(code(&error), "28P01");
    // Users created with CREATE USER keep a verifier in the database.
    alice.batch_execute("CREATE USER bob WITH PASSWORD 'hunter2'").await.unwrap();
    assert_eq!(code(&alice.batch_execute("CREATE USER bob").await.unwrap_err()), "42710");
    assert!(connect_as(&running, "bob", Some("hunter2")).await.is_ok());
    assert_eq!(code(&connect_as(&running, "bob", Some("nope")).await.err().unwrap()), "28P01");
    alice.batch_execute("ALTER USER bob PASSWORD 'new'").await.unwrap();
    assert!(connect_as(&running, "bob", Some("new")).await.is_ok());
    alice.batch_execute("DROP USER bob").await.unwrap();
    // Without a password, a loopback client is trusted.
    assert!(connect_as(&running, "bob", None).await.is_ok());
    assert_eq!(code(&alice.batch_execute("DROP USER bob").await.unwrap_err()), "42704");
    alice.batch_execute("DROP USER IF EXISTS bob").await.unwrap();

    // With --auth scram, unknown users fail like wrong passwords.
    let strict = start_with(|config| config.auth = AuthMethod::Scram).await;
    let error = connect_as(&strict, "mallory", Some("guess")).await.err().unwrap();
    assert_eq!(code(&error), "28P01");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_statement_timeout_and_limits() {
    let running = start_with(|config| {
        config.max_connections = 3;
        config.idle_in_transaction_timeout = Some(Duration::from_millis(300));
        config.max_message_size = 4 << 10;
    })
    .await;
    let client = connect(&running).await;
    let endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n";
    // Cancel from another connection (PostgreSQL's cancel request).
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let error = client.simple_query(endless).await.unwrap_err();
    assert_eq!(code(&error), "57014");
    assert!(error.as_db_error().unwrap().message().contains("user request"), "{error}");
    canceller.await.unwrap();
    // Statement timeout.
    client.batch_execute("SET statement_timeout = '200ms'").await.unwrap();
    let error = client.simple_query(endless).await.unwrap_err();
    assert_eq!(code(&error), "57014");
    assert!(error.as_db_error().unwrap().message().contains("statement timeout"), "{error}");
    client.batch_execute("SET statement_timeout = 0").await.unwrap();
    assert_eq!(client.query_one("SELECT 1", &[]).await.unwrap().get::<_, i64>(0), 1);
    // Too many connections: the fourth is refused with 53300.
    let second = connect(&running).await;
    let _third = connect(&running).await;
    let error = connect_as(&running, "tern", None).await.err().unwrap();
    assert_eq!(code(&error), "53300");
    // A message over the limit ends the connection with 54000.
    let big = format!("SELECT '{}'", "x".repeat(8 << 10));
    let error = second.simple_query(&big).await.unwrap_err();
    assert!(error.code() == Some(&SqlState::PROGRAM_LIMIT_EXCEEDED) || error.is_closed(), "{error}");
    // Idle inside a transaction too long: the connection is closed (25P03).
    client.batch_execute("BEGIN").await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(client.simple_query("SELECT 1").await.is_err());
}

/// Transfers between accounts from several clients at once: serialization failures (40001)
/// are retried, and the total never changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_retry_serialization_failures() {
    let running = start().await;
    let setup = connect(&running).await;
    setup.batch_execute("CREATE TABLE acct(id INT PRIMARY KEY, balance BIGINT)").await.unwrap();
    for id in 0..4 {
        setup.execute("INSERT INTO acct VALUES ($1, 100)", &[&id]).await.unwrap();
    }
    let mut tasks = Vec::new();
    for worker in 0..4i32 {
        let client = connect(&running).await;
        tasks.push(tokio::spawn(async move {
            let mut retries = 0;
            for round in 0..40i32 {
                let (from, to) = ((worker + round) % 4, (worker + round + 1) % 4);
                loop {
                    let attempt = async {
                        client.batch_execute("BEGIN").await?;
                        client.execute("UPDATE acct SET balance = balance - 1 WHERE id = $1", &[&from]).await?;
                        client.execute("UPDATE acct SET balance = balance + 1 WHERE id = $1", &[&to]).await?;
                        client.batch_execute("COMMIT").await
                    };
                    match attempt.await {
                        Ok(()) => break,
                        Err(error) if error.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
                            retries += 1;
                            let _ = client.batch_execute("ROLLBACK").await;
                        }
                        Err(error) => panic!("{error}"),
                    }
                }
            }
            retries
        }));
    }
    let mut retries = 0;
    for task in tasks {
        retries += task.await.unwrap();
    }
    let total: i64 = setup.query_one("SELECT sum(balance) FROM acct", &[]).await.unwrap().get(0);
    assert_eq!(total, 400, "after {retries} retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_priority_classes() {
    let metrics: SocketAddr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let running = start_with(|config| config.metrics = Some(metrics)).await;
    let client = connect(&running).await;
    client.batch_execute("CREATE TABLE m(x INT); INSERT INTO m VALUES (1)").await.unwrap();
    client.batch_execute("SET tern.priority = best_effort").await.unwrap();
    assert_eq!(client.query_one("SHOW tern.priority", &[]).await.unwrap().get::<_, String>(0), "best_effort");
    assert_eq!(client.query_one("SELECT count(*) FROM m", &[]).await.unwrap().get::<_, i64>(0), 1);
    assert_eq!(code(&client.batch_execute("SET tern.priority = urgent").await.unwrap_err()), "22023");
    let body = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(metrics).unwrap();
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut body = String::new();
        stream.read_to_string(&mut body).unwrap();
        body
    })
    .await
    .unwrap();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    for metric in [
        "tern_statements_total",
        "tern_connections_active 1",
        "tern_statement_duration_seconds_bucket",
        "tern_buffer_pool_hits_total",
    ] {
        assert!(body.contains(metric), "{metric} missing:\n{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_clients_connected_keeps_what_was_committed() {
    let running = start().await;
    let dir = running._dir.as_ref().unwrap().path().to_path_buf();
    let client = connect(&running).await;
    let other = connect(&running).await;
    client.batch_execute("CREATE TABLE s(x INT); INSERT INTO s VALUES (1)").await.unwrap();
    other.batch_execute("BEGIN; INSERT INTO s VALUES (2)").await.unwrap();
    running.stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running.done).await.unwrap().unwrap().unwrap();
    let error = client.simple_query("SELECT 1").await.unwrap_err();
    assert!(error.is_closed() || error.code() == Some(&SqlState::ADMIN_SHUTDOWN), "{error}");
    assert!(other.simple_query("COMMIT").await.is_err());
    // The database reopens with the committed row and without the open transaction's.
    let db = tern::Database::open(dir.join("tern.db"), tern::Options::default()).unwrap();
    let values: Vec<i64> = db.connect().query("SELECT x FROM s", ()).unwrap().map(|row| row.get(0)).unwrap();
    assert_eq!(values, [1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_end_the_connection_with_a_protocol_error() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let running = start().await;
    // A startup packet with an impossible length, and an unknown protocol version.
    for packet in [vec![0u8, 0, 0, 2], vec![0, 0, 0, 8, 0, 9, 0, 0]] {
        let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        stream.write_all(&packet).await.unwrap();
        let mut reply = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply)).await.unwrap();
        assert!(reply.is_empty() || reply[0] == b'E', "{reply:?}");
    }
    // An SSL request is refused with 'N' (TLS is not configured), then startup goes on.
    let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    stream.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).await.unwrap();
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"N");
    // The server still serves others.
    let client = connect(&running).await;
    assert_eq!(client.query_one("SELECT 1", &[]).await.unwrap().get::<_, i64>(0), 1);
}

/// TLS: a client that asks gets a handshake with the configured certificate and then the
/// ordinary protocol; with `tls_required`, a plaintext client is refused (28000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_when_asked_and_required() {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    std::fs::write(&cert_path, certified.cert.pem()).unwrap();
    std::fs::write(&key_path, certified.key_pair.serialize_pem()).unwrap();
    let tls = tern_server::load_tls(&cert_path, &key_path).unwrap();
    let running = start_with(|config| {
        config.tls = Some(tls);
        config.tls_required = true;
    })
    .await;
    let error = connect_as(&running, "tern", None).await.err().unwrap();
    assert_eq!(code(&error), "28000");
    let cert_der = certified.cert.der().clone();
    let addr = running.addr;
    let reply = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert_der).unwrap();
        let config =
            rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).unwrap();
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"S");
        let connection =
            rustls::ClientConnection::new(std::sync::Arc::new(config), "localhost".try_into().unwrap()).unwrap();
        let mut tls = rustls::StreamOwned::new(connection, tcp);
        let params = b"user\0tern\0database\0tern\0\0";
        let mut startup = ((params.len() + 8) as i32).to_be_bytes().to_vec();
        startup.extend_from_slice(&196_608i32.to_be_bytes());
        startup.extend_from_slice(params);
        tls.write_all(&startup).unwrap();
        let query = b"SELECT 41 + 1\0";
        let mut message = vec![b'Q'];
        message.extend_from_slice(&((query.len() + 4) as i32).to_be_bytes());
        message.extend_from_slice(query);
        tls.write_all(&message).unwrap();
        tls.write_all(&[b'X', 0, 0, 0, 4]).unwrap();
        let mut reply = Vec::new();
        let _ = tls.read_to_end(&mut reply);
        reply
    })
    .await
    .unwrap();
    // AuthenticationOk, then the query's DataRow with "42".
    assert_eq!(&reply[..9], &[b'R', 0, 0, 0, 8, 0, 0, 0, 0]);
    assert!(reply.windows(2).any(|window| window == b"42"), "{reply:?}");
}

/// The catalog through the protocol: `pg_catalog` columns carry PostgreSQL's types (oid, name,
/// bool in binary; `t`/`f` in text), and `information_schema` answers a driver's questions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_catalog_over_the_protocol() {
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute(
            "CREATE TABLE items(id INT PRIMARY KEY, label VARCHAR(20) NOT NULL); CREATE TABLE notes(body TEXT)",
        )
        .await
        .unwrap();
    let rows = client
        .query(
            "SELECT c.oid, c.relname, c.relhasindex FROM pg_catalog.pg_class c
             WHERE c.relkind = 'r' AND c.relname ~ $1 ORDER BY c.relname",
            &[&"^(items|notes)$"],
        )
        .await
        .unwrap();
    let listed: Vec<(String, bool)> = rows.iter().map(|row| (row.get(1), row.get(2))).collect();
    assert_eq!(listed, [("items".to_string(), true), ("notes".to_string(), false)]);
    let oid: u32 = rows[0].get(0);
    let named: String = client.query_one("SELECT $1::int8::regclass::text", &[&i64::from(oid)]).await.unwrap().get(0);
    assert_eq!(named, "items");
    let columns = client
        .query(
            "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull
             FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 ORDER BY a.attnum",
            &[&oid],
        )
        .await
        .unwrap();
    let columns: Vec<(String, String, bool)> = columns.iter().map(|row| (row.get(0), row.get(1), row.get(2))).collect();
    assert_eq!(
        columns,
        [
            ("id".to_string(), "integer".to_string(), true),
            ("label".to_string(), "character varying(20)".to_string(), true)
        ]
    );
    // Text format (the simple protocol) spells booleans as PostgreSQL does.
    let messages = client.simple_query("SELECT relhasindex FROM pg_class WHERE relname = 'items'").await.unwrap();
    let row = messages
        .iter()
        .find_map(|message| if let SimpleQueryMessage::Row(row) = message { Some(row) } else { None })
        .unwrap();
    assert_eq!(row.get(0), Some("t"));
    let tables: Vec<String> = client
        .query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(tables, ["items", "notes"]);
    assert_eq!(code(&client.query("SELECT * FROM pg_catalog.pg_nothing", &[]).await.unwrap_err()), "42P01");
}

/// A failed transaction block accepts only ROLLBACK or ROLLBACK TO SAVEPOINT; the latter
/// returns it to a working state (psycopg's nested `conn.transaction()` blocks rely on it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_to_savepoint_recovers_a_failed_block() {
    let running = start().await;
    let client = connect(&running).await;
    client.batch_execute("CREATE TABLE sp(x INT PRIMARY KEY)").await.unwrap();
    client.batch_execute("BEGIN; INSERT INTO sp VALUES (1); SAVEPOINT before_duplicate").await.unwrap();
    assert_eq!(code(&client.execute("INSERT INTO sp VALUES (1)", &[]).await.unwrap_err()), "23505");
    assert_eq!(code(&client.query("SELECT * FROM sp", &[]).await.unwrap_err()), "25P02");
    // Through the extended protocol, as drivers send it.
    client.execute("ROLLBACK TO SAVEPOINT before_duplicate", &[]).await.unwrap();
    client.execute("INSERT INTO sp VALUES (2)", &[]).await.unwrap();
    client.batch_execute("SAVEPOINT s2; INSERT INTO sp VALUES (3); ROLLBACK TO s2; RELEASE s2; COMMIT").await.unwrap();
    let values: Vec<i32> =
        client.query("SELECT x FROM sp ORDER BY x", &[]).await.unwrap().iter().map(|row| row.get(0)).collect();
    assert_eq!(values, [1, 2]);
    assert_eq!(code(&client.batch_execute("SAVEPOINT outside").await.unwrap_err()), "25P01");
}

/// Served sessions speak PostgreSQL's dialect unless told otherwise; SERIAL keys come back
/// through RETURNING (JDBC's generated keys), and window functions run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_dialect_generated_keys_and_windows() {
    let running = start().await;
    let client = connect(&running).await;
    let dialect: String = client.query_one("SHOW tern.dialect", &[]).await.unwrap().get(0);
    assert_eq!(dialect, "postgres");
    assert_eq!(code(&client.query("SELECT 1 / 0", &[]).await.unwrap_err()), "22012");
    client.batch_execute("CREATE TABLE people(id SERIAL PRIMARY KEY, name TEXT, team INTEGER)").await.unwrap();
    let insert = client.prepare("INSERT INTO people(name, team) VALUES ($1, $2) RETURNING id").await.unwrap();
    let mut keys = Vec::new();
    for (name, team) in [("ann", 1), ("bob", 1), ("cy", 2)] {
        let id: i32 = client.query_one(&insert, &[&name, &team]).await.unwrap().get(0);
        keys.push(id);
    }
    assert_eq!(keys, [1, 2, 3]);
    let ranks: Vec<i64> = client
        .query("SELECT rank() OVER (PARTITION BY team ORDER BY name DESC) FROM people ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(ranks, [2, 1, 1]);
    // SELECT INTO and CREATE TABLE AS through the extended protocol, with parameters.
    client.execute("SELECT id, name INTO team_one FROM people WHERE team = $1", &[&1i32]).await.unwrap();
    client.execute("CREATE TABLE named AS SELECT name FROM people WHERE id > $1", &[&1i32]).await.unwrap();
    let counts: (i64, i64) = {
        let row = client
            .query_one("SELECT (SELECT count(*) FROM team_one), (SELECT count(*) FROM named)", &[])
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(counts, (2, 2));
    client.batch_execute("SET tern.dialect = sqlite").await.unwrap();
    let quotient: Option<i64> = client.query_one("SELECT 1 / 0", &[]).await.unwrap().get(0);
    assert_eq!(quotient, None);
    assert_eq!(code(&client.batch_execute("SET tern.dialect = oracle").await.unwrap_err()), "22023");
}

/// A date, timestamp, timestamptz, boolean and numeric written through the simple protocol,
/// the extended protocol in text and the extended protocol in binary read back equal through
/// each of them; bad input is refused with PostgreSQL's SQLSTATE and nothing is stored.
#[tokio::test]
async fn typed_values_round_trip_through_every_protocol() {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
    use tokio_postgres::types::Type;
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute(
            "CREATE TABLE typed(id INT PRIMARY KEY, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, ok BOOLEAN, n NUMERIC(10,2))",
        )
        .await
        .unwrap();
    let (date, stamp_text) = ("2024-02-29", "2024-02-29 10:11:12.5");
    // 1: the simple protocol, every value as a literal.
    client
        .batch_execute(&format!(
            "INSERT INTO typed VALUES (1, '{date}', '{stamp_text}', '{stamp_text}+00', 't', 12.34)"
        ))
        .await
        .unwrap();
    // 2: the extended protocol with every parameter sent as text.
    let text_insert = client
        .prepare_typed(
            "INSERT INTO typed VALUES (2, $1, $2, $3, $4, $5)",
            &[Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT],
        )
        .await
        .unwrap();
    let tz_text = format!("{stamp_text}+00");
    client.execute(&text_insert, &[&date, &stamp_text, &tz_text, &"true", &"12.34"]).await.unwrap();
    // 3: the extended protocol with binary parameters of the columns' types.
    let day = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    let stamp: NaiveDateTime = day.and_hms_micro_opt(10, 11, 12, 500_000).unwrap();
    let instant: DateTime<Utc> = stamp.and_utc();
    let number: rust_decimal::Decimal = "12.34".parse().unwrap();
    client
        .execute("INSERT INTO typed VALUES (3, $1, $2, $3, $4, $5)", &[&day, &stamp, &instant, &true, &number])
        .await
        .unwrap();
    // Read back in binary.
    for row in client.query("SELECT d, ts, tz, ok, n FROM typed ORDER BY id", &[]).await.unwrap() {
        assert_eq!(row.get::<_, NaiveDate>(0), day);
        assert_eq!(row.get::<_, NaiveDateTime>(1), stamp);
        assert_eq!(row.get::<_, DateTime<Utc>>(2), instant);
        assert!(row.get::<_, bool>(3));
        assert_eq!(row.get::<_, rust_decimal::Decimal>(4), number);
    }
    // Read back in text.
    let mut texts = Vec::new();
    for message in client.simple_query("SELECT d, ts, tz, ok, n FROM typed ORDER BY id").await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            texts.push((0..5).map(|index| row.get(index).unwrap().to_string()).collect::<Vec<_>>().join(","));
        }
    }
    let expected = format!("{date},{stamp_text},{stamp_text}+00,t,12.34");
    assert_eq!(texts, [expected.clone(), expected.clone(), expected]);
    // Each row finds the others by the values written another way.
    let matches: i64 = client
        .query_one(
            "SELECT count(*) FROM typed WHERE d = $1 AND ts = $2 AND tz = $3 AND ok = $4",
            &[&day, &stamp, &instant, &true],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(matches, 3);
    // Bad input: the SQLSTATE PostgreSQL gives, and no row.
    for (sql, state) in [
        ("INSERT INTO typed(id, d) VALUES (9, 'not a date')", "22007"),
        ("INSERT INTO typed(id, d) VALUES (9, '1997-02-29')", "22008"),
        ("INSERT INTO typed(id, ts) VALUES (9, '2024-01-01 24:00:01')", "22008"),
        ("INSERT INTO typed(id, ok) VALUES (9, 'test')", "22P02"),
        ("INSERT INTO typed(id) VALUES (3000000000)", "22003"),
        ("INSERT INTO typed(id, n) VALUES (9, 123456789.5)", "22003"),
    ] {
        assert_eq!(code(&client.batch_execute(sql).await.unwrap_err()), state, "{sql}");
    }
    assert_eq!(
        code(&client.execute(&text_insert, &[&"garbage", &stamp_text, &tz_text, &"t", &"1"]).await.unwrap_err()),
        "22007"
    );
    let count: i64 = client.query_one("SELECT count(*) FROM typed", &[]).await.unwrap().get(0);
    assert_eq!(count, 3);
    let described = client.prepare("SELECT d, tz, ok, id, '1 day'::interval FROM typed").await.unwrap();
    let types: Vec<&Type> = described.columns().iter().map(|column| column.type_()).collect();
    assert_eq!(types, [&Type::DATE, &Type::TIMESTAMPTZ, &Type::BOOL, &Type::INT4, &Type::INTERVAL]);
    // RowDescription names the table and column a result column reads (JDBC's getTableName).
    let table_oid: u32 =
        client.query_one("SELECT oid::int8 FROM pg_class WHERE relname = 'typed'", &[]).await.unwrap().get::<_, i64>(0)
            as u32;
    let origins: Vec<(Option<u32>, Option<i16>)> =
        described.columns().iter().map(|column| (column.table_oid(), column.column_id())).collect();
    assert_eq!(
        origins[..4],
        [
            (Some(table_oid), Some(2)),
            (Some(table_oid), Some(4)),
            (Some(table_oid), Some(5)),
            (Some(table_oid), Some(1))
        ]
    );
    assert_eq!(origins[4], (None, None));
}

/// COPY in PostgreSQL's binary format, both ways (pgx's CopyFrom and asyncpg's copy use only
/// this format), with typed values and NULLs; a malformed stream is refused and stores nothing.
#[tokio::test]
async fn binary_copy_in_and_out() {
    use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
    use tokio_postgres::types::{ToSql, Type};
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute("CREATE TABLE moves(id INT PRIMARY KEY, who TEXT, day DATE, ok BOOLEAN, amount NUMERIC(10,2))")
        .await
        .unwrap();
    let types = [Type::INT4, Type::TEXT, Type::DATE, Type::BOOL, Type::NUMERIC];
    let sink = client.copy_in("COPY moves FROM STDIN (FORMAT binary)").await.unwrap();
    let writer = BinaryCopyInWriter::new(sink, &types);
    futures_util::pin_mut!(writer);
    let day = chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    for id in 0..100i32 {
        let who = format!("name {id}");
        let amount: rust_decimal::Decimal = format!("{id}.25").parse().unwrap();
        let ok = id % 2 == 0;
        let who_or_null: Option<&str> = if id == 7 { None } else { Some(who.as_str()) };
        let row: [&(dyn ToSql + Sync); 5] = [&id, &who_or_null, &day, &ok, &amount];
        writer.as_mut().write(&row).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 100);
    let row = client.query_one("SELECT count(*), count(who), sum(amount) FROM moves", &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 100);
    assert_eq!(row.get::<_, i64>(1), 99);
    assert_eq!(row.get::<_, rust_decimal::Decimal>(2), "4975.00".parse::<rust_decimal::Decimal>().unwrap());
    // Out again in binary, read back with the same types.
    let stream = client
        .copy_out("COPY (SELECT id, who, day, ok, amount FROM moves ORDER BY id) TO STDOUT (FORMAT binary)")
        .await
        .unwrap();
    let rows = BinaryCopyOutStream::new(stream, &types);
    futures_util::pin_mut!(rows);
    let mut count = 0;
    while let Some(row) = rows.next().await {
        let row = row.unwrap();
        let id: i32 = row.get(0);
        assert_eq!(row.get::<Option<&str>>(1).is_none(), id == 7);
        assert_eq!(row.get::<chrono::NaiveDate>(2), day);
        assert_eq!(row.get::<bool>(3), id % 2 == 0);
        assert_eq!(row.get::<rust_decimal::Decimal>(4), format!("{id}.25").parse::<rust_decimal::Decimal>().unwrap());
        count += 1;
    }
    assert_eq!(count, 100);
    // A stream that is not binary COPY data: 22P04, nothing stored.
    let sink = client.copy_in::<_, bytes::Bytes>("COPY moves FROM STDIN (FORMAT binary)").await.unwrap();
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"1\tnot binary\n")).await.unwrap();
    assert_eq!(code(&sink.finish().await.unwrap_err()), "22P04");
    let total: i64 = client.query_one("SELECT count(*) FROM moves", &[]).await.unwrap().get(0);
    assert_eq!(total, 100);
}

/// An enum label as tokio-postgres sends and reads it in binary: the label's bytes, for any
/// enum type (which the driver learns from `pg_type` and `pg_enum`).
#[derive(Debug, PartialEq)]
struct Label(String);

impl tokio_postgres::types::ToSql for Label {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }

    tokio_postgres::types::to_sql_checked!();
}

impl<'a> tokio_postgres::types::FromSql<'a> for Label {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Label, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Label(std::str::from_utf8(raw)?.to_string()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }
}

#[tokio::test]
async fn enum_values_round_trip_through_every_protocol() {
    use tokio_postgres::types::{Kind, Type};
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute(
            "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
             CREATE TABLE feeling(id INT PRIMARY KEY, m mood);
             INSERT INTO feeling VALUES (1, 'happy')",
        )
        .await
        .unwrap();
    // The extended protocol with the parameter in text, then in binary as the enum type.
    let text_insert = client.prepare_typed("INSERT INTO feeling VALUES (2, $1)", &[Type::TEXT]).await.unwrap();
    client.execute(&text_insert, &[&"happy"]).await.unwrap();
    let binary_insert = client.prepare("INSERT INTO feeling VALUES (3, $1)").await.unwrap();
    let parameter = &binary_insert.params()[0];
    assert_eq!(parameter.name(), "mood");
    assert_eq!(parameter.kind(), &Kind::Enum(vec!["sad".into(), "ok".into(), "happy".into()]));
    client.execute(&binary_insert, &[&Label("happy".into())]).await.unwrap();
    // A label the type lacks is refused and stores nothing, in either format.
    let error = client.execute(&binary_insert, &[&Label("glad".into())]).await.unwrap_err();
    assert_eq!(code(&error), "22P02");
    let error = client.execute(&text_insert, &[&"glad"]).await.unwrap_err();
    assert_eq!(code(&error), "22P02");
    // Read back in binary and in text.
    let rows = client.query("SELECT m FROM feeling ORDER BY id", &[]).await.unwrap();
    let labels: Vec<Label> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(labels, [Label("happy".into()), Label("happy".into()), Label("happy".into())]);
    let mut texts = Vec::new();
    for message in client.simple_query("SELECT m FROM feeling ORDER BY id").await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            texts.push(row.get(0).unwrap().to_string());
        }
    }
    assert_eq!(texts, ["happy", "happy", "happy"]);
    // Each finds the others, by a parameter of either format.
    let by_text: i64 =
        client.query_one("SELECT count(*) FROM feeling WHERE m = $1::text::mood", &[&"happy"]).await.unwrap().get(0);
    let by_label: i64 =
        client.query_one("SELECT count(*) FROM feeling WHERE m = $1", &[&Label("happy".into())]).await.unwrap().get(0);
    assert_eq!((by_text, by_label), (3, 3));
}

/// A `pair` row value (`n integer, label text`) in PostgreSQL's binary record form.
#[derive(Debug, PartialEq)]
struct Pair(i32, String);

impl tokio_postgres::types::ToSql for Pair {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&2i32.to_be_bytes());
        out.extend_from_slice(&23u32.to_be_bytes());
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(&self.0.to_be_bytes());
        out.extend_from_slice(&25u32.to_be_bytes());
        out.extend_from_slice(&(self.1.len() as i32).to_be_bytes());
        out.extend_from_slice(self.1.as_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Composite(_))
    }

    tokio_postgres::types::to_sql_checked!();
}

impl<'a> tokio_postgres::types::FromSql<'a> for Pair {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Pair, Box<dyn std::error::Error + Sync + Send>> {
        let int = |at: usize| i32::from_be_bytes(raw[at..at + 4].try_into().unwrap());
        assert_eq!((int(0), int(4) as u32, int(8)), (2, 23, 4), "the count, then n as int4");
        let n = int(12);
        assert_eq!(int(16) as u32, 25, "label as text");
        let length = int(20) as usize;
        Ok(Pair(n, std::str::from_utf8(&raw[24..24 + length])?.to_string()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Composite(_))
    }
}

#[tokio::test]
async fn composite_values_round_trip_through_every_protocol() {
    use tokio_postgres::types::{Kind, Type};
    let running = start().await;
    let client = connect(&running).await;
    client
        .batch_execute(
            "CREATE TYPE pair AS (n integer, label text);
             CREATE TABLE pairs(id INT PRIMARY KEY, p pair);
             INSERT INTO pairs VALUES (1, '(7,\"seven up\")')",
        )
        .await
        .unwrap();
    let text_insert = client.prepare_typed("INSERT INTO pairs VALUES (2, $1)", &[Type::TEXT]).await.unwrap();
    client.execute(&text_insert, &[&"(7,\"seven up\")"]).await.unwrap();
    let binary_insert = client.prepare("INSERT INTO pairs VALUES (3, $1)").await.unwrap();
    let parameter = &binary_insert.params()[0];
    assert_eq!(parameter.name(), "pair");
    let Kind::Composite(fields) = parameter.kind() else { panic!("{:?}", parameter.kind()) };
    let described: Vec<(&str, &Type)> = fields.iter().map(|field| (field.name(), field.type_())).collect();
    assert_eq!(described, [("n", &Type::INT4), ("label", &Type::TEXT)]);
    client.execute(&binary_insert, &[&Pair(7, "seven up".into())]).await.unwrap();
    // Malformed rows are refused and store nothing.
    let error = client.execute(&text_insert, &[&"(seven,x)"]).await.unwrap_err();
    assert_eq!(code(&error), "22P02");
    let error = client.execute(&text_insert, &[&"(7)"]).await.unwrap_err();
    assert_eq!(code(&error), "22P02");
    let rows = client.query("SELECT p FROM pairs ORDER BY id", &[]).await.unwrap();
    let pairs: Vec<Pair> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(pairs, [Pair(7, "seven up".into()), Pair(7, "seven up".into()), Pair(7, "seven up".into())]);
    let mut texts = Vec::new();
    for message in client.simple_query("SELECT p, (p).n, (p).label FROM pairs ORDER BY id").await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            texts.push((0..3).map(|at| row.get(at).unwrap().to_string()).collect::<Vec<_>>().join("|"));
        }
    }
    assert_eq!(texts, ["(7,\"seven up\")|7|seven up"; 3]);
    let matching: i64 = client
        .query_one("SELECT count(*) FROM pairs WHERE p = $1", &[&Pair(7, "seven up".into())])
        .await
        .unwrap()
        .get(0);
    assert_eq!(matching, 3);
}

#[tokio::test]
async fn show_all_lists_every_setting() {
    let running = start().await;
    let client = connect(&running).await;
    client.batch_execute("SELECT set_config('application_name', 'listing', false)").await.unwrap();
    let mut settings = Vec::new();
    for message in client.simple_query("SHOW ALL").await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            assert_eq!(row.len(), 3, "name, setting, description");
            settings.push((row.get(0).unwrap().to_string(), row.get(1).unwrap().to_string()));
        }
    }
    assert!(settings.contains(&("application_name".to_string(), "listing".to_string())), "{settings:?}");
    assert!(settings.iter().any(|(name, _)| name == "timezone"));
}

/// Results larger than the statement's memory limit reach the client: the rows go out as the
/// engine produces them (a scan streams, a sort spills), by both protocols, in order and typed
/// as a gathered result's are. Gathered whole (a portal read in pieces), the same result
/// still fails with 53200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_past_the_memory_limit_stream_to_the_client() {
    let running = start_with(|config| config.options.query_memory_limit = 1 << 20).await;
    let mut client = connect(&running).await;
    client.batch_execute("CREATE TABLE big(id INT PRIMARY KEY, k INT, pad TEXT)").await.unwrap();
    // 20,000 rows of 200 bytes: several times the limit (inserted a part at a time: an INSERT
    // holds its rows).
    for part in 0..10 {
        let (first, last) = (part * 2000 + 1, part * 2000 + 2000);
        client
            .batch_execute(&format!(
                "INSERT INTO big SELECT v, (v * 7919) % 1000, lpad(CAST(v AS TEXT), 200, 'x')
                 FROM generate_series({first}, {last}) AS g(v)"
            ))
            .await
            .unwrap();
    }
    let messages = client.simple_query("SELECT id, k, pad FROM big ORDER BY k DESC, id").await.unwrap();
    let rows: Vec<_> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some((row.get(0).unwrap().to_string(), row.get(1).unwrap().to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(rows.len(), 20000);
    assert_eq!(rows[0], ("321".to_string(), "999".to_string()));
    assert!(messages.iter().any(|message| matches!(message, SimpleQueryMessage::CommandComplete(20000))));
    // The extended protocol (binary results), a plain scan and a sort.
    let scanned = client.query("SELECT id, pad FROM big", &[]).await.unwrap();
    assert_eq!(scanned.len(), 20000);
    assert_eq!((scanned[19999].get::<_, i32>(0), scanned[19999].get::<_, String>(1).len()), (20000, 200));
    let sorted = client.query("SELECT k, id FROM big ORDER BY pad DESC", &[]).await.unwrap();
    let ids: Vec<i32> = sorted.iter().map(|row| row.get(1)).collect();
    let mut expected: Vec<i32> = (1..=20000).collect();
    expected.sort_by_key(|id| std::cmp::Reverse(format!("{id:x>200}")));
    assert!(ids == expected, "the sorted ids differ");
    // A portal read a few rows at a time holds its whole result: past the limit, 53200.
    let transaction = client.build_transaction().start().await.unwrap();
    let portal = transaction.bind("SELECT id, pad FROM big", &[]).await.unwrap();
    let error = transaction.query_portal(&portal, 100).await.unwrap_err();
    assert_eq!(code(&error), "53200");
}
