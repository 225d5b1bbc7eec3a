// worker_threads bodies for objects.test.mjs.
//   add:  opens its own ObjectStore handle on `dir` and adds `count`
//         objects (async and sync by turns), posting each id
//   hold: opens the single-file store `file` as a Tree and holds its writer
//         lock inside a transaction until `flag[0]` becomes 1
import { parentPort, workerData } from 'node:worker_threads'
import { ObjectStore, Tree } from '../../../bindings/node/index.js'
import { content } from './objects-data.mjs'

const { role } = workerData
if (role === 'add') {
  const { dir, tag, count } = workerData
  const store = ObjectStore.open(dir)
  for (let i = 0; i < count; i++) {
    const data = content(tag, i)
    const id = i % 2 === 0 ? await store.add(data) : store.addSync(data)
    parentPort.postMessage({ i, id })
  }
  store.close()
  parentPort.postMessage({ done: count })
} else if (role === 'hold') {
  const { file, flag } = workerData
  const tree = Tree.open(file)
  tree.transactionSync((txn) => {
    txn.put('held', 'by a worker')
    parentPort.postMessage('holding')
    Atomics.wait(flag, 0, 0)
  })
  tree.close()
  parentPort.postMessage('released')
}
