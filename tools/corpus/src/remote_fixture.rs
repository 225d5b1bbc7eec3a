//! `bale-corpus remote-fixture OUT_DIR`: remotes laid out as folders (a
//! folder is a bucket whose keys are paths, `FsBucket`), for the suites
//! that read a remote over HTTP. The remote's id and its writers' nonces,
//! random by design (FORMAT.md, "Remotes"), are drawn here from fixed
//! seeds (`RemoteOptions::nonce_seed`), so every run writes the same
//! bytes: `remote/` is also the golden corpus's `remote/v1/remote-blake3`
//! (remotes.rs).
//!
//! OUT_DIR/remote/      a remote: two pushes, the second in small packs,
//!                      so that the 2 MB object spans several packs and
//!                      shares chunks with a pack of the first push
//! OUT_DIR/damaged/     the same remote with one payload byte of one chunk
//!                      flipped (CHECKSUM_MISMATCH when it is read)
//! OUT_DIR/garbage/     a `manifest` that is not one (NOT_A_BALE_FILE)
//! OUT_DIR/expected.json  generation, packs, and every object's id, size,
//!                      SHA-256 (and content when small; chunk boundaries
//!                      when chunked); the damaged chunk
//!
//! Every expectation is checked here first by reading the folders back
//! through the core, so a fixture that would mislead the suites is never
//! written.

use std::path::Path;
use std::sync::Arc;

use bale::ErrorKind;
use bale::io::sim::SimRng;
use bale::objects::record::RECORD_HEADER_LEN;
use bale::objects::{Config, HashKind, ObjectId, ObjectOptions, ObjectStore};
use bale::remote::{FsBucket, PushOptions, Remote, RemoteOptions};
use serde_json::{Value, json};

/// Objects at most this long are written out whole in `expected.json`.
const INLINE_CONTENT: usize = 256;
const GARBAGE_MANIFEST: &[u8] = b"this is not a remote's manifest\n";

fn noise(rng: &mut SimRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The objects of each push: small ones (empty, text, noise), compressible
/// ones (whole and chunked), chunked ones of a few hundred KB; then a 2 MB
/// one and one that shares its first megabyte.
fn contents() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut rng = SimRng::new(0x7e30_7e00);
    let line = |i: usize| format!("line {i}: objects read from a remote by range\n").into_bytes();
    let text: Vec<u8> = (0..60).flat_map(line).collect();
    let mut first = vec![
        Vec::new(),
        b"hello, remote".to_vec(),
        noise(&mut rng, 1),
        noise(&mut rng, 200),
        noise(&mut rng, 3000),
        text.clone(),
        text.repeat(80),
        noise(&mut rng, 300_000),
        noise(&mut rng, 450_123),
    ];
    first.extend((0..6).map(|i| format!("small object {i}\n").repeat(i + 1).into_bytes()));
    let big = noise(&mut rng, 2_100_000);
    let mut shares = big[..1_000_000].to_vec();
    shares.extend(noise(&mut rng, 60_000));
    (first, vec![big, shares])
}

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn copy_remote(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to.join("packs"))?;
    std::fs::copy(from.join("manifest"), to.join("manifest"))?;
    for e in std::fs::read_dir(from.join("packs"))? {
        let e = e?;
        std::fs::copy(e.path(), to.join("packs").join(e.file_name()))?;
    }
    Ok(())
}

fn opened(dir: &Path) -> std::io::Result<Remote> {
    Ok(Remote::new(Arc::new(FsBucket::open(dir).map_err(io)?))
        .with_options(RemoteOptions { threads: 1, ..RemoteOptions::default() }))
}

/// The chunk sizes of the fixture's store (and of the corpus's remotes).
pub fn config(hash: HashKind) -> Config {
    Config {
        hash,
        chunk_min: 1024,
        chunk_avg: 4096,
        chunk_max: 16384,
        fanout: 16,
        store_id: *b"bale remote id\0\x01",
        ..Config::default()
    }
}

