//! A process-wide interner of type definitions made by CREATE TYPE: equal definitions share
//! one small [`Id`], an id is never reused, and the definition behind an id never changes.
//! Column affinities and casts hold these ids (they must stay `Copy` and need no catalog to
//! convert a value); the catalog holds the definitions by name and interns them again when it
//! changes or is read back from disk (an id serialises as its definition).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

pub struct Interner<T> {
    items: RwLock<Vec<Arc<T>>>,
}

impl<T> Interner<T> {
    pub const fn empty() -> Interner<T> {
        Interner { items: RwLock::new(Vec::new()) }
    }
}

/// A definition kept in a process-wide interner of its own.
pub trait Interned: PartialEq + Serialize + DeserializeOwned + 'static {
    fn interner() -> &'static Interner<Self>;
}

/// The interner's handle on one definition.
pub struct Id<T> {
    index: u32,
    kind: PhantomData<fn() -> T>,
}

impl<T: Interned> Id<T> {
    /// The id of a definition: the existing one when an equal definition was interned before.
    pub fn intern(definition: T) -> Id<T> {
        let mut items = T::interner().items.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let index = match items.iter().position(|known| **known == definition) {
            Some(position) => position,
            None => {
                items.push(Arc::new(definition));
                items.len() - 1
            }
        };
        Id { index: index as u32, kind: PhantomData }
    }

    pub fn get(self) -> Arc<T> {
        let items = T::interner().items.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(&items[self.index as usize])
    }
}

// By hand: derived impls would ask the same of `T`.
impl<T> Clone for Id<T> {
    fn clone(&self) -> Id<T> {
        *self
    }
}

impl<T> Copy for Id<T> {}

impl<T> PartialEq for Id<T> {
    fn eq(&self, other: &Id<T>) -> bool {
        self.index == other.index
    }
}

impl<T> Eq for Id<T> {}

impl<T> std::hash::Hash for Id<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state);
    }
}

impl<T> std::fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Id({})", self.index)
    }
}

impl<T: Interned> Serialize for Id<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

impl<'de, T: Interned> Deserialize<'de> for Id<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Id<T>, D::Error> {
        Ok(Id::intern(T::deserialize(deserializer)?))
    }
}
