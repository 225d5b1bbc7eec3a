//! Range queries over some of the valid stores, with the keys each must
//! yield (or the error code it must raise). The expected keys come from a
//! plain model of the rules on `RangeRequest` (filter, reverse, skip,
//! take) over the case's entries, never from the code under test.

use serde_json::{Map, Value, json};

use crate::cases::Model;
use crate::to_hex;

struct Query {
    id: &'static str,
    about: &'static str,
    request: Value,
    /// The error code every host must raise; `None` for a valid request.
    error: Option<&'static str>,
}

fn q(id: &'static str, about: &'static str, request: Value) -> Query {
    Query { id, about, request, error: None }
}

fn bad(id: &'static str, about: &'static str, request: Value) -> Query {
    Query { id, about, request, error: Some("INVALID_ARGUMENT") }
}

/// Requests that every host refuses, whatever the store holds.
fn invalid() -> Vec<Query> {
    vec![
        bad("gt-and-gte", "two lower bounds", json!({"gt": "61", "gte": "61"})),
        bad("lt-and-lte", "two upper bounds", json!({"lt": "7a", "lte": "7a"})),
        bad("negative-limit", "a count below zero", json!({"limit": -1})),
        bad("fractional-limit", "a count that is not whole", json!({"limit": 1.5})),
        bad("negative-offset", "an offset below zero", json!({"offset": -1})),
        bad("reverse-not-boolean", "reverse given as a string", json!({"reverse": "yes"})),
        bad("unknown-option", "a misspelt option name is refused, not ignored", json!({"lmit": 3})),
    ]
}

fn binary_keys() -> Vec<Query> {
    let mut v = vec![
        q("everything", "no options: every key, ascending", json!({})),
        q("empty-prefix", "the empty prefix matches every key", json!({"prefix": ""})),
        q("prefix-ff", "a 0xff prefix has no upper end: it runs to the last key", json!({"prefix": "ff"})),
        q("prefix-ffff-reverse", "0xffff prefix, descending", json!({"prefix": "ffff", "reverse": true})),
        q("prefix-longer-than-keys", "ten 0xff bytes: longer than any key", json!({"prefix": "ffffffffffffffffffff"})),
        q("prefix-with-nul", "\"a\\0\" matches \"a\\0\" and \"a\\0\\0\"", json!({"prefix": "6100"})),
        q("prefix-nul", "the 0x00 prefix", json!({"prefix": "00"})),
        q("lte-empty-key", "only the empty key is <= the empty key", json!({"lte": ""})),
        q("lt-empty-key", "nothing is below the empty key", json!({"lt": ""})),
        q("gt-empty-key", "every key but the empty one, first three", json!({"gt": "", "limit": 3})),
        q("equal-bounds-inclusive", "gte = lte = \"ab\"", json!({"gte": "6162", "lte": "6162"})),
        q("equal-bounds-gt", "gt = lte: empty, not an error", json!({"gt": "6162", "lte": "6162"})),
        q("equal-bounds-lt", "gte = lt: empty, not an error", json!({"gte": "6162", "lt": "6162"})),
        q("equal-bounds-exclusive", "gt = lt: empty", json!({"gt": "6162", "lt": "6162"})),
        q("crossed-bounds", "lower above upper: empty, not an error", json!({"gte": "62", "lt": "61"})),
        q(
            "crossed-bounds-reverse",
            "lower above upper, descending: empty",
            json!({"gte": "62", "lt": "61", "reverse": true}),
        ),
        q(
            "prefix-and-bounds",
            "prefix \"a\" intersected with gt \"a\\0\" and lt \"abcdefgh\\0\"",
            json!({"prefix": "61", "gt": "6100", "lt": "616263646566676800"}),
        ),
        q("prefix-outside-bounds", "prefix \"a\" with gte \"b\": empty", json!({"prefix": "61", "gte": "62"})),
        q("reverse-limit", "the three largest keys", json!({"reverse": true, "limit": 3})),
        q(
            "reverse-offset-limit",
            "prefix \"a\" descending, skip one, take two",
            json!({"prefix": "61", "reverse": true, "offset": 1, "limit": 2}),
        ),
        q("limit-zero", "limit 0 yields nothing", json!({"limit": 0})),
        q("offset-past-end", "an offset past the selection yields nothing", json!({"prefix": "61", "offset": 100})),
        q("reverse-false", "reverse: false is ascending", json!({"prefix": "00", "reverse": false})),
    ];
    v.extend(invalid());
    v
}

