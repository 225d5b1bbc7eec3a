//! The object store: content-addressed objects in append-only packs, large
//! ones split by content-defined chunking, found through an index that is a
//! tree-store file (FORMAT.md, "Object store").

mod add;
pub mod chunk_list;
mod chunker;
mod clean;
pub mod config;
pub mod dir;
mod dos_import;
pub mod entry;
mod fallback;
pub mod hash;
mod inspect;
mod leftover;
mod pack;
mod pack_writer;
mod problem;
mod raw;
mod read;
pub mod record;
mod report;
pub mod sim_dir;
pub mod staging;
mod store;
mod transfer;
mod tree_walk;
mod validate;

pub use add::{Batch, StreamAdd};
pub use config::{Compression, Config};
pub use dir::{Dir, DirLock, LockMode};
#[cfg(native_fs)]
pub use dos_import::{DosContainer, DosPacked};
pub use entry::{Area, Location};
pub use hash::{HashKind, ObjectId};
pub use inspect::{ChunkInfo, FileUsage, MAX_CHUNKS_LISTED, ObjectOverview};
pub use pack::Progress;
pub use problem::ObjectProblem;
pub use raw::{VerifiedRecord, verify_record};
pub use read::{ObjectMeta, ObjectReader, ObjectsInDiskOrder};
pub use report::{AddTreeReport, CleanReport, ObjectStats, PackReport, RebuildReport, TransferReport, ValidateReport};
// Names of temporary files, and the nonces of a remote's writers.
pub(crate) use store::random_u64;
pub use store::{ObjectOptions, ObjectStore};
#[cfg(native_fs)]
pub use tree_walk::{AddTreeOptions, LinkPolicy};
