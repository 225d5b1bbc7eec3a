// worker_threads bodies for objects.test.mjs.
//   add:  opens its own ObjectStore handle on `dir` and adds `count`
//         objects (async, sync and streamed by turns), posting each id
//   hold: opens the single-file store `file` as a Tree and holds its writer
//         lock inside a transaction until `flag[0]` becomes 1
import { parentPort, workerData } from 'node:worker_threads'
import { Readable } from 'node:stream'
import { ObjectStore, Tree } from '../../../bindings/node/index.js'
import { content } from './objects-data.mjs'

const { role } = workerData
if (role === 'add') {
  const { dir, tag, count } = workerData
  const store = ObjectStore.open(dir)
  for (let i = 0; i < count; i++) {
    const data = content(tag, i)
    let id
    if (i % 3 === 0) id = await store.add(data)
    else if (i % 3 === 1) id = store.addSync(data)
    else id = await store.addStream(Readable.from([data.subarray(0, 5), data.subarray(5)]))
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
