// A second process: its commits become visible here while we read, and two
// writers collide with LOCKED (or wait, when opened with `wait: true`).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Tree } from '../../bindings/node/index.js'
import { tmpDir, tmpStore, nextTurn } from './helpers/tmp.mjs'

const dir = tmpDir('process')
const child = fileURLToPath(new URL('./helpers/child.mjs', import.meta.url))

function start(...args) {
  const p = spawn(process.execPath, [child, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  const waiters = []
  p.stdout.on('data', (d) => {
    out += d
    for (const w of waiters.splice(0)) w()
  })
  const exited = new Promise((resolve) => p.on('exit', resolve))
  const line = async (text) => {
    while (!out.includes(text)) {
      const code = await Promise.race([new Promise((resolve) => waiters.push(resolve)).then(() => null), exited])
      if (code !== null && !out.includes(text)) throw new Error(`child exited with ${code} before "${text}"`)
    }
  }
  return { p, line, exited }
}

test('a second process writes while this one reads', async () => {
  const file = tmpStore(dir)
  const t = Tree.open(file, { create: true })
  const c = start('write', file, '200')
  let last = 0
  let changes = 0
  while (last < 200) {
    const n = [...t.keys({ prefix: 'child/' })].length
    assert.ok(n >= last, 'commits never go back')
    if (n !== last) changes++
    last = n
    if (n < 200) await nextTurn()
  }
  await c.line('done 200')
  assert.equal(await c.exited, 0)
  assert.ok(changes >= 2, `saw ${changes} changes`)
  assert.equal(t.get('child/00199').toString(), 'value 199')
  assert.equal(t.check().ok, true)
  t.close()
})

test('two writers collide: LOCKED, or wait with { wait: true }', async () => {
  const file = tmpStore(dir)
  Tree.open(file, { create: true }).close()
  const c = start('hold', file)
  await c.line('holding')
  const t = Tree.open(file)
  assert.throws(() => t.putSync('mine', '1'), (e) => e.code === 'LOCKED')
  await assert.rejects(t.put('mine', '1'), (e) => e.code === 'LOCKED')
  await assert.rejects(t.transaction(() => 1), (e) => e.code === 'LOCKED')
  assert.equal(t.get('held'), undefined, 'the child has not committed')
  const waiting = Tree.open(file, { wait: true })
  let resolved = false
  let ran = false
  const tx = waiting.transaction((txn) => {
    ran = true
    txn.put('waited-txn', 'yes')
    return 'ran'
  })
  const put = waiting.put('waited', 'yes').then(() => { resolved = true })
  // The waits happen on the thread pool: this thread keeps running timers.
  let ticks = 0
  const timer = setInterval(() => ticks++, 20)
  await new Promise((resolve) => setTimeout(resolve, 200))
  clearInterval(timer)
  assert.ok(ticks >= 3, `only ${ticks} timer ticks while waiting`)
  assert.equal(resolved, false, 'the waiting put holds until the child commits')
  assert.equal(ran, false, 'the waiting transaction holds until the child commits')
  c.p.stdin.end('go\n')
  await put
  assert.equal(await tx, 'ran')
  await c.line('released')
  assert.equal(await c.exited, 0)
  t.refresh()
  assert.equal(t.get('held').toString(), 'by child')
  assert.equal(t.get('waited').toString(), 'yes')
  assert.equal(t.get('waited-txn').toString(), 'yes')
  await t.put('mine', '2')
  waiting.close()
  t.close()
})
