'use strict'
// Entry point of the package: the native classes from `binding.js` (the
// loader `napi build` generates next to the .node file) plus the parts that
// belong on the JS side: the iterator protocols over the native batch calls
// and Node streams for large values. Their types are in dts-header.d.ts,
// which `napi build` puts at the top of the generated index.d.ts.

const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')
const { Readable, Writable } = require('node:stream')
const binding = require('./binding.js')

const { Tree, Range, Txn, ValueReader, errorCodes, errorForCode, formatVersion } = binding
const fast = binding._fastPaths()
const reads = binding._reads()
const _treePut = fast.put
const _treePutSync = fast.putSync
const _txnPut = fast.txnPut
const __napiBindingTarget = binding.__napiBindingTarget

// The hot calls. `get` copies the value into a slab Buffer owned by this
// module and returns a view of it, the way Node's Buffer.allocUnsafe hands
// out views of its 8 KiB pool: one small object per value, and always memory
// owned by JS (never an external buffer, so also fine in Electron). A slab
// is replaced when less than the longest inline value (16 KiB at 64 KiB
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

// What a native range yields (the `mode` of reader.rs).
const ENTRIES = 0
const KEYS = 1
const VALUES = 2
const MODE = Symbol('mode')

// The reads, once for both classes: on a Tree they see the transaction of
// a running callback, else this turn's snapshot; on a Txn its transaction.
function addReads(C, n) {
  const proto = C.prototype
  proto.get = function get(key) {
    return viaSlab(n.get, this, key)
  }
  proto.has = function has(key) {
    return n.has(this, key)
  }
  proto.getMany = function getMany(keys) {
    return n.getMany(this, keys)
  }
  proto.valueLength = function valueLength(key) {
    return n.valueLength(this, key)
  }
  proto.readRange = function readRange(key, offset, length) {
    return n.readRange(this, key, offset, length)
  }
  proto.count = function count() {
    return n.count(this)
  }
  proto.openValue = function openValue(key) {
    return n.openValue(this, key)
  }
  const ranged = (mode) =>
    function (options) {
      const r = n.range(this, options, mode)
      r[MODE] = mode
      return r
    }
  proto.range = ranged(ENTRIES)
  proto.keys = ranged(KEYS)
  proto.values = ranged(VALUES)
}
addReads(Tree, reads.tree)
addReads(Txn, reads.txn)

Txn.prototype.put = function put(key, value) {
  _txnPut(this, key, value)
}
Tree.prototype.put = function put(key, value) {
  return _treePut(this, key, value)
}
Tree.prototype.putSync = function putSync(key, value) {
  _treePutSync(this, key, value)
}

const EMPTY = []

// A batch from Range `_next`: u32 LE count, count × u32 LE
// lengths, then the bytes. Entries become views of the batch Buffer (one
// JS-owned copy per batch of up to ~64 KiB; a large value has its own).
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

// Walks the batches of a Range (pairs: [key, value]; else keys or values).
class BatchIterator {
  constructor(range, pairs) {
    this.range = range
    this.pairs = pairs
    this.batch = EMPTY
    this.i = 0
    this.done = false
  }

  next() {
    let b = this.batch
    let i = this.i
    if (i >= b.length) {
      if (this.done) return { done: true, value: undefined }
      b = split(this.range._next())
      if (b === null) {
        this.done = true
        this.batch = EMPTY
        return { done: true, value: undefined }
      }
      this.batch = b
      i = 0
    }
    if (this.pairs) {
      this.i = i + 2
      return { done: false, value: [b[i], b[i + 1]] }
    }
    this.i = i + 1
    return { done: false, value: b[i] }
  }

  return(value) {
    this.done = true
    this.batch = EMPTY
    this.range.close()
    return { done: true, value }
  }

  [Symbol.iterator]() {
    return this
  }
}

// The same over batches read on the thread pool.
class AsyncBatchIterator {
  constructor(range, pairs) {
    this.range = range
    this.pairs = pairs
    this.batch = EMPTY
    this.i = 0
    this.done = false
  }

  async next() {
    if (this.i >= this.batch.length) {
      if (this.done) return { done: true, value: undefined }
      const b = split(await this.range._nextAsync())
      if (b === null) {
        this.done = true
        this.batch = EMPTY
        return { done: true, value: undefined }
      }
      this.batch = b
      this.i = 0
    }
    const b = this.batch
    const i = this.i
    if (this.pairs) {
      this.i = i + 2
      return { done: false, value: [b[i], b[i + 1]] }
    }
    this.i = i + 1
    return { done: false, value: b[i] }
  }

  async return(value) {
    this.done = true
    this.batch = EMPTY
    this.range.close()
    return { done: true, value }
  }

  [Symbol.asyncIterator]() {
    return this
  }
}

Range.prototype[Symbol.iterator] = function () {
  return new BatchIterator(this, this[MODE] === ENTRIES)
}
Range.prototype[Symbol.asyncIterator] = function () {
  return new AsyncBatchIterator(this, this[MODE] === ENTRIES)
}

