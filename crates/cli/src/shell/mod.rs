//! `tern shell`: an interactive SQL shell in the manner of `sqlite3` and `psql`.
//!
//! Input is read a line at a time (with rustyline's editing and history on a terminal);
//! SQL accumulates until a line ends a statement with `;`, then runs. Lines starting with `.`
//! at the start of a statement are dot-commands. On a terminal errors are reported and the
//! shell goes on; reading a script from a pipe or file it stops at the first error and exits
//! non-zero (`sqlite3 -bail`). Ctrl-C cancels the running statement (SQLSTATE 57014); at the
//! prompt it discards the statement being typed.

pub mod export;
pub mod format;
pub mod import;

use format::Mode;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tern::{Connection, Database, ObjectKind, Outcome};

/// The database `tern shell` opens when given no file: in the current directory.
pub const DEFAULT_DATABASE: &str = "tern.db";

const PROMPT: &str = "tern> ";
const CONTINUATION: &str = "  ...> ";

/// Set by Ctrl-C while a script is read from a pipe: the exit status is then 130.
static STOP: AtomicBool = AtomicBool::new(false);

/// A failure that ends a script (the error was already reported).
#[derive(Debug)]
pub struct Stopped;

/// Runs the shell on `database` (created if missing) and returns the process's exit status:
/// 0, or 1 after an error in a script, or 130 after Ctrl-C ended a script.
pub fn run(database: &Path, options: tern::Options) -> anyhow::Result<u8> {
    let interactive = io::stdin().is_terminal();
    let db = open_with(database, options)?;
    let mut shell = Shell::new(db, !interactive);
    let handle = shell.connection.interrupt_handle();
    ctrlc::set_handler(move || {
        handle.interrupt();
        if !interactive {
            STOP.store(true, Ordering::SeqCst);
        }
    })?;
    let result = if interactive {
        println!(
            "Tern {} shell on {}. Enter SQL ending with ';', or .help.",
            env!("CARGO_PKG_VERSION"),
            database.display()
        );
        let mut editor = Editor::new()?;
        let result = shell.run_lines(&mut editor);
        editor.save_history();
        result
    } else {
        shell.run_lines(&mut Reader(io::stdin().lock()))
    };
    shell.flush();
    Ok(match result {
        Ok(()) => 0,
        Err(Stopped) if STOP.load(Ordering::SeqCst) => 130,
        Err(Stopped) => 1,
    })
}

/// Opens (or creates) a database file with the default options.
pub fn open_database(path: &Path) -> anyhow::Result<Database> {
    open_with(path, tern::Options::default())
}

fn open_with(path: &Path, options: tern::Options) -> anyhow::Result<Database> {
    Database::open(path, options).map_err(|error| anyhow::anyhow!("cannot open {}: {error}", path.display()))
}

/// What reading a line gave.
pub enum Input {
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    End,
}

/// Where the shell's lines come from.
pub trait LineSource {
    fn read_line(&mut self, prompt: &str) -> io::Result<Input>;
}

/// Lines of a script (a pipe, or `.read FILE`): no prompts.
pub struct Reader<R>(pub R);

impl<R: BufRead> LineSource for Reader<R> {
    fn read_line(&mut self, _prompt: &str) -> io::Result<Input> {
        let mut line = String::new();
        if self.0.read_line(&mut line)? == 0 {
            return Ok(Input::End);
        }
        while line.ends_with(['\n', '\r']) {
            line.pop();
        }
        Ok(Input::Line(line))
    }
}

/// A terminal: rustyline's line editing, with history kept in `~/.tern_history`.
struct Editor {
    editor: rustyline::DefaultEditor,
    history: Option<PathBuf>,
}

impl Editor {
    fn new() -> anyhow::Result<Editor> {
        let mut editor = rustyline::DefaultEditor::new()?;
        let history = std::env::var_os("HOME").map(|home| Path::new(&home).join(".tern_history"));
        if let Some(path) = &history {
            // No history yet is the usual first run.
            let _ = editor.load_history(path);
        }
        Ok(Editor { editor, history })
    }

    fn save_history(&mut self) {
        if let Some(path) = &self.history
            && let Err(error) = self.editor.save_history(path)
        {
            eprintln!("warning: cannot save history to {}: {error}", path.display());
        }
    }
}

impl LineSource for Editor {
    fn read_line(&mut self, prompt: &str) -> io::Result<Input> {
        match self.editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = self.editor.add_history_entry(line.as_str());
                }
                Ok(Input::Line(line))
            }
            Err(rustyline::error::ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(rustyline::error::ReadlineError::Eof) => Ok(Input::End),
            Err(error) => Err(io::Error::other(error)),
        }
    }
}

