//! `Database::integrity_check`: the SQL layer's part of `tern check`, like SQLite's
//! `PRAGMA integrity_check`. Below it the LSM checks its tables, bitmap and pages; here the
//! catalog is checked against itself and against the stored keys, every row against its
//! table's definition, and every index against its table, entry by entry, in both directions.

use crate::session::Database;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use tern_exec::catalog::{Catalog, IndexDef, TableDef};
use tern_exec::codec::{self, object_of_key, object_prefix, prefix_end};
use tern_exec::error::Result;
use tern_exec::exec::{Executor, SCAN_CHUNK_ROWS};

/// Problems listed per table or index before the rest are only counted.
const EXAMPLES: usize = 10;

/// What [`Database::integrity_check`] found.
#[derive(Debug, Clone, Default)]
pub struct IntegrityReport {
    /// The storage layer's findings (tables, pages, bitmap).
    pub storage: tern_lsm::IntegrityReport,
    /// SQL tables and indexes checked.
    pub tables: usize,
    pub indexes: usize,
    /// Rows and index entries read.
    pub rows: u64,
    pub index_entries: u64,
    /// Every problem found, storage's first; empty when the database is sound.
    pub problems: Vec<String>,
}

impl IntegrityReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Collects problems about one object, keeping the first few and counting the rest.
struct Findings<'a> {
    problems: &'a mut Vec<String>,
    object: String,
    count: usize,
}

impl Findings<'_> {
    fn add(&mut self, problem: String) {
        self.count += 1;
        if self.count <= EXAMPLES {
            self.problems.push(format!("{}: {problem}", self.object));
        }
    }
}

impl Drop for Findings<'_> {
    fn drop(&mut self) {
        if self.count > EXAMPLES {
            self.problems.push(format!("{}: {} more problems", self.object, self.count - EXAMPLES));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let shown: String = bytes.iter().take(48).map(|byte| format!("{byte:02x}")).collect();
    if bytes.len() > 48 { format!("{shown}...") } else { shown }
}

impl Database {
    /// Checks the whole database and lists every problem found (see the module documentation).
    /// Reads one snapshot; meant for a database without concurrent writers (the storage check
    /// would see a running flush's unfinished pages as unowned).
    pub fn integrity_check(&self) -> Result<IntegrityReport> {
        let storage = self.txn_db().integrity_check()?;
        let mut report = IntegrityReport { problems: storage.problems.clone(), storage, ..Default::default() };
        let mut txn = self.txn_db().begin();
        let stored_catalog = crate::catalog::catalog_store::read(|key| Ok(txn.get(key)?))?;
        let catalog = match stored_catalog.as_deref().map(Catalog::from_bytes).transpose() {
            Ok(catalog) => catalog.unwrap_or_else(Catalog::new),
            Err(error) => {
                report.problems.push(format!("catalog: {error}"));
                return Ok(report);
            }
        };
        check_catalog(&catalog, &mut report.problems);
        let exec = Executor::new(&mut txn, &[], usize::MAX, &crate::session::host::FrontEnd);
        // A read that fails (a damaged page) ends the check of that object, not of the rest.
        let unreadable = |object: String, error: crate::Error, problems: &mut Vec<String>| {
            problems.push(format!("{object}: reading it failed: {}", error.message));
        };
        for table in catalog.tables.values() {
            report.tables += 1;
            let indexes = catalog.table_indexes(&table.name);
            let mut expected: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); indexes.len()];
            match check_rows(&exec, table, &indexes, &mut expected, &mut report.problems) {
                Ok(rows) => report.rows += rows,
                Err(error) => {
                    unreadable(format!("table {}", table.name), error, &mut report.problems);
                    report.indexes += indexes.len();
                    continue; // the expected entries are incomplete
                }
            }
            for (index, expected) in indexes.iter().zip(expected) {
                report.indexes += 1;
                match check_index(&exec, index, &table.name, expected, &mut report.problems) {
                    Ok(entries) => report.index_entries += entries,
                    Err(error) => unreadable(format!("index {}", index.name), error, &mut report.problems),
                }
            }
        }
        if let Err(error) = check_orphans(&exec, &catalog, &mut report.problems) {
            unreadable("the key space".into(), error, &mut report.problems);
        }
        Ok(report)
    }
}

/// The catalog's own invariants: ids unique and below `next_id`, columns in range, every
/// index on an existing table.
fn check_catalog(catalog: &Catalog, problems: &mut Vec<String>) {
    let mut ids: BTreeMap<u32, String> = BTreeMap::new();
    let mut claim = |id: u32, name: String, problems: &mut Vec<String>| {
        if id >= catalog.next_id {
            problems.push(format!("catalog: {name} has id {id}, not below the next id {}", catalog.next_id));
        }
        if let Some(other) = ids.insert(id, name.clone()) {
            problems.push(format!("catalog: {other} and {name} share id {id}"));
        }
    };
    for table in catalog.tables.values() {
        claim(table.id, format!("table {}", table.name), problems);
        let width = table.columns.len();
        for &column in table.primary_key.iter().chain(table.rowid_alias.iter()) {
            if column >= width {
                problems.push(format!("catalog: table {}'s key names column {column} of {width}", table.name));
            }
        }
    }
    for index in catalog.indexes.values() {
        claim(index.id, format!("index {}", index.name), problems);
        match catalog.table(&index.table) {
            None => problems
                .push(format!("catalog: index {} is on table {}, which does not exist", index.name, index.table)),
            Some(table) => {
                if let Some(column) = index.columns.iter().find(|&&column| column >= table.columns.len()) {
                    problems.push(format!("catalog: index {} names column {column} of {}", index.name, table.name));
                }
            }
        }
    }
}

