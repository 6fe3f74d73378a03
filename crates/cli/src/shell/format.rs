//! Result formatting for `tern shell` and `tern export`: table, box, csv, json and line modes.

use std::io::{self, Write};
use tern::{Rows, Value};
use unicode_width::UnicodeWidthStr;

/// How query results are printed (`.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// ASCII grid: `+---+` borders, numbers aligned right.
    Table,
    /// The same grid drawn with Unicode box characters.
    Box,
    /// RFC 4180 comma-separated values; NULL is an empty field.
    Csv,
    /// A JSON array with one object per row.
    Json,
    /// One `column = value` line per column, a blank line between rows.
    Line,
}

impl Mode {
    pub const NAMES: &'static str = "table|box|csv|json|line";

    pub fn parse(name: &str) -> Option<Mode> {
        Some(match name.to_ascii_lowercase().as_str() {
            "table" => Mode::Table,
            "box" => Mode::Box,
            "csv" => Mode::Csv,
            "json" => Mode::Json,
            "line" => Mode::Line,
            _ => return None,
        })
    }
}

/// Writes `rows` in `mode`; `headers` adds the column names (table, box and csv).
pub fn write_rows(out: &mut dyn Write, rows: &Rows, mode: Mode, headers: bool) -> io::Result<()> {
    match mode {
        Mode::Table => write_grid(out, rows, headers, &ASCII),
        Mode::Box => write_grid(out, rows, headers, &UNICODE),
        Mode::Csv => write_csv(out, rows, headers),
        Mode::Json => write_json(out, rows),
        Mode::Line => write_lines(out, rows),
    }
}

