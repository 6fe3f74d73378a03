//! Tern's page store: a single database file of fixed-size, checksummed pages, and the buffer
//! pool every other layer reads through. The design follows SMILE (Olivera Corpas, 2018),
//! chapters 2–4; `docs/design/pagestore.md` describes the format, the locking protocol and
//! where Tern departs from the paper.
//!
//! ```
//! use tern_pagestore::{BufferPool, MemoryVfs, PoolConfig};
//! use std::sync::Arc;
//!
//! let vfs = Arc::new(MemoryVfs::new());
//! let pool = BufferPool::create_with(vfs.clone(), "demo.tern".as_ref(), 4096, PoolConfig::with_size(1 << 20))?;
//! let page = {
//!     let mut guard = pool.alloc()?;
//!     guard[..5].copy_from_slice(b"hello");
//!     guard.page_id()
//! };
//! pool.close()?;
//!
//! let pool = BufferPool::open_with(vfs, "demo.tern".as_ref(), PoolConfig::with_size(1 << 20))?;
//! assert_eq!(&pool.pin_read(page)?[..5], b"hello");
//! # Ok::<(), tern_pagestore::Error>(())
//! ```

mod aligned;
mod allocation;
mod config;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod header;
pub mod limits;
pub mod numa;
mod page;
mod pool;
mod storage;
pub mod vfs;

pub use aligned::AlignedBuf;
pub use allocation::Layout;
pub use config::PoolConfig;
pub use error::{Error, IoOp, Result};
pub use header::{Checkpoint, FileHeader};
pub use numa::NumaMode;
pub use page::{PageId, PageKind};
pub use pool::{BufferPool, PageReadGuard, PageWriteGuard, PoolStats};
pub use storage::PageFile;
pub use vfs::{FaultKind, FaultOp, FaultVfs, MemoryVfs, OsVfs, PowerLossReport, PowerLossVfs, Vfs};
