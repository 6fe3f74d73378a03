//! The server: accepting connections, startup and authentication, the message loop of each
//! connection, cancel requests, limits and timeouts, priority classes, metrics and shutdown.

use crate::auth::{Exchange, ScramError, Verifier};
use crate::backend::{Backend, RoleChange};
use crate::metrics::Metrics;
use crate::protocol::{self, Out, ProtocolError, Reader, Startup};
use crate::watchdog::Watchdog;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tern_sql::Error;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// COPY data handed to the engine at a time.
const COPY_CHUNK: usize = 256 << 10;

/// How clients authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMethod {
    /// Clients on the loopback interface connect as any user without a password, unless the
    /// user has one; other clients need a password (SCRAM-SHA-256).
    #[default]
    TrustLoopback,
    /// Every client needs a password.
    Scram,
}

/// The server's settings.
#[derive(Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// The data directory (the database is `tern.db` in it).
    pub data: PathBuf,
    pub options: tern::Options,
    pub auth: AuthMethod,
    /// Users from a configuration file: name and password verifier.
    pub users: HashMap<String, Verifier>,
    pub max_connections: usize,
    pub statement_timeout: Option<Duration>,
    pub idle_in_transaction_timeout: Option<Duration>,
    /// Largest message a client may send.
    pub max_message_size: usize,
    /// Serve Prometheus metrics here.
    pub metrics: Option<SocketAddr>,
    /// Run best-effort statements on low-priority threads (false: all work is equal).
    pub priority: bool,
    /// How long shutdown waits for running statements before interrupting them.
    pub shutdown_grace: Duration,
    /// TLS for clients that ask for it ([`crate::load_tls`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Refuse clients that do not use TLS.
    pub tls_required: bool,
    /// The dialect sessions start in (`SET tern.dialect` changes one session's).
    pub dialect: tern_sql::Dialect,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "127.0.0.1:5433".parse().expect("a valid address"),
            data: PathBuf::from("tern-data"),
            options: tern::Options::default(),
            auth: AuthMethod::default(),
            users: HashMap::new(),
            max_connections: 100,
            statement_timeout: None,
            idle_in_transaction_timeout: None,
            max_message_size: 256 << 20,
            metrics: None,
            priority: true,
            dialect: tern_sql::Dialect::Postgres,
            shutdown_grace: Duration::from_secs(30),
            tls: None,
            tls_required: false,
        }
    }
}

/// Work classes (SharedDB's priority classes): latency-sensitive statements run on ordinary
/// threads; best-effort ones (`SET tern.priority = best_effort`) on a few threads of the
/// lowest CPU priority, so the operating system runs latency-sensitive work first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Latency,
    BestEffort,
}

/// What all connections share.
pub struct Shared {
    pub db: tern::Database,
    pub config: Config,
    pub metrics: Metrics,
    cancel: Mutex<HashMap<i32, (i32, tern_sql::InterruptHandle)>>,
    next_pid: AtomicI32,
    connections: AtomicUsize,
    best_effort: Option<crate::pool::LowPriorityPool>,
    watchdog: Watchdog,
    shutting_down: AtomicBool,
}

impl Shared {
    pub(crate) fn new(db: tern::Database, config: Config, watchdog: Watchdog) -> Shared {
        // The cores the resource manager grants (the CPU quota and set), else the machine's.
        let cores = db
            .resources()
            .map(|allotment| allotment.cores)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let best_effort = config.priority.then(|| crate::pool::LowPriorityPool::new(cores.saturating_sub(1).max(1)));
        Shared {
            db,
            config,
            metrics: Metrics::default(),
            cancel: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(std::process::id() as i32 & 0xffff),
            connections: AtomicUsize::new(0),
            best_effort,
            watchdog,
            shutting_down: AtomicBool::new(false),
        }
    }
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
}

