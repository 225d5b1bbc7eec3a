'use strict'
// Entry point of the package: the native classes from `binding.js` (the
// loader `napi build` generates next to the .node file) with the parts that
// belong on the JS side: encodings, the reads and writes that take them,
// the iterator protocols over the native batch calls, and Node streams for
// large values. Their types are in dts-header.d.ts, which `napi build` puts
// at the top of the generated index.d.ts.

const binding = require('./binding.js')
const { ENC, DEFAULT, splitOptions } = require('./lib/encoding.js')
const { addReads } = require('./lib/reads.js')
const { addWrites } = require('./lib/writes.js')
const { addStreams } = require('./lib/streams.js')
const { addBatches, ChainedBatch } = require('./lib/batch.js')

const { Tree, Range, Txn, ValueReader, errorCodes, errorForCode, formatVersion, __napiBindingTarget } = binding

const reads = binding._reads()
addReads(Tree, reads.tree)
addReads(Txn, reads.txn)
addWrites()
addStreams()
addBatches()


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
  errorCodes,
  errorForCode,
  formatVersion,
  __napiBindingTarget,
}
