// worker_threads: the addon loads in several workers at once, readers in
// workers see consistent snapshots while a writer worker commits, and a
// worker terminated while writing leaves a sound store behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { Tree } from '../../bindings/node/index.js'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const dir = tmpDir('workers')
const script = new URL('./helpers/worker.mjs', import.meta.url)

// Starts a worker; `ready` resolves on its first message, `done` with its last.
function run(workerData) {
  let ready
  const readyP = new Promise((resolve) => { ready = resolve })
  const done = new Promise((resolve, reject) => {
    const w = new Worker(script, { workerData })
    let result
    w.on('message', (m) => {
      ready()
      result = m
    })
    w.on('error', reject)
    w.on('exit', (c) => (c === 0 && result ? resolve(result) : reject(new Error(`worker exited with ${c}`))))
  })
  return { ready: readyP, done }
}

test('several workers read consistent snapshots while one writes', async () => {
  const file = tmpStore(dir)
  Tree.open(file, { create: true }).close()
  const rounds = 300
  const readers = [1, 2, 3].map(() => run({ role: 'reader', file, rounds }))
  await Promise.all(readers.map((r) => r.ready))
  const writer = run({ role: 'writer', file, rounds })
  const results = await Promise.all([writer.done, ...readers.map((r) => r.done)])
  assert.equal(results[0].done, rounds)
  // Each reader saw the store at several points of the write sequence.
  for (const r of results.slice(1)) assert.ok(r.distinct >= 3, JSON.stringify(r))
  const t = Tree.open(file, { readonly: true })
  assert.equal(t.get('n').toString(), String(rounds))
  assert.equal([...t.keys({ prefix: 'k/' })].length, rounds)
  assert.equal([...t.keys({ prefix: 'sync/' })].length, rounds / 10)
  assert.equal(t.check().ok, true)
  t.close()
})

test('terminating a worker mid-write leaves a sound store', async () => {
  const file = tmpStore(dir)
  Tree.open(file, { create: true }).close()
  const w = new Worker(script, { workerData: { role: 'spinner', file } })
  await new Promise((resolve, reject) => {
    w.once('message', resolve)
    w.once('error', reject)
  })
  await new Promise((resolve) => setTimeout(resolve, 150))
  await w.terminate()
  const t = Tree.open(file)
  assert.equal(t.check().ok, true)
  await t.put('after', 'ok')
  assert.equal(t.get('after').toString(), 'ok')
  t.close()
})
