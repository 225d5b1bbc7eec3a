'use strict'
// Puts and deletes in one atomic commit: `batch(ops)` (durable when it
// resolves) and `batchSync(ops)` over the native calls (batch.rs, which
// checks the operations whole first), and the chained form `batch()`.

const { Tree, errorForCode } = require('../binding.js')
const { DEFAULT, callPair, encodeKey, encodeValue } = require('./encoding.js')
const { absent, guardReceivers } = require('./args.js')


// The operations with their keys and values encoded; anything that is not
// an operation stays as it is, for the native side to refuse whole.
function encodeOps(pair, ops) {
  if (pair === DEFAULT || !Array.isArray(ops)) return ops
  return ops.map((op) => {
    if (absent(op) || typeof op !== 'object') return op
    const out = { ...op, key: encodeKey(pair, op.key) }
    if (op.type === 'put') out.value = encodeValue(pair, op.value)
    return out
  })
}

// The native batch calls, captured by addBatches.
const native = {}

// `tree.batch()`: operations added one by one, encoded as they come, and
// written whole by `write()` or `writeSync()`.
class ChainedBatch {
  constructor(tree) {
    this._tree = tree
    this._ops = []
    this._written = false
  }

  _unwritten() {
    if (this._written) throw errorForCode('CLOSED', 'this batch was written already; make a new one')
  }

  _add(op) {
    this._unwritten()
    this._ops.push(op)
    return this
  }

  put(key, value, options) {
    const pair = callPair(this._tree, options)
    return this._add({ type: 'put', key: encodeKey(pair, key), value: encodeValue(pair, value) })
  }

  del(key, options) {
    return this._add({ type: 'del', key: encodeKey(callPair(this._tree, options), key) })
  }

  clear() {
    this._unwritten()
    this._ops = []
    return this
  }

  get length() {
    return this._ops.length
  }

  _take() {
    this._unwritten()
    this._written = true
    return this._ops
  }

  write() {
    try {
      return native.batch.call(this._tree, this._take())
    } catch (e) {
      return Promise.reject(e)
    }
  }

  writeSync() {
    native.batchSync.call(this._tree, this._take())
  }
}

guardReceivers(ChainedBatch, ['write'])

// Puts the batch calls on the prototype, over the native ones there now.
function addBatches() {
  const tree = Tree.prototype
  native.batch = tree.batch
  native.batchSync = tree.batchSync
  tree.batch = function batch(ops, options) {
    if (arguments.length === 0) return new ChainedBatch(this)
    try {
      return native.batch.call(this, encodeOps(callPair(this, options), ops))
    } catch (e) {
      return Promise.reject(e)
    }
  }
  tree.batchSync = function batchSync(ops, options) {
    native.batchSync.call(this, encodeOps(callPair(this, options), ops))
  }
}

module.exports = { addBatches, ChainedBatch }
