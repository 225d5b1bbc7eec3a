//! The range request every host parses its options into, and the one place
//! that checks it: the CLI, Python, Node and WebAssembly give the same
//! answer and the same error for the same request.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use super::range_scan::RangeScan;
use super::read::prefix_end;
use crate::error::{Error, Result};

/// Which keys of a store a range yields, in which order, and which slice
/// of them. This comment is the definition every binding refers to.
///
/// - **Order.** Keys compare as unsigned bytes, shorter first when one is a
///   prefix of the other (`""` < `"a"` < `"a\0"` < `"ab"` < `"\xff"`).
/// - **Bounds.** At most one lower bound, `gt` (exclusive) or `gte`
///   (inclusive), and at most one upper bound, `lt` or `lte`. Two lower or
///   two upper bounds in one request are `INVALID_ARGUMENT`, whichever way
///   they are spelled.
/// - **Prefix.** Only keys that start with `prefix`. The empty prefix
///   matches every key; a prefix of 0xFF bytes has no upper end and runs
///   to the last key. Together with bounds, a key must satisfy both (the
///   intersection).
/// - **Empty selections are not errors.** A lower bound above the upper
///   one, equal bounds with either side exclusive, or a prefix outside the
///   bounds select nothing.
/// - **Direction, then slice.** `reverse` walks the selection from its
///   last key down. Then `offset` keys are skipped, counted in that
///   direction, and then at most `limit` keys are yielded: `limit: 0` yields
///   nothing, no limit yields the rest.
/// - **Values.** Keys and prefixes are bytes (JS hosts also take a string
///   as its UTF-8 bytes); `reverse` is a boolean; `limit` and `offset` are
///   non-negative integers. Anything else, and any option name not listed
///   in [`RangeRequest::OPTIONS`], is `INVALID_ARGUMENT`. A host's "no
///   value" (`undefined`, `null`, `None`) is the same as leaving the option
///   out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    pub gt: Option<Vec<u8>>,
    pub gte: Option<Vec<u8>>,
    pub lt: Option<Vec<u8>>,
    pub lte: Option<Vec<u8>>,
    pub prefix: Option<Vec<u8>>,
    pub reverse: bool,
    pub limit: Option<u64>,
    pub offset: u64,
}

/// An option's value as a host hands it over, before the core checks its
/// type.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    Bytes(Vec<u8>),
    /// A string; a key option takes its UTF-8 bytes.
    Text(String),
    Bool(bool),
    Int(i64),
    /// A floating-point number (JS numbers, Python floats).
    Number(f64),
    /// Any other value, by the host's name for its type ("object", "list").
    Other(String),
}

