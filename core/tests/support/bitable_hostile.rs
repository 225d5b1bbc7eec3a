//! Hostile bitables: one leaf page, branch page, large-value reference,
//! block table or table meta changed so that its checksum holds again, so
//! the reader's and `check`'s structural rules are what must catch it
//! (counts out of range, keys and separators outside their page or out of
//! order, child ranges outside their level or backwards, wrong ordinals,
//! absurd value lengths and depths, blocks outside the value region, LZ4
//! blocks of the wrong length). Every variant breaks a rule `check`
//! verifies; none only changes data that the format cannot tell from
//! valid data.
#![allow(dead_code)]

use super::bitable_bytes::*;

/// One hostile variant: what was changed, and where the new bytes go.
pub struct Variant {
    pub what: String,
    pub offset: usize,
    pub bytes: Vec<u8>,
}

struct Out<'a> {
    b: &'a [u8],
    v: Vec<Variant>,
}

impl Out<'_> {
    /// Page `no` changed by `f` and resealed (dropped when `f` changed nothing).
    fn page(&mut self, s: &Shape, no: u64, what: String, f: impl FnOnce(&mut Vec<u8>)) {
        let orig = s.page(self.b, no);
        let mut p = orig.to_vec();
        f(&mut p);
        if p.as_slice() == orig {
            return;
        }
        seal_page(&mut p, no);
        self.v.push(Variant { what: format!("page {no}: {what}"), offset: no as usize * s.ps, bytes: p });
    }

    /// Page 0 changed by `f`, its table checksum recomputed.
    fn meta(&mut self, what: String, f: impl FnOnce(&mut Vec<u8>)) {
        let mut p = self.b[..HEADER_END].to_vec();
        f(&mut p);
        if p.as_slice() == &self.b[..HEADER_END] {
            return;
        }
        seal_meta(&mut p);
        self.v.push(Variant { what: format!("meta: {what}"), offset: 0, bytes: p });
    }
}

/// Every hostile variant of the table in `b`.
pub fn variants(b: &[u8]) -> Vec<Variant> {
    let s = Shape::of(b);
    let mut out = Out { b, v: Vec::new() };
    meta_variants(&mut out, &s);
    if s.leaves == 0 {
        return out.v;
    }
    let mut leaves = vec![1, s.leaves.div_ceil(2), s.leaves];
    leaves.dedup();
    for no in leaves {
        leaf_variants(&mut out, &s, no);
    }
    let mut branches = vec![s.leaves + 1, s.leaves + s.branches.div_ceil(2), s.leaves + s.branches];
    branches.retain(|&n| n > s.leaves && n <= s.leaves + s.branches);
    branches.dedup();
    for no in branches {
        branch_variants(&mut out, &s, no);
    }
    for r in large_refs(b, &s) {
        ref_variants(&mut out, &s, &r);
        table_variants(&mut out, &s, &r);
    }
    out.v
}

fn meta_variants(out: &mut Out<'_>, s: &Shape) {
    let bump = |at: usize, d: i64| {
        move |p: &mut Vec<u8>| {
            let v = u64_at(p, at).wrapping_add_signed(d);
            put_u64(p, at, v);
        }
    };
    for (what, at) in [("pairs", 64), ("key bytes", 144), ("value bytes", 152), ("longest key", 136)] {
        out.meta(format!("{what} + 1"), bump(at, 1));
        if u64_at(out.b, at) > 0 {
            out.meta(format!("{what} - 1"), bump(at, -1));
        }
    }
    out.meta("large values + 1".into(), bump(128, 1));
    if s.leaves >= 2 && s.branches >= 2 {
        // Root and value region where they were: only the split differs.
        out.meta("one leaf page more, one branch page less".into(), |p| {
            bump(72, 1)(p);
            bump(80, -1)(p);
        });
    }
    if s.depth >= 2 {
        out.meta("depth + 1".into(), |p| p[88] += 1);
        out.meta("depth - 1".into(), |p| p[88] -= 1);
    }
}

