'use strict'
// Entry point of the package: the native classes from `binding.js` (which
// finds the addon of this platform) with the parts that
// belong on the JS side: encodings, the reads and writes that take them,
// the iterator protocols over the native batch calls, Node streams for
// large values, the object store's stream calls, and the bitables' lookups,
// ranges and streams. Their types are in
// dts-header.d.ts, which `napi build` puts at the top of the generated
// index.d.ts.

const binding = require('./binding.js')
const { guardReceivers } = require('./lib/args.js')
const { ENC, DEFAULT, splitOptions } = require('./lib/encoding.js')
const { addReads } = require('./lib/reads.js')
const { addWrites } = require('./lib/writes.js')
const { addStreams } = require('./lib/streams.js')
const { addBatches, ChainedBatch } = require('./lib/batch.js')
const { addObjects } = require('./lib/objects.js')
const { addBitables } = require('./lib/bitable.js')

const {
  Tree,
  Range,
  Txn,
  ValueReader,
  ObjectStore,
  Bitable,
  BitableCursor,
  BitableRange,
  BitableWriter,
  UnsortedBitableWriter,
  errorCodes,
  errorForCode,
  formatVersion,
} = binding

// The native methods first, so that the JS methods below call guarded ones
// (the hot calls are plain Node-API callbacks that check their handle).
guardReceivers(Tree, ['compact', 'flushed', 'delete', 'transaction', 'putFile', 'batch'])
guardReceivers(Txn)
guardReceivers(ValueReader, ['read'])
const reads = binding._reads()
const fast = binding._fastPaths()
addReads(Tree, reads.tree)
addReads(Txn, reads.txn)
guardReceivers(Range)
addWrites(fast)
addStreams()
addBatches()
// The object store and bitables are built on Unix only (the core opens
// their files there).
if (ObjectStore !== undefined) addObjects()
if (Bitable !== undefined) addBitables()

// Drops this turn's snapshot: the next read sees the newest commit.
Tree.prototype.refresh = function refresh() {
  fast.refresh(this)
}


// Opens (with `create`, creates) the store file at `path`; `keyEncoding`
// and `valueEncoding` set the handle's encodings.
function open(path, options) {
  const [pair, rest] = splitOptions(DEFAULT, options)
  const tree = Tree._open(path, rest)
  tree[ENC] = pair
  return tree
}
Tree.open = open

module.exports = {
  open,
  Tree,
  Range,
  Txn,
  ChainedBatch,
  ValueReader,
  ObjectStore,
  Bitable,
  BitableCursor,
  BitableRange,
  BitableWriter,
  UnsortedBitableWriter,
  errorCodes,
  errorForCode,
  formatVersion,
}
