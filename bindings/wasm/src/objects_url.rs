//! `ObjectStore.fromUrl`: an object store read where it lies, on a static
//! web server or in an S3-compatible bucket, with HTTP range requests
//! inside a Web Worker (url_source.rs). A URL ending in `/` is a directory
//! store (FORMAT.md, "Directory layout"). HTTP cannot list a folder, so its
//! files are found by name: the config and the index by their fixed names,
//! packs and staging files from what the index names. Each file is opened
//! (a `HEAD`) the first time the core asks for it, so opening the store
//! touches the config and the index only. Any other URL is a single-file
//! store.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use bale::objects::entry::{Entry, KEY_ENTRY, KEY_PACK, pack_number};
use bale::objects::{self, Area, Dir, HashKind, ObjectId};
use bale::{ErrorKind, ReadOps};
use wasm_bindgen::prelude::*;

use crate::error::BaleError;
use crate::objects::{ObjectStore, Opened, guard, read_only_dir, readonly_options, single, wrap};
use crate::options;
use crate::url_source::UrlSource;

// FORMAT.md, "Directory layout".
const PACKS_DIR: &str = "packs";
const STAGING_DIR: &str = "staging";

fn read_only() -> bale::Error {
    bale::Error::new(ErrorKind::InvalidArgument, "this object store is opened read-only from a URL")
}

/// A file the server has, or why it has none (its "not found").
type Found = Result<Arc<dyn Storage>, String>;

/// A store directory on a web server: `base` (ending in `/`) followed by
/// each file's relative name.
struct UrlDir {
    base: String,
    /// The chunk cache each file gets: chunk and cache sizes.
    chunk_bytes: usize,
    cache_bytes: usize,
    opened: Arc<Opened>,
    /// Every file asked for (once: the store is read as a snapshot).
    files: Mutex<HashMap<String, Found>>,
    /// The store's index, once it is open, for `list`.
    index: OnceLock<(bale::Store, HashKind)>,
    /// The pack and staging files the index names, found on the first `list`.
    named: Mutex<Option<BTreeSet<(Area, u64)>>>,
}

impl UrlDir {
    fn get(&self, name: &str) -> bale::Result<Arc<dyn Storage>> {
        let mut files = guard(&self.files);
        if let Some(known) = files.get(name) {
            return known.clone().map_err(|m| bale::Error::new(ErrorKind::NotFound, m));
        }
        match UrlSource::new(format!("{}{name}", self.base)) {
            Ok(src) => {
                let f = wrap(src, Some(ChunkCache::new(self.chunk_bytes, self.cache_bytes)?));
                self.opened.add(&f);
                files.insert(name.to_string(), Ok(f.storage.clone()));
                Ok(f.storage)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                files.insert(name.to_string(), Err(e.message().to_string()));
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The files the index names: a pack per pack key, and the file of
    /// every entry's location (damaged entries are left to the reads that
    /// meet them). Walks every entry, once.
    fn named(&self) -> bale::Result<BTreeSet<(Area, u64)>> {
        let Some((index, kind)) = self.index.get() else { return Ok(BTreeSet::new()) };
        let mut named = guard(&self.named);
        if let Some(n) = &*named {
            return Ok(n.clone());
        }
        let r = index.read()?;
        let mut out = BTreeSet::new();
        let mut packs = r.prefix(&[KEY_PACK], false);
        while let Some(item) = packs.next_entry() {
            out.extend(pack_number(item?.0).map(|n| (Area::Pack, n)));
        }
        let mut entries = r.prefix(&[KEY_ENTRY], false);
        while let Some(item) = entries.next_entry() {
            let (k, v) = item?;
            let Ok(id) = ObjectId::from_bytes(*kind, k.get(1..).unwrap_or(&[])) else { continue };
            if let Ok(e) = Entry::decode(&v.bytes()?, &id)
                && e.loc.area != Area::Inline
            {
                out.insert((e.loc.area, e.loc.file));
            }
        }
        *named = Some(out.clone());
        Ok(out)
    }
}

impl Dir for UrlDir {
    read_only_dir!(read_only());

    /// `packs` and `staging` list the files the index names (see `named`);
    /// anything else lists as empty, as nothing else can be known.
    fn list(&self, sub: &str) -> bale::Result<Vec<String>> {
        let area = match sub {
            PACKS_DIR => Area::Pack,
            STAGING_DIR => Area::Staging,
            _ => return Ok(Vec::new()),
        };
        let name = |n: u64| if area == Area::Pack { format!("{n}.pack") } else { format!("{n:016x}.pack") };
        Ok(self.named()?.into_iter().filter(|(a, _)| *a == area).map(|(_, n)| name(n)).collect())
    }

    fn exists(&self, name: &str) -> bale::Result<bool> {
        if name.is_empty() || name == PACKS_DIR || name == STAGING_DIR {
            return Ok(true);
        }
        match self.get(name) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn display(&self) -> String {
        self.base.clone()
    }

    // `list` walks the index: summaries leave what it would count unknown.
    fn lists_cheaply(&self) -> bool {
        false
    }
}

#[wasm_bindgen]
impl ObjectStore {
    /// Opens a store lazily from a URL with HTTP range requests (inside a
    /// Web Worker; the server's duties as for `Store.fromUrl`): a URL
    /// ending in `/` is a directory store, whose files are fetched by name
    /// on first use (HTTP cannot list a folder: `packs/` and `staging/`
    /// hold the files the index names); any other URL is a single-file
    /// store. `options` sets the chunk cache of each file.
    #[wasm_bindgen(js_name = fromUrl)]
    pub fn from_url(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<ObjectStore, BaleError> {
        let cache = options::chunk_cache(&options)?;
        if !url.ends_with('/') {
            return single(wrap(UrlSource::new(url)?, Some(cache)));
        }
        let opened = Arc::new(Opened::default());
        let dir = Arc::new(UrlDir {
            base: url,
            chunk_bytes: cache.chunk_bytes(),
            cache_bytes: cache.capacity_bytes(),
            opened: opened.clone(),
            files: Mutex::new(HashMap::new()),
            index: OnceLock::new(),
            named: Mutex::new(None),
        });
        let store = objects::ObjectStore::open_dir(dir.clone(), readonly_options())?;
        // Set once, here: nothing else can have set it.
        let _ = dir.index.set((store.index().clone(), store.hash_kind()));
        Ok(ObjectStore::new(store, opened))
    }
}
