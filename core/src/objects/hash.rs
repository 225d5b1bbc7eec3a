//! Object ids: the hash of an object's whole content, with the algorithm
//! fixed per store (FORMAT.md, "Object ids").

use std::fmt;

use sha1::Digest as _;

use crate::error::{Error, Result};

/// The longest id any hash kind produces.
pub const MAX_ID_LEN: usize = 32;

/// The hash algorithm a store names its objects with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashKind {
    Blake3,
    Sha256,
    Sha1,
}

impl HashKind {
    pub const ALL: [HashKind; 3] = [HashKind::Blake3, HashKind::Sha256, HashKind::Sha1];

    /// The byte that names this kind in the config and in records.
    pub fn code(self) -> u8 {
        match self {
            HashKind::Blake3 => 1,
            HashKind::Sha256 => 2,
            HashKind::Sha1 => 3,
        }
    }

    pub fn from_code(c: u8) -> Option<HashKind> {
        HashKind::ALL.into_iter().find(|k| k.code() == c)
    }

    pub fn name(self) -> &'static str {
        match self {
            HashKind::Blake3 => "blake3",
            HashKind::Sha256 => "sha256",
            HashKind::Sha1 => "sha1",
        }
    }

    pub fn from_name(s: &str) -> Result<HashKind> {
        HashKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| Error::invalid(format!("unknown hash {s:?}; use blake3, sha256 or sha1")))
    }

    /// Length of an id in bytes.
    pub fn id_len(self) -> usize {
        match self {
            HashKind::Blake3 | HashKind::Sha256 => 32,
            HashKind::Sha1 => 20,
        }
    }

    pub fn hasher(self) -> Hasher {
        match self {
            HashKind::Blake3 => Hasher::Blake3(Box::default()),
            HashKind::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            HashKind::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
        }
    }

    /// The id of `data`.
    pub fn hash(self, data: &[u8]) -> ObjectId {
        let mut h = self.hasher();
        h.update(data);
        h.finish()
    }

    /// The id of a chunk-list record's payload: the payload hashed after a
    /// fixed prefix, so a list can never share an id with content.
    pub fn list_id(self, payload: &[u8]) -> ObjectId {
        let mut h = self.hasher();
        h.update(LIST_DOMAIN);
        h.update(payload);
        h.finish()
    }
}

/// Prefix hashed before a chunk list's payload (FORMAT.md, "Chunk lists").
pub const LIST_DOMAIN: &[u8] = b"bale chunk list\0";

/// An incremental hash of one of the store's kinds.
pub enum Hasher {
    Blake3(Box<blake3::Hasher>),
    Sha256(sha2::Sha256),
    Sha1(sha1::Sha1),
}

impl Hasher {
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Blake3(h) => {
                h.update(data);
            }
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
        }
    }

    pub fn finish(self) -> ObjectId {
        match self {
            Hasher::Blake3(h) => ObjectId::from_slice(h.finalize().as_bytes()),
            Hasher::Sha256(h) => ObjectId::from_slice(&h.finalize()),
            Hasher::Sha1(h) => ObjectId::from_slice(&h.finalize()),
        }
    }
}

/// An object id: 20 or 32 bytes, shown as lower-case hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    len: u8,
    bytes: [u8; MAX_ID_LEN],
}

impl ObjectId {
    /// An id from raw bytes (at most 32; callers check the length).
    pub(crate) fn from_slice(b: &[u8]) -> ObjectId {
        let mut bytes = [0u8; MAX_ID_LEN];
        let n = b.len().min(MAX_ID_LEN);
        bytes[..n].copy_from_slice(&b[..n]);
        ObjectId { len: n as u8, bytes }
    }

    /// An id of `kind` from its raw bytes.
    pub fn from_bytes(kind: HashKind, b: &[u8]) -> Result<ObjectId> {
        if b.len() != kind.id_len() {
            return Err(Error::invalid(format!(
                "an object id of this store is {} bytes ({}), not {}",
                kind.id_len(),
                kind.name(),
                b.len()
            )));
        }
        Ok(ObjectId::from_slice(b))
    }

    /// Parses lower- or upper-case hex of the right length for `kind`.
    pub fn from_hex(kind: HashKind, s: &str) -> Result<ObjectId> {
        let bad = || {
            Error::invalid(format!(
                "{s:?} is not an object id: expected {} hex digits ({})",
                kind.id_len() * 2,
                kind.name()
            ))
        };
        if s.len() != kind.id_len() * 2 {
            return Err(bad());
        }
        let mut out = [0u8; MAX_ID_LEN];
        for (i, pair) in s.as_bytes().chunks(2).enumerate() {
            let hi = hex_val(pair[0]).ok_or_else(bad)?;
            let lo = hex_val(pair[1]).ok_or_else(bad)?;
            out[i] = hi << 4 | lo;
        }
        Ok(ObjectId { len: kind.id_len() as u8, bytes: out })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(self.len as usize * 2);
        for b in self.as_bytes() {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
        s
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(
            HashKind::Sha256.hash(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(HashKind::Sha1.hash(b"abc").to_hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            HashKind::Blake3.hash(b"").to_hex(),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn hex_roundtrip_and_rejections() {
        for k in HashKind::ALL {
            let id = k.hash(b"x");
            assert_eq!(ObjectId::from_hex(k, &id.to_hex()).unwrap(), id);
            assert_eq!(ObjectId::from_hex(k, &id.to_hex().to_uppercase()).unwrap(), id);
            assert!(ObjectId::from_hex(k, "zz").is_err());
            assert_ne!(k.list_id(b"x"), id);
        }
        let bad = "g".repeat(64);
        assert!(ObjectId::from_hex(HashKind::Blake3, &bad).is_err());
    }
}
