'use strict'
// The reads of a Tree and of a Txn, once for both classes (the native
// functions come from reader.rs, one set per class), with encodings; and
// the iterator protocols of ranges.

const { Range } = require('../binding.js')
const { ENC, DEFAULT, encOf, callPair, splitOptions, encodeKey, decodeValue, encodeBounds } = require('./encoding.js')

// `get` copies the value into a slab Buffer owned by this module and
// returns a view of it, the way Node's Buffer.allocUnsafe hands out views
// of its 8 KiB pool: one small object per value, and always memory owned
// by JS (never an external buffer, so also fine in Electron). A slab is
// replaced when less than the longest inline value (16 KiB at 64 KiB
// pages) is left; longer values come back as Buffers of their own.
const SLAB = 64 * 1024
const SLAB_MIN_ROOM = 16 * 1024
let slab = Buffer.allocUnsafeSlow(SLAB)
let slabAt = 0

function viaSlab(read, self, key) {
  if (SLAB - slabAt < SLAB_MIN_ROOM) {
    slab = Buffer.allocUnsafeSlow(SLAB)
    slabAt = 0
  }
  const at = slabAt
  const r = read(self, key, slab, at)
  if (typeof r !== 'number') return r
  slabAt = (at + r + 7) & ~7
  return slab.subarray(at, at + r)
}

// Byte keys up to this long travel in the slab (`readK(self, keyLength,
// slab, at)`): copying them here costs less than the native side taking
// hold of a small Buffer, which V8 keeps inside its heap and must move out
// first. The value lands right after the key.
const SLAB_KEY_MAX = 4096

function viaSlabKeyed(read, readK, self, key) {
  if (!(key instanceof Uint8Array) || key.length > SLAB_KEY_MAX) return viaSlab(read, self, key)
  if (SLAB - slabAt < SLAB_MIN_ROOM + SLAB_KEY_MAX) {
    slab = Buffer.allocUnsafeSlow(SLAB)
    slabAt = 0
  }
  const at = slabAt
  slab.set(key, at)
  const r = readK(self, key.length, slab, at)
  if (typeof r !== 'number') return r
  const v = at + key.length
  slabAt = (v + r + 7) & ~7
  return slab.subarray(v, v + r)
}

// Calls `readK(self, keyLength, slab, at, ...rest)` with a small byte key
// copied into the free end of the slab (it stays free: the key is not
// kept), else `read(self, key, ...rest)`.
function withSlabKey(read, readK, self, key, a, b) {
  if (!(key instanceof Uint8Array) || key.length > SLAB_KEY_MAX) return read(self, key, a, b)
  if (SLAB - slabAt < SLAB_KEY_MAX) {
    slab = Buffer.allocUnsafeSlow(SLAB)
    slabAt = 0
  }
  slab.set(key, slabAt)
  return readK(self, key.length, slab, slabAt, a, b)
}

// What a native range yields (the `Mode` of range.rs).
const ENTRIES = 0
const KEYS = 1
const VALUES = 2
const MODE = Symbol('bale.mode')

// On a Tree the reads see the transaction of a running callback, else
// this turn's snapshot; on a Txn its transaction.
function addReads(C, n) {
  const proto = C.prototype
  proto.get = function get(key, options) {
    const pair = options === undefined ? encOf(this) : callPair(this, options)
    if (pair === DEFAULT) return viaSlab(n.get, this, key)
    return decodeValue(pair, viaSlab(n.get, this, encodeKey(pair, key)))
  }
  proto.has = function has(key, options) {
    return n.has(this, encodeKey(callPair(this, options), key))
  }
  proto.getMany = function getMany(keys, options) {
    const pair = callPair(this, options)
    if (pair === DEFAULT) return n.getMany(this, keys)
    const values = n.getMany(this, Array.isArray(keys) ? keys.map((k) => encodeKey(pair, k)) : keys)
    return values.map((v) => decodeValue(pair, v))
  }
  proto.valueLength = function valueLength(key, options) {
    return n.valueLength(this, encodeKey(callPair(this, options), key))
  }
  proto.readRange = function readRange(key, offset, length, options) {
    return n.readRange(this, encodeKey(callPair(this, options), key), offset, length)
  }
  proto.count = function count() {
    return n.count(this)
  }
  proto.openValue = function openValue(key, options) {
    return n.openValue(this, encodeKey(callPair(this, options), key))
  }
  const ranged = (mode) =>
    function (options) {
      const [pair, rest] = splitOptions(encOf(this), options)
      const r = n.range(this, encodeBounds(pair, rest), mode)
      r[MODE] = mode
      r[ENC] = pair
      return r
    }
  proto.range = ranged(ENTRIES)
  proto.keys = ranged(KEYS)
  proto.values = ranged(VALUES)
}

// A batch from Range `_next`: u32 LE count, count × u32 LE lengths, then
// the bytes. Entries become views of the batch Buffer (one JS-owned copy
// per batch of up to ~64 KiB; a large value has its own).
function split(data) {
  if (data === null) return null
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const m = dv.getUint32(0, true)
  const out = new Array(m)
  let off = 4 + 4 * m
  for (let i = 0; i < m; i++) {
    const len = dv.getUint32(4 + 4 * i, true)
    out[i] = data.subarray(off, off + len)
    off += len
  }
  return out
}

const EMPTY = []

// Walks the batches of a Range: [key, value] pairs, or keys, or values,
// decoded with the range's encodings.
class BatchIterator {
  constructor(range) {
    const pair = range[ENC]
    const mode = range[MODE]
    this.range = range
    this.pairs = mode === ENTRIES
    this.decodeA = mode === VALUES ? pair.value.decode : pair.key.decode
    this.decodeB = pair.value.decode
    this.batch = EMPTY
    this.i = 0
    this.done = false
  }

  // Takes the next batch; false at the end.
  load(data) {
    const b = split(data)
    if (b === null) {
      this.finish()
      return false
    }
    this.batch = b
    this.i = 0
    return true
  }

  finish() {
    this.done = true
    this.batch = EMPTY
  }

  take() {
    const b = this.batch
    const i = this.i
    const a = this.decodeA === null ? b[i] : this.decodeA(b[i])
    if (!this.pairs) {
      this.i = i + 1
      return { done: false, value: a }
    }
    this.i = i + 2
    return { done: false, value: [a, this.decodeB === null ? b[i + 1] : this.decodeB(b[i + 1])] }
  }

  next() {
    if (this.i >= this.batch.length && (this.done || !this.load(this.range._next()))) {
      return { done: true, value: undefined }
    }
    return this.take()
  }

  return(value) {
    this.finish()
    this.range.close()
    return { done: true, value }
  }

  [Symbol.iterator]() {
    return this
  }
}

// The same over batches read on the thread pool.
class AsyncBatchIterator extends BatchIterator {
  async next() {
    if (this.i >= this.batch.length && (this.done || !this.load(await this.range._nextAsync()))) {
      return { done: true, value: undefined }
    }
    return this.take()
  }

  async return(value) {
    return super.return(value)
  }

  [Symbol.asyncIterator]() {
    return this
  }
}

Range.prototype[Symbol.iterator] = function () {
  return new BatchIterator(this)
}
Range.prototype[Symbol.asyncIterator] = function () {
  return new AsyncBatchIterator(this)
}
// The rest of the range in an array (read now, from the range's snapshot).
Range.prototype.toArray = function toArray() {
  return Array.from(this)
}

module.exports = { addReads, viaSlab, viaSlabKeyed, withSlabKey, BatchIterator, AsyncBatchIterator, MODE, ENTRIES, KEYS, VALUES }
