// ObjectStore.importDos / importDosSync: the golden disk-objectstore
// container (tests/corpus/dos, written by disk-objectstore itself) imported
// whole, twice, and damaged copies of it refused with typed errors. The
// corpus is found through CORPUS_DIR, else relative to this file.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { ObjectStore } from '../../bindings/node/index.js'
import { code } from './helpers/codes.mjs'
import { tmpDir } from './helpers/tmp.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const corpus = process.env.CORPUS_DIR ? path.resolve(process.env.CORPUS_DIR) : path.join(here, '..', 'corpus')
const golden = path.join(corpus, 'dos')
const dir = tmpDir('objects-dos')
let n = 0
const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex')
const expected = () => {
  const doc = JSON.parse(fs.readFileSync(path.join(golden, 'objects.json'), 'utf8'))
  assert.equal(doc.objects.length, doc.count)
  assert.ok(doc.objects.some((o) => o.size === 0), 'the golden container has an empty object')
  return doc
}
// A copy: SQLite leaves files beside the index it opens, and some tests
// damage the copy.
const copy = () => {
  const from = path.join(golden, 'container')
  assert.ok(fs.existsSync(path.join(from, 'config.json')), `golden container missing at ${from}`)
  const to = path.join(dir, `container-${++n}`)
  fs.cpSync(from, to, { recursive: true })
  return to
}
const store = (opts = {}) => ObjectStore.open(path.join(dir, `store-${++n}`), { create: true, ...opts })

for (const [form, run] of [
  ['async', (s, p) => s.importDos(p)],
  ['sync', async (s, p) => s.importDosSync(p)],
]) {
  test(`importDos (${form}) brings every object with its bytes, and twice nothing new`, async () => {
    const doc = expected()
    const c = copy()
    const s = store({ hash: 'sha256' })
    // The object both loose and packed counts once.
    assert.deepEqual(await run(s, c), { objectsCopied: doc.count, bytesCopied: doc.bytes, objectsPresent: 0 })
    for (const o of doc.objects) {
      const data = s.getSync(o.id, { verify: true })
      assert.equal(data.length, o.size, o.id)
      assert.equal(sha256(data), o.id)
    }
    assert.deepEqual(s.idsSync().sort(), doc.objects.map((o) => o.id).sort())
    assert.deepEqual(await run(s, c), { objectsCopied: 0, bytesCopied: 0, objectsPresent: doc.count })
    s.close()
  })
}

test('importDos refuses a damaged container with typed errors', async () => {
  const s = store({ hash: 'sha256' })
  const c = copy()
  const pack = path.join(c, 'packs', '0')
  const whole = fs.readFileSync(pack)
  fs.writeFileSync(pack, whole.subarray(0, whole.length - 100))
  await assert.rejects(s.importDos(c), code('CORRUPT'))
  assert.throws(() => s.importDosSync(c), code('CORRUPT'))
  fs.writeFileSync(pack, whole)

  const idx = path.join(c, 'packs.idx')
  const good = fs.readFileSync(idx)
  fs.writeFileSync(idx, Buffer.concat([Buffer.from('not a database!!'), good.subarray(16)]))
  await assert.rejects(s.importDos(c), code('CORRUPT'))
  fs.writeFileSync(idx, good)

  await assert.rejects(s.importDos(path.join(dir, 'nothing')), code('NOT_FOUND'))
  await assert.rejects(s.importDos(42), code('INVALID_ARGUMENT'))
  assert.equal(s.idsSync().length, 0, 'a failed import commits nothing')
  assert.equal((await s.importDos(c)).objectsCopied, expected().count)
  s.close()
  await assert.rejects(s.importDos(c), code('CLOSED'))
})
