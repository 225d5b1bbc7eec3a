//! The 64-byte header every bale file starts with (FORMAT.md, "File header").

use super::bytes::{u16_at, u32_at, u64_at};
use super::checksum::checksum;
use crate::error::{Error, ErrorKind, Result};

/// `\x89BALE\r\n\x1a`: the high byte catches 7-bit transfers, CR LF and
/// Ctrl-Z catch text-mode conversions (the PNG trick).
pub const MAGIC: [u8; 8] = [0x89, b'B', b'A', b'L', b'E', b'\r', b'\n', 0x1a];
pub const HEADER_LEN: usize = 64;

/// The kinds of file bale writes, as their four ASCII bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Tree,
    /// An object store's config file.
    ObjectConfig,
    /// An object store's pack or staging file.
    Pack,
    /// An immutable sorted table.
    Bitable,
    /// A remote's manifest (the one mutable object in its bucket).
    RemoteManifest,
    /// The index of one pack in a remote.
    RemoteIndex,
}

impl FileKind {
    pub fn tag(self) -> [u8; 4] {
        match self {
            FileKind::Tree => *b"TREE",
            FileKind::ObjectConfig => *b"OBJS",
            FileKind::Pack => *b"PACK",
            FileKind::Bitable => *b"BTBL",
            FileKind::RemoteManifest => *b"RMAN",
            FileKind::RemoteIndex => *b"RIDX",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileKind::Tree => "tree store",
            FileKind::ObjectConfig => "object store config",
            FileKind::Pack => "object store pack",
            FileKind::Bitable => "bitable",
            FileKind::RemoteManifest => "remote manifest",
            FileKind::RemoteIndex => "remote pack index",
        }
    }

    fn from_tag(tag: [u8; 4]) -> Option<FileKind> {
        match &tag {
            b"TREE" => Some(FileKind::Tree),
            b"OBJS" => Some(FileKind::ObjectConfig),
            b"PACK" => Some(FileKind::Pack),
            b"BTBL" => Some(FileKind::Bitable),
            b"RMAN" => Some(FileKind::RemoteManifest),
            b"RIDX" => Some(FileKind::RemoteIndex),
            _ => None,
        }
    }
}

/// The decoded header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: FileKind,
    pub version: u16,
    /// Kind-specific parameters: for the tree store, the page size and the
    /// log2 of the value block size.
    pub page_size: u32,
    pub block_log2: u8,
    /// Bytes 24..56, kind-specific (zero in a tree store).
    pub params: [u8; 32],
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.kind.tag());
        b[12..14].copy_from_slice(&self.version.to_le_bytes());
        b[16..20].copy_from_slice(&self.page_size.to_le_bytes());
        b[20] = self.block_log2;
        b[24..56].copy_from_slice(&self.params);
        let sum = checksum(&b[0..56], 0);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes and validates the header: magic, checksum, kind and version.
    /// `supported` is the highest version this build reads.
    pub fn decode(b: &[u8], want: FileKind, supported: u16) -> Result<Header> {
        let not_bale =
            || Error::new(ErrorKind::NotABaleFile, "not a bale file (bad magic); check the path".to_string());
        if b.len() < 8 || b[0..8] != MAGIC {
            return Err(not_bale());
        }
        if b.len() < HEADER_LEN {
            return Err(Error::corrupt("file header is truncated; the file is damaged"));
        }
        let stored = u64_at(b, 56).ok_or_else(not_bale)?;
        if checksum(&b[0..56], 0) != stored {
            return Err(Error::new(ErrorKind::ChecksumMismatch, "file header checksum mismatch; the file is damaged"));
        }
        let mut tag = [0u8; 4];
        tag.copy_from_slice(&b[8..12]);
        let kind = FileKind::from_tag(tag).ok_or_else(|| {
            Error::new(
                ErrorKind::UnsupportedVersion,
                format!("unknown bale file kind {:?}; a newer bale may read it", String::from_utf8_lossy(&tag)),
            )
        })?;
        if kind != want {
            return Err(Error::invalid(format!("this is a bale {} file, not a {}", kind.name(), want.name())));
        }
        let version = u16_at(b, 12).unwrap_or(0);
        if version == 0 || version > supported {
            return Err(Error::new(
                ErrorKind::UnsupportedVersion,
                format!(
                    "{} format version {version} is not supported (this build reads 1..={supported}); upgrade bale",
                    kind.name()
                ),
            ));
        }
        let mut params = [0u8; 32];
        params.copy_from_slice(&b[24..56]);
        Ok(Header { kind, version, page_size: u32_at(b, 16).unwrap_or(0), block_log2: b[20], params })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejections() {
        let h = Header { kind: FileKind::Tree, version: 1, page_size: 4096, block_log2: 16, params: [0; 32] };
        let b = h.encode();
        assert_eq!(Header::decode(&b, FileKind::Tree, 1).unwrap(), h);
        let mut bad = b;
        bad[0] = b'x';
        assert_eq!(Header::decode(&bad, FileKind::Tree, 1).unwrap_err().kind(), ErrorKind::NotABaleFile);
        let mut bad = b;
        bad[17] ^= 1;
        assert_eq!(Header::decode(&bad, FileKind::Tree, 1).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
        let future = Header { version: 9, ..h }.encode();
        assert_eq!(Header::decode(&future, FileKind::Tree, 1).unwrap_err().kind(), ErrorKind::UnsupportedVersion);
    }
}