fn leaf_variants(out: &mut Out<'_>, s: &Shape, no: u64) {
    let ps = s.ps;
    let p = s.page(out.b, no);
    let n = u16_at(p, 2) as usize;
    let (off0, _) = slot(p, PAGE_HEADER, 0);
    let (offn, lenn) = slot(p, PAGE_HEADER, n - 1);
    let v0 = u16_at(p, off0 - 2);
    let mut counts = vec![0, n + 1, 0xFFFF, (ps - PAGE_HEADER - TRAILER) / SLOT];
    if n > 1 {
        counts.push(n - 1);
    }
    for c in counts {
        out.page(s, no, format!("count {c} (of {n})"), |q| put_u16(q, 2, c as u16));
    }
    for (what, key_off) in [("at the trailer", ps - TRAILER), ("at byte 0", 0), ("among the slots", PAGE_HEADER)] {
        out.page(s, no, format!("key 0 {what}"), |q| put_u16(q, PAGE_HEADER + 4, key_off as u16));
    }
    out.page(s, no, "key 0 of 65535 bytes".into(), |q| put_u16(q, PAGE_HEADER + 6, 0xFFFF));
    out.page(s, no, format!("key {} runs into the trailer", n - 1), |q| {
        put_u16(q, PAGE_HEADER + SLOT * (n - 1) + 6, (ps - TRAILER + 1 - offn) as u16)
    });
    let _ = lenn;
    out.page(s, no, "value 0 of 65534 bytes".into(), |q| put_u16(q, off0 - 2, 0xFFFE));
    if v0 != LARGE_MARK {
        out.page(s, no, "value 0 one byte longer".into(), |q| put_u16(q, off0 - 2, v0 + 1));
        if v0 > 0 {
            out.page(s, no, "value 0 one byte shorter".into(), |q| put_u16(q, off0 - 2, v0 - 1));
        }
        out.page(s, no, "inline value 0 marked large".into(), |q| put_u16(q, off0 - 2, LARGE_MARK));
    }
    let first = u64_at(p, 8);
    for (what, o) in [("+ 1", first.wrapping_add(1)), ("u64::MAX", u64::MAX), ("2^40", 1 << 40)] {
        out.page(s, no, format!("first ordinal {what}"), |q| put_u64(q, 8, o));
    }
    if first > 0 {
        out.page(s, no, "first ordinal - 1".into(), |q| put_u64(q, 8, first - 1));
    }
    if n >= 2 {
        out.page(s, no, "slots 0 and 1 swapped".into(), |q| {
            let (a, b) = (PAGE_HEADER, PAGE_HEADER + SLOT);
            let s0: Vec<u8> = q[a..b].to_vec();
            q.copy_within(b..b + SLOT, a);
            q[b..b + SLOT].copy_from_slice(&s0);
        });
        out.page(s, no, "slot 1 repeats slot 0".into(), |q| {
            q.copy_within(PAGE_HEADER..PAGE_HEADER + SLOT, PAGE_HEADER + SLOT)
        });
    }
    let prefix = u16_at(p, 4);
    out.page(s, no, "prefix length 65535".into(), |q| put_u16(q, 4, 0xFFFF));
    out.page(s, no, "prefix length + 1".into(), |q| put_u16(q, 4, prefix + 1));
    out.page(s, no, "head of slot 0 + 1".into(), |q| {
        let h = u32::from_le_bytes(q[PAGE_HEADER..PAGE_HEADER + 4].try_into().unwrap());
        put_u32(q, PAGE_HEADER, h.wrapping_add(1));
    });
    out.page(s, no, "kind branch of level 1".into(), |q| {
        q[0] = 2;
        q[1] = 1;
    });
    out.page(s, no, "kind 0".into(), |q| q[0] = 0);
    out.page(s, no, "level 1".into(), |q| q[1] = 1);
}

