//! `tern shell`, `tern import` and `tern export` driven as a user drives them: through a pipe
//! (scripts) and through a pseudo-terminal (interactive use, line editing, Ctrl-C).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const TERN: &str = env!("CARGO_BIN_EXE_tern");

/// Runs `tern shell db` in `dir` with `script` on standard input.
fn pipe(dir: &Path, script: &str) -> Output {
    pipe_to(dir, &["shell", "db.tern"], script)
}

/// Runs `tern` with `args` in `dir` with `script` on standard input.
fn pipe_to(dir: &Path, args: &[&str], script: &str) -> Output {
    let mut child = Command::new(TERN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tern runs");
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a script that must succeed and returns its standard output.
fn ok(dir: &Path, script: &str) -> String {
    let output = pipe(dir, script);
    assert!(output.status.success(), "{script}\nstdout: {}\nstderr: {}", text(&output.stdout), text(&output.stderr));
    assert_eq!(text(&output.stderr), "", "{script}");
    text(&output.stdout)
}

/// Runs a script that must fail with exit status 1; returns (stdout, stderr).
fn fails(dir: &Path, script: &str) -> (String, String) {
    let output = pipe(dir, script);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{script}\nstdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    (text(&output.stdout), text(&output.stderr))
}

/// Runs a script that must fail (exit status 1) with `needle` in its standard error.
fn fails_with(dir: &Path, script: &str, needle: &str) {
    let (_, error) = fails(dir, script);
    assert!(error.contains(needle), "{script}: {error}");
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("people.csv"), "id,name,score\n1,ada,9.5\n2,\"lovelace, a\",\n3,bob,7\n").unwrap();
    dir
}

#[test]
fn sql_spans_lines_and_runs_in_every_mode() {
    let dir = setup();
    let out = ok(
        dir.path(),
        "CREATE TABLE t(id INTEGER PRIMARY KEY,\n  name TEXT);\nINSERT INTO t VALUES (1, 'ada'), (2, NULL);\nSELECT * FROM t\n  ORDER BY id;\n",
    );
    assert_eq!(out, "+----+------+\n| id | name |\n+----+------+\n|  1 | ada  |\n|  2 | NULL |\n+----+------+\n");
    let out = ok(dir.path(), ".mode box\nSELECT id FROM t WHERE id = 1;\n");
    assert_eq!(out, "┌────┐\n│ id │\n├────┤\n│  1 │\n└────┘\n");
    let out = ok(dir.path(), ".mode csv\nSELECT * FROM t ORDER BY id;\n.headers off\nSELECT * FROM t ORDER BY id;\n");
    assert_eq!(out, "id,name\n1,ada\n2,\n1,ada\n2,\n");
    let out = ok(dir.path(), ".mode json\nSELECT * FROM t ORDER BY id;\n");
    assert_eq!(out, "[\n{\"id\":1,\"name\":\"ada\"},\n{\"id\":2,\"name\":null}\n]\n");
    let out = ok(dir.path(), ".mode line\nSELECT * FROM t ORDER BY id;\n.mode\n");
    assert_eq!(out, "  id = 1\nname = ada\n\n  id = 2\nname = NULL\ncurrent output mode: line\n");
    let out =
        ok(dir.path(), ".mode table\n.headers off\nSELECT name FROM t WHERE id = 1;\n.headers on\nSELECT 7 AS seven\n");
    assert_eq!(
        out, "+-----+\n| ada |\n+-----+\n+-------+\n| seven |\n+-------+\n|     7 |\n+-------+\n",
        "a last statement needs no ';'"
    );
    fails_with(dir.path(), ".mode html\n", "unknown mode html");
    fails_with(dir.path(), ".headers maybe\n", "expected on or off");
    fails_with(dir.path(), ".headers\n", "usage: .headers on|off");
}

#[test]
fn a_script_stops_at_its_first_error_with_the_sqlstate_and_a_caret() {
    let dir = setup();
    let (out, error) = fails(dir.path(), "CREATE TABLE t(x);\nSELECT 1;\nSELECT x,\n  nope FROM t;\nSELECT 2;\n");
    assert_eq!(out, "+---+\n| 1 |\n+---+\n| 1 |\n+---+\n", "nothing after the error ran");
    assert_eq!(error, "Error: no such column: nope (SQLSTATE 42703)\n    nope FROM t;\n    ^\n");
    let (_, error) = fails(dir.path(), "SELEC 1;\n");
    assert!(error.starts_with("Error: ") && error.contains("(SQLSTATE 42601)") && error.contains("^"), "{error}");
    fails_with(dir.path(), "INSERT INTO t VALUES (1/0) RETURNING x + 'a' * nothing;\n", "SQLSTATE 42703");
    fails_with(dir.path(), ".frobnicate\n", "unknown command .frobnicate");
    // Comments and blank lines are not statements.
    assert_eq!(ok(dir.path(), "-- nothing\n\n/* still nothing */\n"), "");
}

#[test]
fn tables_schema_and_indexes_describe_the_database() {
    let dir = setup();
    ok(
        dir.path(),
        "CREATE TABLE b(x UNIQUE);\nCREATE TABLE a(y);\nCREATE INDEX a_y ON a(y);\nCREATE VIEW v AS SELECT y FROM a;\n",
    );
    assert_eq!(ok(dir.path(), ".tables\n"), "a\nb\nv\n");
    assert_eq!(
        ok(dir.path(), ".schema\n"),
        "CREATE TABLE a (y);\nCREATE TABLE b (x UNIQUE);\nCREATE INDEX a_y ON a(y);\nCREATE VIEW v AS SELECT y FROM a;\n"
    );
    assert_eq!(ok(dir.path(), ".schema A\n"), "CREATE TABLE a (y);\nCREATE INDEX a_y ON a(y);\n");
    assert_eq!(ok(dir.path(), ".indexes\n"), "a_y\n");
    assert_eq!(ok(dir.path(), ".indexes b\n"), "");
    fails_with(dir.path(), ".schema nope\n", "no such table: nope");
    fails_with(dir.path(), ".indexes nope\n", "no such table: nope");
    fails_with(dir.path(), ".tables a b\n", "usage: .tables");
}

#[test]
fn import_output_read_and_timer() {
    let dir = setup();
    let out = ok(
        dir.path(),
        ".import people.csv people\n.mode csv\nSELECT typeof(id), name, score FROM people ORDER BY id;\n",
    );
    assert_eq!(out, "typeof(id),name,score\ninteger,ada,9.5\ninteger,\"lovelace, a\",\ninteger,bob,7.0\n");
    fails_with(dir.path(), ".import missing.csv t\n", "cannot read missing.csv");
    fails_with(dir.path(), ".import people.csv\n", "usage: .import FILE TABLE");
    // .output sends results to a file until .output alone.
    let out = ok(dir.path(), ".output result.txt\nSELECT count(*) AS n FROM people;\n.output\nSELECT 1 AS one;\n");
    assert_eq!(out, "+-----+\n| one |\n+-----+\n|   1 |\n+-----+\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("result.txt")).unwrap(), "+---+\n| n |\n+---+\n| 3 |\n+---+\n");
    fails_with(dir.path(), ".output no/such/dir/file.txt\n", "cannot write no/such/dir/file.txt");
    // .read runs a file's SQL and dot-commands, and stops at its first error.
    std::fs::write(dir.path().join("script.sql"), ".mode csv\n.headers off\nSELECT name FROM people\n WHERE id = 3;\n")
        .unwrap();
    assert_eq!(ok(dir.path(), ".read script.sql\n"), "bob\n");
    std::fs::write(dir.path().join("bad.sql"), "SELECT 1;\nSELECT nope;\nSELECT 3;\n").unwrap();
    let (out, error) = fails(dir.path(), ".mode csv\n.read bad.sql\nSELECT 4;\n");
    assert_eq!(out, "1\n1\n");
    assert!(error.contains("no such column: nope") && error.contains("bad.sql stopped at the error above"), "{error}");
    fails_with(dir.path(), ".read nothing.sql\n", "cannot read nothing.sql");
    std::fs::write(dir.path().join("self.sql"), ".read self.sql\n").unwrap();
    fails_with(dir.path(), ".read self.sql\n", ".read nests more than 16 files deep");
    // .timer adds a line per statement.
    let out = ok(dir.path(), ".timer on\nSELECT 1 AS x;\n.timer off\nSELECT 2 AS y;\n");
    let timed: Vec<&str> = out.lines().filter(|line| line.starts_with("Run Time: real ")).collect();
    assert_eq!(timed.len(), 1, "{out}");
    fails_with(dir.path(), ".timer sometimes\n", "expected on or off");
}

#[test]
fn dump_recreates_the_database_in_another_shell() {
    let dir = setup();
    ok(
        dir.path(),
        ".import people.csv people\nCREATE INDEX people_name ON people(name);\nCREATE VIEW good AS SELECT name FROM people WHERE score > 8;\nINSERT INTO people VALUES (4, 'it''s', 1e300);\n",
    );
    let dump = ok(dir.path(), ".dump\n");
    assert!(dump.starts_with("BEGIN;\nCREATE TABLE \"people\"") && dump.ends_with("COMMIT;\n"), "{dump}");
    let copy = tempfile::tempdir().unwrap();
    ok(copy.path(), &dump);
    let query = ".mode csv\nSELECT * FROM people ORDER BY id;\nSELECT * FROM good;\n.schema\n";
    assert_eq!(ok(dir.path(), query), ok(copy.path(), query));
    fails_with(dir.path(), ".dump people\n", "usage: .dump");
}

#[test]
fn stats_help_and_quit() {
    let dir = setup();
    let stats =
        ok(dir.path(), "CREATE TABLE t(x);\nINSERT INTO t VALUES (1);\nSELECT * FROM t;\nSELECT * FROM t;\n.stats\n");
    assert!(stats.contains("result cache: 1 hits, 1 misses, 1 stored, 1 entries"), "{stats}");
    assert!(
        stats.contains(
            "memory: buffer pool 64.0 MiB, memtables 2 x 16.0 MiB, result cache 16.0 MiB, statements 1024.0 MiB"
        ),
        "{stats}"
    );
    assert!(stats.contains("  slots of "), "{stats}");
    for part in ["transactions: ", "certifier: ", "memtable: ", "log: ", "filters: ", "buffer pool: ", "pages: "] {
        assert!(stats.contains(part), "{part} missing from\n{stats}");
    }
    let help = ok(dir.path(), ".help\n");
    for command in [
        ".dump", ".headers", ".help", ".import", ".indexes", ".mode", ".output", ".quit", ".read", ".schema", ".stats",
        ".tables", ".timer",
    ] {
        assert!(help.contains(command), "{command} missing from .help");
    }
    assert_eq!(ok(dir.path(), "SELECT 1 AS a;\n.quit\nSELECT 2 AS b;\n"), "+---+\n| a |\n+---+\n| 1 |\n+---+\n");
    assert_eq!(ok(dir.path(), ".exit\nSELECT nope;\n"), "");
    fails_with(dir.path(), ".stats now\n", "usage: .stats");
    // A memory budget divides memory, and .stats shows it.
    let output = pipe_to(dir.path(), &["shell", "small.tern", "--memory-budget", "32"], ".stats\n");
    assert!(
        text(&output.stdout)
            .contains("memory: buffer pool 12.8 MiB, memtables 2 x 2.4 MiB, result cache 3.2 MiB, statements 6.4 MiB"),
        "{}",
        text(&output.stdout)
    );
    let output = Command::new(TERN)
        .args(["shell", "tiny.tern", "--memory-budget", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success() && text(&output.stderr).contains("22023"), "{}", text(&output.stderr));
}

#[test]
fn the_default_database_is_created_in_the_current_directory() {
    let dir = setup();
    assert!(pipe_to(dir.path(), &["shell"], "CREATE TABLE here(x);\n").status.success());
    assert!(dir.path().join("tern.db").exists());
}

#[test]
fn import_and_export_commands_for_scripts() {
    let dir = setup();
    let run = |args: &[&str]| Command::new(TERN).args(args).current_dir(dir.path()).output().unwrap();
    let output = run(&["import", "people.csv", "--table", "people", "data.tern"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "imported 3 rows into people (new table)\n");
    let output = run(&["export", "data.tern", "--query", "SELECT id, name FROM people ORDER BY id", "--format", "csv"]);
    assert_eq!(text(&output.stdout), "id,name\n1,ada\n2,\"lovelace, a\"\n3,bob\n");
    let output = run(&[
        "export",
        "data.tern",
        "--query",
        "SELECT id, score FROM people WHERE id < 3 ORDER BY id",
        "--format",
        "json",
    ]);
    assert_eq!(text(&output.stdout), "[\n{\"id\":1,\"score\":9.5},\n{\"id\":2,\"score\":null}\n]\n");
    let output = run(&["export", "data.tern", "--query", "SELECT nope FROM people"]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("SQLSTATE 42703") && text(&output.stderr).contains('^'),
        "{}",
        text(&output.stderr)
    );
    let output = run(&["export", "missing.tern", "--query", "SELECT 1"]);
    assert!(!output.status.success() && text(&output.stderr).contains("no database at missing.tern"));
    assert!(!dir.path().join("missing.tern").exists(), "export does not create a database");
    let output = run(&["import", "missing.csv", "--table", "t", "data.tern"]);
    assert!(!output.status.success() && text(&output.stderr).contains("cannot read missing.csv"));
    let output = run(&["export", "data.tern", "--query", "SELECT 1", "--format", "xml"]);
    assert!(!output.status.success());
}

mod terminal {
    //! The same shell on a pseudo-terminal: prompts, line editing, errors that do not end the
    //! session, and Ctrl-C.

    use super::*;
    use rexpect::session::{PtySession, spawn_command};

    fn start(dir: &Path) -> PtySession {
        let mut command = Command::new(TERN);
        command.args(["shell", "db.tern"]).current_dir(dir).env("HOME", dir).env("TERM", "xterm");
        let mut session = spawn_command(command, Some(20_000)).expect("a pty");
        session.exp_string("Enter SQL ending with ';', or .help.").unwrap();
        session.exp_string("tern> ").unwrap();
        session
    }

    /// Sends a line and waits for the next main prompt; returns what came before it.
    fn line(session: &mut PtySession, input: &str) -> String {
        session.send_line(input).unwrap();
        let output = session.exp_string("tern> ").unwrap();
        // Drop the echoed input line and the terminal's control sequences.
        let output = strip_control_sequences(&output);
        output.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string())
    }

    /// `text` without ANSI escape sequences (`ESC [ params letter`) and carriage returns.
    /// rexpect hands over each byte as a char: the bytes are decoded as UTF-8 again first.
    fn strip_control_sequences(text: &str) -> String {
        let bytes: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        let mut plain = String::with_capacity(text.len());
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    if chars.next() == Some('[') {
                        for inner in chars.by_ref() {
                            if inner.is_ascii_alphabetic() {
                                break;
                            }
                        }
                    }
                }
                '\r' => {}
                c => plain.push(c),
            }
        }
        plain
    }

    fn quit(mut session: PtySession) {
        session.send_line(".quit").unwrap();
        session.exp_eof().unwrap();
        let status = format!("{:?}", session.process().wait().unwrap());
        assert!(status.starts_with("Exited(") && status.ends_with(", 0)"), "{status}");
    }

    #[test]
    fn every_dot_command_on_a_terminal() {
        let dir = setup();
        let mut shell = start(dir.path());
        assert!(line(&mut shell, ".help").contains(".import FILE TABLE"));
        assert!(line(&mut shell, ".import people.csv people").contains("imported 3 rows into people (new table)"));
        assert_eq!(line(&mut shell, ".tables"), "people\n");
        assert!(line(&mut shell, ".schema people").contains("CREATE TABLE \"people\""));
        line(&mut shell, "CREATE INDEX people_name ON people(name);");
        assert_eq!(line(&mut shell, ".indexes"), "people_name\n");
        // A statement over several lines shows the continuation prompt.
        shell.send_line("SELECT name FROM people").unwrap();
        shell.exp_string("...> ").unwrap();
        let output = line(&mut shell, "  WHERE id = 1;");
        assert!(output.contains("| ada  |"), "{output}");
        line(&mut shell, ".mode box");
        assert!(line(&mut shell, "SELECT 1 AS one;").contains("│ one │"));
        line(&mut shell, ".mode csv");
        line(&mut shell, ".headers off");
        assert_eq!(line(&mut shell, "SELECT id FROM people WHERE id < 3 ORDER BY id;"), "1\n2\n");
        line(&mut shell, ".headers on");
        line(&mut shell, ".mode json");
        assert_eq!(line(&mut shell, "SELECT 1 AS a;"), "[\n{\"a\":1}\n]\n");
        line(&mut shell, ".mode line");
        assert_eq!(line(&mut shell, "SELECT 1 AS a;"), "a = 1\n");
        line(&mut shell, ".mode table");
        line(&mut shell, ".timer on");
        assert!(line(&mut shell, "SELECT 1;").contains("Run Time: real "));
        line(&mut shell, ".timer off");
        line(&mut shell, ".output out.txt");
        assert_eq!(line(&mut shell, "SELECT 5 AS five;"), "");
        line(&mut shell, ".output");
        assert!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap().contains("| five |"));
        std::fs::write(dir.path().join("s.sql"), "SELECT 6 AS six;\n").unwrap();
        assert!(line(&mut shell, ".read s.sql").contains("|   6 |"));
        let dump = line(&mut shell, ".dump");
        assert!(
            dump.starts_with("BEGIN;\n") && dump.contains("INSERT INTO \"people\"") && dump.ends_with("COMMIT;\n"),
            "{dump}"
        );
        assert!(line(&mut shell, ".stats").contains("buffer pool: "));
        quit(shell);
    }

    #[test]
    fn errors_are_reported_and_the_session_goes_on() {
        let dir = setup();
        let mut shell = start(dir.path());
        let output = line(&mut shell, "SELECT nope;");
        assert!(output.contains("Error: no such column: nope (SQLSTATE 42703)"), "{output}");
        assert!(output.contains("  SELECT nope;\n         ^"), "{output}");
        assert!(line(&mut shell, ".mode nonsense").contains("unknown mode nonsense"));
        assert!(line(&mut shell, ".read missing.sql").contains("cannot read missing.sql"));
        assert!(line(&mut shell, ".import missing.csv t").contains("cannot read missing.csv"));
        assert!(line(&mut shell, ".schema missing").contains("no such table: missing"));
        assert!(line(&mut shell, ".indexes missing").contains("no such table: missing"));
        assert!(line(&mut shell, ".headers sideways").contains("expected on or off"));
        assert!(line(&mut shell, ".timer sideways").contains("expected on or off"));
        assert!(line(&mut shell, ".output /no/such/dir/x").contains("cannot write"));
        assert!(line(&mut shell, ".nonsense").contains("unknown command .nonsense"));
        // Still working.
        assert!(line(&mut shell, "SELECT 40 + 2 AS answer;").contains("|     42 |"));
        quit(shell);
        // History was kept.
        let history = std::fs::read_to_string(dir.path().join(".tern_history")).unwrap();
        assert!(history.contains("SELECT 40 + 2 AS answer;"), "{history}");
    }

    #[test]
    fn ctrl_c_cancels_the_running_statement_and_the_line_being_typed() {
        let dir = setup();
        let mut shell = start(dir.path());
        line(&mut shell, "CREATE TABLE t(x);");
        line(&mut shell, "INSERT INTO t VALUES (1);");
        // A statement that would run until it hit the memory limit, typed on three lines.
        for part in ["INSERT INTO t WITH RECURSIVE c(n) AS", "(SELECT 1 UNION ALL SELECT n + 1 FROM c)"] {
            shell.send_line(part).unwrap();
            shell.exp_string("...> ").unwrap();
        }
        shell.send_line("SELECT n FROM c;").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        shell.send_control('c').unwrap();
        shell.exp_string("Error: statement interrupted (SQLSTATE 57014)").unwrap();
        shell.exp_string("tern> ").unwrap();
        // Its writes are gone; the shell is still there.
        assert!(line(&mut shell, "SELECT count(*) AS n FROM t;").contains("| 1 |"));
        // Ctrl-C at the prompt discards what was typed, not the shell.
        shell.send_line("SELECT 'discarded'").unwrap();
        shell.exp_string("...> ").unwrap();
        shell.send_control('c').unwrap();
        shell.exp_string("tern> ").unwrap();
        let output = line(&mut shell, "SELECT 'kept' AS k;");
        assert!(output.contains("kept") && !output.contains("discarded"), "{output}");
        quit(shell);
    }
}

