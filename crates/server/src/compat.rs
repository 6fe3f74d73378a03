//! The PostgreSQL surface around the SQL engine: splitting a simple query into statements,
//! and recognizing the statements the server itself carries out (SET / SHOW / RESET,
//! transaction control with PostgreSQL's options, COPY, VACUUM / CHECKPOINT,
//! DISCARD, DEALLOCATE, CREATE / ALTER / DROP USER). Everything else goes to the engine.

/// One statement of a query string: where it starts (byte offset) and its text.
#[derive(Debug, PartialEq, Eq)]
pub struct Piece<'a> {
    pub start: usize,
    pub text: &'a str,
}

/// Splits `sql` at top-level semicolons, respecting quotes ('...', E'...', "...", $tag$...$tag$)
/// and comments. Pieces that hold only whitespace and comments are dropped.
pub fn split(sql: &str) -> Vec<Piece<'_>> {
    let bytes = sql.as_bytes();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut at = 0;
    let mut meaningful = false;
    while at < bytes.len() {
        let byte = bytes[at];
        match byte {
            b'\'' | b'"' => {
                let escapes = byte == b'\'' && at > 0 && matches!(bytes[at - 1], b'E' | b'e') && {
                    // E'...' only when the E is a word of its own.
                    at < 2 || !(bytes[at - 2].is_ascii_alphanumeric() || bytes[at - 2] == b'_')
                };
                at += 1;
                while at < bytes.len() {
                    if escapes && bytes[at] == b'\\' {
                        at += 2;
                        continue;
                    }
                    if bytes[at] == byte {
                        if bytes.get(at + 1) == Some(&byte) {
                            at += 2;
                            continue;
                        }
                        break;
                    }
                    at += 1;
                }
                meaningful = true;
            }
            b'-' if bytes.get(at + 1) == Some(&b'-') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                let mut depth = 1;
                at += 2;
                while at < bytes.len() && depth > 0 {
                    if bytes[at] == b'/' && bytes.get(at + 1) == Some(&b'*') {
                        depth += 1;
                        at += 1;
                    } else if bytes[at] == b'*' && bytes.get(at + 1) == Some(&b'/') {
                        depth -= 1;
                        at += 1;
                    }
                    at += 1;
                }
                continue;
            }
            b'$' => {
                // $tag$ ... $tag$ (the tag is empty or an identifier not starting with a digit).
                let tag_end = bytes[at + 1..]
                    .iter()
                    .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
                    .map(|len| at + 1 + len);
                let preceded_by_word = at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
                if let Some(end) = tag_end
                    && bytes[end] == b'$'
                    && !preceded_by_word
                    && !bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
                {
                    let tag = &sql[at..=end];
                    match sql[end + 1..].find(tag) {
                        Some(close) => at = end + 1 + close + tag.len() - 1,
                        None => at = bytes.len(),
                    }
                }
                meaningful = true;
            }
            b';' => {
                if meaningful {
                    pieces.push(Piece { start, text: sql[start..at].trim_start_matches(char::is_whitespace) });
                }
                start = at + 1;
                meaningful = false;
            }
            byte if byte.is_ascii_whitespace() => {}
            _ => meaningful = true,
        }
        at += 1;
    }
    if meaningful {
        pieces.push(Piece { start, text: sql[start.min(sql.len())..].trim_start_matches(char::is_whitespace) });
    }
    // Offsets point at the first non-space character.
    for piece in &mut pieces {
        piece.start = piece.text.as_ptr() as usize - sql.as_ptr() as usize;
    }
    pieces
}

/// A token of a server command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// An unquoted word, lower-cased.
    Word(String),
    /// A "quoted" identifier, as written.
    Quoted(String),
    /// A 'string' (also E'...'), unescaped.
    Str(String),
    Number(String),
    Punct(char),
}

