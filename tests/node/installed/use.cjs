// Run by packages.test.mjs inside a fresh project that installed bale from
// its tarballs: uses the package through require as such a project does (a
// tree store and a bitable written and read back, then the golden corpus's
// tree and bitable cases) and prints what it saw as JSON.
'use strict'
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { open, Tree, Bitable, BitableWriter, errorCodes } = require('bale')

const corpus = process.argv[2]
const hex = (b) => b.toString('hex')

// Each valid case's pairs equal its expected JSON; each invalid one fails
// with its code. Returns how many cases ran.
function walk(cases, read) {
  for (const c of cases) {
    const file = path.join(corpus, c.file)
    if (c.expect) {
      const want = JSON.parse(fs.readFileSync(path.join(corpus, c.expect), 'utf8'))
      const got = read(file)
      assert.equal(got.count, want.count, c.id)
      assert.deepEqual(got.entries, want.entries, c.id)
    } else {
      assert.throws(() => read(file), (e) => e.code === c.error, `${c.id}: expected ${c.error}`)
    }
  }
  return cases.length
}

function readTree(file) {
  const t = Tree.open(file, { readonly: true, mmap: false })
  try {
    return { count: t.count(), entries: t.range().toArray().map(([k, v]) => [hex(k), hex(v)]) }
  } finally {
    t.close()
  }
}

function readBitable(file) {
  const t = Bitable.openSync(file, { mmap: false })
  try {
    const entries = t.range().toArray()
    for (const [k, v] of entries) assert.deepEqual(t.getSync(k), v)
    return { count: t.count, entries: entries.map(([k, v]) => [hex(k), hex(v)]) }
  } finally {
    t.close()
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bale-installed-'))
  try {
    const file = path.join(dir, 'assets.bale')
    const tree = open(file, { create: true, keyEncoding: 'utf8', valueEncoding: 'json' })
    await tree.put('asset/1', { name: 'tree.png' })
    tree.putSync('asset/2', { name: 'rock.png' })
    await tree.transaction((txn) => txn.put('asset/3', { name: 'sky.png' }))
    tree.close()
    const again = open(file, { readonly: true, keyEncoding: 'utf8', valueEncoding: 'json' })
    const treeRead = { value: again.get('asset/2'), keys: [...again.keys({ prefix: 'asset/' })] }
    again.close()

    const table = path.join(dir, 'assets.bitable')
    const w = BitableWriter.create(table)
    for (let i = 0; i < 1000; i++) w.append(`key/${String(i).padStart(4, '0')}`, `value ${i}`)
    await w.finish()
    const t = await Bitable.open(table)
    const bitableRead = { count: t.count, value: t.getSync('key/0421').toString(), rank: t.rank('key/0500') }
    t.close()

    const manifest = JSON.parse(fs.readFileSync(path.join(corpus, 'manifest.json'), 'utf8'))
    const treeCases = walk(manifest.cases, readTree)
    const bitableCases = walk(manifest.bitable_cases, readBitable)
    const addons = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
    console.log(JSON.stringify({ addons, treeRead, bitableRead, treeCases, bitableCases, codes: errorCodes().length }))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