impl Server {
    /// Opens the database and binds the address.
    pub async fn bind(config: Config) -> Result<Server, crate::ServeError> {
        std::fs::create_dir_all(&config.data)
            .map_err(|error| crate::ServeError::Io(format!("creating {}: {error}", config.data.display())))?;
        let path = config.data.join("tern.db");
        let db = tern::Database::open(&path, config.options.clone())
            .map_err(|error| crate::ServeError::Database(format!("opening {}: {error}", path.display())))?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|error| crate::ServeError::Io(format!("listening on {}: {error}", config.listen)))?;
        let shared = Arc::new(Shared::new(db, config, Watchdog::start()));
        Ok(Server { shared, listener })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Serves until `shutdown` becomes true: then stops accepting, lets running statements
    /// finish (interrupting them after the grace period), tells idle clients, rolls back open
    /// transactions, and flushes the database.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) -> Result<(), crate::ServeError> {
        let Server { shared, listener } = self;
        if let Some(address) = shared.config.metrics {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|error| crate::ServeError::Io(format!("metrics on {address}: {error}")))?;
            tokio::spawn(crate::metrics::serve(listener, shared.clone(), shutdown.clone()));
        }
        // A thread per connection, as PostgreSQL has a process per connection: a request is
        // read, run and answered on one thread, with no hand-off on the way.
        let mut threads: Vec<std::thread::JoinHandle<()>> = Vec::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let shared = shared.clone();
                        let spawned = stream.into_std().and_then(|stream| {
                            stream.set_nonblocking(false)?;
                            stream.set_nodelay(true)?;
                            std::thread::Builder::new()
                                .name(format!("tern-conn-{peer}"))
                                .spawn(move || connection(stream, peer, &shared))
                        });
                        match spawned {
                            Ok(thread) => threads.push(thread),
                            Err(error) => tracing::warn!("connection from {peer}: {error}"),
                        }
                        threads.retain(|thread| !thread.is_finished());
                    }
                    Err(error) => tracing::warn!("accept failed: {error}"),
                },
                _ = shutdown.changed() => break,
            }
            if *shutdown.borrow() {
                break;
            }
        }
        drop(listener);
        // Idle connections notice within a poll interval; running statements finish, and
        // after the grace period they are interrupted.
        shared.shutting_down.store(true, Ordering::Release);
        let grace = shared.config.shutdown_grace;
        let waiting = shared.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + grace;
            while threads.iter().any(|thread| !thread.is_finished()) {
                if Instant::now() >= deadline {
                    for (_, handle) in waiting.cancel.lock().values() {
                        handle.interrupt();
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await
        .map_err(|error| crate::ServeError::Database(error.to_string()))?;
        let db = shared.db.clone();
        tokio::task::spawn_blocking(move || db.engine().txn_db().flush())
            .await
            .map_err(|error| crate::ServeError::Database(error.to_string()))?
            .map_err(|error| crate::ServeError::Database(format!("flushing at shutdown: {error}")))?;
        Ok(())
    }
}

/// Whether `peer` is on the loopback interface.
fn is_loopback(peer: &SocketAddr) -> bool {
    match peer {
        SocketAddr::V4(v4) => v4.ip().is_loopback(),
        SocketAddr::V6(v6) => v6.ip().is_loopback() || v6.ip().to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Reads a role's password verifier: `None` no such role, `Some(None)` a role without one.
fn role(shared: &Shared, name: &str) -> Result<Option<Option<Verifier>>, Error> {
    if let Some(verifier) = shared.config.users.get(name) {
        return Ok(Some(Some(verifier.clone())));
    }
    let mut txn = shared.db.engine().txn_db().begin();
    let key = role_key(name);
    Ok(txn.get(&key)?.map(|value| Verifier::decode(&String::from_utf8_lossy(&value))))
}

fn role_key(name: &str) -> Vec<u8> {
    let mut key = tern_exec::codec::ROLE_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// CREATE / ALTER / DROP USER: roles live in the database's reserved key space, with their
/// password verifier (never the password).
pub fn write_role(shared: &Shared, name: &str, password: Option<&str>, change: RoleChange) -> Result<(), Error> {
    if shared.config.users.contains_key(name) {
        return Err(Error::new("42501", format!("role \"{name}\" is defined in the server's users file")));
    }
    let mut txn = shared.db.engine().txn_db().begin();
    let key = role_key(name);
    let exists = txn.get(&key)?.is_some();
    match change {
        RoleChange::Create if exists => return Err(Error::new("42710", format!("role \"{name}\" already exists"))),
        RoleChange::Alter | RoleChange::Drop if !exists => {
            return Err(Error::new("42704", format!("role \"{name}\" does not exist")));
        }
        RoleChange::Drop => txn.delete(&key)?,
        RoleChange::Create | RoleChange::Alter => {
            let verifier = password.map(|password| Verifier::new(password).encode()).unwrap_or_default();
            txn.put(&key, verifier.as_bytes())?;
        }
    }
    txn.commit()?;
    Ok(())
}

/// How often a connection waiting for a message looks at shutdown and idle timeouts.
const POLL: Duration = Duration::from_millis(100);

/// Longest wait for the rest of a message once its first byte came.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads from a socket with a short read timeout, retrying until `MESSAGE_TIMEOUT`: for the
/// parts of a message after its first byte.
struct Patient<'r, R> {
    inner: &'r mut R,
}

impl<R: Read> Read for Patient<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let started = Instant::now();
        loop {
            match self.inner.read(buf) {
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) && started.elapsed() < MESSAGE_TIMEOUT => {}
                other => return other,
            }
        }
    }
}