/// Tokens of a statement's text (comments dropped). `None` if a quote is not closed.
pub fn tokens(text: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
        } else if c == '-' && chars.get(at + 1) == Some(&'-') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && chars.get(at + 1) == Some(&'*') {
            at += 2;
            while at < chars.len() && !(chars[at] == '*' && chars.get(at + 1) == Some(&'/')) {
                at += 1;
            }
            at += 2;
        } else if c == '\'' || ((c == 'E' || c == 'e') && chars.get(at + 1) == Some(&'\'')) {
            let escapes = c != '\'';
            at += if escapes { 2 } else { 1 };
            let mut value = String::new();
            loop {
                let ch = *chars.get(at)?;
                if escapes && ch == '\\' {
                    let next = *chars.get(at + 1)?;
                    value.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                    at += 2;
                } else if ch == '\'' {
                    if chars.get(at + 1) == Some(&'\'') {
                        value.push('\'');
                        at += 2;
                    } else {
                        at += 1;
                        break;
                    }
                } else {
                    value.push(ch);
                    at += 1;
                }
            }
            out.push(Token::Str(value));
        } else if c == '"' {
            at += 1;
            let mut value = String::new();
            loop {
                let ch = *chars.get(at)?;
                if ch == '"' {
                    if chars.get(at + 1) == Some(&'"') {
                        value.push('"');
                        at += 2;
                    } else {
                        at += 1;
                        break;
                    }
                } else {
                    value.push(ch);
                    at += 1;
                }
            }
            out.push(Token::Quoted(value));
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(at + 1).is_some_and(char::is_ascii_digit))
            || c == '.' && chars.get(at + 1).is_some_and(char::is_ascii_digit)
        {
            let begin = at;
            at += 1;
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
            out.push(Token::Number(chars[begin..at].iter().collect()));
        } else if c.is_alphanumeric() || c == '_' {
            let begin = at;
            while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_' || chars[at] == '$') {
                at += 1;
            }
            out.push(Token::Word(chars[begin..at].iter().collect::<String>().to_lowercase()));
        } else {
            out.push(Token::Punct(c));
            at += 1;
        }
    }
    Some(out)
}

/// A statement the server carries out itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// BEGIN / START TRANSACTION, with any isolation or access mode (Tern's transactions are
    /// all serializable).
    Begin,
    /// COMMIT / END (`tag` is what a successful one reports).
    Commit,
    /// ROLLBACK / ABORT.
    Rollback,
    /// SET [LOCAL] name TO value (`None`: DEFAULT). `local`: until the transaction ends.
    Set {
        name: String,
        value: Option<String>,
        local: bool,
    },
    /// RESET name / RESET ALL (`None`).
    Reset(Option<String>),
    Show(String),
    /// Accepted and done without effect: VACUUM, CHECKPOINT, SET TRANSACTION, ...
    NoOp(&'static str),
    /// DISCARD ALL: settings reset, prepared statements and portals closed.
    Discard,
    /// DEALLOCATE name / DEALLOCATE ALL (`None`).
    Deallocate(Option<String>),
    Copy(crate::copy::CopySpec),
    CreateUser {
        name: String,
        password: Option<String>,
    },
    AlterUser {
        name: String,
        password: Option<String>,
    },
    DropUser {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `PREPARE name [(types)] AS statement`: a named prepared statement, as Parse makes.
    Prepare {
        name: String,
        body: String,
    },
    /// `EXECUTE name [(arguments)]`: the arguments as SQL expressions, comma-separated.
    Execute {
        name: String,
        arguments: String,
    },
    /// A PostgreSQL statement Tern does not have (LISTEN, NOTIFY, ...).
    Unsupported(String),
    /// A statement the server recognized but could not read.
    Invalid(String),
    /// A statement that fails as PostgreSQL would have it fail: SQLSTATE and message.
    Failed(&'static str, String),
}

fn word(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Word(word)) => Some(word),
        _ => None,
    }
}

/// A name: a word or a quoted identifier.
fn name(token: Option<&Token>) -> Option<String> {
    match token {
        Some(Token::Word(word)) => Some(word.clone()),
        Some(Token::Quoted(name)) => Some(name.clone()),
        _ => None,
    }
}

/// Whether `text` is `ROLLBACK TO [SAVEPOINT] name`: the one statement besides ROLLBACK that
/// runs in a failed transaction block, and ends the failed state when it succeeds.
pub fn is_rollback_to(text: &str) -> bool {
    let Some(tokens) = tokens(text) else { return false };
    matches!(word(tokens.first()), Some("rollback" | "abort")) && word(tokens.get(1)) == Some("to")
}

