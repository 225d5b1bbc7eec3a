// ObjectStore.getMany (an async iterator, each object read on the thread
// pool when reached) and getManySync (a plain iterator): on-disk order,
// each id once, missing ids, chunked objects, argument errors, a store
// closed under the iteration, a damaged object, and one object held at a
// time (measured in a child process).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ObjectStore } from '../../bindings/node/index.js'
import { code } from './helpers/codes.mjs'
import { tmpDir } from './helpers/tmp.mjs'
import { pattern, SMALL_CHUNKS } from './helpers/objects-data.mjs'

const dir = tmpDir('objects-get-many')
let n = 0
const fresh = (opts = {}) => ObjectStore.open(path.join(dir, `store-${++n}`), { create: true, ...opts })
const all = async (it) => {
  const out = []
  for await (const x of it) out.push(x)
  return out
}
const FORMS = [
  ['async', (s, ...a) => all(s.getMany(...a))],
  ['sync', async (s, ...a) => [...s.getManySync(...a)]],
]
const missing = crypto.createHash('sha256').update('not stored').digest('hex')

for (const [form, many] of FORMS) {
  test(`getMany (${form}) yields [id, Buffer] in on-disk order, each id once`, async () => {
    const s = fresh({ ...SMALL_CHUNKS })
    const contents = Array.from({ length: 8 }, (_, i) => Buffer.from(`object ${i}`))
    contents.push(pattern(50_000, 3)) // chunked
    const ids = contents.map((c) => s.addSync(c)) // written in this order
    assert.ok(s.metaSync(ids[8]).chunked)
    const asked = [...ids].reverse().concat(ids.slice(0, 3))
    const want = ids.map((id, i) => [id, contents[i]])
    assert.deepEqual(await many(s, asked), want)
    await s.pack()
    assert.deepEqual(await many(s, asked, null), want)
    assert.deepEqual(await many(s, []), [])

    await assert.rejects(many(s, [ids[0], missing]), code('NOT_FOUND'))
    assert.deepEqual(await many(s, [missing, ids[1]], { skipMissing: true }), [[ids[1], contents[1]]])
    s.close()
  })
}

test('getMany checks its arguments', async () => {
  const s = fresh()
  const id = s.addSync('x')
  for (const [ids, options] of [['not an array', null], [[42], null], [[id], { skipMissing: 'yes' }], [[id], { nope: 1 }]]) {
    await assert.rejects(all(s.getMany(ids, options)), code('INVALID_ARGUMENT'))
    assert.throws(() => s.getManySync(ids, options), code('INVALID_ARGUMENT'))
  }
  await assert.rejects(all(s.getMany.call({}, [id])), code('INVALID_ARGUMENT'))
  assert.throws(() => s.getManySync.call({}, [id]), code('INVALID_ARGUMENT'))
  s.close()
})

test('getMany reads one object per step; a closed store ends it with CLOSED', async () => {
  const s = fresh()
  const ids = ['a', 'b', 'c'].map((x) => s.addSync(x))
  const it = s.getMany(ids)
  assert.deepEqual((await it.next()).value, [ids[0], Buffer.from('a')])
  // Steps asked for at once resolve in order.
  const both = s.getMany(ids)
  const [first, second] = await Promise.all([both.next(), both.next()])
  assert.deepEqual([first.value[0], second.value[0]], ids.slice(0, 2))
  const sync = s.getManySync(ids)
  assert.deepEqual(sync.next().value, [ids[0], Buffer.from('a')])
  s.close()
  await assert.rejects(it.next(), code('CLOSED'))
  assert.throws(() => sync.next(), code('CLOSED'))
  // Until ended, an iteration holds the store's files open, and Windows
  // cannot delete an open file.
  for (const i of [it, both, sync]) await i.return()
})

test('leaving the loop early releases the iteration; another goes on', async () => {
  const s = fresh()
  const ids = ['a', 'b', 'c'].map((x) => s.addSync(x))
  for await (const [id] of s.getMany(ids)) {
    assert.equal(id, ids[0])
    break
  }
  for (const [id] of s.getManySync(ids)) {
    assert.equal(id, ids[0])
    break
  }
  assert.equal((await all(s.getMany(ids))).length, 3)
  s.close()
})

test('a damaged object fails its step, and every later one', async () => {
  const p = path.join(dir, `store-${++n}`)
  const s = ObjectStore.open(p, { create: true, compression: 'never' })
  const ids = [0, 1, 2].map((i) => s.addSync(`object number ${i}`))
  await s.pack()
  const it = s.getMany(ids, { skipMissing: true })
  assert.deepEqual((await it.next()).value, [ids[0], Buffer.from('object number 0')])
  const [pack] = fs.readdirSync(path.join(p, 'packs')).filter((f) => f.endsWith('.pack'))
  const file = path.join(p, 'packs', pack)
  const bytes = fs.readFileSync(file)
  bytes[bytes.indexOf('object number 1')] ^= 0x20
  fs.writeFileSync(file, bytes)
  await assert.rejects(it.next(), code('CHECKSUM_MISMATCH'))
  await assert.rejects(it.next(), code('CHECKSUM_MISMATCH'))
  s.close()
})

test('a bulk read holds one object at a time', () => {
  // A fresh process, so that its peak resident size measures this read
  // alone: 48 objects of 2 MiB, each dropped (and collected) in turn.
  const script = `
    const { ObjectStore } = require(${JSON.stringify(fileURLToPath(new URL('../../bindings/node/index.js', import.meta.url)))})
    const crypto = require('node:crypto')
    const s = ObjectStore.open(process.argv[1], { create: true })
    const ids = []
    const buf = Buffer.alloc(2 << 20) // one buffer, new bytes each time
    for (let i = 0; i < 48; i++) ids.push(s.addSync(crypto.randomFillSync(buf)))
    s.packSync()
    globalThis.gc()
    const before = process.resourceUsage().maxRSS
    ;(async () => {
      let n = 0
      for await (const [, data] of s.getMany(ids)) {
        n += data.length
        globalThis.gc()
      }
      if (n !== 48 * (2 << 20)) throw new Error('read ' + n)
      console.log(process.resourceUsage().maxRSS - before)
      s.close()
    })()
  `
  const out = spawnSync(process.execPath, ['--expose-gc', '-e', script, path.join(dir, `big-${++n}`)], {
    encoding: 'utf8',
  })
  assert.equal(out.status, 0, out.stderr)
  const grownKib = Number(out.stdout.trim())
  // All of them at once would be 96 MiB more.
  assert.ok(grownKib < 32 << 10, `the peak grew by ${grownKib} KiB`)
})