/// A connection's socket, plain or wrapped in TLS after an SSLRequest.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
    /// Only while being upgraded.
    Upgrading,
}

/// The connection's stream, shared by its buffered reader and writer and by the statement
/// that sends a long result as it runs (one thread uses it at a time: the connection's, or
/// the statement's while the connection's waits for it).
#[derive(Clone)]
struct SharedStream(Arc<parking_lot::Mutex<Stream>>);

impl Read for SharedStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut *self.0.lock() {
            Stream::Plain(tcp) => tcp.read(buf),
            Stream::Tls(tls) => tls.read(buf),
            Stream::Upgrading => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }
}

impl Write for SharedStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut *self.0.lock() {
            Stream::Plain(tcp) => tcp.write(buf),
            Stream::Tls(tls) => tls.write(buf),
            Stream::Upgrading => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut *self.0.lock() {
            Stream::Plain(tcp) => tcp.flush(),
            Stream::Tls(tls) => tls.flush(),
            Stream::Upgrading => Ok(()),
        }
    }
}

impl SharedStream {
    fn is_tls(&self) -> bool {
        matches!(&*self.0.lock(), Stream::Tls(_))
    }

    /// Starts TLS on the plain socket (the handshake runs on the first read).
    fn upgrade(&self, config: Arc<rustls::ServerConfig>) -> Result<(), Ended> {
        let mut stream = self.0.lock();
        let Stream::Plain(tcp) = std::mem::replace(&mut *stream, Stream::Upgrading) else {
            return Err(ProtocolError::invalid("SSLRequest after TLS started").into());
        };
        let connection =
            rustls::ServerConnection::new(config).map_err(|error| Ended::Fatal("08P01", format!("TLS: {error}")))?;
        *stream = Stream::Tls(Box::new(rustls::StreamOwned::new(connection, tcp)));
        Ok(())
    }

    fn close(&self) {
        match &mut *self.0.lock() {
            Stream::Plain(tcp) => {
                let _ = tcp.shutdown(std::net::Shutdown::Both);
            }
            Stream::Tls(tls) => {
                tls.conn.send_close_notify();
                let _ = tls.flush();
                let _ = tls.sock.shutdown(std::net::Shutdown::Both);
            }
            Stream::Upgrading => {}
        }
    }
}

/// A connection's life: startup, authentication, then messages until Terminate.
fn connection(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let _ = stream.set_read_timeout(Some(POLL));
    let stream = SharedStream(Arc::new(parking_lot::Mutex::new(Stream::Plain(stream))));
    let mut read = BufReader::with_capacity(64 << 10, stream.clone());
    let mut write = BufWriter::with_capacity(64 << 10, stream.clone());
    if let Err(error) = session(&mut read, &mut write, peer, shared) {
        // Tell the client why, when it can still hear it.
        let mut out = Out::default();
        match &error {
            Ended::Protocol(ProtocolError::Closed | ProtocolError::Io(_)) => {}
            Ended::Protocol(protocol) => out.error("FATAL", protocol.sqlstate(), &protocol.to_string(), None),
            Ended::Fatal(code, message) => out.error("FATAL", code, message, None),
        }
        if !out.is_empty() {
            let _ = write.write_all(&out.take());
            let _ = write.flush();
        }
    }
    let _ = write.flush();
    stream.close();
}

/// Why a connection ended abnormally.
pub(crate) enum Ended {
    Protocol(ProtocolError),
    Fatal(&'static str, String),
}

impl From<ProtocolError> for Ended {
    fn from(error: ProtocolError) -> Ended {
        Ended::Protocol(error)
    }
}

impl From<std::io::Error> for Ended {
    fn from(error: std::io::Error) -> Ended {
        Ended::Protocol(ProtocolError::Io(error))
    }
}

/// Releases a connection's slot and cancel key when it ends.
struct Registered<'s> {
    shared: &'s Shared,
    pid: i32,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.shared.cancel.lock().remove(&self.pid);
        self.shared.connections.fetch_sub(1, Ordering::AcqRel);
        self.shared.metrics.connection_closed();
    }
}

