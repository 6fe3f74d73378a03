//! Settings follow transactions, as in PostgreSQL. A setting changed inside a transaction
//! (by `SET` or `set_config(name, value, false)`) keeps its value at COMMIT and gets its old
//! one back at ROLLBACK, or at ROLLBACK TO a savepoint taken before the change. `SET LOCAL` and
//! `set_config(name, value, true)` last until the transaction ends either way; outside a
//! transaction block they last for their own statement only.
//!
//! Whoever changes a setting notes the value it replaced in the session's journal
//! ([`SettingChanges`]); the session moves the journal into the open transaction's
//! [`SettingsUndo`] around every statement, and applies the undo when the transaction or a
//! savepoint ends.

use std::collections::{BTreeMap, BTreeSet};

/// A setting was just changed: its name and the value it had (`None`: it was not set).
pub struct SettingChange {
    pub name: String,
    pub before: Option<String>,
    /// `SET LOCAL` / `set_config(..., true)`.
    pub local: bool,
}

/// The changes not yet moved into a transaction's undo.
pub type SettingChanges = parking_lot::Mutex<Vec<SettingChange>>;

/// A session's settings (names in lower case).
type Values = BTreeMap<String, String>;

/// What to put back when a transaction, or a savepoint of it, ends.
#[derive(Default)]
pub struct SettingsUndo {
    /// The values changed settings had when the transaction began (the first frame) and when
    /// each of its savepoints was taken (one frame per savepoint, oldest first).
    frames: Vec<BTreeMap<String, Option<String>>>,
    /// The last value set at session level in this transaction (COMMIT keeps it).
    session_values: BTreeMap<String, Option<String>>,
    /// Settings whose value now is a `SET LOCAL` one.
    local: BTreeSet<String>,
}

impl SettingsUndo {
    /// Notes one change; `after` is the value the setting has now.
    pub fn changed(&mut self, change: SettingChange, after: Option<&str>) {
        if self.frames.is_empty() {
            self.frames.push(BTreeMap::new());
        }
        for frame in &mut self.frames {
            frame.entry(change.name.clone()).or_insert_with(|| change.before.clone());
        }
        if change.local {
            self.local.insert(change.name);
        } else {
            self.local.remove(&change.name);
            self.session_values.insert(change.name, after.map(str::to_string));
        }
    }

    /// A savepoint was taken (it is the newest).
    pub fn savepoint(&mut self) {
        if self.frames.is_empty() {
            self.frames.push(BTreeMap::new());
        }
        self.frames.push(BTreeMap::new());
    }

    /// The savepoint at position `at` (oldest 0) and those after it were released.
    pub fn release(&mut self, at: usize) {
        self.frames.truncate(at + 1);
    }

    /// ROLLBACK TO the savepoint at position `at`, which stays: the settings changed since it
    /// was taken get their values back. Returns the names put back.
    pub fn rollback_to(&mut self, at: usize, values: &mut Values) -> Vec<String> {
        self.frames.truncate(at + 2);
        let Some(frame) = self.frames.get_mut(at + 1) else { return Vec::new() };
        std::mem::take(frame)
            .into_iter()
            .map(|(name, before)| {
                put(values, &name, before);
                name
            })
            .collect()
    }

    /// The transaction ended: committed, session-level values stay and local ones end; rolled
    /// back, every value changed in it is put back. Returns the names put back.
    pub fn finish(mut self, committed: bool, values: &mut Values) -> Vec<String> {
        let started = if self.frames.is_empty() { BTreeMap::new() } else { self.frames.swap_remove(0) };
        let mut restored = Vec::new();
        if committed {
            for name in self.local {
                let value = match self.session_values.remove(&name) {
                    Some(session_value) => session_value,
                    None => started.get(&name).cloned().flatten(),
                };
                put(values, &name, value);
                restored.push(name);
            }
        } else {
            for (name, before) in started {
                put(values, &name, before);
                restored.push(name);
            }
        }
        restored
    }
}

fn put(values: &mut Values, name: &str, value: Option<String>) {
    match value {
        Some(value) => values.insert(name.to_string(), value),
        None => values.remove(name),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(values: &mut Values, undo: &mut SettingsUndo, name: &str, value: &str, local: bool) {
        let before = values.insert(name.to_string(), value.to_string());
        undo.changed(SettingChange { name: name.into(), before, local }, Some(value));
    }

    fn start() -> Values {
        BTreeMap::from([("a".to_string(), "0".to_string())])
    }

    #[test]
    fn commit_keeps_session_values_and_ends_local_ones() {
        let mut values = start();
        let mut undo = SettingsUndo::default();
        set(&mut values, &mut undo, "a", "1", false);
        set(&mut values, &mut undo, "a", "2", true);
        set(&mut values, &mut undo, "b", "x", true);
        undo.finish(true, &mut values);
        assert_eq!(values, BTreeMap::from([("a".into(), "1".into())]));
        // A session SET after a SET LOCAL wins.
        let mut undo = SettingsUndo::default();
        set(&mut values, &mut undo, "a", "2", true);
        set(&mut values, &mut undo, "a", "3", false);
        undo.finish(true, &mut values);
        assert_eq!(values["a"], "3");
    }

    #[test]
    fn rollback_puts_every_value_back() {
        let mut values = start();
        let mut undo = SettingsUndo::default();
        set(&mut values, &mut undo, "a", "1", false);
        set(&mut values, &mut undo, "b", "x", false);
        undo.finish(false, &mut values);
        assert_eq!(values, start());
    }

    #[test]
    fn rollback_to_a_savepoint_puts_back_what_changed_after_it() {
        let mut values = start();
        let mut undo = SettingsUndo::default();
        set(&mut values, &mut undo, "a", "1", false);
        undo.savepoint();
        set(&mut values, &mut undo, "a", "2", false);
        set(&mut values, &mut undo, "b", "x", false);
        undo.rollback_to(0, &mut values);
        assert_eq!(values, BTreeMap::from([("a".into(), "1".into())]));
        // The savepoint stays: a second change after it rolls back too.
        set(&mut values, &mut undo, "a", "5", false);
        undo.rollback_to(0, &mut values);
        assert_eq!(values["a"], "1");
        undo.finish(false, &mut values);
        assert_eq!(values, start());
    }
}
