//! Deltas: writes that change a key's current value instead of replacing it, such as SQL's
//! `SET balance = balance + 5`. A transaction that writes a delta records no read of the key,
//! so concurrent deltas to one hot key commute instead of conflicting; the commit pipeline
//! folds each delta into the key's latest value at the transaction's place in the commit order
//! (`docs/design/transactions.md`, "Deltas").
//!
//! The engine does not know what an operand means: a [`DeltaResolver`], given to the database
//! in [`crate::Options::resolver`], applies operands to values and combines two operands of
//! one key.

use std::fmt;
use std::sync::Arc;

/// Why a delta could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaError {
    /// The key has no value to change (it was removed, or never set). When this happens at
    /// commit, a transaction that committed after the writer's snapshot removed the key: the
    /// writer fails with a retryable serialization error.
    Vanished,
    /// The operand does not apply to the value, with the SQLSTATE to report (22003 for an
    /// overflow, say): the writer fails with this error.
    Failed { sqlstate: &'static str, message: String },
}

impl fmt::Display for DeltaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeltaError::Vanished => f.write_str("the value a delta changes no longer exists"),
            DeltaError::Failed { message, .. } => f.write_str(message),
        }
    }
}

/// Applies delta operands (see the module documentation). Both calls must be pure functions
/// of their arguments: the pipeline may call them on any thread, and the transaction that
/// wrote a delta may fold it early for its own reads.
pub trait DeltaResolver: Send + Sync {
    /// The new value of `key` when `operand` is applied to its current value `base`.
    fn resolve(&self, key: &[u8], base: Option<&[u8]>, operand: &[u8]) -> Result<Vec<u8>, DeltaError>;

    /// One operand with the effect of applying `older`, then `newer`, to the same key.
    fn combine(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Result<Vec<u8>, DeltaError>;
}

/// The resolver in [`crate::Options`].
#[derive(Clone)]
pub struct Resolver(pub Arc<dyn DeltaResolver>);

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}