fn thousands() -> Vec<Query> {
    vec![
        q("reverse-limit", "the last five keys, descending", json!({"reverse": true, "limit": 5})),
        q(
            "offset-limit-across-batches",
            "1,100 keys from the 501st: more than one batch in every host",
            json!({"offset": 500, "limit": 1100}),
        ),
        q(
            "reverse-prefix-offset-limit",
            "prefix key-0010 descending, skip five, take three",
            json!({"prefix": "6b65792d30303130", "reverse": true, "offset": 5, "limit": 3}),
        ),
        q(
            "gt-lt-window",
            "between key-000010 and key-000013, both excluded",
            json!({"gt": "6b65792d303030303130", "lt": "6b65792d303030303133"}),
        ),
        q(
            "lte-bound-is-a-prefix-of-keys",
            "lte key-0001: the keys it prefixes sort after it",
            json!({"prefix": "6b65792d3030", "lte": "6b65792d30303031"}),
        ),
        q("offset-equals-count", "offset 2,000 of 2,000 keys", json!({"offset": 2000})),
        q("reverse-offset", "descending, skip 1,990", json!({"reverse": true, "offset": 1990})),
    ]
}

fn empty() -> Vec<Query> {
    let mut v = vec![
        q("everything", "no keys at all", json!({})),
        q("empty-prefix", "the empty prefix on an empty store", json!({"prefix": ""})),
        q("reverse-limit", "descending, one key", json!({"reverse": true, "limit": 1})),
    ];
    v.extend(invalid());
    v
}

/// The queries of case `id`, if it has any.
fn for_case(id: &str) -> Option<Vec<Query>> {
    match id {
        "binary-keys" => Some(binary_keys()),
        "thousands" => Some(thousands()),
        "empty" => Some(empty()),
        _ => None,
    }
}

fn hex_key(v: &Value) -> Vec<u8> {
    let s = v.as_str().expect("key options are hex strings");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// The rules of `RangeRequest`, written out plainly, for a valid request.
fn model(entries: &Model, request: &Map<String, Value>) -> Vec<Vec<u8>> {
    let key = |name: &str| request.get(name).map(hex_key);
    let (gt, gte, lt, lte, prefix) = (key("gt"), key("gte"), key("lt"), key("lte"), key("prefix"));
    let mut keys: Vec<Vec<u8>> = entries
        .keys()
        .filter(|k| gt.as_ref().is_none_or(|b| *k > b) && gte.as_ref().is_none_or(|b| *k >= b))
        .filter(|k| lt.as_ref().is_none_or(|b| *k < b) && lte.as_ref().is_none_or(|b| *k <= b))
        .filter(|k| prefix.as_ref().is_none_or(|p| k.starts_with(p)))
        .cloned()
        .collect();
    if request.get("reverse").and_then(Value::as_bool) == Some(true) {
        keys.reverse();
    }
    let offset = request.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let limit = request.get("limit").and_then(Value::as_u64).map_or(usize::MAX, |n| n as usize);
    keys.into_iter().skip(offset).take(limit).collect()
}

/// The queries file of case `id` over its entries, or `None`.
pub fn queries_json(id: &str, entries: &Model) -> Option<Vec<u8>> {
    let queries: Vec<Value> = for_case(id)?
        .into_iter()
        .map(|query| {
            let request = query.request.as_object().expect("a request is an object");
            let mut v = json!({"id": query.id, "about": query.about, "request": query.request});
            match query.error {
                Some(code) => v["error"] = json!(code),
                None => v["keys"] = json!(model(entries, request).iter().map(|k| to_hex(k)).collect::<Vec<_>>()),
            }
            v
        })
        .collect();
    let doc = json!({
        "kind": "queries",
        "case": id,
        "queries": queries,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("json");
    s.push('\n');
    Some(s.into_bytes())
}
