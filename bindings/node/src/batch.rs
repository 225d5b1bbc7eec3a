//! Batches of puts and deletes in one commit: `batch(ops)` queues one like
//! `put` (resolving once durable), `batchSync(ops)` commits it before
//! returning. The operations are checked whole first (shape, types, key
//! lengths) into the core's `WriteBatch`, so an invalid one fails the batch
//! with nothing written.

use bale::btree::{OptionValue, WriteBatch};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::store::Tree;

/// `batch operation {i}: {what}`, as `INVALID_ARGUMENT`.
fn bad(env: &Env, i: usize, what: String) -> napi::Error {
    error::to_napi(env.raw(), &error::invalid(format!("batch operation {i}: {what}")))
}

/// Bytes for the `name` field of operation `i`: a view, an ArrayBuffer or a
/// string.
fn field(env: &Env, i: usize, name: &str, v: Option<sys::napi_value>) -> Result<Vec<u8>> {
    let v = match v {
        Some(v) => v,
        None => js::undefined(env.raw())?,
    };
    match convert::bytes_of(env.raw(), v)? {
        Some(b) => Ok(b),
        None => Err(bad(env, i, format!("{name} must be bytes or a string, not {}", convert::describe(env.raw(), v)?))),
    }
}

/// The operations `[{ type: 'put', key, value }, { type: 'del', key }]` as
/// a batch; any other shape, field or type is `INVALID_ARGUMENT`, a key
/// too long `TOO_LARGE`.
fn parse(env: &Env, ops: Raw, max_key: usize) -> Result<WriteBatch> {
    let raw = env.raw();
    let mut batch = WriteBatch::default();
    for (i, op) in convert::items(raw, ops.0, "batch operations")?.into_iter().enumerate() {
        if js::type_of(raw, op)? != sys::ValueType::napi_object || convert::bytes_of(raw, op)?.is_some() {
            return Err(bad(env, i, format!("must be an object, not {}", convert::describe(raw, op)?)));
        }
        let (mut kind, mut key, mut value) = (None, None, None);
        for (name, v) in js::own_properties(raw, op)? {
            match name.as_str() {
                "type" => kind = convert::option_value(raw, v)?,
                "key" => key = Some(v),
                "value" => value = Some(v),
                _ => return Err(bad(env, i, format!("unknown field {name:?} (known: type, key, value)"))),
            }
        }
        let key = field(env, i, "key", key)?;
        match kind {
            Some(OptionValue::Text(t)) if t == "put" => batch.put(&key, &field(env, i, "value", value)?),
            Some(OptionValue::Text(t)) if t == "del" => {
                if let Some(v) = value
                    && convert::option_value(raw, v)?.is_some()
                {
                    return Err(bad(env, i, "a 'del' takes no value".into()));
                }
                batch.delete(&key)
            }
            other => {
                let got = match other {
                    Some(OptionValue::Text(t)) => format!("{t:?}"),
                    Some(o) => o.to_string(),
                    None => "nothing".to_owned(),
                };
                return Err(bad(env, i, format!("type must be 'put' or 'del', not {got}")));
            }
        }
    }
    batch.check_keys(max_key).or_throw(env)?;
    Ok(batch)
}

#[napi]
impl Tree {
    /// Queues the operations as one atomic, durable commit (see `put`).
    #[napi(skip_typescript)]
    pub fn batch(&self, env: Env, ops: Raw) -> Result<Raw> {
        match parse(&env, ops, self.inner.max_key) {
            Ok(b) => crate::txn::queue_batch(&env, &self.inner, &b),
            Err(e) => crate::txn::rejected(&env, e),
        }
    }

    /// Commits the operations before returning (inside a transaction
    /// callback: writes them into that transaction).
    #[napi(skip_typescript)]
    pub fn batch_sync(&self, env: Env, ops: Raw) -> Result<()> {
        let b = parse(&env, ops, self.inner.max_key)?;
        self.inner.write_sync(&env, |w| b.apply(w).map(drop))
    }
}