fn branch_variants(out: &mut Out<'_>, s: &Shape, no: u64) {
    let p = s.page(out.b, no);
    let c = u16_at(p, 2) as usize;
    let level = p[1];
    let mut counts = vec![0, c + 1, 0xFFFF];
    if c > 1 {
        counts.extend([1, c - 1]);
    }
    for n in counts {
        out.page(s, no, format!("count {n} (of {c})"), |q| put_u16(q, 2, n as u16));
    }
    let first = u64_at(p, 8);
    let other_level = if level == 1 { s.leaves + 1 } else { 1 };
    for (what, f) in [
        ("0", 0),
        ("u64::MAX", u64::MAX),
        ("past the last page", s.leaves + s.branches + 1),
        ("in another level", other_level),
        ("+ 1", first + 1),
        ("- 1", first.wrapping_sub(1)),
        ("this page", no),
    ] {
        out.page(s, no, format!("first child {what}"), |q| put_u64(q, 8, f));
    }
    let slots = branch_slots(p);
    if c >= 3 {
        out.page(s, no, "separators 1 and 2 swapped".into(), |q| {
            let s0: Vec<u8> = q[slots..slots + SLOT].to_vec();
            q.copy_within(slots + SLOT..slots + 2 * SLOT, slots);
            q[slots + SLOT..slots + 2 * SLOT].copy_from_slice(&s0);
        });
    }
    if c >= 2 {
        let ps = s.ps;
        for (what, at, v) in [
            ("separator 1 at the trailer", 4, (ps - TRAILER) as u16),
            ("separator 1 at byte 0", 4, 0),
            ("separator 1 among the ordinals", 4, PAGE_HEADER as u16),
            ("separator 1 of 65535 bytes", 6, 0xFFFF),
        ] {
            out.page(s, no, what.into(), |q| put_u16(q, slots + at, v));
        }
        let o1 = u64_at(p, PAGE_HEADER + 8);
        for (what, o) in [("u64::MAX", u64::MAX), ("that of child 0", u64_at(p, PAGE_HEADER)), ("+ 1", o1 + 1)] {
            out.page(s, no, format!("ordinal of child 1 {what}"), |q| put_u64(q, PAGE_HEADER + 8, o));
        }
        out.page(s, no, "head of separator 1 + 1".into(), |q| {
            let h = u32::from_le_bytes(q[slots..slots + 4].try_into().unwrap());
            put_u32(q, slots, h.wrapping_add(1));
        });
    }
    out.page(s, no, "ordinal of child 0 + 1".into(), |q| {
        let o = u64_at(q, PAGE_HEADER);
        put_u64(q, PAGE_HEADER, o + 1)
    });
    out.page(s, no, "ordinal of the last child 0".into(), |q| put_u64(q, PAGE_HEADER + 8 * (c - 1), 0));
    for l in [0, level + 1, 47, 255] {
        out.page(s, no, format!("level {l} (of {level})"), |q| q[1] = l);
    }
    out.page(s, no, "kind leaf".into(), |q| {
        q[0] = 1;
        q[1] = 0;
    });
    out.page(s, no, "prefix length 65535".into(), |q| put_u16(q, 4, 0xFFFF));
}