/// One push: its objects, the pack size it uses, and the refs it sets
/// (name, index into its objects).
pub struct Push<'a> {
    pub objects: &'a [Vec<u8>],
    pub pack_target: u64,
    pub refs: &'a [(&'a str, usize)],
}

/// What [`push_remote`] made: the scratch store the pushes came from, every
/// object in id order, and the generation of the last commit.
pub struct Pushed {
    pub store: ObjectStore,
    pub objects: Vec<(ObjectId, Vec<u8>)>,
    pub generation: u64,
}

/// Creates a remote in folder `dir` (no pushes: an empty remote) and
/// pushes each of `pushes` to it from a new store at `scratch`, one
/// handle per push; the remote's id and every nonce come from `seed`.
pub fn push_remote(
    scratch: &Path,
    dir: &Path,
    config: Config,
    pushes: &[Push<'_>],
    seed: u64,
) -> std::io::Result<Pushed> {
    let hash = config.hash;
    let store = ObjectStore::open(scratch, ObjectOptions { config, ..ObjectOptions::create() }).map_err(io)?;
    let seeded = |n: u64, pack_target: u64| -> std::io::Result<Remote> {
        let nonce_seed = Some(seed.wrapping_add(n << 32));
        Ok(opened(dir)?.with_options(RemoteOptions { pack_target, threads: 1, nonce_seed, ..RemoteOptions::default() }))
    };
    seeded(0, 32 << 20)?.create(hash, 24 * 3600 * 1000).map_err(io)?;
    let mut objects: Vec<(ObjectId, Vec<u8>)> = Vec::new();
    let mut generation = 0;
    for (n, p) in pushes.iter().enumerate() {
        let ids: Vec<ObjectId> = p.objects.iter().map(|d| store.add(d)).collect::<bale::Result<_>>().map_err(io)?;
        objects.extend(ids.iter().copied().zip(p.objects.iter().cloned()));
        let refs = p.refs.iter().map(|(name, i)| (name.to_string(), ids[*i])).collect();
        let opts = PushOptions { refs, ..PushOptions::default() };
        generation = seeded(n as u64 + 1, p.pack_target)?.push(&store, &opts, &mut |_, _| {}).map_err(io)?.generation;
    }
    objects.sort();
    objects.dedup_by(|a, b| a.0 == b.0);
    Ok(Pushed { store, objects, generation })
}

/// Removes the bucket's own working files from folder `dir`, which a web
/// server need not serve and the corpus does not hold.
pub fn tidy(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(".bale-tmp"));
    let _ = std::fs::remove_file(dir.join(".bale-bucket.lock"));
}

/// The fixture's remote: [`contents`] in two pushes, the second in packs
/// of 512 KiB.
pub fn fixture_remote(scratch: &Path, dir: &Path) -> std::io::Result<Pushed> {
    let (first, second) = contents();
    let pushes = [
        Push { objects: &first, pack_target: 32 << 20, refs: &[] },
        Push { objects: &second, pack_target: 512 << 10, refs: &[] },
    ];
    let pushed = push_remote(scratch, dir, config(HashKind::Blake3), &pushes, 0x7e30_5eed)?;
    tidy(dir);
    Ok(pushed)
}

