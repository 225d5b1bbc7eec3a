//! The manifest: the one mutable object of a remote, replaced only by
//! conditional PUTs (FORMAT.md, "Remote manifest").
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use super::pack_index::index_len;
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{u32_at, u64_at};
use crate::format::checksum::checksum;
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::objects::record::RECORD_HEADER_LEN;
use crate::objects::{HashKind, ObjectId};

pub const MANIFEST_VERSION: u16 = 1;
/// Writer nonces a manifest remembers, newest last: enough to settle a
/// commit whose reply was lost while hundreds of others landed. Past as
/// many, a push no longer re-applies its refs blindly (see `push`).
pub const MAX_COMMITS: usize = 1024;
/// The most bytes a manifest may have: a reader reads no more.
pub const MANIFEST_MAX_LEN: u64 = 256 << 20;
/// The most bytes a pack may have: a reader may hold a whole one.
pub const PACK_MAX_LEN: u64 = 1 << 30;
/// The most bytes of the bucket's small objects: `gc-lease`, `uploads/`
/// markers and probes.
pub const SMALL_OBJECT_MAX_LEN: u64 = 4096;
const MAX_REF_NAME: usize = 255;
const PACK_REF_LEN: usize = 56;
const TOMBSTONE_LEN: usize = PACK_REF_LEN + 8;
const COUNTS_END: usize = HEADER_LEN + 32;

/// A pack's name: the BLAKE3 hash of its bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackId(pub [u8; 32]);

impl PackId {
    pub fn of(bytes: &[u8]) -> PackId {
        PackId(*blake3::hash(bytes).as_bytes())
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The pack whose name is `s`: 64 lower-case hex digits, as
    /// [`PackId::to_hex`] writes them (another spelling names no pack).
    pub fn from_hex(s: &str) -> Option<PackId> {
        if s.len() != 64 || !s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(PackId(out))
    }

    /// The bucket key of the pack.
    pub fn pack_key(&self) -> String {
        format!("{PACKS_PREFIX}{}.pack", self.to_hex())
    }

    /// The bucket key of its index.
    pub fn index_key(&self) -> String {
        format!("{PACKS_PREFIX}{}.idx", self.to_hex())
    }
}

impl std::fmt::Debug for PackId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackId({})", self.to_hex())
    }
}

impl std::fmt::Display for PackId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

pub const MANIFEST_KEY: &str = "manifest";
pub const PACKS_PREFIX: &str = "packs/";

/// A pack the manifest names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackRef {
    pub id: PackId,
    /// Bytes of the pack file.
    pub len: u64,
    /// Bytes of its index file.
    pub index_len: u64,
    /// Records it holds.
    pub records: u64,
}

/// A pack no longer live, to be deleted once `since_ms` is a grace period
/// in the past (unless a push revives it first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tombstone {
    pub pack: PackRef,
    /// When it was tombstoned, milliseconds since the Unix epoch.
    pub since_ms: i64,
}

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Random at creation; every pack and index of the remote carries it.
    pub remote_id: [u8; 16],
    pub hash: HashKind,
    /// Counts commits: each replacement is one higher.
    pub generation: u64,
    /// How long a pack stays unnamed or tombstoned before gc deletes it;
    /// also the longest a push may take between its first upload and its
    /// commit.
    pub grace_ms: u64,
    /// Live packs, in the order they were committed.
    pub packs: Vec<PackRef>,
    pub tombstones: Vec<Tombstone>,
    /// Names for objects (roots of what a pipeline keeps).
    pub refs: BTreeMap<String, ObjectId>,
    /// Nonces of the last commits, newest last.
    pub commits: Vec<u64>,
}

impl Manifest {
    pub fn new(remote_id: [u8; 16], hash: HashKind, grace_ms: u64) -> Manifest {
        Manifest {
            remote_id,
            hash,
            generation: 0,
            grace_ms,
            packs: Vec::new(),
            tombstones: Vec::new(),
            refs: BTreeMap::new(),
            commits: Vec::new(),
        }
    }

