//! Any bytes as the object store's decoded structures: a pack record
//! (header and payload), a chunk list, an index entry and a config. Each is
//! tried as given and resealed (magic and checksums recomputed), so that
//! mutations also reach the field checks and LZ4 behind the checksums.
#![no_main]

use bale::format::checksum::checksum;
use bale::format::header::{FileKind, Header};
use bale::objects::chunk_list::decode_list;
use bale::objects::config::{CONFIG_LEN, Config};
use bale::objects::entry::Entry;
use bale::objects::hash::HashKind;
use bale::objects::record::{RECORD_HEADER_LEN, RECORD_MAGIC, RecordHeader, RecordKind};
use libfuzzer_sys::fuzz_target;

/// A record with the fuzzer's fields and valid magic and checksums.
fn sealed_record(data: &[u8]) -> Option<Vec<u8>> {
    let mut b = data.to_vec();
    if b.len() < RECORD_HEADER_LEN {
        return None;
    }
    b[0..4].copy_from_slice(&RECORD_MAGIC);
    let payload = checksum(&b[RECORD_HEADER_LEN..], 0);
    b[48..56].copy_from_slice(&payload.to_le_bytes());
    let head = checksum(&b[0..56], 0);
    b[56..64].copy_from_slice(&head.to_le_bytes());
    Some(b)
}

fn record(b: &[u8]) {
    for id_len in [32, 20] {
        let Ok(h) = RecordHeader::decode(b, id_len, 0) else { continue };
        let stored = b.get(RECORD_HEADER_LEN..).unwrap_or(&[]);
        let cut = stored.get(..h.stored_len as usize).unwrap_or(stored);
        if let Ok(raw) = h.decode_payload(cut, 0)
            && matches!(h.kind, RecordKind::List | RecordKind::Root)
        {
            let _ = decode_list(&raw, id_len, h.level);
        }
    }
}

/// A config with the fuzzer's parameter bytes and a valid header and sum.
fn sealed_config(data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; CONFIG_LEN];
    let h = Header { kind: FileKind::ObjectConfig, version: 1, page_size: 0, block_log2: 0, params: [0; 32] };
    b[..64].copy_from_slice(&h.encode());
    let n = data.len().min(CONFIG_LEN - 64);
    b[64..64 + n].copy_from_slice(&data[..n]);
    let sum = checksum(&b[64..120], 0);
    b[120..128].copy_from_slice(&sum.to_le_bytes());
    b
}

fuzz_target!(|data: &[u8]| {
    record(data);
    if let Some(b) = sealed_record(data) {
        record(&b);
    }
    for id_len in [32, 20] {
        for level in [0, 1, 12] {
            let _ = decode_list(data, id_len, level);
        }
    }
    let id = HashKind::Blake3.hash(b"fuzz");
    let _ = Entry::decode(data, &id);
    let _ = Entry::decode(data.get(..32).unwrap_or(data), &id);
    let _ = Config::decode(data);
    let _ = Config::decode(&sealed_config(data));
});
