//! COPY ... FROM STDIN and COPY ... TO STDOUT in PostgreSQL's text and CSV formats: reading
//! the statement's options, cutting incoming data into rows (a row may span CopyData
//! messages), and writing rows out. The binary format's data is read and written by
//! `copy_binary.rs`.

use crate::compat::Token;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Csv,
    /// PostgreSQL's binary COPY format ([`crate::copy_binary`]).
    Binary,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A table, with the columns named (empty: all).
    Table { name: String, columns: Vec<String> },
    /// `COPY (query) TO STDOUT`.
    Query(String),
}

/// A COPY statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySpec {
    pub source: Source,
    /// FROM STDIN (true) or TO STDOUT (false).
    pub from: bool,
    pub format: Format,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

fn word(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Word(word)) => Some(word),
        _ => None,
    }
}

fn single_byte(value: &str, what: &str) -> Result<u8, String> {
    match value.as_bytes() {
        [byte] if byte.is_ascii() => Ok(*byte),
        _ => Err(format!("COPY {what} must be a single one-byte character")),
    }
}

fn truth(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("true" | "on" | "1") => Ok(true),
        Some("false" | "off" | "0") => Ok(false),
        Some(other) => Err(format!("COPY option value \"{other}\" is not a boolean")),
    }
}

