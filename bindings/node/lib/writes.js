'use strict'
// The writes of a Tree and of a Txn with encodings, over the native calls
// (fast.rs for put/putSync/txn.put, #[napi] methods for the rest); and the
// transaction calls, which hand the tree's encodings to their txn.

const { Tree, Txn } = require('../binding.js')
const { ENC, DEFAULT, encOf, callPair, encodeKey, encodeValue } = require('./encoding.js')


// A [key, value] pair encoded; anything else as it is, for the native side
// to refuse.
const encodeEntry = (pair, e) =>
  Array.isArray(e) && e.length === 2 ? [encodeKey(pair, e[0]), encodeValue(pair, e[1])] : e

// The transaction callback with the tree's encodings on its txn.
const withEncodings = (tree, fn) =>
  typeof fn !== 'function'
    ? fn
    : (txn) => {
        txn[ENC] = encOf(tree)
        return fn(txn)
      }

// Puts the writes on the prototypes, over the native methods there now
// and the fast paths `fast` (fast.rs).
function addWrites(fast) {
  const tree = Tree.prototype
  const native = {
    delete: tree.delete,
    deleteSync: tree.deleteSync,
    putManySync: tree.putManySync,
    putFile: tree.putFile,
    transaction: tree.transaction,
    transactionSync: tree.transactionSync,
    txnDelete: Txn.prototype.delete,
  }
  tree.put = function put(key, value, options) {
    if (options === undefined && encOf(this) === DEFAULT) return fast.put(this, key, value)
    try {
      const pair = callPair(this, options)
      return fast.put(this, encodeKey(pair, key), encodeValue(pair, value))
    } catch (e) {
      return Promise.reject(e)
    }
  }
  tree.putSync = function putSync(key, value, options) {
    const pair = options === undefined ? encOf(this) : callPair(this, options)
    if (pair === DEFAULT) fast.putSync(this, key, value)
    else fast.putSync(this, encodeKey(pair, key), encodeValue(pair, value))
  }
  tree.putManySync = function putManySync(entries, options) {
    const pair = callPair(this, options)
    const encoded = pair === DEFAULT || !Array.isArray(entries) ? entries : entries.map((e) => encodeEntry(pair, e))
    native.putManySync.call(this, encoded)
  }
  tree.delete = function del(key, options) {
    try {
      return native.delete.call(this, encodeKey(callPair(this, options), key))
    } catch (e) {
      return Promise.reject(e)
    }
  }
  tree.deleteSync = function deleteSync(key, options) {
    return native.deleteSync.call(this, encodeKey(callPair(this, options), key))
  }
  tree.putFile = function putFile(key, path, options) {
    try {
      return native.putFile.call(this, encodeKey(callPair(this, options), key), path)
    } catch (e) {
      return Promise.reject(e)
    }
  }
  tree.transaction = function transaction(fn) {
    try {
      return native.transaction.call(this, withEncodings(this, fn))
    } catch (e) {
      return Promise.reject(e)
    }
  }
  tree.transactionSync = function transactionSync(fn) {
    return native.transactionSync.call(this, withEncodings(this, fn))
  }

  const txn = Txn.prototype
  txn.put = function put(key, value, options) {
    const pair = options === undefined ? encOf(this) : callPair(this, options)
    if (pair === DEFAULT) fast.txnPut(this, key, value)
    else fast.txnPut(this, encodeKey(pair, key), encodeValue(pair, value))
  }
  txn.delete = function del(key, options) {
    return native.txnDelete.call(this, encodeKey(callPair(this, options), key))
  }
}

module.exports = { addWrites }