/// The shell's state: the connection and the settings dot-commands change.
pub struct Shell {
    connection: Connection,
    /// The connection's interrupt flag, raised by Ctrl-C.
    interrupt: tern::InterruptHandle,
    mode: Mode,
    headers: bool,
    timer: bool,
    output: Box<dyn Write>,
    /// Stop at the first error (scripts).
    bail: bool,
    /// Show progress bars (stderr is a terminal).
    progress: bool,
    /// Files being read by `.read` inside one another.
    read_depth: usize,
}

/// How deeply `.read` may nest (a file that reads itself stops here).
const MAX_READ_DEPTH: usize = 16;

impl Shell {
    pub fn new(db: Database, bail: bool) -> Shell {
        let connection = db.connect();
        Shell {
            interrupt: connection.interrupt_handle(),
            connection,
            mode: Mode::Table,
            headers: true,
            timer: false,
            output: Box::new(io::stdout()),
            bail,
            progress: io::stderr().is_terminal(),
            read_depth: 0,
        }
    }

    fn flush(&mut self) {
        if let Err(error) = self.output.flush() {
            eprintln!("Error: writing output: {error}");
        }
    }

    /// Reads and runs lines until the end of input or `.quit`. `Err(Stopped)` when an error
    /// ended a script.
    pub fn run_lines(&mut self, source: &mut dyn LineSource) -> Result<(), Stopped> {
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() { PROMPT } else { CONTINUATION };
            let line = match source.read_line(prompt) {
                Ok(Input::Line(line)) => line,
                Ok(Input::Interrupted) => {
                    buffer.clear();
                    continue;
                }
                Ok(Input::End) => break,
                Err(error) => {
                    eprintln!("Error: reading input: {error}");
                    return Err(Stopped);
                }
            };
            if self.bail {
                // A script (or a file being read) ends at Ctrl-C, even between statements.
                if self.interrupt.is_interrupted() {
                    self.flush();
                    eprintln!("Error: interrupted (SQLSTATE 57014)");
                    return Err(Stopped);
                }
            } else {
                // Each command typed starts afresh, whatever Ctrl-C cancelled before.
                self.connection.clear_interrupt();
            }
            if buffer.is_empty() && line.trim_start().starts_with('.') {
                match self.dot_command(line.trim()) {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Quit) => return Ok(()),
                    Err(error) => self.failed(&error)?,
                }
                continue;
            }
            if buffer.is_empty() && line.trim().is_empty() {
                continue;
            }
            buffer.push_str(&line);
            buffer.push('\n');
            if only_comments(&buffer) {
                // A comment alone is not the start of a statement.
                buffer.clear();
            } else if statement_complete(&buffer) {
                let sql = std::mem::take(&mut buffer);
                self.execute(&sql)?;
            }
        }
        // A last statement without its ';' still runs, as in sqlite3.
        if !buffer.is_empty() {
            self.execute(&buffer)?;
        }
        Ok(())
    }

    /// Reports an error; in a script it ends the run.
    fn failed(&mut self, error: &anyhow::Error) -> Result<(), Stopped> {
        self.flush();
        eprintln!("Error: {error:#}");
        if self.bail { Err(Stopped) } else { Ok(()) }
    }

    /// Runs SQL text and prints each statement's rows.
    fn execute(&mut self, sql: &str) -> Result<(), Stopped> {
        let started = Instant::now();
        let (mode, headers) = (self.mode, self.headers);
        let output = &mut self.output;
        let result = self.connection.run_script(sql, |outcome| {
            if let Outcome::Rows(rows) = outcome {
                format::write_rows(output, &rows, mode, headers)
                    .map_err(|error| tern::Error::new("58030", format!("writing output: {error}")))?;
            }
            Ok(())
        });
        if self.timer {
            let _ = writeln!(self.output, "Run Time: real {:.3} s", started.elapsed().as_secs_f64());
        }
        match result {
            Ok(()) => Ok(()),
            Err(error) => {
                self.flush();
                eprint!("{}", describe_error(&error, sql));
                if self.bail { Err(Stopped) } else { Ok(()) }
            }
        }
    }

    fn dot_command(&mut self, line: &str) -> anyhow::Result<Flow> {
        let words = split_arguments(line)?;
        let (command, args) = words.split_first().expect("a dot-command line has its command");
        let arity = |range: std::ops::RangeInclusive<usize>, usage: &str| -> anyhow::Result<()> {
            if range.contains(&args.len()) { Ok(()) } else { anyhow::bail!("usage: {usage}") }
        };
        match command.as_str() {
            ".help" => {
                arity(0..=0, ".help")?;
                write!(self.output, "{HELP}")?;
            }
            ".quit" | ".exit" => {
                arity(0..=0, ".quit")?;
                return Ok(Flow::Quit);
            }
            ".tables" => {
                arity(0..=0, ".tables")?;
                let mut names: Vec<String> = self
                    .connection
                    .schema()
                    .into_iter()
                    .filter(|object| matches!(object.kind, ObjectKind::Table | ObjectKind::View))
                    .map(|object| object.name)
                    .collect();
                names.sort_by_key(|name| name.to_lowercase());
                for name in names {
                    writeln!(self.output, "{name}")?;
                }
            }
            ".schema" => {
                arity(0..=1, ".schema [TABLE]")?;
                let schema = self.connection.schema();
                let wanted = |object: &tern::SchemaObject| match args.first() {
                    Some(name) => object.table.eq_ignore_ascii_case(name),
                    None => true,
                };
                let objects: Vec<_> = schema.iter().filter(|object| wanted(object)).collect();
                if let (Some(name), true) = (args.first(), objects.is_empty()) {
                    anyhow::bail!("no such table: {name}");
                }
                for object in objects {
                    writeln!(self.output, "{};", object.sql)?;
                }
            }
            ".indexes" | ".indices" => {
                arity(0..=1, ".indexes [TABLE]")?;
                let schema = self.connection.schema();
                if let Some(name) = args.first()
                    && !schema
                        .iter()
                        .any(|object| object.kind == ObjectKind::Table && object.name.eq_ignore_ascii_case(name))
                {
                    anyhow::bail!("no such table: {name}");
                }
                for index in schema.iter().filter(|object| object.kind == ObjectKind::Index) {
                    if args.first().is_none_or(|name| index.table.eq_ignore_ascii_case(name)) {
                        writeln!(self.output, "{}", index.name)?;
                    }
                }
            }
            ".mode" => {
                arity(0..=1, &format!(".mode [{}]", Mode::NAMES))?;
                match args.first() {
                    None => {
                        writeln!(self.output, "current output mode: {}", format!("{:?}", self.mode).to_lowercase())?
                    }
                    Some(name) => {
                        self.mode = Mode::parse(name)
                            .ok_or_else(|| anyhow::anyhow!("unknown mode {name}: use one of {}", Mode::NAMES))?
                    }
                }
            }
            ".headers" => {
                arity(1..=1, ".headers on|off")?;
                self.headers = on_off(&args[0])?;
            }
            ".timer" => {
                arity(1..=1, ".timer on|off")?;
                self.timer = on_off(&args[0])?;
            }
            ".output" => {
                arity(0..=1, ".output [FILE]")?;
                self.flush();
                self.output = match args.first() {
                    None => Box::new(io::stdout()),
                    Some(path) => Box::new(BufWriter::new(
                        File::create(path).map_err(|error| anyhow::anyhow!("cannot write {path}: {error}"))?,
                    )),
                };
            }
            ".read" => {
                arity(1..=1, ".read FILE")?;
                if self.read_depth >= MAX_READ_DEPTH {
                    anyhow::bail!(".read nests more than {MAX_READ_DEPTH} files deep");
                }
                let file = File::open(&args[0]).map_err(|error| anyhow::anyhow!("cannot read {}: {error}", args[0]))?;
                // A file stops at its first error, whatever the shell does with errors.
                let bail = std::mem::replace(&mut self.bail, true);
                self.read_depth += 1;
                let result = self.run_lines(&mut Reader(io::BufReader::new(file)));
                self.read_depth -= 1;
                self.bail = bail;
                if result.is_err() {
                    anyhow::bail!("{} stopped at the error above", args[0]);
                }
            }
            ".import" => {
                arity(2..=2, ".import FILE TABLE")?;
                let imported = import::import_csv(&mut self.connection, Path::new(&args[0]), &args[1], self.progress)?;
                if !self.bail {
                    writeln!(self.output, "{}", imported.describe(&args[1]))?;
                }
            }
            ".dump" => {
                arity(0..=0, ".dump")?;
                self.connection.dump(&mut self.output)?;
            }
            ".stats" => {
                arity(0..=0, ".stats")?;
                write_stats(&mut self.output, &self.connection.database().stats())?;
            }
            other => anyhow::bail!("unknown command {other}: .help lists the commands"),
        }
        Ok(Flow::Continue)
    }
}