/// Waits for the next message's first byte, watching for shutdown and the idle limit.
fn next_message(
    read: &mut impl Read,
    shared: &Shared,
    idle_limit: Option<Duration>,
    limit: usize,
) -> Result<protocol::Message, Ended> {
    let started = Instant::now();
    let mut tag = [0u8; 1];
    loop {
        match read.read(&mut tag) {
            Ok(0) => return Err(ProtocolError::Closed.into()),
            Ok(_) => break,
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(error) => return Err(error.into()),
        }
        if shared.shutting_down.load(Ordering::Acquire) {
            return Err(Ended::Fatal("57P01", "terminating connection due to administrator command".into()));
        }
        if idle_limit.is_some_and(|limit| started.elapsed() >= limit) {
            return Err(Ended::Fatal("25P03", "terminating connection due to idle-in-transaction timeout".into()));
        }
    }
    Ok(protocol::read_message_after(&mut Patient { inner: read }, tag[0], limit)?)
}

fn session(
    read: &mut BufReader<SharedStream>,
    write: &mut BufWriter<SharedStream>,
    peer: SocketAddr,
    shared: &Arc<Shared>,
) -> Result<(), Ended> {
    // Startup: refuse encryption requests (TLS is not configured), answer cancel requests.
    let started = Instant::now();
    let params = loop {
        let startup = match protocol::read_startup(&mut Patient { inner: read }) {
            Err(ProtocolError::Io(error)) if started.elapsed() >= MESSAGE_TIMEOUT => {
                return Err(Ended::Fatal("08P01", format!("timeout waiting for the startup packet ({error})")));
            }
            other => other?,
        };
        match startup {
            Startup::Ssl => match &shared.config.tls {
                Some(config) if !read.get_ref().is_tls() => {
                    if !read.buffer().is_empty() {
                        return Err(ProtocolError::invalid("data sent after SSLRequest before the answer").into());
                    }
                    write.write_all(b"S")?;
                    write.flush()?;
                    read.get_ref().upgrade(config.clone())?;
                }
                _ => {
                    write.write_all(b"N")?;
                    write.flush()?;
                }
            },
            Startup::GssEnc => {
                write.write_all(b"N")?;
                write.flush()?;
            }
            Startup::Cancel { pid, secret } => {
                if let Some((expected, handle)) = shared.cancel.lock().get(&pid)
                    && *expected == secret
                {
                    handle.interrupt();
                }
                return Ok(());
            }
            Startup::Start { params } => break params,
        }
    };
    if shared.config.tls_required && !read.get_ref().is_tls() {
        return Err(Ended::Fatal("28000", "the server requires TLS (sslmode=require)".into()));
    }
    let param = |name: &str| params.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    let user = param("user")
        .ok_or_else(|| Ended::Fatal("28000", "no PostgreSQL user name specified in startup packet".into()))?;
    let database = param("database").filter(|name| !name.is_empty()).unwrap_or_else(|| user.clone());
    if param("replication").is_some_and(|value| value != "false" && value != "0") {
        return Err(Ended::Fatal("0A000", "replication connections are not supported".into()));
    }
    // The connection limit holds before authentication, as in PostgreSQL.
    if shared.connections.fetch_add(1, Ordering::AcqRel) >= shared.config.max_connections {
        shared.connections.fetch_sub(1, Ordering::AcqRel);
        return Err(Ended::Fatal("53300", "sorry, too many clients already".into()));
    }
    let pid = shared.next_pid.fetch_add(1, Ordering::Relaxed);
    shared.metrics.connection_opened();
    let _registered = Registered { shared, pid };
    authenticate(read, write, peer, shared, &user)?;

    let mut out = Out::default();
    let backend = Backend::new(shared.clone(), &user, &database, &params)
        .map_err(|error| Ended::Fatal(error.sqlstate, error.message))?;
    backend.note_connection(pid, peer);
    let secret: i32 = rand::random();
    shared.cancel.lock().insert(pid, (secret, backend.interrupt_handle()));
    out.authentication(0, &[]);
    for (name, value) in backend.startup_parameters() {
        out.parameter_status(&name, &value);
    }
    out.backend_key(pid, secret);
    out.ready(backend.status());
    write.write_all(&out.take())?;
    write.flush()?;
    // A long result goes to the socket as its statement runs, past the buffered writer.
    let drain: Box<dyn Write + Send> = Box::new(write.get_ref().clone());
    message_loop(read, write, Some(drain), backend, shared)
}

