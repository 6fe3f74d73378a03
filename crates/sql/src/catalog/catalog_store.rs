//! How the serialized catalog is kept in the key-value store. A catalog up to [`CHUNK_BYTES`]
//! is one value under [`CATALOG_KEY`] (a JSON document, starting with `{`). A larger one (a
//! schema of about 400 tables and more: a value is at most 1 MiB) is cut into chunks under
//! [`CATALOG_CHUNK_PREFIX`] and a 4-byte index, and [`CATALOG_KEY`] holds a manifest instead:
//! a 0 byte, `chunks`, and the chunk count (big-endian), which a document never starts with.
//! Writing a catalog deletes the chunks a larger earlier one left; all of it is one
//! transaction's writes, so readers see a whole catalog.

use tern_exec::codec::{CATALOG_CHUNK_PREFIX, CATALOG_KEY};
use tern_exec::error::{Error, Result};

/// The largest piece of a catalog kept under one key.
pub const CHUNK_BYTES: usize = 512 << 10;

const MANIFEST_TAG: &[u8] = b"\x00chunks";

fn chunk_key(index: u32) -> Vec<u8> {
    let mut key = CATALOG_CHUNK_PREFIX.to_vec();
    key.extend_from_slice(&index.to_be_bytes());
    key
}

/// The chunk count a stored [`CATALOG_KEY`] value names (0 for a whole document).
fn chunk_count(stored: &[u8]) -> Result<u32> {
    let Some(count) = stored.strip_prefix(MANIFEST_TAG) else { return Ok(0) };
    let count: [u8; 4] = count.try_into().map_err(|_| Error::corrupt("catalog: malformed chunk manifest"))?;
    Ok(u32::from_be_bytes(count))
}

/// The serialized catalog, read with `get` (a transaction's reads); `None` for a database
/// without one.
pub fn read(mut get: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>) -> Result<Option<Vec<u8>>> {
    let Some(stored) = get(CATALOG_KEY)? else { return Ok(None) };
    let count = chunk_count(&stored)?;
    if count == 0 {
        return Ok(Some(stored));
    }
    let mut bytes = Vec::with_capacity(count as usize * CHUNK_BYTES);
    for index in 0..count {
        let chunk = get(&chunk_key(index))?
            .ok_or_else(|| Error::corrupt(format!("catalog: chunk {index} of {count} is missing")))?;
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// A write of a key: its new value, or `None` to delete it.
pub type Write = (Vec<u8>, Option<Vec<u8>>);

/// The writes that store `bytes` where `previous` (the [`CATALOG_KEY`] value now stored, if
/// any) was: puts (`Some`) and deletes (`None`) of keys.
pub fn writes(bytes: Vec<u8>, previous: Option<&[u8]>) -> Result<Vec<Write>> {
    let previous_chunks = previous.map(chunk_count).transpose()?.unwrap_or(0);
    let mut writes = Vec::new();
    let chunks = if bytes.len() <= CHUNK_BYTES {
        writes.push((CATALOG_KEY.to_vec(), Some(bytes)));
        0
    } else {
        let chunks: Vec<&[u8]> = bytes.chunks(CHUNK_BYTES).collect();
        let count = chunks.len() as u32;
        for (index, chunk) in chunks.into_iter().enumerate() {
            writes.push((chunk_key(index as u32), Some(chunk.to_vec())));
        }
        writes.push((CATALOG_KEY.to_vec(), Some([MANIFEST_TAG, &count.to_be_bytes()].concat())));
        count
    };
    writes.extend((chunks..previous_chunks).map(|index| (chunk_key(index), None)));
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn store(map: &mut BTreeMap<Vec<u8>, Vec<u8>>, bytes: Vec<u8>) {
        let previous = map.get(CATALOG_KEY).cloned();
        for (key, value) in writes(bytes, previous.as_deref()).unwrap() {
            match value {
                Some(value) => map.insert(key, value),
                None => map.remove(&key),
            };
        }
    }

    fn load(map: &BTreeMap<Vec<u8>, Vec<u8>>) -> Option<Vec<u8>> {
        read(|key| Ok(map.get(key).cloned())).unwrap()
    }

    #[test]
    fn catalogs_of_every_size_read_back_and_leave_no_stale_chunks() {
        let mut map = BTreeMap::new();
        assert_eq!(load(&map), None);
        for size in [10, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 7, CHUNK_BYTES * 2, 100] {
            let bytes: Vec<u8> = (0..size).map(|at| b'{'.wrapping_add(at as u8)).collect();
            store(&mut map, bytes.clone());
            assert_eq!(load(&map), Some(bytes));
            let chunks = map.keys().filter(|key| key.starts_with(CATALOG_CHUNK_PREFIX)).count();
            assert_eq!(chunks, if size <= CHUNK_BYTES { 0 } else { size.div_ceil(CHUNK_BYTES) });
        }
    }

    #[test]
    fn a_missing_chunk_is_corruption() {
        let mut map = BTreeMap::new();
        store(&mut map, vec![b'{'; 2 * CHUNK_BYTES + 1]);
        map.remove(&chunk_key(1));
        assert_eq!(read(|key| Ok(map.get(key).cloned())).unwrap_err().sqlstate, "XX001");
    }
}
