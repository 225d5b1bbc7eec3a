// The golden corpus through the Node package's public API: every valid case
// reads back exactly its expected JSON, every invalid case fails with its
// code, every range query yields exactly its keys or fails with its code
// (tests/corpus/README.md). The corpus is found through CORPUS_DIR, else relative to this file
// (never the cwd); a missing corpus is a failure, never a skip.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ObjectStore, Tree } from '../../bindings/node/index.js'

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

test('every corpus case reads as expected', async (t) => {
  const manifestPath = path.join(dir, 'manifest.json')
  assert.ok(fs.existsSync(manifestPath), `corpus manifest missing at ${manifestPath}`)
  const cases = JSON.parse(fs.readFileSync(manifestPath, 'utf8')).cases
  assert.ok(cases.length >= 20, `only ${cases.length} corpus cases`)
  let valid = 0
  let invalid = 0
  for (const c of cases) {
    await t.test(c.id, () => {
      const file = path.join(dir, c.file)
      if (c.expect) {
        const want = JSON.parse(fs.readFileSync(path.join(dir, c.expect), 'utf8'))
        assert.deepStrictEqual(readCase(file), want, `${c.id}: content differs from ${c.expect}`)
        valid++
      } else {
        assert.ok(c.error, `${c.id}: a case needs expect or error`)
        assert.throws(() => readCase(file), (e) => {
          assert.ok(e instanceof Error, `${c.id}: not an Error: ${e}`)
          assert.equal(e.code, c.error, `${c.id}: ${e.message}`)
          return true
        }, `${c.id}: read without error, expected ${c.error}`)
        invalid++
      }
    })
  }
  assert.ok(valid > 0 && invalid > 0, `${valid} valid and ${invalid} invalid cases ran`)
})

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

test('every object store corpus case reads as expected', async (t) => {
  const cases = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).object_cases
  assert.ok(Array.isArray(cases) && cases.length >= 15, 'object_cases missing from the corpus manifest')
  let valid = 0
  let invalid = 0
  for (const c of cases) {
    await t.test(c.id, () => {
      const file = path.join(dir, c.file)
      if (c.expect) {
        const want = JSON.parse(fs.readFileSync(path.join(dir, c.expect), 'utf8'))
        assert.deepEqual(readObjectsCase(file), want)
        valid++
      } else {
        assert.throws(() => readObjectsCase(file), code(c.error))
        invalid++
      }
    })
  }
  assert.ok(valid >= 5 && invalid >= 10, `${valid} valid and ${invalid} invalid object store cases ran`)
})
