//! What `ObjectStore` calls return, as plain JS objects: the core's reports
//! with camelCase names, counts as numbers (exact up to 2^53) and ids as
//! hex. Each is built on the thread that ran the call and converted on the
//! JS thread.

use bale::objects as core;
use napi::bindgen_prelude::ToNapiValue;
use napi::{Result, sys};
use napi_derive::napi;

use crate::error;
use crate::js;

/// The bytes of an object, returned as a Buffer owned by JS (a copy; never
/// an external buffer).
pub struct ObjectBytes(pub Vec<u8>);

impl ToNapiValue for ObjectBytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let len = val.0.len();
        js::buffer_copy(env, &val.0).map_err(|_| {
            let e = bale::Error::new(
                bale::ErrorKind::TooLarge,
                format!("{len} bytes do not fit in one Buffer here; read the object with createReadStream"),
            );
            error::to_napi(env, &e)
        })
    }
}

/// What the store knows of one object.
#[napi(object)]
pub struct ObjectMeta {
    pub id: String,
    /// Length of the content in bytes.
    pub size: f64,
    /// Bytes its top record takes on disk, header included (the chunks of a
    /// chunked object are counted in `stats()`).
    pub stored_size: f64,
    /// Split into chunks.
    pub chunked: bool,
    /// In a numbered pack (or a single-file store), not in a staging file.
    pub packed: bool,
    /// Stored compressed.
    pub compressed: bool,
}

impl From<core::ObjectMeta> for ObjectMeta {
    fn from(m: core::ObjectMeta) -> ObjectMeta {
        ObjectMeta {
            id: m.id.to_hex(),
            size: m.size as f64,
            stored_size: m.stored_size as f64,
            chunked: m.chunked,
            packed: m.packed,
            compressed: m.compressed,
        }
    }
}

/// One problem a report lists (`validate()`, `pack()`, `repack()`,
/// `rebuildIndex()`).
#[napi(object)]
pub struct ObjectProblem {
    /// The record or object concerned, when there is one.
    pub id: Option<String>,
    /// The store file concerned, relative to the store (`packs/3.pack`),
    /// when there is one.
    pub file: Option<String>,
    /// The code a read of it would fail with (`CORRUPT`,
    /// `CHECKSUM_MISMATCH`, `NOT_FOUND` for a missing chunk).
    #[napi(ts_type = "ErrorCode")]
    pub code: String,
    /// What was found and what was done.
    pub message: String,
}

fn problems(ps: &[core::ObjectProblem]) -> Vec<ObjectProblem> {
    ps.iter()
        .map(|p| ObjectProblem {
            id: p.id.map(|i| i.to_hex()),
            file: p.file.clone(),
            code: p.code.to_owned(),
            message: p.message.clone(),
        })
        .collect()
}

/// One object per report of the core's list (`bale::object_reports!`):
/// its counts as numbers, with the core's docs, then what `extra!` adds.
macro_rules! reports {
    ($(
        $(#[$doc:meta])* $name:ident [$($derive:ident)*]
        { $( $(#[$fdoc:meta])* $f:ident ),* $(,)? }
        { $($other:tt)* }
    )*) => {
        $(
            extra! {
                $name
                $(#[$doc])*
                #[napi(object)]
                pub struct $name {
                    $( $(#[$fdoc])* pub $f: f64, )*
                }
                counts { $($f)* }
            }
        )*
    };
}

/// A report's struct with the fields it adds to the counts, and its
/// conversion from the core's. (Docs passed through here are `#[doc]`
/// attributes: napi-derive would copy a `///` comment's raw string as is.)
macro_rules! extra {
    (@make $(#[$attr:meta])* pub struct $name:ident { $($counts:tt)* } counts { $($f:ident)* }
     $( $(#[$xdoc:meta])* $x:ident : $xt:ty = |$r:ident| $conv:expr ),* ) => {
        $(#[$attr])*
        pub struct $name {
            $($counts)*
            $( $(#[$xdoc])* pub $x: $xt, )*
        }

        impl From<core::$name> for $name {
            fn from(r: core::$name) -> $name {
                $( let $x = { let $r = &r; $conv }; )*
                $name { $( $f: r.$f as f64, )* $( $x, )* }
            }
        }
    };
    (PackReport $($item:tt)*) => {
        extra!(@make $($item)*
            #[doc = " Problems found and left in place (damaged files are never"]
            #[doc = " removed), and files no commit names, removed."]
            problems: Vec<ObjectProblem> = |r| problems(&r.problems));
    };
    (ValidateReport $($item:tt)*) => {
        extra!(@make $($item)*
            #[doc = " True when no problem was found."]
            ok: bool = |r| r.is_ok(),
            problems: Vec<ObjectProblem> = |r| problems(&r.problems));
    };
    (RebuildReport $($item:tt)*) => {
        extra!(@make $($item)*
            #[doc = " Files skipped, and objects left out because a chunk is missing."]
            problems: Vec<ObjectProblem> = |r| problems(&r.problems));
    };
    (AddTreeReport $($item:tt)*) => {
        extra!(@make $($item)*
            #[doc = " Links and special files left out (with `links: 'skip'`), as"]
            #[doc = " paths relative to the directory."]
            skipped: Vec<String> = |r| r.skipped.clone());
    };
    ($name:ident $($item:tt)*) => {
        extra!(@make $($item)*);
    };
}

bale::object_reports!(reports);

/// The parameters of an open store (fixed at creation, but for the
/// compression policy, which `repack({ compression })` changes).
#[napi(object)]
pub struct ObjectStoreConfig {
    #[napi(ts_type = "HashName")]
    pub hash: String,
    /// The policy new records are written with.
    #[napi(ts_type = "CompressionPolicy")]
    pub compression: String,
    pub chunk_min: u32,
    pub chunk_avg: u32,
    pub chunk_max: u32,
    pub pack_target: f64,
    pub fanout: u32,
}

impl ObjectStoreConfig {
    pub fn of(c: &core::Config, compression: core::Compression) -> ObjectStoreConfig {
        ObjectStoreConfig {
            hash: c.hash.name().to_owned(),
            compression: compression.name().to_owned(),
            chunk_min: c.chunk_min,
            chunk_avg: c.chunk_avg,
            chunk_max: c.chunk_max,
            pack_target: c.pack_target as f64,
            fanout: c.fanout,
        }
    }
}
