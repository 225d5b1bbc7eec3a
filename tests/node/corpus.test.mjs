// The golden corpus through the Node package's public API: every valid case
// reads back exactly its expected JSON, every invalid case fails with its
// code, every range query yields exactly its keys or fails with its code,
// on the store and on a bitable of its pairs (tests/corpus/README.md). The corpus is found through CORPUS_DIR, else relative to this file
// (never the cwd); a missing corpus is a failure, never a skip.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import os from 'node:os'
import { Bitable, BitableWriter, ObjectStore, Tree } from '../../bindings/node/index.js'

const code = (c) => (e) => {
  assert.ok(e instanceof Error, `not an Error: ${e}`)
  assert.equal(e.code, c, e.message)
  return true
}

const here = path.dirname(fileURLToPath(import.meta.url))
const dir = process.env.CORPUS_DIR ? path.resolve(process.env.CORPUS_DIR) : path.join(here, '..', 'corpus')

// Opens read-only without a memory map and reads every entry whole, in key order.
function readCase(file) {
  const tree = Tree.open(file, { readonly: true, mmap: false })
  try {
    const entries = []
    for (const [k, v] of tree.range()) entries.push([k.toString('hex'), v.toString('hex')])
    return {
      kind: 'store',
      format_version: tree.formatVersion,
      page_size: tree.pageSize,
      count: tree.count(),
      entries,
    }
  } finally {
    tree.close()
  }
}

// Walks one section of the manifest: each valid case read through
// `read(file, expected, case)` equals its expected JSON, each invalid case fails with its code, and at
// least `min` of each kind ran.
async function walkCases(t, section, read, min) {
  const manifestPath = path.join(dir, 'manifest.json')
  assert.ok(fs.existsSync(manifestPath), `corpus manifest missing at ${manifestPath}`)
  const cases = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))[section]
  assert.ok(Array.isArray(cases), `${section} missing from the corpus manifest`)
  let valid = 0
  let invalid = 0
  for (const c of cases) {
    await t.test(c.id, () => {
      const file = path.join(dir, c.file)
      if (c.expect) {
        const want = JSON.parse(fs.readFileSync(path.join(dir, c.expect), 'utf8'))
        assert.deepStrictEqual(read(file, want, c), want, `${c.id}: content differs from ${c.expect}`)
        valid++
      } else {
        assert.ok(c.error, `${c.id}: a case needs expect or error`)
        assert.throws(() => read(file, undefined, c), code(c.error), `${c.id}: read without error, expected ${c.error}`)
        invalid++
      }
    })
  }
  assert.ok(valid >= min.valid && invalid >= min.invalid, `${section}: ${valid} valid and ${invalid} invalid cases ran`)
}

test('every corpus case reads as expected', (t) => walkCases(t, 'cases', readCase, { valid: 5, invalid: 15 }))

// Key options are hex in the queries file; other values go through as they are.
const KEY_OPTIONS = new Set(['gt', 'gte', 'lt', 'lte', 'prefix'])
const options = (request) =>
  Object.fromEntries(Object.entries(request).map(([k, v]) => [k, KEY_OPTIONS.has(k) ? Buffer.from(v, 'hex') : v]))

test('every corpus range query yields its keys or its error', async (t) => {
  const cases = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).cases
  let ran = 0
  for (const c of cases.filter((c) => c.queries)) {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, c.queries), 'utf8'))
    assert.equal(doc.case, c.id, `${c.queries} names another case`)
    const values = new Map(JSON.parse(fs.readFileSync(path.join(dir, c.expect), 'utf8')).entries)
    const tree = Tree.open(path.join(dir, c.file), { readonly: true, mmap: false })
    try {
      for (const q of doc.queries) {
        await t.test(`${c.id}/${q.id}`, async () => {
          const o = options(q.request)
          if (q.error) {
            for (const call of [() => tree.keys(o), () => tree.range(o)]) assert.throws(call, code(q.error))
            return
          }
          assert.deepEqual([...tree.keys(o)].map((k) => k.toString('hex')), q.keys)
          const entries = []
          for await (const [k, v] of tree.range(o)) entries.push([k.toString('hex'), v.toString('hex')])
          assert.deepEqual(entries, q.keys.map((k) => [k, values.get(k)]))
        })
        ran++
      }
    } finally {
      tree.close()
    }
  }
  assert.ok(ran > 0, 'no range queries ran')
})

