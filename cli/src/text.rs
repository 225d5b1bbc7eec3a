//! Turning command-line text into key bytes and key bytes back into text.

use std::ffi::OsStr;
use std::fmt::Write as _;

use crate::fail::Failure;

/// Bytes as printable text: valid UTF-8 stays as it is, except that
/// backslash, tab, CR, LF and other control characters are escaped; bytes
/// that are not UTF-8 print as `\xNN`. One entry always fits on one line.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x80 && c.is_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if c.is_control() => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Decodes hex digits (either case); an empty string is the empty key.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes().chunks_exact(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// A key given on the command line: its raw bytes, or with `hex` the bytes
/// its hex digits spell.
pub fn key_arg(arg: &OsStr, hex: bool) -> Result<Vec<u8>, Failure> {
    if !hex {
        return Ok(arg.as_encoded_bytes().to_vec());
    }
    let text = arg.to_str().unwrap_or("");
    from_hex(text).ok_or_else(|| {
        Failure::usage(format!("--hex: {:?} is not an even number of hex digits", arg.to_string_lossy()))
    })
}

/// A key for printing: hex with `hex`, escaped text otherwise.
pub fn show_key(key: &[u8], hex: bool) -> String {
    if hex { to_hex(key) } else { escape(key) }
}

/// A byte count for people: `12.3 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A count with thousands separators: `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_invalid_bytes() {
        assert_eq!(escape(b"plain/key"), "plain/key");
        assert_eq!(escape(b"a\tb\nc\\d"), "a\\tb\\nc\\\\d");
        assert_eq!(escape(b"\x00\xff\xfe"), "\\x00\\xff\\xfe");
        assert_eq!(escape("h\u{e9}llo".as_bytes()), "h\u{e9}llo");
        assert_eq!(escape(b"ok\xc3"), "ok\\xc3");
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(to_hex(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(from_hex("00ABff"), Some(vec![0, 0xab, 0xff]));
        assert_eq!(from_hex(""), Some(vec![]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    }
}