fn ref_variants(out: &mut Out<'_>, s: &Shape, r: &RefAt) {
    let at = r.at;
    let set = |len: u64, table: u64, depth: u8| {
        move |q: &mut Vec<u8>| {
            put_u64(q, at, len);
            put_u64(q, at + 8, table);
            q[at + 16] = depth;
        }
    };
    let (len, t, d) = (r.len, r.table, r.depth);
    let vr = s.values_len;
    for (what, f) in [
        ("length 0", set(0, t, d)),
        ("length 2^48", set(1 << 48, t, 2)),
        ("length 2^48 - 1 at depth 2", set((1 << 48) - 1, t, 2)),
        ("length 2^40 at depth 2", set(1 << 40, t, 2)),
        ("length 2^28 at depth 1", set(1 << 28, t, 1)),
        ("length 2^40 at depth 1", set(1 << 40, t, 1)),
        ("length + 1", set(len + 1, t, d)),
        ("length - 1", set(len - 1, t, d)),
        ("length + 64 KiB", set(len + BLOCK, t, d)),
        ("table at u64::MAX", set(len, u64::MAX, d)),
        ("table at the region's end", set(len, vr, d)),
        ("table 8 bytes before the region's end", set(len, vr - 8, d)),
        ("table one byte on", set(len, t + 1, d)),
        ("depth 0", set(len, t, 0)),
        ("depth 2", set(len, t, 2)),
        ("depth 255", set(len, t, 255)),
    ] {
        out.page(s, r.page, format!("large value reference: {what}"), f);
    }
}

/// A literal-only LZ4 block that decompresses to `n` bytes.
fn lz4_literals(n: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(n + n / 255 + 3);
    if n < 15 {
        b.push((n as u8) << 4);
    } else {
        b.push(0xF0);
        let mut rest = n - 15;
        while rest >= 255 {
            b.push(255);
            rest -= 255;
        }
        b.push(rest as u8);
    }
    b.extend((0..n).map(|i| (i * 7) as u8));
    b
}

fn table_variants(out: &mut Out<'_>, s: &Shape, r: &RefAt) {
    if r.depth != 1 {
        return;
    }
    let table_at = r.table_at(s);
    let orig = r.table_bytes(out.b, s).to_vec();
    let e0 = r.entry(out.b, s, 0);
    let raw0 = r.len.min(BLOCK) as usize;
    let vr = s.values_len;
    let mut push = |what: String, f: &dyn Fn(&mut Vec<u8>)| {
        let mut t = orig.clone();
        f(&mut t);
        seal_table(&mut t, r.table);
        out.v.push(Variant { what: format!("block table at {}: {what}", r.table), offset: table_at, bytes: t });
    };
    for (what, o) in [("u64::MAX", u64::MAX), ("the region's end", vr), ("10 bytes before the region's end", vr - 10)] {
        push(format!("block 0 at {what}"), &|t| put_u64(t, 0, o));
    }
    for (what, n) in [("4 GiB - 1", u32::MAX), ("128 KiB + 1", 2 * BLOCK as u32 + 1), ("0", 0), ("+ 1", e0.stored + 1)]
    {
        push(format!("block 0 stored length {what}"), &|t| put_u32(t, 8, n));
    }
    push("block 0 codec 7".into(), &|t| t[12] = 7);
    push(format!("block 0 codec {} (was {})", 1 - e0.codec, e0.codec), &|t| t[12] = 1 - e0.codec);
    push("block 0 checksum + 1".into(), &|t| {
        let v = u64_at(t, 16).wrapping_add(1);
        put_u64(t, 16, v)
    });
    // Blocks of the same bytes (a repeated pattern) would swap unseen.
    if r.blocks() >= 2 && r.entry(out.b, s, 1).stored != e0.stored {
        push("entries 0 and 1 swapped".into(), &|t| {
            let e: Vec<u8> = t[..ENTRY].to_vec();
            t.copy_within(ENTRY..2 * ENTRY, 0);
            t[ENTRY..2 * ENTRY].copy_from_slice(&e);
        });
    }
    // LZ4 blocks that decompress to fewer or more bytes than the block
    // holds, written over block 0 with an entry that matches them.
    for n in [4, raw0 - 1, raw0 + 1] {
        let block = lz4_literals(n);
        if e0.offset + block.len() as u64 > vr {
            continue;
        }
        let block_at = (s.values_offset + e0.offset) as usize;
        if block_at < table_at + orig.len() && table_at < block_at + block.len() {
            continue;
        }
        let mut t = orig.clone();
        put_u32(&mut t, 8, block.len() as u32);
        t[12] = 1;
        put_u64(&mut t, 16, block_sum(&block, e0.offset));
        seal_table(&mut t, r.table);
        // One patch over the block and the table, the bytes between kept.
        let (lo, hi) = (block_at.min(table_at), (block_at + block.len()).max(table_at + t.len()));
        let mut patch = out.b[lo..hi].to_vec();
        patch[block_at - lo..block_at - lo + block.len()].copy_from_slice(&block);
        patch[table_at - lo..table_at - lo + t.len()].copy_from_slice(&t);
        out.v.push(Variant {
            what: format!("block 0 an LZ4 block of {n} bytes where {raw0} belong"),
            offset: lo,
            bytes: patch,
        });
    }
}