/// Writes the fixture into `out`, which must not exist or be empty.
pub fn write(out: &Path) -> std::io::Result<()> {
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(io(format!("{} is not empty; remove it first", out.display())));
    }
    let scratch = out.join(".store");
    let remote_dir = out.join("remote");
    let Pushed { store, objects, generation } = fixture_remote(&scratch, &remote_dir)?;
    let remote = opened(&remote_dir)?;

    // Read everything back through the core, as the suites will.
    let (m, index) = remote.known_index().map_err(io)?;
    let mut listed = Vec::new();
    for (id, data) in &objects {
        let got = remote.read_object(&index, m.hash, id).map_err(io)?;
        if got != *data || index.get(id).map(|l| l.entry.size) != Some(data.len() as u64) {
            return Err(io(format!("object {id} does not read back from {}", remote_dir.display())));
        }
        let mut o = json!({ "id": id.to_hex(), "size": data.len(), "sha256": HashKind::Sha256.hash(data).to_hex() });
        if data.len() <= INLINE_CONTENT {
            o["content"] = json!(hex(data));
        }
        let chunks = store.chunks(id).map_err(io)?;
        if chunks.len() > 1 {
            o["chunks"] = Value::from(chunks.iter().map(|c| json!([c.offset, c.size])).collect::<Vec<_>>());
        }
        listed.push(o);
    }

    // The damaged copy: a byte in the middle of the payload of a chunk of
    // the 2 MB object past what it shares with the other one.
    let big =
        objects.iter().find(|(_, d)| d.len() == 2_100_000).map(|(id, _)| *id).ok_or_else(|| io("no 2 MB object"))?;
    let chunk = store
        .chunks(&big)
        .map_err(io)?
        .into_iter()
        .find(|c| c.offset >= 1_500_000)
        .ok_or_else(|| io("the 2 MB object has no chunk past 1.5 MB"))?;
    let at = index.get(&chunk.id).ok_or_else(|| io("the damaged chunk is not in the remote"))?;
    let damaged_dir = out.join("damaged");
    copy_remote(&remote_dir, &damaged_dir)?;
    let pack_path = damaged_dir.join(at.pack.id.pack_key());
    let mut pack = std::fs::read(&pack_path)?;
    let byte = usize::try_from(at.entry.offset).map_err(io)? + RECORD_HEADER_LEN + at.entry.stored_len as usize / 2;
    *pack.get_mut(byte).ok_or_else(|| io("the chunk lies past its pack's end"))? ^= 0x5a;
    std::fs::write(&pack_path, &pack)?;
    let damaged = opened(&damaged_dir)?;
    let kind = damaged.read_object(&index, m.hash, &big).map(|_| ()).map_err(|e| e.kind());
    if kind != Err(ErrorKind::ChecksumMismatch) {
        return Err(io(format!("reading the damaged copy gave {kind:?}, not CHECKSUM_MISMATCH")));
    }

    std::fs::create_dir_all(out.join("garbage"))?;
    std::fs::write(out.join("garbage").join("manifest"), GARBAGE_MANIFEST)?;
    let kind = opened(&out.join("garbage"))?.manifest().map(|_| ()).map_err(|e| e.kind());
    if kind != Err(ErrorKind::NotABaleFile) {
        return Err(io(format!("the garbage manifest gave {kind:?}, not NOT_A_BALE_FILE")));
    }

    let doc = json!({
        "_comment": concat!(
            "A remote served as folders (bale-corpus remote-fixture): remote/ read whole, damaged/ with one ",
            "payload byte of `damaged.chunk` of `damaged.object` flipped, garbage/ whose manifest is not one. ",
            "Objects in id order; `sha256` of the content, `content` (hex) when small, `chunks` [offset, size] ",
            "when chunked."
        ),
        "hash": m.hash.name(),
        "generation": generation,
        "packs": m.packs.len(),
        "objects": listed,
        "damaged": { "object": big.to_hex(), "chunk": [chunk.offset, chunk.size] },
    });
    let mut s = serde_json::to_string_pretty(&doc).map_err(io)?;
    s.push('\n');
    std::fs::write(out.join("expected.json"), s)?;
    drop(store);
    std::fs::remove_dir_all(&scratch)?;
    for d in [&remote_dir, &damaged_dir, &out.join("garbage")] {
        tidy(d);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fixture_reads_back_and_its_damage_is_found() {
        let out = std::env::temp_dir().join(format!("bale-remote-fixture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        super::write(&out).unwrap();
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("expected.json")).unwrap()).unwrap();
        assert_eq!(doc["generation"], 2);
        assert!(doc["packs"].as_u64().unwrap() >= 4, "{}", doc["packs"]);
        assert_eq!(doc["objects"].as_array().unwrap().len(), 17);
        assert!(super::write(&out).is_err(), "a non-empty folder is refused");
        std::fs::remove_dir_all(&out).unwrap();
    }
}
