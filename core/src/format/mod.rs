//! Byte-level building blocks shared by every file kind: the file header,
//! checksums and little-endian field access. FORMAT.md is the normative text.

pub mod bytes;
pub mod checksum;
pub mod header;