/// The command `text` is, or `None` for SQL the engine runs.
pub fn classify(text: &str) -> Option<Command> {
    let tokens = tokens(text)?;
    let first = word(tokens.first())?;
    let second = word(tokens.get(1));
    Some(match first {
        "begin" => Command::Begin,
        "start" if second == Some("transaction") => Command::Begin,
        "commit" | "end" => Command::Commit,
        "rollback" | "abort" => {
            // ROLLBACK TO [SAVEPOINT] goes to the engine.
            if second == Some("to") || tokens.iter().any(|token| word(Some(token)) == Some("prepared")) {
                return None;
            }
            Command::Rollback
        }
        "set" => set(&tokens[1..]),
        "reset" => match name(tokens.get(1)) {
            Some(target) if target == "all" => Command::Reset(None),
            Some(target) => Command::Reset(Some(dotted(&tokens[1..]).unwrap_or(target))),
            None => Command::Invalid("RESET needs a parameter name".into()),
        },
        "show" => match (name(tokens.get(1)), second) {
            (_, Some("transaction")) if word(tokens.get(2)) == Some("isolation") => {
                Command::Show("transaction_isolation".into())
            }
            (_, Some("time")) if word(tokens.get(2)) == Some("zone") => Command::Show("timezone".into()),
            (Some(_), _) => Command::Show(dotted(&tokens[1..]).unwrap_or_default()),
            (None, _) => Command::Invalid("SHOW needs a parameter name".into()),
        },
        "vacuum" => Command::NoOp("VACUUM"),
        // ANALYZE gathers the planner's statistics in the engine.
        "analyze" | "analyse" => return None,
        "checkpoint" => Command::NoOp("CHECKPOINT"),
        "discard" => Command::Discard,
        "deallocate" => {
            let rest: Vec<&Token> = tokens[1..].iter().filter(|token| word(Some(token)) != Some("prepare")).collect();
            match rest.first().and_then(|token| name(Some(token))) {
                Some(target) if target == "all" => Command::Deallocate(None),
                Some(target) => Command::Deallocate(Some(target)),
                None => Command::Invalid("DEALLOCATE needs a statement name".into()),
            }
        }
        "copy" => match crate::copy::parse(after_first_word(text), &tokens[1..]) {
            Ok(spec) => Command::Copy(spec),
            Err(message) => Command::Invalid(message),
        },
        "create" if matches!(second, Some("user" | "role")) => match user(&tokens[2..]) {
            Some((name, password)) => Command::CreateUser { name, password },
            None => Command::Invalid("expected CREATE USER name [[WITH] PASSWORD 'password']".into()),
        },
        "alter" if matches!(second, Some("user" | "role")) => match user(&tokens[2..]) {
            Some((name, password)) => Command::AlterUser { name, password },
            None => Command::Invalid("expected ALTER USER name [WITH] PASSWORD 'password'".into()),
        },
        "drop" if matches!(second, Some("user" | "role")) => {
            let if_exists = word(tokens.get(2)) == Some("if") && word(tokens.get(3)) == Some("exists");
            let names: Vec<String> =
                tokens[if if_exists { 4 } else { 2 }..].iter().filter_map(|token| name(Some(token))).collect();
            if names.is_empty() {
                Command::Invalid("DROP USER needs a name".into())
            } else {
                Command::DropUser { names, if_exists }
            }
        }
        // Without LISTEN there is nothing to stop listening to; without cursors, nothing to
        // close: asyncpg's pool resets connections with `CLOSE ALL; UNLISTEN *`.
        "unlisten" => Command::NoOp("UNLISTEN"),
        "close" if second == Some("all") => Command::NoOp("CLOSE CURSOR ALL"),
        "close" => match name(tokens.get(1)) {
            Some(cursor) => Command::Failed("34000", format!("cursor \"{cursor}\" does not exist")),
            None => Command::Invalid("CLOSE needs a cursor name or ALL".into()),
        },
        // pg_dump's `LOCK TABLE t IN ACCESS SHARE MODE` keeps DDL out while it reads; Tern's
        // reads run on one snapshot, which no later DDL changes. Other modes are refused.
        "lock"
            if text
                .to_ascii_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .ends_with(&["access", "share", "mode"]) =>
        {
            Command::NoOp("LOCK TABLE")
        }
        "prepare" if second != Some("transaction") => prepare(after_first_word(text)),
        "execute" => execute(after_first_word(text)),
        "listen" | "notify" | "lock" | "grant" | "revoke" | "declare" | "fetch" | "move" | "cluster" | "prepare" => {
            Command::Unsupported(first.to_uppercase())
        }
        _ => return None,
    })
}

/// A statement name at the start of `text` (lower case) and the text after it.
fn leading_name(text: &str) -> Option<(String, &str)> {
    let text = text.trim_start();
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    (end > 0).then(|| (text[..end].to_lowercase(), text[end..].trim_start()))
}

/// The text after a parenthesized list at the start of `text` (nested parentheses kept
/// together), and the list's inside; `None` when the brackets do not close.
fn parenthesized(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&text[1..at], text[at + 1..].trim_start()));
                }
            }
            _ => {}
        }
    }
    None
}

