//! The two meta pages (pages 1 and 2): the root of each commit. A commit
//! writes the slot its transaction id selects; open takes the valid slot
//! with the higher id (FORMAT.md, "Meta pages").
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::page::{KIND_META, PAGE_HDR, seal, verify, write_header};
use crate::error::{Error, Result};
use crate::format::bytes::{put_u64, u64_at};

/// Page number of meta slot `txn % 2`.
pub fn meta_page(txn: u64) -> u64 {
    1 + (txn & 1)
}

/// Pages every store has before its first tree page: header and two metas.
pub const FIRST_DATA_PAGE: u64 = 3;

/// Transaction ids stay below this: pins lock byte `2^62 + t` at signed
/// 64-bit offsets, and `t + 1` must never overflow.
pub const MAX_TXN: u64 = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meta {
    pub txn: u64,
    /// Root page of the tree; 0 for an empty tree.
    pub root: u64,
    /// Levels of the tree: 0 empty, 1 a single leaf.
    pub depth: u8,
    pub entries: u64,
    /// Pages 0..page_count exist; later bytes of the file are ignored.
    pub page_count: u64,
    /// First page of the free-list chain; 0 when nothing is free.
    pub free_head: u64,
    /// Pages in the free-list chain.
    pub free_pages: u64,
    /// Every commit up to this id is durable (its meta was synced), so the
    /// pages it freed may be reused. Equal to `txn` for a durable commit.
    pub durable_upto: u64,
}

impl Meta {
    #[allow(clippy::indexing_slicing)]
    pub fn encode(&self, page_size: usize) -> Vec<u8> {
        let mut p = vec![0u8; page_size];
        write_header(&mut p, KIND_META, 0, 0, self.txn);
        put_u64(&mut p, PAGE_HDR, self.root);
        put_u64(&mut p, PAGE_HDR + 8, self.entries);
        put_u64(&mut p, PAGE_HDR + 16, self.page_count);
        put_u64(&mut p, PAGE_HDR + 24, self.free_head);
        put_u64(&mut p, PAGE_HDR + 32, self.free_pages);
        p[PAGE_HDR + 40] = self.depth;
        put_u64(&mut p, PAGE_HDR + 48, self.durable_upto);
        seal(&mut p, meta_page(self.txn));
        p
    }

    /// Decodes a meta page read from `page_no`, checking its checksum and
    /// that its fields are consistent with each other.
    pub fn decode(p: &[u8], page_no: u64) -> Result<Meta> {
        verify(p, page_no, KIND_META)?;
        let f = |off: usize| u64_at(p, off).ok_or_else(|| Error::corrupt_page(page_no, "meta page too short"));
        let m = Meta {
            txn: f(8)?,
            root: f(PAGE_HDR)?,
            entries: f(PAGE_HDR + 8)?,
            page_count: f(PAGE_HDR + 16)?,
            free_head: f(PAGE_HDR + 24)?,
            free_pages: f(PAGE_HDR + 32)?,
            depth: p.get(PAGE_HDR + 40).copied().unwrap_or(0),
            durable_upto: f(PAGE_HDR + 48)?,
        };
        let bad = |what: &str| Err(Error::corrupt_page(page_no, format!("meta: {what}")));
        if meta_page(m.txn) != page_no {
            return bad("transaction id does not match its slot");
        }
        if m.txn >= MAX_TXN {
            return bad("impossible transaction id");
        }
        // The file's size in bytes must be a signed 64-bit offset.
        let bytes = m.page_count.checked_mul(p.len() as u64).filter(|b| *b <= i64::MAX as u64);
        if m.page_count < FIRST_DATA_PAGE || m.page_count > (1u64 << 48) || bytes.is_none() {
            return bad("impossible page count");
        }
        let in_file = |pg: u64| pg >= FIRST_DATA_PAGE && pg < m.page_count;
        if (m.root == 0) != (m.depth == 0) || (m.root != 0 && !in_file(m.root)) {
            return bad("root page out of range");
        }
        // A leaf cell takes at least 7 bytes (header and slot).
        let most_entries = m.page_count.saturating_mul(p.len() as u64 / 7);
        if m.depth as usize > super::page::MAX_DEPTH || (m.root == 0 && m.entries != 0) || m.entries > most_entries {
            return bad("impossible depth or entry count");
        }
        if m.durable_upto > m.txn {
            return bad("durable id past the commit id");
        }
        if (m.free_head == 0) != (m.free_pages == 0)
            || (m.free_head != 0 && !in_file(m.free_head))
            || m.free_pages > m.page_count - FIRST_DATA_PAGE
        {
            return bad("free list out of range");
        }
        Ok(m)
    }
}

/// What one meta slot holds, as `check` and `stat` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotState {
    /// A valid meta.
    Valid(Meta),
    /// Every byte zero: the second slot of a store that never committed.
    Blank,
    /// Damaged or inconsistent. `claimed_txn` is the transaction id field
    /// read without trusting it (it may itself be damaged).
    Invalid { reason: String, claimed_txn: u64, checksum_failed: bool },
}

/// Decodes slot `page_no` (1 or 2) from its page bytes.
pub fn slot_state(p: &[u8], page_no: u64) -> SlotState {
    match Meta::decode(p, page_no) {
        Ok(m) => SlotState::Valid(m),
        Err(_) if p.iter().all(|b| *b == 0) => SlotState::Blank,
        Err(e) => SlotState::Invalid {
            reason: e.message().to_string(),
            claimed_txn: u64_at(p, 8).unwrap_or(0),
            checksum_failed: e.kind() == crate::error::ErrorKind::ChecksumMismatch,
        },
    }
}

/// A slot that is not valid and not the expected blank slot of a store at
/// commit 0, described for `check`; `None` when the slot is fine.
pub fn slot_problem(state: &SlotState, page_no: u64, in_use: &Meta) -> Option<String> {
    match state {
        SlotState::Valid(_) => None,
        SlotState::Blank if in_use.txn == 0 => None,
        SlotState::Blank => Some(format!(
            "meta slot {page_no} is blank though the store is at commit {}; the file is damaged",
            in_use.txn
        )),
        SlotState::Invalid { reason, claimed_txn, .. } => {
            let mut msg = format!(
                "meta slot {page_no} is invalid ({reason}); the store is at commit {} from slot {}",
                in_use.txn,
                meta_page(in_use.txn)
            );
            // A torn or damaged newer commit names a later id in its own slot.
            if *claimed_txn > in_use.txn && *claimed_txn < MAX_TXN && meta_page(*claimed_txn) == page_no {
                msg.push_str(&format!(
                    "; the slot names commit {claimed_txn}, which was lost (a crash while it was written, or damage since)"
                ));
            }
            Some(msg)
        }
    }
}
