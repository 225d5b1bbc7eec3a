// A worker_threads body for workers.test.mjs: `writer` commits ROUNDS
// transactions, each adding one key k/<i> and setting n = i + 1; `reader`
// checks, on every snapshot it sees, that n and the k/ keys agree.
import { parentPort, workerData } from 'node:worker_threads'
import { Tree } from '../../../bindings/node/index.js'

const { role, file, rounds } = workerData
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
const key = (i) => `k/${String(i).padStart(6, '0')}`

if (role === 'writer') {
  const tree = Tree.open(file)
  for (let i = 0; i < rounds; i++) {
    await tree.transaction((txn) => {
      txn.put(key(i), Buffer.alloc(1 + (i % 300), i % 256))
      txn.put('n', String(i + 1))
    })
    if (i % 10 === 0) tree.putSync(`sync/${i}`, 'x')
  }
  tree.close()
  parentPort.postMessage({ role, done: rounds })
} else if (role === 'reader') {
  const tree = Tree.open(file, { readonly: true })
  parentPort.postMessage({ role, ready: true })
  let seen = 0
  let snapshots = 0
  const values = new Set()
  while (seen < rounds) {
    const n = Number(tree.get('n')?.toString() ?? 0)
    if (n < seen) throw new Error(`n went back from ${seen} to ${n}`)
    let count = 0
    for (const [k, v] of tree.range({ prefix: 'k/' })) {
      if (k.toString() !== key(count)) throw new Error(`unexpected key ${k} at ${count}`)
      if (v.length !== 1 + (count % 300) || v[0] !== count % 256) throw new Error(`bad value under ${k}`)
      count++
    }
    if (count !== n) throw new Error(`snapshot with n=${n} holds ${count} keys`)
    values.add(n)
    seen = n
    snapshots++
    await nextTurn()
  }
  tree.close()
  parentPort.postMessage({ role, snapshots, distinct: values.size })
} else if (role === 'spinner') {
  // Writes until terminated from outside.
  const tree = Tree.open(file)
  parentPort.postMessage({ role, started: true })
  for (let i = 0; ; i++) {
    tree.put(`spin/${i % 500}`, Buffer.alloc(100, i % 256))
    if (i % 50 === 0) await tree.flushed()
  }
}