#[test]
fn ctrl_c_ends_a_piped_script() {
    use std::io::BufRead;
    let dir = setup();
    let mut child = Command::new(TERN)
        .args(["shell", "db.tern"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b".mode csv\n.headers off\nSELECT 'started';\nCREATE TABLE t(x);\nINSERT INTO t WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c;\nSELECT 'not reached';\n")
        .unwrap();
    drop(stdin);
    // Once the shell has answered, its SIGINT handler is in place.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "started\n");
    // SIGINT, as the terminal sends for Ctrl-C, until the shell has stopped (one that lands
    // between statements ends the script too).
    while child.try_wait().unwrap().is_none() {
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(output.status.code(), Some(130), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stderr).contains("SQLSTATE 57014"), "{}", text(&output.stderr));
    assert_eq!(rest, "", "nothing ran after the interrupt");
}

#[test]
fn comments_do_not_start_statements() {
    let dir = setup();
    assert_eq!(ok(dir.path(), "-- a script\n.mode csv\n/* more */\n.headers off\nSELECT 1;\n-- end\n"), "1\n");
}

#[test]
fn import_inside_a_transaction_and_from_a_non_file() {
    let dir = setup();
    let out = ok(
        dir.path(),
        "BEGIN;\n.import people.csv people\n.tables\nSELECT count(*) AS n FROM people;\nROLLBACK;\n.tables\n",
    );
    assert_eq!(
        out, "people\n+---+\n| n |\n+---+\n| 3 |\n+---+\n",
        "the import joined the transaction and was rolled back"
    );
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    fails_with(dir.path(), ".import folder t\n", "is not a regular file");
}

/// The README's tour, run as a script: every result it shows is what the shell prints.
#[test]
fn the_readme_tour_shows_what_the_shell_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(root.join("examples/weather.csv"), dir.path().join("weather.csv")).unwrap();
    let steps = [
        "CREATE TABLE stations(id INTEGER PRIMARY KEY, city TEXT NOT NULL, country TEXT);\nINSERT INTO stations VALUES (1, 'Oslo', 'NO'), (2, 'Lima', 'PE'), (3, 'Pune', 'IN'),\n  (4, 'Kobe', 'JP'), (5, 'Cork', 'IE'), (6, 'Hobart', 'AU');\n",
        ".schema weather\n",
        "SELECT s.city, s.country, count(*) AS days, round(avg(w.temp_c), 1) AS mean_c, max(w.rain_mm) AS wettest\nFROM weather AS w JOIN stations AS s ON s.id = w.station\nGROUP BY s.city, s.country ORDER BY mean_c DESC;\n",
        "CREATE INDEX weather_day ON weather(day);\nEXPLAIN SELECT city, temp_c FROM weather WHERE day = '2026-03-01';\n",
        ".mode box\nSELECT city, temp_c FROM weather WHERE day = '2026-03-01' ORDER BY temp_c DESC LIMIT 3;\n",
    ];
    let import = Command::new(TERN)
        .args(["import", "weather.csv", "--table", "weather", "db.tern"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", text(&import.stderr));
    assert!(readme.contains(&text(&import.stdout)), "{}", text(&import.stdout));
    for step in steps {
        let out = ok(dir.path(), step);
        if step.starts_with("CREATE TABLE stations") {
            assert_eq!(out, "", "the README shows no output for {step}");
        } else {
            assert!(!out.is_empty() && readme.contains(&out), "the README does not show this output of\n{step}\n{out}");
        }
    }
    let (_, error) = fails(dir.path(), "SELECT citty FROM weather;\n");
    assert!(readme.contains(&error), "{error}");
}
