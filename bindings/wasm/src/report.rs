//! Reports as plain JS objects: `stat()`, `estimate()`, `check()` and
//! `cacheStats()` of a tree store, and `meta()`, `stats()`, `validate()`,
//! `overview()`, `chunks()` and `files()` of an object store.

use bale::btree::{CheckReport, Estimate, PageKind, PageMap, Stat, camel_case};
use bale::chunk_cache::ChunkCache;
use bale::objects::{ChunkInfo, FileUsage, ObjectMeta, ObjectOverview, ObjectStats, ValidateReport};
use js_sys::{Array, Object, Reflect, Uint8Array};
use wasm_bindgen::JsValue;

/// A u64 as a JS number, exact below 2^53 (every size bale allows).
pub fn num(v: u64) -> JsValue {
    JsValue::from(v as f64)
}

fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    // Setting a data property on a fresh plain object cannot fail.
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

/// `stat()` of a store whose file is `file_bytes` long.
pub fn stat(s: &Stat, format_version: u16, file_bytes: u64) -> Object {
    let o = Object::new();
    set(&o, "formatVersion", format_version);
    set(&o, "fileBytes", num(file_bytes));
    for (name, v) in s.fields() {
        set(&o, &camel_case(name), v);
    }
    o
}

/// `estimate()`: the core's fields, in camelCase.
pub fn estimate(e: &Estimate) -> Object {
    let o = Object::new();
    for (name, v) in e.fields() {
        set(&o, &camel_case(name), v);
    }
    o
}

pub fn check(r: &CheckReport) -> Object {
    let o = Object::new();
    set(&o, "ok", r.is_ok());
    set(&o, "txn", num(r.txn));
    set(&o, "pages", num(r.pages));
    set(&o, "entries", num(r.entries));
    set(&o, "largeValues", num(r.large_values));
    set(&o, "freePages", num(r.free_pages));
    set(&o, "metaSlot", num(r.meta_slot));
    let problems: Array = r
        .problems
        .iter()
        .map(|p| {
            let po = Object::new();
            set(&po, "page", p.page.map(num).unwrap_or(JsValue::NULL));
            set(&po, "message", p.message.as_str());
            JsValue::from(po)
        })
        .collect();
    set(&o, "problems", problems);
    if let Some(m) = &r.page_map {
        set(&o, "pageMap", page_map(m));
    }
    o
}

/// `pageMap` of `check({ pageMap: true })`: the kind and fill bytes, the
/// kinds' names by number, and the pages of each kind.
fn page_map(m: &PageMap) -> Object {
    let o = Object::new();
    set(&o, "kinds", Uint8Array::from(&m.kinds[..]));
    set(&o, "fill", Uint8Array::from(&m.fill[..]));
    let names: Vec<String> = PageKind::ALL.iter().map(|k| camel_case(k.name())).collect();
    set(&o, "kindNames", names.iter().map(|n| JsValue::from_str(n)).collect::<Array>());
    let counts = Object::new();
    for (name, n) in names.iter().zip(m.counts()) {
        set(&counts, name, num(n));
    }
    set(&o, "counts", counts);
    o
}

pub fn cache_stats(c: &ChunkCache) -> Object {
    let (s, o) = (c.stats(), Object::new());
    set(&o, "chunkBytes", num(c.chunk_bytes() as u64));
    set(&o, "capacityBytes", num(c.capacity_bytes() as u64));
    set(&o, "cachedBytes", num(c.cached_bytes() as u64));
    set(&o, "requests", num(s.requests));
    set(&o, "hits", num(s.hits));
    set(&o, "aheadChunks", num(s.ahead_chunks));
    set(&o, "bypassed", num(s.bypassed));
    o
}

/// `{ done, value }` of the JS iterator protocol.
pub fn iter_result(value: Option<JsValue>) -> Object {
    let o = Object::new();
    set(&o, "done", value.is_none());
    set(&o, "value", value.unwrap_or(JsValue::UNDEFINED));
    o
}

/// `ObjectStore.meta()`.
pub fn object_meta(m: &ObjectMeta) -> Object {
    let o = Object::new();
    set(&o, "id", m.id.to_hex());
    set(&o, "size", num(m.size));
    set(&o, "storedSize", num(m.stored_size));
    set(&o, "chunked", m.chunked);
    set(&o, "packed", m.packed);
    set(&o, "compressed", m.compressed);
    o
}

