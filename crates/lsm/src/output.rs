//! Writing the output of a flush or a compaction: tables, and the value runs that take their
//! large values (`vlog.rs`).

use crate::db::{Inner, KeepEntry};
use crate::error::{Error, Result};
use crate::iter::Cursor;
use crate::keys::{self, Kind};
use crate::table::{TableBuilder, TableMeta};
use crate::vlog::{self, ValuePointer, ValueRun, ValueRunBuilder, ValueRunMeta};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Where the values of the entries written go.
pub(crate) struct ValueRouting<'a> {
    /// Puts with values of at least this many bytes move to the value log.
    pub separate_from: usize,
    /// Runs whose values still in use are copied into a new run (garbage collection).
    pub collect: &'a BTreeMap<u64, Arc<ValueRun>>,
}

impl ValueRouting<'_> {
    /// Keeps every value where it is.
    pub(crate) fn in_place() -> ValueRouting<'static> {
        static NONE: BTreeMap<u64, Arc<ValueRun>> = BTreeMap::new();
        ValueRouting { separate_from: usize::MAX, collect: &NONE }
    }
}

/// What a flush or compaction wrote.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub tables: Vec<TableMeta>,
    pub runs: Vec<ValueRunMeta>,
    /// Record bytes of runs that are garbage once the output replaces its input: values whose
    /// pointer was dropped, and values copied out of a run being collected.
    pub garbage: BTreeMap<u64, u64>,
    /// Bytes of the new value runs, and of them the values copied out of collected runs.
    pub value_bytes: u64,
    pub relocated_bytes: u64,
}

impl Written {
    fn release(&self, inner: &Inner) {
        let pages = self.tables.iter().map(|meta| meta.pages()).chain(self.runs.iter().map(|meta| meta.pages()));
        for page in pages.flatten() {
            let _ = inner.pool.release(page);
        }
    }
}

/// The table and value run being filled.
struct Builders {
    table: TableBuilder,
    values: Option<ValueRunBuilder>,
    /// Scratch: a pointer entry's key and value, a value read from a collected run.
    key: Vec<u8>,
    pointer: Vec<u8>,
    value: Vec<u8>,
}

impl Inner {
    /// Writes the entries of `cursor` to new tables, starting a new table once one reaches
    /// `split_at` bytes at a user-key boundary (so that all versions of a key stay in one
    /// table). `keep` decides for each entry whether it survives (compaction); `None` keeps
    /// all. `routing` says which values go to new value runs.
    pub(crate) fn write_tables(
        &self,
        cursor: &mut dyn Cursor,
        keep: Option<KeepEntry<'_>>,
        split_at: usize,
        routing: &ValueRouting<'_>,
    ) -> Result<Written> {
        let mut written = Written::default();
        let result = self.write_entries(cursor, keep, split_at, routing, &mut written);
        if let Err(error) = result {
            written.release(self);
            return Err(error);
        }
        Ok(written)
    }

    fn write_entries(
        &self,
        cursor: &mut dyn Cursor,
        mut keep: Option<KeepEntry<'_>>,
        split_at: usize,
        routing: &ValueRouting<'_>,
        written: &mut Written,
    ) -> Result<()> {
        let payload = self.pool.payload_size();
        let new_table = || TableBuilder::new(payload, self.options.bloom_bits_per_key);
        let mut builders =
            Builders { table: new_table(), values: None, key: Vec::new(), pointer: Vec::new(), value: Vec::new() };
        let mut since_check = 0u32;
        while cursor.valid() {
            let key = cursor.key();
            if let Some(keep) = keep.as_mut()
                && !keep(key)?
            {
                if keys::kind_of(key)? == Kind::Pointer {
                    let pointer = ValuePointer::decode(cursor.value())?;
                    *written.garbage.entry(pointer.run).or_default() += pointer.record_bytes();
                }
                cursor.advance()?;
                continue;
            }
            if builders.table.estimated_size() >= split_at
                && keys::user_key(builders.table.last_key()) != keys::user_key(key)
            {
                let full = std::mem::replace(&mut builders.table, new_table());
                written.tables.push(full.finish(&self.pool, self.next_id())?);
            }
            self.add_entry(&mut builders, key, cursor.value(), routing, written)?;
            cursor.advance()?;
            since_check += 1;
            if since_check == 4096 {
                since_check = 0;
                if self.is_shutting_down() {
                    return Err(Error::Closed);
                }
            }
        }
        if !builders.table.is_empty() {
            let last = std::mem::replace(&mut builders.table, new_table());
            written.tables.push(last.finish(&self.pool, self.next_id())?);
        }
        if let Some(values) = builders.values.take().filter(|values| !values.is_empty()) {
            written.runs.push(values.finish(&self.pool)?);
        }
        Ok(())
    }

    /// Adds one entry to the table being built, its value moved to the value log if `routing`
    /// says so.
    fn add_entry(
        &self,
        builders: &mut Builders,
        key: &[u8],
        value: &[u8],
        routing: &ValueRouting<'_>,
        written: &mut Written,
    ) -> Result<()> {
        match keys::kind_of(key)? {
            Kind::Put if value.len() >= routing.separate_from => {
                let pointer = self.append_value(builders, value, written)?;
                keys::make_internal_key(
                    &mut builders.key,
                    keys::user_key(key),
                    keys::sequence_of(key),
                    Kind::Pointer as u8,
                );
                pointer.encode(&mut builders.pointer);
                builders.table.add_pointer(&builders.key, &pointer, &builders.pointer);
            }
            Kind::Pointer => {
                let pointer = ValuePointer::decode(value)?;
                match routing.collect.get(&pointer.run) {
                    Some(run) => {
                        let mut moved_value = std::mem::take(&mut builders.value);
                        run.read(&pointer, &mut moved_value)?;
                        let moved = self.append_value(builders, &moved_value, written);
                        builders.value = moved_value;
                        let moved = moved?;
                        *written.garbage.entry(pointer.run).or_default() += pointer.record_bytes();
                        written.relocated_bytes += moved.record_bytes();
                        moved.encode(&mut builders.pointer);
                        builders.table.add_pointer(key, &moved, &builders.pointer);
                    }
                    None => builders.table.add_pointer(key, &pointer, value),
                }
            }
            Kind::Put | Kind::Delete => builders.table.add(key, value),
        }
        Ok(())
    }

    /// Appends a value to the value run being filled (starting one, and finishing a full one).
    fn append_value(&self, builders: &mut Builders, value: &[u8], written: &mut Written) -> Result<ValuePointer> {
        let limit = vlog::run_limit(self.options.table_target_size);
        let values = builders.values.get_or_insert_with(|| ValueRunBuilder::new(self.next_id(), limit));
        let pointer = values.add(value);
        written.value_bytes += pointer.record_bytes();
        if values.is_full() {
            let full = builders.values.take().expect("a value run");
            written.runs.push(full.finish(&self.pool)?);
        }
        Ok(pointer)
    }

    fn next_id(&self) -> u64 {
        self.next_table_id.fetch_add(1, Ordering::SeqCst)
    }
}
