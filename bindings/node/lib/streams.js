'use strict'
// Node streams over a value: createReadStream reads it in pieces on the
// thread pool; writeStream buffers the bytes in a temporary file beside
// the store and streams that file into one commit.

const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')
const { Readable, Writable } = require('node:stream')
const { Tree, errorForCode } = require('../binding.js')
const { invalid, isBytes, describe, optionsOf, offsetOption } = require('./args.js')
const { encOf, splitOptions, encodeKey } = require('./encoding.js')

// The key and the other options of a stream call (`keyEncoding` applies
// to the key).
function streamArgs(tree, key, options, what) {
  const [pair, rest] = splitOptions(encOf(tree), options)
  return [encodeKey(pair, key), optionsOf(rest, what)]
}

// A Readable of bytes start..last (inclusive; to the end when last is
// undefined) of what `open()` returns: { length, read(pos, n) -> Promise of
// a Buffer, close() }. Memory stays at about one piece (highWaterMark)
// whatever the length.
function rangeReadable(open, start, last, highWaterMark) {
  let src = null
  let pos = start
  let end = 0
  return new Readable({
    highWaterMark,
    construct(cb) {
      try {
        src = open()
        end = last === undefined ? src.length : Math.min(last + 1, src.length)
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
      src.read(pos, n).then(
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
      if (src !== null) src.close()
      cb(err)
    },
  })
}

// A value's bytes, read in pieces on the thread pool.
function createReadStream(key, options) {
  const tree = this
  const [k, o] = streamArgs(tree, key, options, 'read stream options')
  const hwm = offsetOption(o.highWaterMark, 'highWaterMark') || 1 << 20
  const start = offsetOption(o.start, 'start') ?? 0
  const last = offsetOption(o.end, 'end')
  return rangeReadable(() => tree.openValue(k, { keyEncoding: 'binary' }), start, last, hwm)
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
function writeStream(key, options) {
  const tree = this
  const [k0, o] = streamArgs(tree, key, options, 'write stream options')
  if (typeof k0 !== 'string' && !isBytes(k0)) {
    throw invalid(`the key must be a Buffer, a Uint8Array (or other view), an ArrayBuffer or a string, not ${describe(k0)}`)
  }
  // A copy: the bytes are written later, and a view could change meanwhile.
  const k = typeof k0 === 'string' ? k0 : Buffer.from(ArrayBuffer.isView(k0) ? Buffer.from(k0.buffer, k0.byteOffset, k0.byteLength) : k0)
  const dir = o.tmpDir ?? path.dirname(tree.path)
  if (typeof dir !== 'string') throw invalid(`tmpDir must be a string, not ${describe(dir)}`)
  const highWaterMark = offsetOption(o.highWaterMark, 'highWaterMark')
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
        tree.putFile(k, tmp, { keyEncoding: 'binary' }).then(
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

function addStreams() {
  Tree.prototype.createReadStream = createReadStream
  Tree.prototype.writeStream = writeStream
}

module.exports = { addStreams, ioError, rangeReadable }
