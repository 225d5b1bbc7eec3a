'use strict'
// The JS side of bitables (bitable.rs and the modules beside it):
// `getSync` through the slab the tree store's `get` uses, `getInto`, `has`, `append`
// and `add` as plain Node-API calls, the iterator protocols of ranges (the
// tree store's batch iterators), `createReadStream` for large values, and
// `appendStream` / `addStream`. Keys and values are bytes: Buffers out,
// bytes or strings (UTF-8) in.

const binding = require('../binding.js')
const { invalid, describe, optionsOf, onlyKnown, offsetOption, guardReceivers } = require('./args.js')
const { ENC, DEFAULT } = require('./encoding.js')
const { viaSlabKeyed, withSlabKey, BatchIterator, AsyncBatchIterator, MODE, ENTRIES, KEYS, VALUES } = require('./reads.js')
const { rangeReadable } = require('./streams.js')
const { isSource } = require('./objects.js')

const { Bitable, BitableRange, BitableCursor, BitableWriter, UnsortedBitableWriter } = binding

// Refuses a call whose receiver is not an instance of C.
function receiver(self, C, name) {
  if (!(self instanceof C)) throw invalid(`${C.name}.${name} must be called on a ${C.name}`)
}

// A range of the table in `mode`, iterated by the tree store's batch iterators.
const ranged = (mode, name) =>
  function (options) {
    receiver(this, Bitable, name)
    const r = this._range(options, mode)
    r[MODE] = mode
    r[ENC] = DEFAULT
    return r
  }

// `range({ ...options, prefix })`.
function prefix(p, options) {
  receiver(this, Bitable, 'prefix')
  const o = optionsOf(options, 'range options')
  if (o.prefix !== undefined && o.prefix !== null) throw invalid('prefix() takes the prefix as its first argument only')
  return this.range({ ...o, prefix: p })
}

// A value's bytes, read in pieces on the thread pool; memory stays at about
// one piece (highWaterMark) whatever the value's size. A missing key or a
// closed table is an 'error' event, as a missing file is for
// fs.createReadStream.
function createReadStream(key, options) {
  receiver(this, Bitable, 'createReadStream')
  const table = this
  const o = optionsOf(options, 'read stream options')
  onlyKnown(o, ['start', 'end', 'highWaterMark'], 'read stream option')
  const hwm = offsetOption(o.highWaterMark, 'highWaterMark') || 1 << 20
  const start = offsetOption(o.start, 'start') ?? 0
  const last = offsetOption(o.end, 'end')
  return rangeReadable(
    () => {
      const pieces = table._pieces(key)
      return {
        length: binding._bitablePiecesLength(pieces),
        read: (pos, n) => binding._bitablePiecesRead(pieces, pos, n),
        close: () => binding._bitablePiecesClose(pieces),
      }
    },
    start,
    last,
    hwm,
  )
}

// Writes everything `source` yields as the value of `key`: the chunks go
// to a thread that holds the writer meanwhile (other calls of the writer
// fail with LOCKED until this settles). Each write is awaited, so the
// source is read no faster than the table takes it. An error of the source
// rejects with that error and nothing of the pair is written.
async function stream(writer, key, source) {
  if (!isSource(source)) {
    throw invalid(`the source must be a Readable or an (async) iterable of chunks, not ${describe(source)}`)
  }
  const sink = writer._sink(key)
  try {
    for await (const chunk of source) await binding._bitableSinkWrite(sink, chunk)
  } catch (e) {
    await binding._bitableSinkAbort(sink)
    throw e
  }
  await binding._bitableSinkEnd(sink)
}

// The range protocols: batches (`_next`, `_nextAsync`) cut into entries.
BitableRange.prototype[Symbol.iterator] = function () {
  return new BatchIterator(this)
}
BitableRange.prototype[Symbol.asyncIterator] = function () {
  return new AsyncBatchIterator(this)
}
BitableRange.prototype.toArray = function toArray() {
  return Array.from(this)
}

function addBitables() {
  // The native methods first (the Promise-returning ones reject on a wrong
  // receiver), then the JS ones, which check their receiver themselves.
  guardReceivers(Bitable, ['get', 'check'])
  guardReceivers(BitableCursor)
  guardReceivers(BitableRange)
  guardReceivers(BitableWriter, ['merge', 'appendTree', 'finish'])
  guardReceivers(UnsortedBitableWriter, ['finish'])
  const fast = binding._bitableFast()
  const t = Bitable.prototype
  t.getSync = function getSync(key) {
    return viaSlabKeyed(fast.getSync, fast.getSyncK, this, key)
  }
  t.getInto = function getInto(key, target, offset) {
    if (!(target instanceof Uint8Array)) throw invalid(`getInto needs a Buffer or Uint8Array to read into, not ${describe(target)}`)
    const at = offsetOption(offset, 'offset') ?? 0
    if (at > target.length) throw invalid(`offset ${at} lies past the end of a ${target.length}-byte target`)
    // A plain Uint8Array is seen through a Buffer over the same memory.
    const b = Buffer.isBuffer(target) ? target : Buffer.from(target.buffer, target.byteOffset, target.byteLength)
    // The native side takes a 32-bit offset.
    if (at > 0xffffffff) return withSlabKey(fast.getInto, fast.getIntoK, this, key, b.subarray(at), 0)
    return withSlabKey(fast.getInto, fast.getIntoK, this, key, b, at)
  }
  t.has = function has(key) {
    return withSlabKey(fast.has, fast.hasK, this, key)
  }
  t.range = ranged(ENTRIES, 'range')
  t.keys = ranged(KEYS, 'keys')
  t.values = ranged(VALUES, 'values')
  t.prefix = prefix
  t.createReadStream = createReadStream
  BitableWriter.prototype.append = function append(key, value) {
    fast.append(this, key, value)
  }
  BitableWriter.prototype.appendStream = async function appendStream(key, source) {
    receiver(this, BitableWriter, 'appendStream')
    return stream(this, key, source)
  }
  UnsortedBitableWriter.prototype.add = function add(key, value) {
    fast.add(this, key, value)
  }
  UnsortedBitableWriter.prototype.addStream = async function addStream(key, source) {
    receiver(this, UnsortedBitableWriter, 'addStream')
    return stream(this, key, source)
  }
}

module.exports = { addBitables }
