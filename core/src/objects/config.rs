//! The object store's config: fixed at creation, 128 bytes (FORMAT.md,
//! "Object store config").

use super::hash::HashKind;
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::format::checksum::checksum;
use crate::format::header::{FileKind, HEADER_LEN, Header};

/// Object store format version this build writes and reads.
pub const OBJECTS_VERSION: u16 = 1;
/// Length of the config file (and of the config value of a single-file store).
pub const CONFIG_LEN: usize = 128;

/// Largest chunk a store may be configured with (and so the largest blob
/// record): FastCDC's own upper bound.
pub const MAX_CHUNK: u32 = 16 << 20;
/// Most entries one chunk list may hold.
pub const MAX_FANOUT: u32 = 1 << 16;

/// Whether records are LZ4-compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Never compress.
    Never,
    /// Compress when a cheap probe says it pays, keep only if smaller.
    Auto,
    /// Compress every record, keep only if smaller.
    Always,
}

impl Compression {
    pub fn code(self) -> u8 {
        match self {
            Compression::Never => 0,
            Compression::Auto => 1,
            Compression::Always => 2,
        }
    }

    pub fn from_code(c: u8) -> Option<Compression> {
        [Compression::Never, Compression::Auto, Compression::Always].into_iter().find(|x| x.code() == c)
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Never => "never",
            Compression::Auto => "auto",
            Compression::Always => "always",
        }
    }

    pub fn from_name(s: &str) -> Result<Compression> {
        [Compression::Never, Compression::Auto, Compression::Always]
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| Error::invalid(format!("unknown compression {s:?}; use never, auto or always")))
    }
}

/// Everything fixed when a store is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub hash: HashKind,
    pub compression: Compression,
    /// FastCDC minimum, average and maximum chunk sizes. Objects of at most
    /// `chunk_max` bytes are stored whole; larger ones are chunked.
    pub chunk_min: u32,
    pub chunk_avg: u32,
    pub chunk_max: u32,
    /// A pack is closed and the next one started past this size.
    pub pack_target: u64,
    /// Names the store so that packs of another store are refused. Chosen
    /// at random on creation when left zero.
    pub store_id: [u8; 16],
    /// Most entries in one chunk list.
    pub fanout: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            hash: HashKind::Blake3,
            compression: Compression::Auto,
            chunk_min: 16 << 10,
            chunk_avg: 64 << 10,
            chunk_max: 256 << 10,
            pack_target: 1 << 30,
            store_id: [0; 16],
            fanout: 4096,
        }
    }
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("object store config: {what}; the store is damaged"))
}

impl Config {
    /// Checks the parameters a caller chose (and a decoded file's).
    pub fn validate(&self) -> Result<()> {
        let (min, avg, max) = (self.chunk_min, self.chunk_avg, self.chunk_max);
        let ok = (64..=1 << 20).contains(&min)
            && (256..=4 << 20).contains(&avg)
            && (1024..=MAX_CHUNK).contains(&max)
            && min <= avg
            && avg <= max
            && min % 2 == 0
            && avg % 2 == 0
            && max % 2 == 0;
        if !ok {
            return Err(Error::invalid(format!(
                "chunk sizes {min}/{avg}/{max} are out of range: need even sizes with 64 ≤ min ≤ 1 MiB, \
                 256 ≤ avg ≤ 4 MiB, 1 KiB ≤ max ≤ 16 MiB and min ≤ avg ≤ max"
            )));
        }
        if !(16..=MAX_FANOUT).contains(&self.fanout) {
            return Err(Error::invalid(format!("chunk-list fanout {} must be 16 to {MAX_FANOUT}", self.fanout)));
        }
        if self.pack_target < 1 << 20 || self.pack_target > 1 << 40 {
            return Err(Error::invalid(format!("pack target {} must be 1 MiB to 1 TiB", self.pack_target)));
        }
        Ok(())
    }

    pub fn encode(&self) -> [u8; CONFIG_LEN] {
        let h = Header {
            kind: FileKind::ObjectConfig,
            version: OBJECTS_VERSION,
            page_size: 0,
            block_log2: 0,
            params: [0; 32],
        };
        let mut b = [0u8; CONFIG_LEN];
        b[..HEADER_LEN].copy_from_slice(&h.encode());
        b[64] = self.hash.code();
        b[65] = self.compression.code();
        put_u32(&mut b, 68, self.chunk_min);
        put_u32(&mut b, 72, self.chunk_avg);
        put_u32(&mut b, 76, self.chunk_max);
        put_u64(&mut b, 80, self.pack_target);
        b[88..104].copy_from_slice(&self.store_id);
        put_u32(&mut b, 104, self.fanout);
        let sum = checksum(&b[64..120], 0);
        put_u64(&mut b, 120, sum);
        b
    }

    pub fn decode(b: &[u8]) -> Result<Config> {
        Header::decode(b, FileKind::ObjectConfig, OBJECTS_VERSION).map_err(wrong_kind)?;
        if b.len() != CONFIG_LEN {
            return Err(corrupt(format!("{} bytes instead of {CONFIG_LEN}", b.len())));
        }
        let stored = u64_at(b, 120).unwrap_or(0);
        if checksum(&b[64..120], 0) != stored {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                "object store config checksum mismatch; the store is damaged",
            ));
        }
        let hash = HashKind::from_code(b[64]).ok_or_else(|| corrupt(format!("unknown hash kind {}", b[64])))?;
        let compression =
            Compression::from_code(b[65]).ok_or_else(|| corrupt(format!("unknown compression policy {}", b[65])))?;
        let mut store_id = [0u8; 16];
        store_id.copy_from_slice(&b[88..104]);
        let c = Config {
            hash,
            compression,
            chunk_min: u32_at(b, 68).unwrap_or(0),
            chunk_avg: u32_at(b, 72).unwrap_or(0),
            chunk_max: u32_at(b, 76).unwrap_or(0),
            pack_target: u64_at(b, 80).unwrap_or(0),
            store_id,
            fanout: u32_at(b, 104).unwrap_or(0),
        };
        c.validate().map_err(|e| corrupt(e.message()))?;
        Ok(c)
    }
}

/// A bale file of another kind where a store file was expected is damage,
/// not a caller's mistake.
pub(crate) fn wrong_kind(e: Error) -> Error {
    if e.kind() == ErrorKind::InvalidArgument { Error::corrupt(e.message().to_string()) } else { e }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_damage() {
        let c = Config { store_id: [7; 16], hash: HashKind::Sha1, ..Config::default() };
        let b = c.encode();
        assert_eq!(Config::decode(&b).unwrap(), c);
        for i in 64..CONFIG_LEN {
            let mut bad = b;
            bad[i] ^= 0x10;
            assert_eq!(Config::decode(&bad).unwrap_err().kind(), ErrorKind::ChecksumMismatch, "byte {i}");
        }
        assert_eq!(Config::decode(&b[..100]).unwrap_err().kind(), ErrorKind::Corrupt);
        let mut odd = Config { chunk_min: 65, ..c };
        assert!(odd.validate().is_err());
        odd.chunk_min = 1 << 21;
        assert!(odd.validate().is_err());
    }
}
