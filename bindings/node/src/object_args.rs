//! The arguments of `ObjectStore` calls: open options, ids (hex strings or
//! raw id bytes), object data and the options objects of single calls. A
//! value of the wrong type or an unknown option name is `INVALID_ARGUMENT`,
//! as everywhere in the package.

use bale::btree::OptionValue;
use bale::objects::{Compression, HashKind, ObjectId, ObjectOptions};
use napi::{Result, sys};

use crate::convert;
use crate::error;
use crate::js;

/// The names `ObjectStore.open` takes, in the order messages list them.
const OPEN_OPTIONS: [&str; 11] = [
    "create",
    "readonly",
    "singleFile",
    "hash",
    "compression",
    "chunkMin",
    "chunkAvg",
    "chunkMax",
    "packTarget",
    "fanout",
    "repair",
];

/// An options object: its set fields (`undefined` and `null` left out),
/// each name checked against `known`.
pub struct Opts {
    env: sys::napi_env,
    fields: Vec<(String, sys::napi_value)>,
}

impl Opts {
    pub fn parse(env: sys::napi_env, v: sys::napi_value, what: &str, known: &[&str]) -> Result<Opts> {
        let mut fields = Vec::new();
        match js::type_of(env, v)? {
            sys::ValueType::napi_undefined | sys::ValueType::napi_null => return Ok(Opts { env, fields }),
            sys::ValueType::napi_object if convert::bytes_of(env, v)?.is_none() => {}
            _ => return Err(convert::wrong(env, what, "an object", v)),
        }
        for (name, value) in js::own_properties(env, v)? {
            if !known.contains(&name.as_str()) {
                let message = format!("unknown option {name:?} in the {what} (known: {})", known.join(", "));
                return Err(error::to_napi(env, &error::invalid(message)));
            }
            if convert::option_value(env, value)?.is_some() {
                fields.push((name, value));
            }
        }
        Ok(Opts { env, fields })
    }

    /// The environment the options belong to, for errors.
    pub fn env(&self) -> sys::napi_env {
        self.env
    }

    fn get(&self, name: &str) -> Option<sys::napi_value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    pub fn bool(&self, name: &str) -> Result<Option<bool>> {
        let Some(v) = self.get(name) else { return Ok(None) };
        match convert::option_value(self.env, v)? {
            Some(OptionValue::Bool(b)) => Ok(Some(b)),
            _ => Err(convert::wrong(self.env, name, "a boolean", v)),
        }
    }

    pub fn text(&self, name: &str) -> Result<Option<String>> {
        self.get(name).map(|v| convert::text(self.env, v, name)).transpose()
    }

    pub fn count(&self, name: &str) -> Result<Option<u64>> {
        self.get(name).map(|v| convert::count(self.env, v, name)).transpose()
    }

    pub fn number(&self, name: &str) -> Result<Option<f64>> {
        let Some(v) = self.get(name) else { return Ok(None) };
        match convert::option_value(self.env, v)? {
            Some(OptionValue::Number(x)) => Ok(Some(x)),
            _ => Err(convert::wrong(self.env, name, "a number", v)),
        }
    }

    /// The raw value of a field, for the callers that take several types.
    pub fn value(&self, name: &str) -> Option<sys::napi_value> {
        self.get(name)
    }
}

/// A u32 setting: values past u32 are out of every range the core accepts,
/// so they become u32::MAX for the core to refuse with its own message.
fn u32_of(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The open options as the core's `ObjectOptions`. The store parameters
/// (hash, compression, chunk sizes, pack target, fanout) apply to a new
/// store; the core checks their ranges when it creates one.
pub fn open_options(env: sys::napi_env, v: sys::napi_value) -> Result<ObjectOptions> {
    let o = Opts::parse(env, v, "open options", &OPEN_OPTIONS)?;
    let mut opts = ObjectOptions::default();
    let c = &mut opts.config;
    opts.create = o.bool("create")?.unwrap_or(false);
    opts.readonly = o.bool("readonly")?.unwrap_or(false);
    opts.single_file = o.bool("singleFile")?.unwrap_or(false);
    opts.repair = o.bool("repair")?.unwrap_or(false);
    if let Some(h) = o.text("hash")? {
        c.hash = HashKind::from_name(&h).map_err(|e| error::to_napi(env, &e))?;
    }
    if let Some(p) = o.text("compression")? {
        c.compression = compression(env, &p)?;
    }
    if let Some(n) = o.count("chunkMin")? {
        c.chunk_min = u32_of(n);
    }
    if let Some(n) = o.count("chunkAvg")? {
        c.chunk_avg = u32_of(n);
    }
    if let Some(n) = o.count("chunkMax")? {
        c.chunk_max = u32_of(n);
    }
    if let Some(n) = o.count("packTarget")? {
        c.pack_target = n;
    }
    if let Some(n) = o.count("fanout")? {
        c.fanout = u32_of(n);
    }
    Ok(opts)
}

pub fn compression(env: sys::napi_env, name: &str) -> Result<Compression> {
    Compression::from_name(name).map_err(|e| error::to_napi(env, &e))
}

/// An object id: its hex (either case) or its raw bytes, for a store
/// naming objects with `kind`.
pub fn id(env: sys::napi_env, v: sys::napi_value, kind: HashKind) -> Result<ObjectId> {
    let r = match js::type_of(env, v)? {
        sys::ValueType::napi_string => ObjectId::from_hex(kind, &convert::text(env, v, "an object id")?),
        sys::ValueType::napi_object => match convert::bytes_of(env, v)? {
            Some(b) => ObjectId::from_bytes(kind, &b),
            None => return Err(bad_id(env, v, kind)),
        },
        _ => return Err(bad_id(env, v, kind)),
    };
    r.map_err(|e| error::to_napi(env, &e))
}

fn bad_id(env: sys::napi_env, v: sys::napi_value, kind: HashKind) -> napi::Error {
    let want = format!("a hex string or a Buffer of the id's {} bytes", kind.id_len());
    convert::wrong(env, "an object id", &want, v)
}

/// An array of ids.
pub fn ids(env: sys::napi_env, v: sys::napi_value, kind: HashKind, what: &str) -> Result<Vec<ObjectId>> {
    convert::items(env, v, what)?.into_iter().map(|x| id(env, x, kind)).collect()
}

/// One id or an array of them.
pub fn one_or_many(env: sys::napi_env, v: sys::napi_value, kind: HashKind) -> Result<Vec<ObjectId>> {
    let mut is_array = false;
    // SAFETY: plain query on a value of this call.
    js::check(unsafe { sys::napi_is_array(env, v, &mut is_array) }, "array")?;
    if is_array { ids(env, v, kind, "ids") } else { Ok(vec![id(env, v, kind)?]) }
}

/// An optional array of ids: `undefined` or `null` for every object.
pub fn maybe_ids(env: sys::napi_env, v: sys::napi_value, kind: HashKind) -> Result<Option<Vec<ObjectId>>> {
    match convert::option_value(env, v)? {
        None => Ok(None),
        Some(_) => ids(env, v, kind, "ids").map(Some),
    }
}

/// The content of an object: a copy of bytes (a view or an ArrayBuffer),
/// or a string as UTF-8. A copy, so that the bytes hashed are the bytes
/// stored even if the caller's buffer changes meanwhile.
pub fn data(env: sys::napi_env, v: sys::napi_value, what: &str) -> Result<Vec<u8>> {
    match convert::bytes_of(env, v)? {
        Some(b) => Ok(b),
        None => Err(convert::wrong(env, what, "a Buffer, a Uint8Array (or other view), an ArrayBuffer or a string", v)),
    }
}