/// `PREPARE name [(type, ...)] AS statement` (the types are left to inference).
fn prepare(rest: &str) -> Command {
    let invalid = || Command::Invalid("expected PREPARE name [(type, ...)] AS statement".into());
    let Some((name, mut rest)) = leading_name(rest) else { return invalid() };
    if rest.starts_with('(') {
        let Some((_, after)) = parenthesized(rest) else { return invalid() };
        rest = after;
    }
    match rest.get(..2) {
        Some(keyword) if keyword.eq_ignore_ascii_case("as") && rest[2..].starts_with(char::is_whitespace) => {
            Command::Prepare { name, body: rest[2..].trim().to_string() }
        }
        _ => invalid(),
    }
}

/// `EXECUTE name [(argument, ...)]`.
fn execute(rest: &str) -> Command {
    let invalid = || Command::Invalid("expected EXECUTE name [(argument, ...)]".into());
    let Some((name, rest)) = leading_name(rest) else { return invalid() };
    let rest = rest.trim_end().trim_end_matches(';').trim_end();
    if rest.is_empty() {
        return Command::Execute { name, arguments: String::new() };
    }
    match parenthesized(rest) {
        Some((arguments, "")) => Command::Execute { name, arguments: arguments.trim().to_string() },
        _ => invalid(),
    }
}

/// The text after the statement's first word (and any comments before it).
fn after_first_word(text: &str) -> &str {
    let trimmed = text.trim_start();
    let end = trimmed.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(trimmed.len());
    &trimmed[end..]
}

/// A parameter name, possibly dotted (`tern.priority`), from the first tokens.
fn dotted(tokens: &[Token]) -> Option<String> {
    let first = name(tokens.first())?;
    if tokens.get(1) == Some(&Token::Punct('.'))
        && let Some(second) = name(tokens.get(2))
    {
        return Some(format!("{first}.{second}"));
    }
    Some(first)
}

fn set(tokens: &[Token]) -> Command {
    let local = word(tokens.first()) == Some("local");
    match set_scoped(tokens) {
        Command::Set { name, value, .. } => Command::Set { name, value, local },
        other => other,
    }
}

/// SET after its SET: `[SESSION | LOCAL] name TO value`.
fn set_scoped(tokens: &[Token]) -> Command {
    let mut tokens = tokens;
    if matches!(word(tokens.first()), Some("session" | "local")) {
        if word(tokens.get(1)) == Some("characteristics") || word(tokens.get(1)) == Some("authorization") {
            return Command::NoOp("SET");
        }
        tokens = &tokens[1..];
    }
    match word(tokens.first()) {
        Some("transaction") => return Command::NoOp("SET"),
        Some("time") if word(tokens.get(1)) == Some("zone") => {
            return match tokens.get(2) {
                Some(Token::Word(value)) if value == "local" || value == "default" => {
                    Command::Set { name: "timezone".into(), value: None, local: false }
                }
                Some(Token::Str(value) | Token::Word(value) | Token::Number(value)) => {
                    Command::Set { name: "timezone".into(), value: Some(value.clone()), local: false }
                }
                _ => Command::Invalid("SET TIME ZONE needs a value".into()),
            };
        }
        Some("names") => {
            return match tokens.get(1) {
                Some(Token::Str(value) | Token::Word(value)) => {
                    Command::Set { name: "client_encoding".into(), value: Some(value.clone()), local: false }
                }
                _ => Command::Invalid("SET NAMES needs an encoding".into()),
            };
        }
        _ => {}
    }
    let Some(param) = dotted(tokens) else { return Command::Invalid("SET needs a parameter name".into()) };
    let skip = if param.contains('.') { 3 } else { 1 };
    let rest = &tokens[skip.min(tokens.len())..];
    let rest = match rest.first() {
        Some(Token::Word(to)) if to == "to" => &rest[1..],
        Some(Token::Punct('=')) => &rest[1..],
        _ => return Command::Invalid(format!("syntax error in SET {param}: expected TO or =")),
    };
    if rest.len() == 1 && word(rest.first()) == Some("default") {
        return Command::Set { name: param, value: None, local: false };
    }
    // A list of values (search_path) is joined with ", ".
    let mut values = Vec::new();
    for token in rest {
        match token {
            Token::Str(value) | Token::Word(value) | Token::Number(value) | Token::Quoted(value) => {
                values.push(value.clone())
            }
            Token::Punct(',') => {}
            Token::Punct(other) => return Command::Invalid(format!("syntax error at or near \"{other}\" in SET")),
        }
    }
    if values.is_empty() {
        return Command::Invalid(format!("SET {param} needs a value"));
    }
    Command::Set { name: param, value: Some(values.join(", ")), local: false }
}