/// Sets each of a report's counts (the core's list of them), in camelCase.
fn set_counts(o: &Object, counts: &[(&'static str, u64)]) {
    for &(name, v) in counts {
        set(o, &camel_case(name), num(v));
    }
}

/// `ObjectStore.stats()`.
pub fn object_stats(s: &ObjectStats) -> Object {
    let o = Object::new();
    set_counts(&o, &s.fields());
    o
}

/// `ObjectStore.overview()`.
pub fn object_overview(v: &ObjectOverview) -> Object {
    let (o, c) = (Object::new(), &v.config);
    set(&o, "formatVersion", v.format_version);
    set(&o, "singleFile", v.single_file);
    set(&o, "hash", c.hash.name());
    set(&o, "compression", c.compression.name());
    set(&o, "chunkMin", c.chunk_min);
    set(&o, "chunkAvg", c.chunk_avg);
    set(&o, "chunkMax", c.chunk_max);
    set(&o, "fanout", c.fanout);
    set(&o, "packTarget", num(c.pack_target));
    set(&o, "storeId", c.store_id.iter().map(|b| format!("{b:02x}")).collect::<String>());
    set(&o, "indexKeys", num(v.index_keys));
    set(&o, "records", num(v.records));
    set(&o, "packs", num(v.packs));
    set(&o, "packBytes", num(v.pack_bytes));
    set(&o, "stagingFiles", v.staging_files.map(num).unwrap_or(JsValue::NULL));
    set(&o, "stagingBytes", v.staging_bytes.map(num).unwrap_or(JsValue::NULL));
    set(&o, "indexBytes", num(v.index_bytes));
    o
}

/// A file name relative to the store, or `null`.
fn file_or_null(name: Option<String>) -> JsValue {
    name.map(|n| JsValue::from_str(&n)).unwrap_or(JsValue::NULL)
}

/// One item of `ObjectStore.chunks()`.
pub fn object_chunk(c: &ChunkInfo) -> Object {
    let o = Object::new();
    set(&o, "id", c.id.to_hex());
    set(&o, "offset", num(c.offset));
    set(&o, "size", num(c.size));
    set(&o, "storedSize", num(c.stored_size));
    set(&o, "compressed", c.compressed);
    set(&o, "area", c.location.area.name());
    set(&o, "file", file_or_null(c.file_name()));
    set(&o, "fileNumber", num(c.location.file));
    set(&o, "fileOffset", num(c.location.offset));
    o
}

/// One item of `ObjectStore.files()`.
pub fn object_file(f: &FileUsage) -> Object {
    let o = Object::new();
    set(&o, "area", f.area.name());
    set(&o, "number", num(f.number));
    set(&o, "file", file_or_null(f.file_name()));
    set(&o, "fileBytes", f.file_bytes.map(num).unwrap_or(JsValue::NULL));
    set(&o, "committedBytes", f.committed_bytes.map(num).unwrap_or(JsValue::NULL));
    set(&o, "liveRecords", num(f.live_records));
    set(&o, "liveBytes", num(f.live_bytes));
    o
}

/// `ObjectStore.validate()`.
pub fn object_validate(r: &ValidateReport) -> Object {
    let o = Object::new();
    set(&o, "ok", r.is_ok());
    set_counts(&o, &r.fields());
    let problems: Array = r
        .problems
        .iter()
        .map(|p| {
            let po = Object::new();
            set(&po, "id", p.id.map(|id| JsValue::from_str(&id.to_hex())).unwrap_or(JsValue::NULL));
            set(&po, "file", p.file.as_deref().map(JsValue::from_str).unwrap_or(JsValue::NULL));
            set(&po, "code", p.code);
            set(&po, "message", p.message.as_str());
            JsValue::from(po)
        })
        .collect();
    set(&o, "problems", problems);
    o
}

/// `Bitable.stats()`.
pub fn bitable_stats(s: &bale::bitable::Stats, format_version: u16) -> Object {
    let o = Object::new();
    set(&o, "formatVersion", format_version);
    set(&o, "entries", num(s.entries));
    set(&o, "pageSize", s.page_size);
    set(&o, "align", s.align);
    set(&o, "depth", s.depth);
    set(&o, "leafPages", num(s.leaf_pages));
    set(&o, "branchPages", num(s.branch_pages));
    set(&o, "levelPages", s.level_pages.iter().map(|&n| num(n)).collect::<Array>());
    set(&o, "largeValues", num(s.large_values));
    set(&o, "valueRegionBytes", num(s.value_region_bytes));
    set(&o, "fileBytes", num(s.file_bytes));
    set(&o, "keyBytes", num(s.key_bytes));
    set(&o, "valueBytes", num(s.value_bytes));
    set(&o, "longestKey", num(s.longest_key));
    set(&o, "leafFill", s.leaf_fill);
    set(&o, "branchFill", s.branch_fill);
    set(&o, "completion", s.completion);
    o
}

/// `Bitable.check()`.
pub fn bitable_check(r: &bale::bitable::CheckReport) -> Object {
    let o = Object::new();
    set(&o, "ok", r.is_ok());
    set(&o, "pagesChecked", num(r.pages_checked));
    set(&o, "entriesChecked", num(r.entries_checked));
    set(&o, "largeValuesChecked", num(r.large_values_checked));
    set(&o, "problemCount", num(r.problem_count));
    let problems: Array = r
        .problems
        .iter()
        .map(|p| {
            let po = Object::new();
            set(&po, "page", p.page.map(num).unwrap_or(JsValue::NULL));
            set(&po, "code", p.code);
            set(&po, "message", p.message.as_str());
            JsValue::from(po)
        })
        .collect();
    set(&o, "problems", problems);
    o
}
