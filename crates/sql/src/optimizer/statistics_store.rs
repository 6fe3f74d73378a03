//! Where ANALYZE's statistics live: each table's under a key of its own
//! ([`tern_exec::codec::STATISTICS_PREFIX`] and the table id, big-endian; the value is the
//! [`TableStats`] as JSON), outside the catalog document.
//!
//! They are kept apart from the catalog because every transaction reads the catalog's version
//! key (so that DDL conflicts with it): statistics written through the catalog would make each
//! writer whose transaction spans an ANALYZE fail with 40001. Here, ANALYZE's writes are blind
//! writes of keys no other transaction reads, so it conflicts with nobody, as in PostgreSQL,
//! and can run in the background ([`crate::optimizer::auto_analyze`]).
//!
//! The planner reads statistics from the catalog it binds against ([`Catalog::table_stats`]).
//! The database keeps the newest committed statistics of every table in memory
//! ([`SharedStatistics`], loaded when the database opens, published by each commit that wrote
//! statistics, in commit order), with a generation number that each publication raises; a
//! transaction's catalog carries the statistics of the generation it was taken at, and a
//! catalog of an older generation is copied with the newer statistics before a transaction
//! uses it. A new catalog object also invalidates the statements planned against the old one.
//! Statistics are advisory: a transaction may plan with statistics newer than its snapshot.
//!
//! Within a transaction, ANALYZE's statistics are part of that transaction's catalog at once;
//! they are published when it commits and vanish if it rolls back. DROP TABLE deletes the
//! table's key in the same transaction.

use std::collections::BTreeMap;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::codec::STATISTICS_PREFIX;
use tern_exec::error::{Error, Result};
use tern_exec::statistics::TableStats;

/// The key of a table's statistics.
pub fn key(table: u32) -> Vec<u8> {
    let mut key = STATISTICS_PREFIX.to_vec();
    key.extend_from_slice(&table.to_be_bytes());
    key
}

/// The table whose statistics a key holds (`None` for other keys).
pub fn table_of_key(key: &[u8]) -> Option<u32> {
    let id = key.strip_prefix(STATISTICS_PREFIX)?;
    Some(u32::from_be_bytes(id.try_into().ok()?))
}

pub fn encode(stats: &TableStats) -> Vec<u8> {
    serde_json::to_vec(stats).expect("statistics serialize")
}

pub fn decode(bytes: &[u8]) -> Result<TableStats> {
    serde_json::from_slice(bytes).map_err(|error| Error::corrupt(format!("table statistics: {error}")))
}

/// One committed change of a table's statistics: new ones, or none (the table was dropped).
pub type Change = (u32, Option<Arc<TableStats>>);

/// The newest committed statistics of every table, shared by a database's sessions.
pub struct SharedStatistics {
    /// Raised by every publication; catalogs note the generation they carry.
    generation: u64,
    /// By table id: the commit sequence that wrote them, and the statistics.
    tables: BTreeMap<u32, (u64, Arc<TableStats>)>,
}

impl SharedStatistics {
    /// The statistics stored in the database, read with a transaction of its own.
    pub fn load(db: &tern_txn::TxnDb) -> Result<SharedStatistics> {
        let mut txn = db.begin();
        let end = tern_exec::codec::prefix_end(STATISTICS_PREFIX).expect("the prefix has an end");
        let mut tables = BTreeMap::new();
        for entry in txn.range(STATISTICS_PREFIX..end.as_slice()) {
            let (key, value) = entry?;
            let table = table_of_key(&key).ok_or_else(|| Error::corrupt("a malformed statistics key"))?;
            tables.insert(table, (0, Arc::new(decode(&value)?)));
        }
        // Above a fresh catalog's 0, so that every catalog read from the store takes them.
        Ok(SharedStatistics { generation: 1, tables })
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// `catalog` with the statistics of its tables as they are now.
    pub fn attach(&self, catalog: &Catalog) -> Catalog {
        let mut attached = catalog.clone();
        attached.statistics = catalog
            .tables
            .values()
            .filter_map(|table| self.tables.get(&table.id).map(|(_, stats)| (table.id, stats.clone())))
            .collect();
        attached.statistics_generation = self.generation;
        attached
    }

    /// Takes the changes a transaction committed at `sequence`. A change older than what is
    /// held (two ANALYZEs of a table publishing out of their commit order) is ignored.
    pub fn publish(&mut self, sequence: u64, changes: Vec<Change>) {
        for (table, stats) in changes {
            let newer = self.tables.get(&table).is_none_or(|(held, _)| *held <= sequence);
            match stats {
                Some(stats) if newer => {
                    self.tables.insert(table, (sequence, stats));
                }
                None if newer => {
                    self.tables.remove(&table);
                }
                _ => {}
            }
        }
        self.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rows: u64) -> Option<Arc<TableStats>> {
        Some(Arc::new(TableStats { rows, columns: BTreeMap::new(), analyzed_at: 0 }))
    }

    #[test]
    fn keys_name_their_table() {
        assert_eq!(table_of_key(&key(7)), Some(7));
        assert_eq!(table_of_key(&tern_exec::codec::sequence_key(7)), None);
        assert_eq!(table_of_key(&key(7)[..3]), None);
    }

    #[test]
    fn publications_keep_commit_order() {
        let mut shared = SharedStatistics { generation: 1, tables: BTreeMap::new() };
        shared.publish(10, vec![(1, stats(100))]);
        // An ANALYZE that committed earlier publishes late: the newer statistics stay.
        shared.publish(5, vec![(1, stats(50))]);
        assert_eq!(shared.tables.get(&1).map(|(_, stats)| stats.rows), Some(100));
        shared.publish(11, vec![(1, None)]);
        assert!(!shared.tables.contains_key(&1));
        assert_eq!(shared.generation(), 4);
    }
}
