//! A process-wide interner of type definitions made by CREATE TYPE: equal definitions share
//! one small id, an id is never reused, and the definition behind an id never changes. Column
//! affinities and casts hold these ids (they must stay `Copy` and need no catalog to convert a
//! value); the catalog holds the definitions by name and interns them again when it changes or
//! is read back from disk.

use std::sync::{Arc, RwLock};

pub struct Interner<T> {
    items: RwLock<Vec<Arc<T>>>,
}

impl<T: PartialEq> Default for Interner<T> {
    fn default() -> Interner<T> {
        Interner::new()
    }
}

impl<T: PartialEq> Interner<T> {
    pub const fn new() -> Interner<T> {
        Interner { items: RwLock::new(Vec::new()) }
    }

    /// The id of `item`: the existing one when an equal item was interned before.
    pub fn intern(&self, item: T) -> u32 {
        let mut items = self.items.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(position) = items.iter().position(|known| **known == item) {
            return position as u32;
        }
        items.push(Arc::new(item));
        (items.len() - 1) as u32
    }

    /// The item of an id this interner gave.
    pub fn get(&self, id: u32) -> Arc<T> {
        let items = self.items.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(&items[id as usize])
    }
}
