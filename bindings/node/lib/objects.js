'use strict'
// The JS side of ObjectStore (objects.rs): `addStream` (a Node Readable, or
// any iterable of chunks, in), `createReadStream` (a Readable out),
// `getMany` and `getManySync` (iterators over many objects), the receiver
// checks, and the refresh of a Tree that `addTree` wrote paths to.

const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')
const binding = require('../binding.js')
const { invalid, isBytes, describe, optionsOf, onlyKnown, offsetOption, guardReceivers } = require('./args.js')
const { ioError, rangeReadable } = require('./streams.js')

const { ObjectStore, Tree } = binding

// What addStream reads: a Readable, or any async or sync iterable of
// chunks (bytes or strings), but not bytes or a string themselves.
const isSource = (s) =>
  s !== null &&
  typeof s === 'object' &&
  !isBytes(s) &&
  (typeof s[Symbol.asyncIterator] === 'function' || typeof s[Symbol.iterator] === 'function')

// A chunk as a Buffer over the same memory (strings as UTF-8).
function chunkBytes(chunk) {
  if (typeof chunk === 'string') return Buffer.from(chunk)
  if (chunk instanceof ArrayBuffer) return Buffer.from(chunk)
  if (ArrayBuffer.isView(chunk)) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  throw invalid(`a chunk of the stream must be bytes or a string, not ${describe(chunk)}`)
}

async function writeAll(fh, buf) {
  for (let at = 0; at < buf.length; ) {
    const { bytesWritten } = await fh.write(buf, at, buf.length - at)
    at += bytesWritten
  }
}

// A single-file store's batch holds the file's writer lock until it
// commits, so it is never fed from JS: the bytes go to a temporary file
// beside the store first (not in memory, and not in a tmpfs /tmp), and
// that file is added on the thread pool. The temporary file is removed in
// every case.
async function spoolAndAdd(store, source) {
  const tmp = path.join(
    path.dirname(store.path),
    `.${path.basename(store.path)}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.bale-tmp`,
  )
  let fh
  try {
    fh = await fs.promises.open(tmp, 'wx', 0o600)
  } catch (e) {
    throw ioError(e, 'cannot create the temporary file')
  }
  try {
    try {
      for await (const chunk of source) {
        const buf = chunkBytes(chunk)
        try {
          await writeAll(fh, buf)
        } catch (e) {
          throw ioError(e, 'cannot write the temporary file')
        }
      }
    } finally {
      await fh.close().catch(() => {})
    }
    return await store.addFile(tmp)
  } finally {
    await fs.promises.rm(tmp, { force: true })
  }
}

// Adds everything `source` yields as one object and resolves to its id
// once durable. In a directory store the chunks go to a core batch that
// reads them on a thread of its own; each write is awaited, so the source
// is read no faster than the batch takes it (backpressure), and memory
// stays at about a megabyte whatever the object's size. An error of the
// source rejects with that error, and nothing of the object is kept.
async function addStream(source) {
  if (!(this instanceof ObjectStore)) throw invalid('ObjectStore.addStream must be called on an ObjectStore')
  if (!isSource(source)) {
    throw invalid(`the source must be a Readable or an (async) iterable of chunks, not ${describe(source)}`)
  }
  if (this.singleFile) return spoolAndAdd(this, source)
  const sink = this._sink()
  try {
    for await (const chunk of source) await binding._objectSinkWrite(sink, chunk)
  } catch (e) {
    binding._objectSinkAbort(sink)
    throw e
  }
  return binding._objectSinkEnd(sink)
}

// Reads the object in pieces on the thread pool; memory stays at about
// one piece (highWaterMark) whatever the object's size. A missing object
// or a closed store is an 'error' event, as a missing file is for
// fs.createReadStream; arguments of the wrong type throw.
function createReadStream(id, options) {
  if (!(this instanceof ObjectStore)) throw invalid('ObjectStore.createReadStream must be called on an ObjectStore')
  const store = this
  const o = optionsOf(options, 'read stream options')
  onlyKnown(o, ['start', 'end', 'highWaterMark', 'verify'], 'read stream option')
  const hwm = offsetOption(o.highWaterMark, 'highWaterMark') || 1 << 20
  const start = offsetOption(o.start, 'start') ?? 0
  const last = offsetOption(o.end, 'end')
  const verify = o.verify ?? false
  if (typeof verify !== 'boolean') throw invalid(`verify must be a boolean, not ${describe(verify)}`)
  if (typeof id !== 'string' && !isBytes(id)) {
    throw invalid(`an object id must be a hex string or a Buffer of its bytes, not ${describe(id)}`)
  }
  return rangeReadable(
    () => {
      const pieces = store._pieces(id, verify)
      return {
        length: binding._objectPiecesLength(pieces),
        read: (pos, n) => binding._objectPiecesRead(pieces, pos, n),
        close: () => binding._objectPiecesClose(pieces),
      }
    },
    start,
    last,
    hwm,
  )
}