/// Parses what follows COPY: `table [(columns)] | (query)`, `FROM STDIN | TO STDOUT`,
/// `[WITH] (option [value], ...)` or the old forms `CSV`, `HEADER`, `DELIMITER [AS] 'c'`,
/// `NULL [AS] 's'`. `raw` is the statement's text after the COPY keyword (for a query).
pub fn parse(raw: &str, tokens: &[Token]) -> Result<CopySpec, String> {
    let (source, rest): (Source, Vec<Token>) = if tokens.first() == Some(&Token::Punct('(')) {
        // The query's text: up to the parenthesis matching the first one.
        let text = raw.trim_start();
        let inner = text.strip_prefix('(').ok_or("expected ( query )")?;
        let mut depth = 1;
        let mut end = None;
        let mut quote: Option<char> = None;
        for (at, c) in inner.char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(at);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end.ok_or("COPY query has no closing parenthesis")?;
        let rest = crate::compat::tokens(&inner[end + 1..]).ok_or("unterminated quoted string in COPY")?;
        (Source::Query(inner[..end].to_string()), rest)
    } else {
        let mut at = 0;
        let mut name = match tokens.get(at) {
            Some(Token::Word(name) | Token::Quoted(name)) => name.clone(),
            _ => return Err("COPY needs a table name".into()),
        };
        at += 1;
        // schema.table: the schema is ignored, as everywhere in Tern.
        if tokens.get(at) == Some(&Token::Punct('.'))
            && let Some(Token::Word(table) | Token::Quoted(table)) = tokens.get(at + 1)
        {
            name = table.clone();
            at += 2;
        }
        let mut columns = Vec::new();
        if tokens.get(at) == Some(&Token::Punct('(')) {
            at += 1;
            loop {
                match tokens.get(at) {
                    Some(Token::Word(column) | Token::Quoted(column)) => columns.push(column.clone()),
                    _ => return Err("expected a column name in COPY".into()),
                }
                at += 1;
                match tokens.get(at) {
                    Some(Token::Punct(',')) => at += 1,
                    Some(Token::Punct(')')) => {
                        at += 1;
                        break;
                    }
                    _ => return Err("expected , or ) in COPY's column list".into()),
                }
            }
        }
        (Source::Table { name, columns }, tokens[at..].to_vec())
    };
    let from = match (word(rest.first()), word(rest.get(1))) {
        (Some("from"), Some("stdin")) => true,
        (Some("to"), Some("stdout")) => false,
        (Some("from" | "to"), _) => {
            return Err("COPY to or from a file is not supported: use STDIN / STDOUT (psql's \\copy)".into());
        }
        _ => return Err("expected FROM STDIN or TO STDOUT".into()),
    };
    if from && matches!(source, Source::Query(_)) {
        return Err("COPY (query) works only with TO STDOUT".into());
    }
    let mut spec = CopySpec {
        source,
        from,
        format: Format::Text,
        delimiter: b'\t',
        null: "\\N".into(),
        header: false,
        quote: b'"',
        escape: b'"',
    };
    let mut delimiter = None;
    let mut null = None;
    let mut escape = None;
    let mut options = &rest[2..];
    if word(options.first()) == Some("with") {
        options = &options[1..];
    }
    // Options as (name, value) pairs, from either form.
    let mut pairs: Vec<(String, Option<String>)> = Vec::new();
    if options.first() == Some(&Token::Punct('(')) {
        let mut at = 1;
        loop {
            let name = match options.get(at) {
                Some(Token::Word(name)) => name.clone(),
                _ => return Err("expected a COPY option name".into()),
            };
            at += 1;
            let value = match options.get(at) {
                Some(Token::Word(value) | Token::Str(value) | Token::Number(value)) => {
                    at += 1;
                    Some(value.clone())
                }
                _ => None,
            };
            pairs.push((name, value));
            match options.get(at) {
                Some(Token::Punct(',')) => at += 1,
                Some(Token::Punct(')')) if at + 1 == options.len() => break,
                _ => return Err("expected , or ) in COPY's options".into()),
            }
        }
    } else {
        let mut at = 0;
        while at < options.len() {
            let name = word(options.get(at)).ok_or("unexpected token in COPY's options")?.to_string();
            at += 1;
            match name.as_str() {
                "csv" | "binary" => pairs.push(("format".into(), Some(name))),
                "header" | "freeze" => pairs.push((name, None)),
                "delimiter" | "null" | "quote" | "escape" => {
                    if word(options.get(at)) == Some("as") {
                        at += 1;
                    }
                    match options.get(at) {
                        Some(Token::Str(value)) => pairs.push((name, Some(value.clone()))),
                        _ => return Err(format!("COPY {name} needs a quoted value")),
                    }
                    at += 1;
                }
                other => return Err(format!("COPY option \"{other}\" not recognized")),
            }
        }
    }
    for (name, value) in pairs {
        match name.as_str() {
            "format" => {
                spec.format = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    Some("text") => Format::Text,
                    Some("csv") => Format::Csv,
                    Some("binary") => Format::Binary,
                    _ => return Err("COPY format must be text, csv or binary".into()),
                }
            }
            "delimiter" => delimiter = Some(single_byte(&value.unwrap_or_default(), "delimiter")?),
            "null" => null = Some(value.unwrap_or_default()),
            "header" => spec.header = truth(value.as_deref())?,
            "quote" => spec.quote = single_byte(&value.unwrap_or_default(), "quote")?,
            "escape" => escape = Some(single_byte(&value.unwrap_or_default(), "escape")?),
            // FREEZE and ENCODING 'UTF8' change nothing for Tern.
            "freeze" => {
                truth(value.as_deref())?;
            }
            "encoding"
                if value
                    .as_deref()
                    .is_some_and(|v| v.eq_ignore_ascii_case("utf8") || v.eq_ignore_ascii_case("utf-8")) => {}
            other => return Err(format!("COPY option \"{other}\" not recognized")),
        }
    }
    if spec.format == Format::Binary && (delimiter.is_some() || null.is_some() || spec.header) {
        return Err("cannot specify DELIMITER, NULL or HEADER in BINARY mode".into());
    }
    if spec.format == Format::Csv {
        spec.delimiter = b',';
        spec.null = String::new();
        spec.escape = spec.quote;
    }
    if let Some(delimiter) = delimiter {
        spec.delimiter = delimiter;
    }
    if let Some(null) = null {
        spec.null = null;
    }
    if let Some(escape) = escape {
        spec.escape = escape;
    }
    if spec.format == Format::Text && spec.header && from {
        // PostgreSQL 15 accepts HEADER for text too: the first line is skipped.
    }
    if matches!(spec.delimiter, b'\n' | b'\r') || (spec.format == Format::Text && spec.delimiter == b'\\') {
        return Err("COPY delimiter cannot be newline, carriage return or backslash".into());
    }
    Ok(spec)
}

/// Cuts incoming COPY data into rows of fields (`None`: NULL).
pub struct RowReader {
    spec: CopySpec,
    pending: Vec<u8>,
    /// The end-of-data marker `\.` was seen: the rest is ignored.
    ended: bool,
    header_pending: bool,
    /// Lines consumed so far (for error messages).
    pub line: u64,
}

pub type Fields = Vec<Option<String>>;

impl RowReader {
    pub fn new(spec: &CopySpec) -> RowReader {
        RowReader { spec: spec.clone(), pending: Vec::new(), ended: false, header_pending: spec.header, line: 0 }
    }