/// A table of two one-pair leaves under 46 levels of two branch pages each,
/// where every branch has both pages of the level below as children: each
/// page is reachable along 2^(level) paths, so a walk that does not notice
/// pages it has seen takes 2^46 steps. `page0` is a finished table's page 0
/// with 4 KiB pages and no alignment (its file header is kept).
pub fn shared_children(page0: &[u8]) -> Vec<u8> {
    const DEPTH: u8 = 48;
    let ps = 4096usize;
    let (leaves, branches) = (2u64, 2 * (u64::from(DEPTH) - 2) + 1);
    let pages = 1 + leaves + branches;
    let mut b = vec![0u8; pages as usize * ps];
    b[..HEADER_END].copy_from_slice(&page0[..HEADER_END]);
    for (at, v) in [
        (64, 2),
        (72, leaves),
        (80, branches),
        (96, leaves + branches),
        (104, pages * ps as u64),
        (112, 0),
        (120, pages * ps as u64),
        (128, 0),
        (136, 1),
        (144, 2),
        (152, 2),
        (160, 0),
        (168, 0),
    ] {
        put_u64(&mut b, at, v);
    }
    b[88] = DEPTH;
    seal_meta(&mut b[..HEADER_END]);
    let head = |k: u8| u32::from(k) << 24;
    // Leaves 1 and 2: keys "a" and "b" with values "1" and "2".
    for (i, (k, v)) in [(b'a', b'1'), (b'b', b'2')].into_iter().enumerate() {
        let no = 1 + i as u64;
        let p = &mut b[no as usize * ps..(no as usize + 1) * ps];
        p[0] = 1;
        put_u16(p, 2, 1);
        put_u64(p, 8, i as u64);
        let key_off = ps - TRAILER - 2;
        put_u32(p, PAGE_HEADER, head(k));
        put_u16(p, PAGE_HEADER + 4, key_off as u16);
        put_u16(p, PAGE_HEADER + 6, 1);
        put_u16(p, key_off - 2, 1);
        p[key_off] = k;
        p[key_off + 1] = v;
        seal_page(p, no);
    }
    // Branch levels: pages 3.. two per level, the root alone at the top.
    let mut below = 1u64;
    let mut no = 1 + leaves;
    for level in 1..DEPTH {
        let count = if level + 1 == DEPTH { 1 } else { 2 };
        for _ in 0..count {
            let p = &mut b[no as usize * ps..(no as usize + 1) * ps];
            p[0] = 2;
            p[1] = level;
            put_u16(p, 2, 2);
            put_u64(p, 8, below);
            put_u64(p, PAGE_HEADER, 0);
            put_u64(p, PAGE_HEADER + 8, 1);
            let slots = PAGE_HEADER + 16;
            let sep_off = ps - TRAILER - 1;
            put_u32(p, slots, head(b'b'));
            put_u16(p, slots + 4, sep_off as u16);
            put_u16(p, slots + 6, 1);
            p[sep_off] = b'b';
            seal_page(p, no);
            no += 1;
        }
        below = no - count;
    }
    b
}