/// Whether the shell goes on after a dot-command.
pub enum Flow {
    Continue,
    Quit,
}

const HELP: &str = "\
.dump                 SQL text that recreates the database
.exit, .quit          leave the shell
.headers on|off       column names above results (table, box, csv)
.help                 this text
.import FILE TABLE    load a CSV file with a header line (a new table gets inferred types)
.indexes [TABLE]      index names
.mode [MODE]          result format: table, box, csv, json or line
.output [FILE]        send results to FILE, or back to the screen
.read FILE            run the SQL and dot-commands in FILE
.schema [TABLE]       CREATE statements
.stats                buffer pool, LSM and transaction statistics
.tables               table and view names
.timer on|off         time each statement
SQL statements end with ';' and may span lines. Ctrl-C cancels a running statement.
";

fn on_off(word: &str) -> anyhow::Result<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "yes" | "1" | "true" => Ok(true),
        "off" | "no" | "0" | "false" => Ok(false),
        _ => anyhow::bail!("expected on or off, not {word}"),
    }
}

/// Splits a dot-command line into words; single or double quotes group words with spaces.
fn split_arguments(line: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next() {
                    Some(c) if c == first => break,
                    Some(c) => word.push(c),
                    None => anyhow::bail!("unterminated {first} in {line}"),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        words.push(word);
    }
    Ok(words)
}

