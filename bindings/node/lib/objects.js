'use strict'
// The JS side of ObjectStore (objects.rs): the receiver checks, and the
// refresh of a Tree that `addTree` wrote paths to.

const { ObjectStore, Tree } = require('../binding.js')
const { guardReceivers } = require('./args.js')

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
}

module.exports = { addObjects }