/// Reads and answers messages until Terminate or the end of the stream (the fuzz target
/// `pgwire` runs a session through this too).
pub(crate) fn message_loop(
    read: &mut impl Read,
    write: &mut impl Write,
    drain: Option<Box<dyn Write + Send>>,
    backend: Backend,
    shared: &Arc<Shared>,
) -> Result<(), Ended> {
    let mut out = Out::with_drain(drain);
    let result = answer_messages(read, write, &mut out, backend, shared);
    // Answers not yet sent when the loop ends (Terminate, or an error) still go out.
    if !out.is_empty() {
        let _ = write.write_all(&out.take());
    }
    result
}

/// The message loop's body: answers wait in `out` (see [`message_loop`]).
fn answer_messages(
    read: &mut impl Read,
    write: &mut impl Write,
    out: &mut Out,
    mut backend: Backend,
    shared: &Arc<Shared>,
) -> Result<(), Ended> {
    let limit = shared.config.max_message_size;
    let mut copy_buffer = Vec::new();
    loop {
        let idle_limit = if backend.status() != b'I' { backend.idle_in_transaction_timeout() } else { None };
        let message = match next_message(read, shared, idle_limit, limit) {
            Err(Ended::Protocol(ProtocolError::Closed)) => return Ok(()),
            other => other?,
        };
        let mut flush = false;
        if backend.in_copy() && !matches!(message.tag, b'd' | b'c' | b'f') {
            // During COPY FROM STDIN, Flush and Sync are ignored (an extended-protocol client
            // sends its Sync right after Execute); any other message aborts the copy.
            if matches!(message.tag, b'S' | b'H') {
                write.write_all(&out.take())?;
                write.flush()?;
                continue;
            }
            let reason = format!("unexpected message type {:?} during COPY", message.tag as char);
            backend = run(backend, shared, move |backend, out| backend.copy_end(Some(reason), out), out)?.0;
        }
        match message.tag {
            b'Q' => {
                let sql = Reader::new(&message.body).cstr()?;
                backend = run(backend, shared, move |backend, out| backend.simple_query(&sql, out), out)?.0;
                flush = true;
            }
            b'E' => {
                let body = message.body;
                let (returned, result) =
                    run(backend, shared, move |backend, out| backend.extended(b'E', &body, out), out)?;
                backend = returned;
                result?;
            }
            b'P' | b'B' | b'D' | b'C' | b'S' => {
                backend.extended(message.tag, &message.body, out)?;
                flush = message.tag == b'S';
            }
            b'H' => flush = true,
            b'd' => {
                // Rows go to the engine in chunks: clients often send a row per message.
                if backend.in_copy() {
                    copy_buffer.extend_from_slice(&message.body);
                    if copy_buffer.len() >= COPY_CHUNK {
                        let data = std::mem::take(&mut copy_buffer);
                        backend = run(backend, shared, move |backend, _| backend.copy_data(&data), out)?.0;
                    }
                }
            }
            b'c' | b'f' => {
                if backend.in_copy() {
                    let failure = (message.tag == b'f')
                        .then(|| Reader::new(&message.body).cstr().unwrap_or_else(|_| "(unreadable message)".into()));
                    let data = std::mem::take(&mut copy_buffer);
                    let work = move |backend: &mut Backend, out: &mut Out| {
                        backend.copy_data(&data);
                        backend.copy_end(failure, out)
                    };
                    backend = run(backend, shared, work, out)?.0;
                    flush = true;
                }
            }
            b'X' => return Ok(()),
            b'p' => return Err(ProtocolError::invalid("unexpected password message").into()),
            other => return Err(ProtocolError::invalid(format!("invalid frontend message type {other}")).into()),
        }
        // Answers wait in `out` until a flush, so that `write` holds nothing unsent when a
        // statement writes a long result past it, straight to the socket.
        if flush || out.buf.len() >= OUT_HELD_BYTES {
            write.write_all(&out.take())?;
            write.flush()?;
        }
    }
}