/// Whether `sql` ends with a `;` outside quotes and comments: a statement is complete.
pub fn statement_complete(sql: &str) -> bool {
    last_significant(sql) == Some(';')
}

/// Whether `sql` holds nothing but whitespace and comments.
fn only_comments(sql: &str) -> bool {
    last_significant(sql).is_none()
}

/// The last character outside comments and whitespace, if it is outside any quote; a quote
/// or block comment left open counts as an unfinished statement (`Some(' ')`).
fn last_significant(sql: &str) -> Option<char> {
    let mut last = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' | '[' => {
                let close = if c == '[' { ']' } else { c };
                let mut closed = false;
                for inner in chars.by_ref() {
                    if inner == close {
                        closed = true;
                        break;
                    }
                }
                if !closed {
                    return Some(' ');
                }
                last = Some(close);
            }
            '-' if chars.peek() == Some(&'-') => {
                for inner in chars.by_ref() {
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut closed = false;
                let mut star = false;
                for inner in chars.by_ref() {
                    if star && inner == '/' {
                        closed = true;
                        break;
                    }
                    star = inner == '*';
                }
                if !closed {
                    return Some(' ');
                }
            }
            c if c.is_whitespace() => {}
            c => last = Some(c),
        }
    }
    last
}

/// An error as the shell shows it: message and SQLSTATE, then, when the error has a position,
/// the statement's line with a caret under the offending part.
pub fn describe_error(error: &tern::Error, sql: &str) -> String {
    let mut text = format!("Error: {} (SQLSTATE {})\n", error.message, error.sqlstate);
    if let Some((line, column)) = error.position
        && let Some(source) = sql.lines().nth((line as usize).saturating_sub(1))
    {
        let pad: String = source
            .chars()
            .take((column as usize).saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        text.push_str(&format!("  {source}\n  {pad}^\n"));
    }
    text
}

fn write_stats(out: &mut dyn Write, stats: &tern::Stats) -> io::Result<()> {
    let kib = |bytes: u64| format!("{:.1} KiB", bytes as f64 / 1024.0);
    let mib = |bytes: usize| format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64);
    let memory = &stats.memory;
    writeln!(
        out,
        "memory: buffer pool {}, memtables 2 x {}, result cache {}, statements {}",
        mib(memory.buffer_pool_size),
        mib(memory.memtable_size),
        mib(memory.result_cache_size),
        mib(memory.query_memory_limit)
    )?;
    match &stats.cache {
        None => writeln!(out, "result cache: off")?,
        Some(cache) => {
            writeln!(
                out,
                "result cache: {} hits, {} misses, {} stored, {} entries, {} evictions, {} invalidations; {} in slabs, {} unused in slots",
                cache.hits,
                cache.misses,
                cache.stores,
                cache.entries,
                cache.evictions,
                cache.invalidations,
                kib(cache.allocated_bytes as u64),
                kib(cache.wasted_bytes() as u64)
            )?;
            for class in cache.classes.iter().filter(|class| class.slabs > 0) {
                writeln!(
                    out,
                    "  slots of {} bytes: {} slabs, {} items, {} stored, {} evictions",
                    class.slot_size,
                    class.slabs,
                    class.items,
                    kib(class.item_bytes as u64),
                    class.evictions
                )?;
            }
        }
    }
    let txn = &stats.transactions;
    let lsm = &stats.storage;
    let pool = &lsm.pool;
    writeln!(
        out,
        "transactions: {} commits, {} read-only, {} retried; {} batches (mean {:.2} per batch)",
        txn.commits,
        txn.read_only_commits,
        txn.retries,
        txn.batches_written,
        txn.mean_batch_size()
    )?;
    let certifier = &txn.certifier;
    writeln!(
        out,
        "certifier: {} accepted, aborted {} stale reads, {} phantoms, {} write-write, {} too old",
        certifier.accepted, certifier.stale_reads, certifier.phantoms, certifier.write_write, certifier.too_old
    )?;
    writeln!(
        out,
        "memtable: {} (immutable {}); last sequence {}; {} live snapshots",
        kib(lsm.memtable_bytes as u64),
        kib(lsm.immutable_memtable_bytes as u64),
        lsm.last_sequence,
        lsm.live_snapshots
    )?;
    for (level, stats) in lsm.levels.iter().enumerate().filter(|(_, level)| level.tables > 0) {
        writeln!(out, "level {level}: {} tables, {}", stats.tables, kib(stats.bytes))?;
    }
    writeln!(
        out,
        "log: {} written, {} syncs, {} write groups; {} flushes, {} compactions ({} read, {} written)",
        kib(lsm.wal_bytes),
        lsm.wal_syncs,
        lsm.write_groups,
        lsm.flushes,
        lsm.compactions,
        kib(lsm.compaction_bytes_read),
        kib(lsm.compaction_bytes_written)
    )?;
    writeln!(
        out,
        "filters: {} checks, {} negatives; {} block reads; index memory {} resident, {} in the pool",
        lsm.filter_checks,
        lsm.filter_negatives,
        lsm.block_reads,
        kib(lsm.resident_index_bytes),
        kib(lsm.pooled_index_bytes)
    )?;
    writeln!(
        out,
        "buffer pool: {} slots of {} bytes, {} in use, {} dirty; {} hits, {} misses ({:.1}% hit), {} evictions",
        pool.slots,
        pool.page_size,
        pool.slots_in_use,
        pool.dirty_slots,
        pool.hits,
        pool.misses,
        100.0 * pool.hit_ratio(),
        pool.evictions
    )?;
    writeln!(
        out,
        "pages: {} read, {} written, {} prefetched ({} prefetch hits); file of {} pages, {} allocated",
        pool.reads, pool.writes, pool.prefetch_reads, pool.prefetch_hits, pool.file_pages, pool.allocated_pages
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_a_semicolon_outside_quotes_and_comments() {
        assert!(statement_complete("SELECT 1;"));
        assert!(statement_complete("SELECT 1;  \n"));
        assert!(statement_complete("SELECT 1; -- done\n"));
        assert!(statement_complete("SELECT 1 /* c */ ;"));
        assert!(!statement_complete("SELECT 1"));
        assert!(!statement_complete("SELECT ';'"));
        assert!(!statement_complete("SELECT 'it''s;"));
        assert!(statement_complete("SELECT 'it''s';"));
        assert!(!statement_complete("SELECT \"a;\" -- ;"));
        assert!(!statement_complete("SELECT 1 /* ; "));
        assert!(!statement_complete("SELECT [x;"));
        assert!(only_comments("-- nothing\n /* at all */ "));
        assert!(!only_comments("SELECT"));
    }

    #[test]
    fn dot_command_arguments_split_on_spaces_and_quotes() {
        assert_eq!(split_arguments(".import 'my file.csv' t").unwrap(), [".import", "my file.csv", "t"]);
        assert_eq!(split_arguments(".mode   csv ").unwrap(), [".mode", "csv"]);
        assert_eq!(split_arguments(".output \"a b\"").unwrap(), [".output", "a b"]);
        assert!(split_arguments(".read 'open").is_err());
    }

    #[test]
    fn errors_point_at_the_offending_part() {
        let db = tern::Database::open_in_memory().unwrap();
        let sql = "SELECT 1,\n  nope FROM missing;";
        let error = db.connect().query(sql, ()).unwrap_err();
        assert_eq!(
            describe_error(&error, sql),
            "Error: no such table: missing (SQLSTATE 42P01)\n    nope FROM missing;\n              ^\n"
        );
        let error = tern::Error::new("22012", "division by zero");
        assert_eq!(describe_error(&error, "SELECT 1/0;"), "Error: division by zero (SQLSTATE 22012)\n");
    }
}