    /// Adds data and returns the complete rows in it.
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Fields>, String> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.pending.extend_from_slice(data);
        let mut rows = Vec::new();
        let mut start = 0;
        while let Some(end) = self.record_end(start) {
            let record = &self.pending[start..end];
            let record = record.strip_suffix(b"\r").unwrap_or(record);
            start = end + 1;
            self.line += 1;
            if record == b"\\." {
                self.ended = true;
                break;
            }
            if std::mem::take(&mut self.header_pending) {
                continue;
            }
            let record = std::str::from_utf8(record).map_err(|_| format!("line {}: invalid UTF-8", self.line))?;
            rows.push(match self.spec.format {
                Format::Text | Format::Binary => self.text_fields(record)?,
                Format::Csv => self.csv_fields(record)?,
            });
        }
        self.pending.drain(..start);
        Ok(rows)
    }

    /// The data ended: the last line may lack its newline.
    pub fn finish(&mut self) -> Result<Vec<Fields>, String> {
        if self.ended || self.pending.is_empty() {
            return Ok(Vec::new());
        }
        if self.spec.format == Format::Csv && self.record_end(0).is_none() && self.in_open_quote() {
            return Err(format!("line {}: unterminated CSV quoted field", self.line + 1));
        }
        self.pending.push(b'\n');
        self.feed(&[])
    }

    fn in_open_quote(&self) -> bool {
        let mut open = false;
        for &byte in &self.pending {
            if byte == self.spec.quote {
                open = !open;
            }
        }
        open
    }

    /// Where the record starting at `start` ends (its newline), if the data holds all of it.
    fn record_end(&self, start: usize) -> Option<usize> {
        let data = &self.pending[start..];
        match self.spec.format {
            Format::Text | Format::Binary => data.iter().position(|&byte| byte == b'\n').map(|at| start + at),
            Format::Csv => {
                let mut quoted = false;
                let mut at = 0;
                while at < data.len() {
                    let byte = data[at];
                    if quoted {
                        if byte == self.spec.escape
                            && self.spec.escape != self.spec.quote
                            && data.get(at + 1) == Some(&self.spec.quote)
                        {
                            at += 2;
                            continue;
                        }
                        if byte == self.spec.quote {
                            quoted = false;
                        }
                    } else if byte == self.spec.quote {
                        quoted = true;
                    } else if byte == b'\n' {
                        return Some(start + at);
                    }
                    at += 1;
                }
                None
            }
        }
    }

    fn text_fields(&self, record: &str) -> Result<Fields, String> {
        let delimiter = self.spec.delimiter as char;
        let mut fields = Vec::new();
        for raw in record.split(delimiter) {
            if raw == self.spec.null {
                fields.push(None);
                continue;
            }
            let mut value = String::with_capacity(raw.len());
            let mut chars = raw.chars().peekable();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    value.push(c);
                    continue;
                }
                match chars.next() {
                    Some('b') => value.push('\u{8}'),
                    Some('f') => value.push('\u{c}'),
                    Some('n') => value.push('\n'),
                    Some('r') => value.push('\r'),
                    Some('t') => value.push('\t'),
                    Some('v') => value.push('\u{b}'),
                    Some('x') => {
                        let mut code = 0u32;
                        let mut digits = 0;
                        while digits < 2
                            && let Some(digit) = chars.peek().and_then(|c| c.to_digit(16))
                        {
                            code = code * 16 + digit;
                            chars.next();
                            digits += 1;
                        }
                        if digits == 0 {
                            value.push('x');
                        } else {
                            value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                    }
                    Some(digit @ '0'..='7') => {
                        let mut code = digit.to_digit(8).expect("octal digit");
                        for _ in 0..2 {
                            match chars.peek().and_then(|c| c.to_digit(8)) {
                                Some(next) => {
                                    code = code * 8 + next;
                                    chars.next();
                                }
                                None => break,
                            }
                        }
                        value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    Some(other) => value.push(other),
                    None => return Err(format!("line {}: backslash at the end of a line", self.line)),
                }
            }
            fields.push(Some(value));
        }
        Ok(fields)
    }

    fn csv_fields(&self, record: &str) -> Result<Fields, String> {
        let (delimiter, quote, escape) =
            (self.spec.delimiter as char, self.spec.quote as char, self.spec.escape as char);
        let mut fields = Vec::new();
        let mut chars = record.chars().peekable();
        let mut value = String::new();
        let mut was_quoted = false;
        let mut quoted = false;
        loop {
            match chars.next() {
                None => {
                    if quoted {
                        return Err(format!("line {}: unterminated CSV quoted field", self.line));
                    }
                    break;
                }
                Some(c) if quoted && c == escape && chars.peek() == Some(&quote) => {
                    chars.next();
                    value.push(quote);
                }
                Some(c) if c == quote => {
                    quoted = !quoted;
                    was_quoted = true;
                }
                Some(c) if !quoted && c == delimiter => {
                    fields.push(self.csv_value(std::mem::take(&mut value), was_quoted));
                    was_quoted = false;
                }
                Some(c) => value.push(c),
            }
        }
        fields.push(self.csv_value(value, was_quoted));
        Ok(fields)
    }

    fn csv_value(&self, value: String, quoted: bool) -> Option<String> {
        if !quoted && value == self.spec.null { None } else { Some(value) }
    }
}