// The `[id, content]` pairs of a native Many, each read when the iteration
// reaches it. A failure is given again by every later step (the native
// side keeps it), never taken for the end; leaving a loop early
// (`return`) releases the Many.
class ManyIterator {
  constructor(many) {
    this.many = many
  }

  next() {
    return step(binding._objectManyNextSync(this.many))
  }

  return(value) {
    binding._objectManyClose(this.many)
    return { done: true, value }
  }

  [Symbol.iterator]() {
    return this
  }
}

// The same, each object read on the thread pool; steps asked for at once
// resolve in order. `failed` (an argument error) rejects every step, as a
// Promise-returning call rejects instead of throwing.
class AsyncManyIterator {
  constructor(many, failed) {
    this.many = many
    this.failed = failed
    this.last = Promise.resolve()
  }

  next() {
    const p = this.last.then(async () => {
      if (this.failed !== undefined) throw this.failed
      return step(await binding._objectManyNext(this.many))
    })
    this.last = p.catch(() => {})
    return p
  }

  async return(value) {
    if (this.many !== undefined) binding._objectManyClose(this.many)
    return { done: true, value }
  }

  [Symbol.asyncIterator]() {
    return this
  }
}

const step = (item) => (item === null ? { done: true, value: undefined } : { done: false, value: item })

// `[id, content]` of each of `ids` in the order their records lie on disk,
// each id once, one object read at a time (on the thread pool). A missing
// id rejects the first step with NOT_FOUND, unless `skipMissing`.
function getMany(ids, options) {
  if (!(this instanceof ObjectStore)) {
    return new AsyncManyIterator(undefined, invalid('ObjectStore.getMany must be called on an ObjectStore'))
  }
  try {
    return new AsyncManyIterator(this._many(ids, options), undefined)
  } catch (e) {
    return new AsyncManyIterator(undefined, e)
  }
}

// getMany on the calling thread: arguments are checked now, the ids
// looked up at the first step.
function getManySync(ids, options) {
  if (!(this instanceof ObjectStore)) throw invalid('ObjectStore.getManySync must be called on an ObjectStore')
  return new ManyIterator(this._many(ids, options))
}

// A Tree given as addTree's `paths` was written through a handle of its
// own: its snapshot of this turn is dropped so that its next read sees the
// paths (read your own writes, as for the Tree's own commits).
function refreshPaths(options) {
  const t = options !== null && typeof options === 'object' ? options.paths : undefined
  if (t instanceof Tree && !t.closed) t.refresh()
}

function addObjects() {
  const proto = ObjectStore.prototype
  // Every call with a *Sync twin returns a promise: it rejects on a wrong
  // receiver instead of throwing.
  const names = Object.getOwnPropertyNames(proto)
  guardReceivers(
    ObjectStore,
    names.filter((n) => names.includes(`${n}Sync`)),
  )
  const native = { addTree: proto.addTree, addTreeSync: proto.addTreeSync }
  proto.addTree = function addTree(dir, options) {
    return native.addTree.call(this, dir, options).then(
      (r) => {
        refreshPaths(options)
        return r
      },
      (e) => {
        refreshPaths(options)
        throw e
      },
    )
  }
  proto.addTreeSync = function addTreeSync(dir, options) {
    try {
      return native.addTreeSync.call(this, dir, options)
    } finally {
      refreshPaths(options)
    }
  }
  proto.addStream = addStream
  proto.createReadStream = createReadStream
  proto.getMany = getMany
  proto.getManySync = getManySync
}

module.exports = { addObjects, isSource }