    /// Notes a commit's nonce, forgetting the oldest past `MAX_COMMITS`.
    pub fn remember(&mut self, nonce: u64) {
        self.commits.push(nonce);
        if self.commits.len() > MAX_COMMITS {
            let extra = self.commits.len() - MAX_COMMITS;
            self.commits.drain(..extra);
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut params = [0u8; 32];
        params[..16].copy_from_slice(&self.remote_id);
        params[16] = self.hash.code();
        let header =
            Header { kind: FileKind::RemoteManifest, version: MANIFEST_VERSION, page_size: 0, block_log2: 0, params };
        let mut b = Vec::with_capacity(COUNTS_END + self.packs.len() * PACK_REF_LEN + 64);
        b.extend_from_slice(&header.encode());
        b.extend_from_slice(&self.generation.to_le_bytes());
        b.extend_from_slice(&self.grace_ms.to_le_bytes());
        for n in [self.packs.len(), self.tombstones.len(), self.refs.len(), self.commits.len()] {
            b.extend_from_slice(&(n as u32).to_le_bytes());
        }
        for p in &self.packs {
            put_pack_ref(&mut b, p);
        }
        for t in &self.tombstones {
            put_pack_ref(&mut b, &t.pack);
            b.extend_from_slice(&t.since_ms.to_le_bytes());
        }
        for (name, id) in &self.refs {
            b.push(name.len() as u8);
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(id.as_bytes());
        }
        for n in &self.commits {
            b.extend_from_slice(&n.to_le_bytes());
        }
        let sum = checksum(&b, 0);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes a manifest read from `at` (for messages), checking every
    /// rule of FORMAT.md.
    pub fn decode(b: &[u8], at: &str) -> Result<Manifest> {
        let bad = |what: &str| Error::corrupt(format!("{at}: {what}; the manifest is damaged"));
        if b.len() as u64 > MANIFEST_MAX_LEN {
            return Err(bad("it is longer than 256 MiB"));
        }
        let header = Header::decode(b, FileKind::RemoteManifest, MANIFEST_VERSION).map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument => bad("not a manifest"),
            _ => e.with_context(at),
        })?;
        let body_end = b.len().checked_sub(8).filter(|e| *e >= COUNTS_END).ok_or_else(|| bad("truncated"))?;
        let stored = u64_at(b, body_end).ok_or_else(|| bad("truncated"))?;
        if checksum(b.get(..body_end).unwrap_or_default(), 0) != stored {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("{at}: manifest checksum mismatch; the manifest is damaged"),
            ));
        }
        let mut remote_id = [0u8; 16];
        remote_id.copy_from_slice(header.params.get(..16).unwrap_or(&[0; 16]));
        let hash =
            HashKind::from_code(header.params.get(16).copied().unwrap_or(0)).ok_or_else(|| bad("unknown hash"))?;
        let word = |at: usize| u32_at(b, at).unwrap_or(0) as usize;
        let (n_packs, n_tombs, n_refs, n_commits) = (word(80), word(84), word(88), word(92));
        let mut m = Manifest::new(remote_id, hash, u64_at(b, 72).unwrap_or(0));
        m.generation = u64_at(b, 64).unwrap_or(0);
        let mut at_byte = COUNTS_END;
        // Every count is checked against the bytes that remain before
        // anything is allocated for it.
        let room = |at_byte: usize, n: usize, width: usize| {
            n.checked_mul(width).and_then(|len| at_byte.checked_add(len)).filter(|end| *end <= body_end)
        };
        let end = room(at_byte, n_packs, PACK_REF_LEN).ok_or_else(|| bad("pack list runs past the end"))?;
        m.packs.reserve(n_packs);
        while at_byte < end {
            m.packs.push(pack_ref_at(b, at_byte).ok_or_else(|| bad("truncated"))?);
            at_byte += PACK_REF_LEN;
        }
        let end = room(at_byte, n_tombs, TOMBSTONE_LEN).ok_or_else(|| bad("tombstone list runs past the end"))?;
        m.tombstones.reserve(n_tombs);
        while at_byte < end {
            let pack = pack_ref_at(b, at_byte).ok_or_else(|| bad("truncated"))?;
            let since_ms = u64_at(b, at_byte + PACK_REF_LEN).ok_or_else(|| bad("truncated"))? as i64;
            m.tombstones.push(Tombstone { pack, since_ms });
            at_byte += TOMBSTONE_LEN;
        }
        room(at_byte, n_refs, 2 + hash.id_len()).ok_or_else(|| bad("ref list runs past the end"))?;
        for _ in 0..n_refs {
            let len = b.get(at_byte).copied().ok_or_else(|| bad("truncated"))? as usize;
            let name = b.get(at_byte + 1..at_byte + 1 + len).ok_or_else(|| bad("truncated"))?;
            let name = std::str::from_utf8(name).map_err(|_| bad("a ref name is not UTF-8"))?;
            check_ref_name(name).map_err(|_| bad("a ref name is invalid"))?;
            let id_at = at_byte + 1 + len;
            let id = b.get(id_at..id_at + hash.id_len()).ok_or_else(|| bad("truncated"))?;
            let id = ObjectId::from_bytes(hash, id).map_err(|_| bad("truncated"))?;
            if m.refs.last_key_value().is_some_and(|(last, _)| last.as_str() >= name) {
                return Err(bad("refs are not in order"));
            }
            m.refs.insert(name.to_string(), id);
            at_byte = id_at + hash.id_len();
        }
        if n_commits > MAX_COMMITS {
            return Err(bad("too many commit nonces"));
        }
        let end = room(at_byte, n_commits, 8).ok_or_else(|| bad("commit list runs past the end"))?;
        while at_byte < end {
            m.commits.push(u64_at(b, at_byte).ok_or_else(|| bad("truncated"))?);
            at_byte += 8;
        }
        if at_byte != body_end {
            return Err(bad("bytes follow the last list"));
        }
        let mut seen = std::collections::HashSet::new();
        for p in m.packs.iter().chain(m.tombstones.iter().map(|t| &t.pack)) {
            if !seen.insert(p.id) {
                return Err(bad(&format!("pack {} is named twice", p.id)));
            }
            if p.len < HEADER_LEN as u64 {
                return Err(bad(&format!("pack {} is shorter than a header", p.id)));
            }
            if p.len > PACK_MAX_LEN {
                return Err(bad(&format!("pack {} is longer than 1 GiB", p.id)));
            }
            if p.records > (p.len - HEADER_LEN as u64) / RECORD_HEADER_LEN as u64 {
                return Err(bad(&format!("pack {} holds more records than fit in it", p.id)));
            }
            if p.index_len != index_len(hash, p.records) {
                return Err(bad(&format!("the index length of pack {} does not fit its record count", p.id)));
            }
        }
        Ok(m)
    }

    /// The live or tombstoned pack `id`, and whether it is live.
    pub fn find(&self, id: &PackId) -> Option<(PackRef, bool)> {
        if let Some(p) = self.packs.iter().find(|p| p.id == *id) {
            return Some((*p, true));
        }
        self.tombstones.iter().find(|t| t.pack.id == *id).map(|t| (t.pack, false))
    }
}