/// `name [WITH] [LOGIN|...] [PASSWORD 'secret' | PASSWORD NULL]`.
fn user(tokens: &[Token]) -> Option<(String, Option<String>)> {
    let user = name(tokens.first())?;
    let mut password = None;
    let mut at = 1;
    while at < tokens.len() {
        if word(tokens.get(at)) == Some("password") {
            match tokens.get(at + 1) {
                Some(Token::Str(secret)) => password = Some(secret.clone()),
                Some(Token::Word(null)) if null == "null" => password = None,
                _ => return None,
            }
            at += 2;
        } else if matches!(tokens.get(at), Some(Token::Word(_))) {
            at += 1; // WITH, LOGIN, SUPERUSER, ...: accepted, Tern has no privileges yet
        } else {
            return None;
        }
    }
    Some((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_quotes_and_comments() {
        let sql = "select 'a;b'; select \"x;\" -- c;\n; /* ; /* ; */ */ select $$;$$, $t$;$t$;  ; select E'\\';'";
        let pieces: Vec<&str> = split(sql).into_iter().map(|piece| piece.text).collect();
        assert_eq!(
            pieces,
            ["select 'a;b'", "select \"x;\" -- c;\n", "/* ; /* ; */ */ select $$;$$, $t$;$t$", "select E'\\';'"]
        );
        assert!(split("  -- only a comment\n").is_empty());
        assert_eq!(split("select $1;select 2")[1].start, 10);
        // Unclosed quotes run to the end (the engine reports the error).
        assert_eq!(split("select 'abc;").len(), 1);
    }

    #[test]
    fn commands_are_recognized() {
        let set =
            |name: &str, value: &str| Some(Command::Set { name: name.into(), value: Some(value.into()), local: false });
        assert_eq!(classify("SET application_name = 'psql'"), set("application_name", "psql"));
        assert_eq!(classify("set tern.priority to best_effort"), set("tern.priority", "best_effort"));
        assert_eq!(classify("SET search_path TO a, \"B\""), set("search_path", "a, B"));
        assert_eq!(classify("SET TIME ZONE 'UTC'"), set("timezone", "UTC"));
        assert_eq!(
            classify("SET statement_timeout TO DEFAULT"),
            Some(Command::Set { name: "statement_timeout".into(), value: None, local: false })
        );
        assert_eq!(
            classify("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            Some(Command::NoOp("SET"))
        );
        assert!(matches!(classify("SET x"), Some(Command::Invalid(_))));
        assert_eq!(classify("show tern.priority"), Some(Command::Show("tern.priority".into())));
        assert_eq!(classify("SHOW TRANSACTION ISOLATION LEVEL"), Some(Command::Show("transaction_isolation".into())));
        assert_eq!(classify("BEGIN ISOLATION LEVEL REPEATABLE READ"), Some(Command::Begin));
        assert_eq!(classify("end"), Some(Command::Commit));
        assert_eq!(classify("ROLLBACK TO SAVEPOINT a"), None);
        assert!(is_rollback_to("rollback to savepoint a") && is_rollback_to("ROLLBACK TO a"));
        assert!(!is_rollback_to("ROLLBACK") && !is_rollback_to("SAVEPOINT a"));
        assert_eq!(classify("vacuum analyze pgbench_branches"), Some(Command::NoOp("VACUUM")));
        assert_eq!(classify("ANALYZE pgbench_branches"), None);
        assert_eq!(classify("select 1"), None);
        assert_eq!(
            classify("CREATE USER alice WITH PASSWORD 's''cret'"),
            Some(Command::CreateUser { name: "alice".into(), password: Some("s'cret".into()) })
        );
        assert_eq!(
            classify("DROP ROLE IF EXISTS a, b"),
            Some(Command::DropUser { names: vec!["a".into(), "b".into()], if_exists: true })
        );
        assert_eq!(classify("LISTEN x"), Some(Command::Unsupported("LISTEN".into())));
        assert_eq!(
            classify("PREPARE dumpEnum(pg_catalog.oid, numeric(10,2)) AS SELECT $1"),
            Some(Command::Prepare { name: "dumpenum".into(), body: "SELECT $1".into() })
        );
        assert_eq!(
            classify("EXECUTE dumpEnum('16386', (1 + 2))"),
            Some(Command::Execute { name: "dumpenum".into(), arguments: "'16386', (1 + 2)".into() })
        );
        assert_eq!(classify("EXECUTE x"), Some(Command::Execute { name: "x".into(), arguments: String::new() }));
        assert!(matches!(classify("PREPARE x SELECT 1"), Some(Command::Invalid(_))));
        assert_eq!(classify("PREPARE TRANSACTION 'x'"), Some(Command::Unsupported("PREPARE".into())));
        assert_eq!(tokens("select 'abc"), None);
    }
}