struct Borders {
    horizontal: &'static str,
    vertical: &'static str,
    /// Left, middle and right joints of the top, separator and bottom lines.
    top: [&'static str; 3],
    middle: [&'static str; 3],
    bottom: [&'static str; 3],
}

const ASCII: Borders =
    Borders { horizontal: "-", vertical: "|", top: ["+", "+", "+"], middle: ["+", "+", "+"], bottom: ["+", "+", "+"] };
const UNICODE: Borders =
    Borders {
        horizontal: "─", vertical: "│", top: ["┌", "┬", "┐"], middle: ["├", "┼", "┤"], bottom: ["└", "┴", "┘"]
    };

fn write_grid(out: &mut dyn Write, rows: &Rows, headers: bool, borders: &Borders) -> io::Result<()> {
    if rows.column_count() == 0 {
        return Ok(());
    }
    // Cells are one line each: line breaks and tabs inside values are shown escaped.
    let cell = |text: String| text.replace('\n', "\\n").replace('\r', "\\r").replace('\t', "\\t");
    let body: Vec<Vec<(String, bool)>> = rows
        .iter()
        .map(|row| {
            row.values()
                .iter()
                .map(|value| {
                    let numeric = matches!(value, Value::Integer(_) | Value::Real(_) | Value::Decimal(_));
                    (cell(value.to_string()), numeric)
                })
                .collect()
        })
        .collect();
    let names: Vec<String> = rows.column_names().iter().map(|name| cell(name.clone())).collect();
    let mut widths: Vec<usize> = names.iter().map(|name| if headers { name.width() } else { 0 }).collect();
    for row in &body {
        for (width, (text, _)) in widths.iter_mut().zip(row) {
            *width = (*width).max(text.width());
        }
    }
    let rule = |joints: &[&str; 3]| -> String {
        let segments: Vec<String> = widths.iter().map(|width| borders.horizontal.repeat(width + 2)).collect();
        format!("{}{}{}", joints[0], segments.join(joints[1]), joints[2])
    };
    let line = |cells: &mut dyn Iterator<Item = (&str, bool)>| -> String {
        let mut text = String::from(borders.vertical);
        for ((value, right), width) in cells.zip(&widths) {
            let pad = " ".repeat(width - value.width());
            if right {
                text.push_str(&format!(" {pad}{value} {}", borders.vertical));
            } else {
                text.push_str(&format!(" {value}{pad} {}", borders.vertical));
            }
        }
        text
    };
    writeln!(out, "{}", rule(&borders.top))?;
    if headers {
        writeln!(out, "{}", line(&mut names.iter().map(|name| (name.as_str(), false))))?;
        writeln!(out, "{}", rule(&borders.middle))?;
    }
    for row in &body {
        writeln!(out, "{}", line(&mut row.iter().map(|(text, right)| (text.as_str(), *right))))?;
    }
    writeln!(out, "{}", rule(&borders.bottom))
}

fn write_csv(out: &mut dyn Write, rows: &Rows, headers: bool) -> io::Result<()> {
    write_streamed(RowStream::csv(out, rows.column_names(), headers)?, rows)
}

/// Rows written one at a time as they come, in a mode that needs no look at later rows (csv
/// and json): what `tern export` writes a result of any size with.
pub enum RowStream<'w> {
    Csv(Box<csv::Writer<&'w mut dyn Write>>),
    Json { out: &'w mut dyn Write, keys: Vec<String>, written: usize },
}

impl<'w> RowStream<'w> {
    /// A stream in `mode`, or `None` for a mode that lays out the whole result (table, box,
    /// line).
    pub fn start(out: &'w mut dyn Write, mode: Mode, names: &[String], headers: bool) -> io::Result<Option<Self>> {
        match mode {
            Mode::Csv => Self::csv(out, names, headers).map(Some),
            Mode::Json => Self::json(out, names).map(Some),
            Mode::Table | Mode::Box | Mode::Line => Ok(None),
        }
    }

    fn csv(out: &'w mut dyn Write, names: &[String], headers: bool) -> io::Result<Self> {
        let mut writer = csv::WriterBuilder::new().flexible(true).from_writer(out);
        if headers && !names.is_empty() {
            writer.write_record(names).map_err(csv_error)?;
        }
        Ok(RowStream::Csv(Box::new(writer)))
    }

    fn json(out: &'w mut dyn Write, names: &[String]) -> io::Result<Self> {
        write!(out, "[")?;
        let keys = names.iter().map(|name| serde_json::Value::String(name.clone()).to_string()).collect();
        Ok(RowStream::Json { out, keys, written: 0 })
    }

    pub fn row(&mut self, values: &[Value]) -> io::Result<()> {
        match self {
            RowStream::Csv(writer) => {
                let fields = values.iter().map(|value| match value {
                    Value::Null => String::new(),
                    value => value.to_string(),
                });
                writer.write_record(fields).map_err(csv_error)
            }
            RowStream::Json { out, keys, written } => {
                let fields: Vec<String> =
                    keys.iter().zip(values).map(|(key, value)| format!("{key}:{}", json_value(value))).collect();
                let separator = if *written == 0 { "" } else { "," };
                *written += 1;
                write!(out, "{separator}\n{{{}}}", fields.join(","))
            }
        }
    }

    pub fn finish(self) -> io::Result<()> {
        match self {
            RowStream::Csv(mut writer) => writer.flush(),
            RowStream::Json { out, written, .. } => writeln!(out, "{}]", if written == 0 { "" } else { "\n" }),
        }
    }
}

fn csv_error(error: csv::Error) -> io::Error {
    io::Error::other(error.to_string())
}

fn write_streamed(mut stream: RowStream<'_>, rows: &Rows) -> io::Result<()> {
    for row in rows {
        stream.row(row.values())?;
    }
    stream.finish()
}

/// A value as JSON: numbers as numbers (a decimal's exact digits; an infinite real, which
/// JSON cannot write, as null), text as a string, a blob as its upper-case hex digits in a string.
fn json_value(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Integer(integer) => integer.to_string(),
        Value::Real(real) if real.is_finite() => {
            serde_json::Number::from_f64(*real).map_or("null".into(), |n| n.to_string())
        }
        Value::Real(_) => "null".into(),
        Value::Decimal(decimal) => decimal.to_string(),
        Value::Text(text) => serde_json::Value::String(text.clone()).to_string(),
        Value::Blob(bytes) => serde_json::Value::String(tern_exec::value::hex(bytes)).to_string(),
        Value::Temporal(_) | Value::Enum(_) | Value::Record(_) => {
            serde_json::Value::String(value.to_text()).to_string()
        }
    }
}

fn write_json(out: &mut dyn Write, rows: &Rows) -> io::Result<()> {
    write_streamed(RowStream::json(out, rows.column_names())?, rows)
}

fn write_lines(out: &mut dyn Write, rows: &Rows) -> io::Result<()> {
    let width = rows.column_names().iter().map(|name| name.width()).max().unwrap_or(0);
    for (index, row) in rows.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        for (name, value) in rows.column_names().iter().zip(row.values()) {
            let pad = " ".repeat(width - name.width());
            writeln!(out, "{pad}{name} = {value}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rows {
        let db = tern::Database::open_in_memory().unwrap();
        db.connect()
            .query("SELECT 1 AS id, 'ada' AS name, NULL AS note UNION ALL SELECT 22, 'b,\"q\"', 2.5 ORDER BY id", ())
            .unwrap()
    }

    fn render(mode: Mode, headers: bool) -> String {
        let mut out = Vec::new();
        write_rows(&mut out, &sample(), mode, headers).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_mode_writes_what_its_readers_expect() {
        assert_eq!(
            render(Mode::Table, true),
            "+----+-------+------+\n| id | name  | note |\n+----+-------+------+\n|  1 | ada   | NULL |\n| 22 | b,\"q\" |  2.5 |\n+----+-------+------+\n"
        );
        assert_eq!(
            render(Mode::Table, false),
            "+----+-------+------+\n|  1 | ada   | NULL |\n| 22 | b,\"q\" |  2.5 |\n+----+-------+------+\n"
        );
        assert!(render(Mode::Box, true).starts_with("┌────┬───────┬──────┐\n│ id │ name  │ note │\n├────┼"));
        assert_eq!(render(Mode::Csv, true), "id,name,note\n1,ada,\n22,\"b,\"\"q\"\"\",2.5\n");
        assert_eq!(render(Mode::Csv, false), "1,ada,\n22,\"b,\"\"q\"\"\",2.5\n");
        let json = render(Mode::Json, true);
        assert_eq!(
            json,
            "[\n{\"id\":1,\"name\":\"ada\",\"note\":null},\n{\"id\":22,\"name\":\"b,\\\"q\\\"\",\"note\":2.5}\n]\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed[1]["note"], 2.5);
        assert_eq!(
            render(Mode::Line, true),
            "  id = 1\nname = ada\nnote = NULL\n\n  id = 22\nname = b,\"q\"\nnote = 2.5\n"
        );
        for name in Mode::NAMES.split('|') {
            assert!(Mode::parse(name).is_some());
        }
        assert!(Mode::parse("html").is_none());
    }

    #[test]
    fn empty_results_and_special_values() {
        let db = tern::Database::open_in_memory().unwrap();
        let rows = db.connect().query("SELECT 1 AS x WHERE 0", ()).unwrap();
        let mut out = Vec::new();
        write_rows(&mut out, &rows, Mode::Json, true).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[]\n");
        let rows = db.connect().query("SELECT x'00ff' AS b, 'a\nb' AS t, 1e999 AS inf", ()).unwrap();
        let mut out = Vec::new();
        write_rows(&mut out, &rows, Mode::Json, true).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[\n{\"b\":\"00FF\",\"t\":\"a\\nb\",\"inf\":null}\n]\n");
        let mut out = Vec::new();
        write_rows(&mut out, &rows, Mode::Table, true).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("| x'00ff' | a\\nb |"));
    }
}