const invalid = (message) => errorForCode('INVALID_ARGUMENT', message)
const isBytes = (v) => ArrayBuffer.isView(v) || v instanceof ArrayBuffer
const describe = (v) =>
  v === null || v === undefined ? String(v) : typeof v === 'object' ? (isBytes(v) ? 'bytes' : 'an object') : `a ${typeof v}`

// An options argument: an object, or `undefined`/`null` for none.
function optionsOf(options, what) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || isBytes(options)) throw invalid(`${what} must be an object, not ${describe(options)}`)
  return options
}

// A count option; `undefined` and `null` leave it out.
function offsetOption(v, name) {
  if (v === undefined || v === null) return undefined
  if (!Number.isSafeInteger(v) || v < 0) throw invalid(`${name} must be a non-negative integer, not ${describe(v)}`)
  return v
}

// Reads the value in pieces on the thread pool: memory stays at about one
// piece (highWaterMark) whatever the value's size.
Tree.prototype.createReadStream = function createReadStream(key, options) {
  const tree = this
  options = optionsOf(options, 'read stream options')
  const hwm = offsetOption(options.highWaterMark, 'highWaterMark') || 1 << 20
  const start = offsetOption(options.start, 'start') ?? 0
  const last = offsetOption(options.end, 'end')
  let reader = null
  let pos = start
  let end = 0
  return new Readable({
    highWaterMark: hwm,
    construct(cb) {
      try {
        reader = tree.openValue(key)
        end = last === undefined ? reader.length : Math.min(last + 1, reader.length)
        cb()
      } catch (e) {
        cb(e)
      }
    },
    read(size) {
      if (pos >= end) {
        this.push(null)
        return
      }
      const n = Math.min(Math.max(size, 1), end - pos)
      reader.read(pos, n).then(
        (buf) => {
          if (buf.length === 0) {
            this.push(null)
            return
          }
          pos += buf.length
          this.push(buf)
          if (pos >= end) this.push(null)
        },
        (err) => this.destroy(err),
      )
    },
    destroy(err, cb) {
      if (reader !== null) reader.close()
      cb(err)
    },
  })
}

// A file-system error of the temporary file as an IO error, the original as its cause.
function ioError(err, what) {
  const e = errorForCode('IO', `${what}: ${err.message}`)
  e.cause = err
  return e
}

function writeAll(fd, chunk, cb) {
  fs.write(fd, chunk, 0, chunk.length, null, (err, n) => {
    if (err) return cb(ioError(err, 'cannot write the temporary file'))
    if (n < chunk.length) return writeAll(fd, chunk.subarray(n), cb)
    cb()
  })
}

// Buffers the bytes in a temporary file beside the store (not in memory and
// not in a tmpfs), then streams that file into one commit on the thread
// pool: 'finish' is emitted once the value is durable.
Tree.prototype.writeStream = function writeStream(key, options) {
  const tree = this
  options = optionsOf(options, 'write stream options')
  if (typeof key !== 'string' && !isBytes(key)) {
    throw invalid(`the key must be a Buffer, a Uint8Array (or other view), an ArrayBuffer or a string, not ${describe(key)}`)
  }
  // A copy: the bytes are written later, and a view could change meanwhile.
  const k = typeof key === 'string' ? key : Buffer.from(ArrayBuffer.isView(key) ? Buffer.from(key.buffer, key.byteOffset, key.byteLength) : key)
  const dir = options.tmpDir ?? path.dirname(tree.path)
  if (typeof dir !== 'string') throw invalid(`tmpDir must be a string, not ${describe(dir)}`)
  const highWaterMark = offsetOption(options.highWaterMark, 'highWaterMark')
  const tmp = path.join(dir, `.${path.basename(tree.path)}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.bale-tmp`)
  let fd = null
  const removeTmp = (then) => fs.unlink(tmp, () => then())
  return new Writable({
    highWaterMark,
    construct(cb) {
      if (tree.closed) return cb(errorForCode('CLOSED', 'the store was closed; open it again'))
      if (tree.readonly) {
        return cb(errorForCode('INVALID_ARGUMENT', 'store was opened read-only; open it writable to write'))
      }
      fs.open(tmp, 'wx', 0o600, (err, f) => {
        if (err) return cb(ioError(err, 'cannot create the temporary file'))
        fd = f
        cb()
      })
    },
    write(chunk, _encoding, cb) {
      writeAll(fd, chunk, cb)
    },
    final(cb) {
      const f = fd
      fd = null
      fs.close(f, (err) => {
        if (err) return removeTmp(() => cb(ioError(err, 'cannot write the temporary file')))
        tree.putFile(k, tmp).then(
          () => removeTmp(() => cb()),
          (e) => removeTmp(() => cb(e)),
        )
      })
    },
    destroy(err, cb) {
      if (fd === null) return removeTmp(() => cb(err))
      const f = fd
      fd = null
      fs.close(f, () => removeTmp(() => cb(err)))
    },
  })
}

module.exports = {
  Tree,
  Range,
  Txn,
  ValueReader,
  errorCodes,
  errorForCode,
  formatVersion,
  __napiBindingTarget,
}
