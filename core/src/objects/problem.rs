//! What maintenance reports list instead of failing: `validate`'s findings,
//! and what `pack`, `repack` and `rebuild_index` left in place, removed or
//! skipped. Each is typed, so that a caller can act on it without reading
//! the message.

use super::entry::Area;
use super::hash::ObjectId;
use super::store::file_name;
use crate::error::{Error, ErrorKind};

/// One problem a report lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectProblem {
    /// The record or object concerned, when there is one.
    pub id: Option<ObjectId>,
    /// The store file concerned, relative to the store (`packs/3.pack`,
    /// `staging/<16 hex>.pack`), when there is one.
    pub file: Option<String>,
    /// The error code a read of it gives (`CORRUPT`, `CHECKSUM_MISMATCH`,
    /// `NOT_FOUND` for a missing chunk, ...): a file that no commit names
    /// is `CORRUPT` too.
    pub code: &'static str,
    /// What was found and what was done, for people.
    pub message: String,
}

impl ObjectProblem {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> ObjectProblem {
        ObjectProblem { id: None, file: None, code: kind.code(), message: message.into() }
    }

    /// The problem `e` describes, with its code and message.
    pub(crate) fn of(e: &Error) -> ObjectProblem {
        ObjectProblem::new(e.kind(), e.message())
    }

    pub(crate) fn with_id(mut self, id: ObjectId) -> ObjectProblem {
        self.id = Some(id);
        self
    }

    /// Names the file `n` of `area` (none for records inside a single-file
    /// store, which has one file).
    pub(crate) fn in_file(mut self, area: Area, n: u64) -> ObjectProblem {
        if area != Area::Inline {
            self.file = Some(file_name(area, n));
        }
        self
    }
}