impl OptionValue {
    /// What the value is, for messages.
    fn describe(&self) -> String {
        match self {
            OptionValue::Bytes(_) => "bytes".into(),
            OptionValue::Text(_) => "a string".into(),
            OptionValue::Bool(b) => format!("{b}"),
            OptionValue::Int(n) => format!("{n}"),
            OptionValue::Number(n) => format!("{n}"),
            OptionValue::Other(t) => t.clone(),
        }
    }
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

const TWO_LOWER: &str = "a range takes one lower bound: give gt or gte, not both";
const TWO_UPPER: &str = "a range takes one upper bound: give lt or lte, not both";

/// A key option's bytes.
fn key(name: &str, v: OptionValue) -> Result<Vec<u8>> {
    match v {
        OptionValue::Bytes(b) => Ok(b),
        OptionValue::Text(s) => Ok(s.into_bytes()),
        other => Err(Error::invalid(format!("{name} must be a key (bytes), not {other}"))),
    }
}

/// A count option: a non-negative integer (a float only when it is whole).
fn count(name: &str, v: OptionValue) -> Result<u64> {
    match v {
        OptionValue::Int(n) if n >= 0 => Ok(n as u64),
        // `as` saturates; counts past 2^64 mean "all" anyway.
        OptionValue::Number(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(n as u64),
        other => Err(Error::invalid(format!("{name} must be a non-negative integer, not {other}"))),
    }
}

/// Stores `v` in `slot` while neither bound of its side is set; a second
/// bound for the same side is the two-bounds error.
fn bound_slot(slot: &mut Option<Vec<u8>>, other_set: bool, v: Vec<u8>, two: &str) -> Result<()> {
    if slot.is_some() || other_set {
        return Err(Error::invalid(two));
    }
    *slot = Some(v);
    Ok(())
}

impl RangeRequest {
    /// Every option name, in the order messages list them.
    pub const OPTIONS: [&'static str; 8] = ["gt", "gte", "lt", "lte", "prefix", "reverse", "limit", "offset"];

    /// Sets the option `name` from a host value, checking its name and
    /// type. Giving a bound that is already set is the two-bounds error.
    pub fn set(&mut self, name: &str, v: OptionValue) -> Result<()> {
        match name {
            "gt" => bound_slot(&mut self.gt, self.gte.is_some(), key(name, v)?, TWO_LOWER),
            "gte" => bound_slot(&mut self.gte, self.gt.is_some(), key(name, v)?, TWO_LOWER),
            "lt" => bound_slot(&mut self.lt, self.lte.is_some(), key(name, v)?, TWO_UPPER),
            "lte" => bound_slot(&mut self.lte, self.lt.is_some(), key(name, v)?, TWO_UPPER),
            "prefix" => {
                self.prefix = Some(key(name, v)?);
                Ok(())
            }
            "reverse" => match v {
                OptionValue::Bool(b) => {
                    self.reverse = b;
                    Ok(())
                }
                other => Err(Error::invalid(format!("reverse must be a boolean, not {other}"))),
            },
            "limit" => {
                self.limit = Some(count(name, v)?);
                Ok(())
            }
            "offset" => {
                self.offset = count(name, v)?;
                Ok(())
            }
            _ => Err(Error::invalid(unknown_option(name))),
        }
    }

    /// Checks the bounds and resolves the request into the scan that runs
    /// it (see the type's documentation for the rules).
    pub fn scan(self) -> Result<RangeScan> {
        let mut lower = match (self.gt, self.gte) {
            (Some(_), Some(_)) => return Err(Error::invalid(TWO_LOWER)),
            (Some(k), None) => Bound::Excluded(k),
            (None, Some(k)) => Bound::Included(k),
            (None, None) => Bound::Unbounded,
        };
        let mut upper = match (self.lt, self.lte) {
            (Some(_), Some(_)) => return Err(Error::invalid(TWO_UPPER)),
            (Some(k), None) => Bound::Excluded(k),
            (None, Some(k)) => Bound::Included(k),
            (None, None) => Bound::Unbounded,
        };
        if let Some(p) = self.prefix {
            if let Some(end) = prefix_end(&p) {
                upper = tighter(upper, Bound::Excluded(end), Ordering::Less);
            }
            lower = tighter(lower, Bound::Included(p), Ordering::Greater);
        }
        Ok(RangeScan::new(lower, upper, self.reverse).slice(self.offset, self.limit))
    }
}

/// The message for an option name no host accepts. lmdb's `start`/`end`
/// get a pointer to their meaning here, since in lmdb they swap roles when
/// reversed.
fn unknown_option(name: &str) -> String {
    let known = RangeRequest::OPTIONS.join(", ");
    match name {
        "start" | "end" => format!(
            "unknown range option {name:?} (known: {known}); bounds are gt/gte (lower) and lt/lte (upper) whatever the direction"
        ),
        _ => format!("unknown range option {name:?} (known: {known})"),
    }
}

/// The message for range options that are not an options object at all.
pub fn options_not_an_object(got: &str) -> Error {
    Error::invalid(format!("range options must be an object, not {got}"))
}

/// Of two bounds on the same side, the one that admits fewer keys: for
/// lower bounds `keep` is `Greater` (the larger wins), for upper bounds
/// `Less`. At equal keys the exclusive bound is the tighter one.
fn tighter(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>, keep: Ordering) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => match x.cmp(y) {
            Ordering::Equal if matches!(a, Bound::Excluded(_)) => a,
            Ordering::Equal => b,
            o if o == keep => a,
            _ => b,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn inc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Included(k.to_vec())
    }
    fn exc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Excluded(k.to_vec())
    }

    #[test]
    fn tighter_bounds() {
        use Ordering::{Greater as Lower, Less as Upper};
        assert_eq!(tighter(inc(b"a"), exc(b"a"), Lower), exc(b"a"));
        assert_eq!(tighter(exc(b"a"), inc(b"b"), Lower), inc(b"b"));
        assert_eq!(tighter(Bound::Unbounded, inc(b"b"), Lower), inc(b"b"));
        assert_eq!(tighter(inc(b"z"), exc(b"z"), Upper), exc(b"z"));
        assert_eq!(tighter(exc(b"y"), inc(b"z"), Upper), exc(b"y"));
        assert_eq!(tighter(inc(b"y"), Bound::Unbounded, Upper), inc(b"y"));
    }

    #[test]
    fn set_checks_names_and_types() {
        let mut r = RangeRequest::default();
        r.set("gte", OptionValue::Text("a".into())).unwrap();
        r.set("lt", OptionValue::Bytes(vec![0xff])).unwrap();
        r.set("reverse", OptionValue::Bool(true)).unwrap();
        r.set("limit", OptionValue::Number(3.0)).unwrap();
        r.set("offset", OptionValue::Int(2)).unwrap();
        let want = RangeRequest {
            gte: Some(b"a".to_vec()),
            lt: Some(vec![0xff]),
            reverse: true,
            limit: Some(3),
            offset: 2,
            ..RangeRequest::default()
        };
        assert_eq!(r, want);
        let err = |name: &str, v: OptionValue| {
            let e = RangeRequest::default().set(name, v).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            e.message().to_owned()
        };
        let start = err("start", OptionValue::Text("c".into()));
        assert!(
            start.starts_with(
                "unknown range option \"start\" (known: gt, gte, lt, lte, prefix, reverse, limit, offset)"
            )
        );
        assert_eq!(err("limit", OptionValue::Int(-1)), "limit must be a non-negative integer, not -1");
        assert_eq!(err("limit", OptionValue::Number(-1.0)), "limit must be a non-negative integer, not -1");
        assert_eq!(err("offset", OptionValue::Number(1.5)), "offset must be a non-negative integer, not 1.5");
        assert_eq!(err("limit", OptionValue::Number(f64::INFINITY)), "limit must be a non-negative integer, not inf");
        assert_eq!(err("reverse", OptionValue::Text("yes".into())), "reverse must be a boolean, not a string");
        assert_eq!(err("gt", OptionValue::Int(42)), "gt must be a key (bytes), not 42");
        assert_eq!(err("prefix", OptionValue::Other("object".into())), "prefix must be a key (bytes), not object");
    }

    #[test]
    fn two_bounds_on_one_side_are_refused_however_given() {
        let two = |a: &str, b: &str| {
            let mut r = RangeRequest::default();
            r.set(a, OptionValue::Text("k".into())).unwrap();
            let by_set = r.set(b, OptionValue::Text("k".into())).unwrap_err();
            let mut s = RangeRequest::default();
            for name in [a, b] {
                let slot = match name {
                    "gt" => &mut s.gt,
                    "gte" => &mut s.gte,
                    "lt" => &mut s.lt,
                    _ => &mut s.lte,
                };
                *slot = Some(b"k".to_vec());
            }
            let by_scan = s.scan().unwrap_err();
            assert_eq!(by_set.message(), by_scan.message());
            assert_eq!(by_scan.kind(), ErrorKind::InvalidArgument);
        };
        two("gt", "gte");
        two("gte", "gt");
        two("lt", "lte");
        two("lte", "lt");
        let mut r = RangeRequest::default();
        r.set("gte", OptionValue::Text("a".into())).unwrap();
        assert_eq!(r.set("gte", OptionValue::Text("b".into())).unwrap_err().message(), TWO_LOWER);
    }
}