/// A ref name: 1 to 255 bytes of printable ASCII other than space.
pub fn check_ref_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_REF_NAME || !name.bytes().all(|c| c.is_ascii_graphic()) {
        return Err(Error::invalid(format!(
            "{name:?} is not a ref name: use 1 to {MAX_REF_NAME} printable ASCII characters without spaces"
        )));
    }
    Ok(())
}

fn put_pack_ref(b: &mut Vec<u8>, p: &PackRef) {
    b.extend_from_slice(&p.id.0);
    b.extend_from_slice(&p.len.to_le_bytes());
    b.extend_from_slice(&p.index_len.to_le_bytes());
    b.extend_from_slice(&p.records.to_le_bytes());
}

fn pack_ref_at(b: &[u8], at: usize) -> Option<PackRef> {
    let mut id = [0u8; 32];
    id.copy_from_slice(b.get(at..at + 32)?);
    Some(PackRef {
        id: PackId(id),
        len: u64_at(b, at + 32)?,
        index_len: u64_at(b, at + 40)?,
        records: u64_at(b, at + 48)?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest::new([7; 16], HashKind::Blake3, 60_000);
        m.generation = 9;
        m.packs.push(PackRef { id: PackId([1; 32]), len: 1000, index_len: 272, records: 3 });
        m.tombstones.push(Tombstone {
            pack: PackRef { id: PackId([2; 32]), len: 64, index_len: 104, records: 0 },
            since_ms: 123,
        });
        m.refs.insert("latest".into(), HashKind::Blake3.hash(b"x"));
        m.remember(42);
        m
    }

    /// Only the spelling bale writes names a pack: a key in upper case
    /// used to be read as the pack of the lower-case key, so that gc could
    /// take an old key of another spelling for a new pack's.
    #[test]
    fn a_pack_key_spelt_in_upper_case_never_names_a_pack() {
        let id = PackId([0xab; 32]);
        assert_eq!(PackId::from_hex(&id.to_hex()), Some(id));
        assert_eq!(PackId::from_hex(&id.to_hex().to_uppercase()), None);
        assert_eq!(PackId::from_hex(&format!("A{}", &id.to_hex()[1..])), None);
    }

    #[test]
    fn round_trips() {
        let m = sample();
        assert_eq!(Manifest::decode(&m.encode(), "t").unwrap(), m);
        let empty = Manifest::new([0; 16], HashKind::Sha1, 0);
        assert_eq!(Manifest::decode(&empty.encode(), "t").unwrap(), empty);
    }

    #[test]
    fn every_truncation_and_flip_is_a_typed_error() {
        let b = sample().encode();
        for n in 0..b.len() {
            let e = Manifest::decode(&b[..n], "t").unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::NotABaleFile | ErrorKind::ChecksumMismatch),
                "{n}: {e}"
            );
        }
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(Manifest::decode(&c, "t").is_err(), "flip at {i} went unnoticed");
        }
    }

    #[test]
    fn hostile_counts_are_refused_before_allocating() {
        let mut b = sample().encode();
        b[80..84].copy_from_slice(&u32::MAX.to_le_bytes());
        reseal(&mut b);
        assert_eq!(Manifest::decode(&b, "t").unwrap_err().kind(), ErrorKind::Corrupt);
    }

    /// Reseals a manifest whose bytes a test changed.
    fn reseal(b: &mut [u8]) {
        let n = b.len() - 8;
        let sum = checksum(&b[..n], 0);
        b[n..].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn pack_lengths_must_be_bounded_and_consistent() {
        type Change = fn(&mut PackRef);
        let cases: [(&str, Change); 4] = [
            ("longer than 1 GiB", |p| p.len = PACK_MAX_LEN + 1),
            ("more records than fit", |p| {
                p.records = 15;
                p.index_len = index_len(HashKind::Blake3, 15);
            }),
            ("index length", |p| p.index_len += 1),
            ("records than fit", |p| {
                p.records = u64::MAX;
                p.index_len = u64::MAX;
            }),
        ];
        for (why, change) in cases {
            let mut m = sample();
            change(&mut m.packs[0]);
            let e = Manifest::decode(&m.encode(), "t").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{why}: {e}");
            assert!(e.to_string().contains(why.split(' ').next_back().unwrap()), "{why}: {e}");
        }
        let mut m = sample();
        m.packs[0].len = PACK_MAX_LEN;
        assert_eq!(Manifest::decode(&m.encode(), "t").unwrap(), m);
    }

    #[test]
    fn a_manifest_past_the_limit_is_refused() {
        let mut b = sample().encode();
        let tail = b.split_off(b.len() - 8);
        b.resize(MANIFEST_MAX_LEN as usize + 1 - tail.len(), 0);
        b.extend_from_slice(&tail);
        reseal(&mut b);
        let e = Manifest::decode(&b, "t").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.to_string().contains("longer than 256 MiB"), "{e}");
    }

    #[test]
    fn commits_are_bounded() {
        let mut m = sample();
        for n in 0..(MAX_COMMITS as u64 + 10) {
            m.remember(n);
        }
        assert_eq!(m.commits.len(), MAX_COMMITS);
        assert_eq!(m.commits.last(), Some(&(MAX_COMMITS as u64 + 9)));
        assert_eq!(Manifest::decode(&m.encode(), "t").unwrap(), m);
    }
}
