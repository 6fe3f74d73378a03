//! `tern export`: a query's rows written to standard output as the engine produces them, so a
//! result of any size is written without being held in memory.

use super::format::{Mode, RowStream};
use std::io::Write;

/// Runs `query` on `connection` and writes its rows to standard output in `mode` (csv or json;
/// a mode that lays out the whole result writes nothing).
pub fn run(connection: &tern::Connection, query: &str, mode: Mode) -> tern::Result<()> {
    let mut statement = connection.prepare(query)?;
    let names = statement.column_names()?;
    let mut out = std::io::BufWriter::with_capacity(256 << 10, std::io::stdout().lock());
    let Some(mut stream) = RowStream::start(&mut out, mode, &names, true).map_err(write_error)? else {
        return Ok(());
    };
    statement.for_each((), |row| stream.row(row.values()).map_err(write_error))?;
    stream.finish().map_err(write_error)?;
    out.flush().map_err(write_error)
}

fn write_error(error: std::io::Error) -> tern::Error {
    tern::Error::new("58030", format!("could not write the rows: {error}"))
}