/// Every row decodes, fits its table, is stored under the key its values give, and keeps
/// NOT NULL; collects the index entries each index should hold. Returns the rows read.
fn check_rows(
    exec: &Executor,
    table: &TableDef,
    indexes: &[std::sync::Arc<IndexDef>],
    expected: &mut [Vec<(Vec<u8>, Vec<u8>)>],
    problems: &mut Vec<String>,
) -> Result<u64> {
    let prefix = object_prefix(table.id);
    let mut findings = Findings { problems, object: format!("table {}", table.name), count: 0 };
    let mut rows = 0u64;
    let width = table.columns.len();
    let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
    exec.scan(Bound::Included(prefix.clone()), end, false, SCAN_CHUNK_ROWS, |key, value| {
        rows += 1;
        let mut row = match codec::decode_row(value) {
            Ok(row) => row,
            Err(error) => {
                findings.add(format!("row {} does not decode: {}", hex(&key[prefix.len()..]), error.message));
                return Ok(true);
            }
        };
        if row.len() > width {
            findings.add(format!("row {} has {} columns, the table {width}", hex(&key[prefix.len()..]), row.len()));
            return Ok(true);
        }
        while row.len() < width {
            row.push(exec.fill_value(table, row.len())?);
        }
        let key_ok = if table.has_hidden_rowid() {
            codec::decode_integer_key(&key[prefix.len()..]).is_some()
        } else {
            codec::encode_key_of(&prefix, table.primary_key.iter().map(|&column| &row[column])) == key
        };
        if !key_ok {
            findings.add(format!("row {} is stored under a key its values do not give", hex(&key[prefix.len()..])));
        }
        for (column, definition) in table.columns.iter().enumerate() {
            if definition.not_null && row[column].is_null() {
                findings.add(format!(
                    "row {} has NULL in NOT NULL column {}",
                    hex(&key[prefix.len()..]),
                    definition.name
                ));
            }
        }
        for (index, expected) in indexes.iter().zip(expected.iter_mut()) {
            let (entry, _) = exec.index_entry(index, table, &row, key);
            expected.push((entry, key.to_vec()));
        }
        Ok(true)
    })?;
    Ok(rows)
}

/// The index holds exactly the entries its table's rows give, each pointing at its row.
/// Returns the entries read.
fn check_index(
    exec: &Executor,
    index: &IndexDef,
    table: &str,
    mut expected: Vec<(Vec<u8>, Vec<u8>)>,
    problems: &mut Vec<String>,
) -> Result<u64> {
    expected.sort_unstable();
    let mut findings = Findings { problems, object: format!("index {} on {table}", index.name), count: 0 };
    for pair in expected.windows(2) {
        if pair[0].0 == pair[1].0 {
            findings.add(format!("rows {} and {} give the same unique entry", hex(&pair[0].1), hex(&pair[1].1)));
        }
    }
    let prefix = object_prefix(index.id);
    let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
    let mut wanted = expected.into_iter().peekable();
    let mut entries = 0u64;
    exec.scan(Bound::Included(prefix.clone()), end, false, SCAN_CHUNK_ROWS, |key, value| {
        entries += 1;
        while let Some((missing, row)) = wanted.next_if(|(wanted, _)| wanted.as_slice() < key) {
            findings.add(format!("no entry {} for row {}", hex(&missing[prefix.len()..]), hex(&row)));
        }
        match wanted.next_if(|(wanted, _)| wanted.as_slice() == key) {
            Some((_, row)) if row != value => findings.add(format!(
                "entry {} points at row {}, not {}",
                hex(&key[prefix.len()..]),
                hex(value),
                hex(&row)
            )),
            Some(_) => {}
            None => findings.add(format!("entry {} belongs to no row", hex(&key[prefix.len()..]))),
        }
        Ok(true)
    })?;
    for (missing, row) in wanted {
        findings.add(format!("no entry {} for row {}", hex(&missing[prefix.len()..]), hex(&row)));
    }
    Ok(entries)
}

/// Keys of tables or indexes the catalog does not know (left behind, or a damaged catalog).
fn check_orphans(exec: &Executor, catalog: &Catalog, problems: &mut Vec<String>) -> Result<()> {
    let known: BTreeSet<u32> =
        catalog.tables.values().map(|table| table.id).chain(catalog.indexes.values().map(|index| index.id)).collect();
    let mut start = object_prefix(0);
    loop {
        let mut found = None;
        exec.scan(Bound::Included(start.clone()), Bound::Excluded(vec![0x11]), false, 1, |key, _| {
            found = object_of_key(key);
            Ok(false)
        })?;
        let Some(id) = found else { return Ok(()) };
        if !known.contains(&id) {
            problems.push(format!("keys of object id {id}, which the catalog does not know"));
        }
        match id.checked_add(1) {
            Some(next) => start = object_prefix(next),
            None => return Ok(()),
        }
    }
}