test('every corpus range query gives the same keys on a bitable of the store', async (t) => {
  const cases = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).cases
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bale-node-corpus-'))
  let ran = 0
  try {
    for (const c of cases.filter((c) => c.queries)) {
      const doc = JSON.parse(fs.readFileSync(path.join(dir, c.queries), 'utf8'))
      const tree = Tree.open(path.join(dir, c.file), { readonly: true, mmap: false })
      const file = path.join(tmp, `${c.id}.bitable`)
      const w = BitableWriter.create(file)
      w.appendTreeSync(tree)
      w.finishSync({ durable: false })
      tree.close()
      const table = Bitable.openSync(file)
      try {
        for (const q of doc.queries) {
          await t.test(`${c.id}/${q.id}`, async () => {
            const o = options(q.request)
            if (q.error) {
              for (const call of [() => table.keys(o), () => table.range(o)]) assert.throws(call, code(q.error))
              return
            }
            assert.deepEqual([...table.keys(o)].map((k) => k.toString('hex')), q.keys)
            const keys = []
            for await (const [k] of table.range(o)) keys.push(k.toString('hex'))
            assert.deepEqual(keys, q.keys)
          })
          ran++
        }
      } finally {
        // Windows cannot delete the file while the table is open.
        table.close()
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  assert.ok(ran > 0, 'no range queries ran')
})

// Bitable cases (`bitable_cases`): opened read-only without a map, every
// pair read in key order, every key looked up again, and the probes of the
// expected document answered.
function readBitableCase(file, want) {
  const t = Bitable.openSync(file, { mmap: false })
  try {
    const pairs = t.range().toArray()
    for (const [k, v] of pairs) assert.deepEqual(t.getSync(k), v)
    const probes = (want?.probes ?? []).map((p) => {
      const key = Buffer.from(p.key, 'hex')
      const lower = t.lowerBound(key).key
      return { found: t.has(key), key: p.key, lower_bound: lower === undefined ? null : lower.toString('hex'), rank: t.rank(key) }
    })
    const s = t.stats()
    return {
      align: s.align,
      count: t.count,
      entries: pairs.map(([k, v]) => [k.toString('hex'), v.toString('hex')]),
      format_version: t.formatVersion,
      kind: 'bitable',
      page_size: s.pageSize,
      probes,
    }
  } finally {
    t.close()
  }
}

test('every bitable corpus case reads as expected', (t) =>
  walkCases(t, 'bitable_cases', readBitableCase, { valid: 7, invalid: 14 }))

// Object store cases (`object_cases`): opened read-only, ids in order, each
// object read whole and verified against its id.
function readObjectsCase(file) {
  const s = ObjectStore.open(file, { readonly: true })
  try {
    const objects = s.idsSync().map((id) => [id, s.getSync(id, { verify: true }).toString('hex')])
    return {
      kind: 'objects',
      format_version: s.formatVersion,
      hash: s.hash,
      single_file: s.singleFile,
      count: objects.length,
      objects,
    }
  } finally {
    s.close()
  }
}

test('every object store corpus case reads as expected', (t) =>
  walkCases(t, 'object_cases', readObjectsCase, { valid: 5, invalid: 10 }))

// Remote cases (`remote_cases`): the folder (the files the manifest lists)
// copied, as a folder bucket keeps working files beside its keys; a new
// store of the remote's hash connected to the copy by a file:// URL; every
// object pulled, the ids listed in order, each object read whole and
// verified against its id.
function readRemoteCase(folder, _want, c) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bale-node-remote-'))
  try {
    const bucket = path.join(tmp, 'bucket')
    for (const f of c.files) {
      fs.mkdirSync(path.dirname(path.join(bucket, f)), { recursive: true })
      fs.copyFileSync(path.join(folder, f), path.join(bucket, f))
    }
    const s = ObjectStore.open(path.join(tmp, 'store'), { create: true, hash: c.hash })
    try {
      s.connectRemoteSync('corpus', pathToFileURL(bucket).href)
      const pulled = s.pullSync('corpus')
      const info = s.remoteInfoSync('corpus')
      const objects = s.idsSync().map((id) => [id, s.getSync(id, { verify: true }).toString('hex')])
      assert.equal(info.objects, objects.length)
      return {
        kind: 'remote',
        hash: info.hash,
        generation: pulled.generation,
        packs: info.packs,
        count: objects.length,
        objects,
      }
    } finally {
      s.close()
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

test('every remote corpus case reads as expected', (t) =>
  walkCases(t, 'remote_cases', readRemoteCase, { valid: 4, invalid: 15 }))