/// Bytes of answers the message loop holds before it sends them without waiting for a flush.
const OUT_HELD_BYTES: usize = 1 << 20;

/// Runs `work` on the backend with the statement timeout armed: on this thread for
/// latency-sensitive work, on a low-priority thread for best-effort work.
fn run<T: Send + 'static>(
    mut backend: Backend,
    shared: &Arc<Shared>,
    work: impl FnOnce(&mut Backend, &mut Out) -> T + Send + 'static,
    out: &mut Out,
) -> Result<(Backend, T), Ended> {
    let alarm = backend
        .statement_timeout()
        .map(|timeout| shared.watchdog.arm(timeout, backend.interrupt_handle(), backend.timed_out.clone()));
    let result = match (&shared.best_effort, backend.priority()) {
        (Some(pool), Priority::BestEffort) => {
            let mut buffer = std::mem::take(out);
            let (sender, receiver) = std::sync::mpsc::channel();
            pool.spawn(Box::new(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut backend, &mut buffer)));
                let _ = sender.send(result.map(|result| (backend, buffer, result)));
            }));
            match receiver.recv() {
                Ok(Ok((backend, buffer, result))) => {
                    *out = buffer;
                    Ok((backend, result))
                }
                _ => Err(Ended::Fatal("XX000", "internal error: the statement's thread failed".into())),
            }
        }
        _ => {
            let result = work(&mut backend, out);
            Ok((backend, result))
        }
    };
    if let Some(alarm) = alarm {
        shared.watchdog.disarm(alarm);
    }
    result
}

/// Authenticates the client as `user`: trust on loopback for users without a password (unless
/// `--auth scram`), SCRAM-SHA-256 otherwise. Unknown users and wrong passwords get the same
/// answer (28P01).
fn authenticate(
    read: &mut BufReader<SharedStream>,
    write: &mut BufWriter<SharedStream>,
    peer: SocketAddr,
    shared: &Shared,
    user: &str,
) -> Result<(), Ended> {
    let verifier = match role(shared, user) {
        Ok(Some(verifier)) => verifier,
        Ok(None) => None,
        Err(error) => return Err(Ended::Fatal(error.sqlstate, error.message)),
    };
    if verifier.is_none() && shared.config.auth == AuthMethod::TrustLoopback && is_loopback(&peer) {
        return Ok(());
    }
    let failed = || Ended::Fatal("28P01", format!("password authentication failed for user \"{user}\""));
    let mut out = Out::default();
    out.authentication(10, b"SCRAM-SHA-256\0\0");
    write.write_all(&out.take())?;
    write.flush()?;
    let message = protocol::read_message(&mut Patient { inner: read }, 64 << 10)?;
    if message.tag != b'p' {
        return Err(ProtocolError::invalid("expected a SASL initial response").into());
    }
    let mut reader = Reader::new(&message.body);
    let mechanism = reader.cstr()?;
    if mechanism != "SCRAM-SHA-256" {
        return Err(Ended::Fatal("28000", format!("SASL mechanism {mechanism} is not supported (use SCRAM-SHA-256)")));
    }
    let first = reader.value()?.ok_or_else(|| ProtocolError::invalid("empty SASL initial response"))?;
    let first = std::str::from_utf8(first).map_err(|_| ProtocolError::invalid("SASL message is not UTF-8"))?;
    let (exchange, server_first) = Exchange::start(verifier.as_ref(), first).map_err(|error| match error {
        ScramError::Malformed(message) => Ended::Fatal("08P01", message),
        ScramError::WrongPassword => failed(),
    })?;
    out.authentication(11, server_first.as_bytes());
    write.write_all(&out.take())?;
    write.flush()?;
    let message = protocol::read_message(&mut Patient { inner: read }, 64 << 10)?;
    if message.tag != b'p' {
        return Err(ProtocolError::invalid("expected a SASL response").into());
    }
    let last = std::str::from_utf8(&message.body).map_err(|_| ProtocolError::invalid("SASL message is not UTF-8"))?;
    match exchange.finish(last) {
        Ok(server_final) => {
            out.authentication(12, server_final.as_bytes());
            write.write_all(&out.take())?;
            Ok(())
        }
        Err(ScramError::WrongPassword) => Err(failed()),
        Err(ScramError::Malformed(message)) => Err(Ended::Fatal("08P01", message)),
    }
}
