//! What a statement read, as the result cache keeps it beside a cached result (the cache is
//! the front end's, `tern_sql::cache`): the tables and indexes it scanned, and the stripes of
//! the keys it looked up. The executor notes its reads here as it runs.

/// Stripes the keys of point lookups hash to (a power of two).
pub const KEY_STRIPES: usize = 16_384;

/// The stripe of a key.
pub fn stripe(key: &[u8]) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in key {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    ((hash ^ (hash >> 32)) as usize & (KEY_STRIPES - 1)) as u32
}

/// What a statement read, or a commit wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Tables and indexes scanned (a read) or written to (a write).
    pub objects: Vec<u32>,
    /// Keys looked up (a read) or written (a write): their object and stripe.
    pub keys: Vec<(u32, u32)>,
}

impl Footprint {
    /// Whether something was read outside any table or index (noted as object `u32::MAX`: an
    /// unbounded scan, a catalog key): such a result cannot be tied to what it read.
    pub fn left_objects(&self) -> bool {
        self.objects.contains(&u32::MAX) || self.keys.iter().any(|(object, _)| *object == u32::MAX)
    }

    /// Every object involved, scanned or through a key.
    pub fn all_objects(&self) -> Vec<u32> {
        let mut objects = self.objects.clone();
        objects.extend(self.keys.iter().map(|(object, _)| *object));
        objects.sort_unstable();
        objects.dedup();
        objects
    }
}