/// One output row in the spec's format, with its newline.
pub fn write_row(spec: &CopySpec, fields: &[Option<String>], out: &mut Vec<u8>) {
    for (at, field) in fields.iter().enumerate() {
        if at > 0 {
            out.push(spec.delimiter);
        }
        match (field, spec.format) {
            (None, _) => out.extend_from_slice(spec.null.as_bytes()),
            // Binary output is written by `copy_binary::write_tuple`; text here is its fallback.
            (Some(value), Format::Text | Format::Binary) => {
                for byte in value.bytes() {
                    match byte {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        byte if byte == spec.delimiter => {
                            out.push(b'\\');
                            out.push(byte);
                        }
                        byte => out.push(byte),
                    }
                }
            }
            (Some(value), Format::Csv) => {
                let bytes = value.as_bytes();
                let needs_quotes = value.is_empty() && spec.null.is_empty()
                    || *value == spec.null
                    || bytes.iter().any(|&b| b == spec.delimiter || b == spec.quote || b == b'\n' || b == b'\r');
                if needs_quotes {
                    out.push(spec.quote);
                    for &byte in bytes {
                        if byte == spec.quote || byte == spec.escape {
                            out.push(spec.escape);
                        }
                        out.push(byte);
                    }
                    out.push(spec.quote);
                } else {
                    out.extend_from_slice(bytes);
                }
            }
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sql: &str) -> Result<CopySpec, String> {
        let raw = sql.trim_start().strip_prefix("copy ").unwrap();
        parse(raw, &crate::compat::tokens(raw).unwrap())
    }

    #[test]
    fn statements_parse() {
        let copy = spec("copy pgbench_accounts from stdin with (freeze on)").unwrap();
        assert_eq!(copy.source, Source::Table { name: "pgbench_accounts".into(), columns: vec![] });
        assert!(copy.from && copy.format == Format::Text && copy.delimiter == b'\t');
        let copy = spec("copy t (a, \"B\") from stdin (format csv, header, delimiter ';')").unwrap();
        assert_eq!(copy.source, Source::Table { name: "t".into(), columns: vec!["a".into(), "B".into()] });
        assert!(copy.header && copy.format == Format::Csv && copy.delimiter == b';' && copy.null.is_empty());
        let copy = spec("copy (select ')' from t) to stdout with csv header").unwrap();
        assert_eq!(copy.source, Source::Query("select ')' from t".into()));
        assert!(!copy.from && copy.header);
        assert!(spec("copy t from '/etc/passwd'").unwrap_err().contains("STDIN"));
        assert_eq!(spec("copy t from stdin (format binary)").unwrap().format, Format::Binary);
        assert!(spec("copy t from stdin (format binary, delimiter ',')").is_err());
        assert!(spec("copy t from stdin (bogus 1)").is_err());
        assert!(spec("copy (select 1) from stdin").is_err());
    }

    #[test]
    fn text_rows_span_messages_and_unescape() {
        let mut reader = RowReader::new(&spec("copy t from stdin").unwrap());
        let mut rows = reader.feed(b"1\ta\\tb\t\\N\n2\t").unwrap();
        rows.extend(reader.feed(b"x\\\\y\t\\101\r\n\\.\nignored\n").unwrap());
        rows.extend(reader.finish().unwrap());
        let text = |s: &str| Some(s.to_string());
        assert_eq!(rows, vec![vec![text("1"), text("a\tb"), None], vec![text("2"), text("x\\y"), text("A")]]);
    }

    #[test]
    fn csv_rows_with_quotes_round_trip() {
        let copy = spec("copy t from stdin (format csv)").unwrap();
        let fields = vec![Some("a,b".to_string()), None, Some(String::new()), Some("say \"hi\"\nthere".into())];
        let mut data = Vec::new();
        write_row(&copy, &fields, &mut data);
        let mut reader = RowReader::new(&copy);
        let (first, second) = data.split_at(7);
        let mut rows = reader.feed(first).unwrap();
        rows.extend(reader.feed(second).unwrap());
        assert_eq!(rows, vec![fields]);
        let mut reader = RowReader::new(&copy);
        reader.feed(b"\"open").unwrap();
        assert!(reader.finish().is_err());
    }
}
