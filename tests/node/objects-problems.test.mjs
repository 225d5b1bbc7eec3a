// The problems of pack(), repack() and rebuildIndex() reports are typed
// ({ id, file, code, message }), as validate()'s are: a damaged staging
// file is left in place and named, and a rebuild names the file it skips.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ObjectStore } from '../../bindings/node/index.js'
import { tmpDir } from './helpers/tmp.mjs'

const dir = tmpDir('objects-problems')
let n = 0
const codes = new Set(['CORRUPT', 'CHECKSUM_MISMATCH', 'UNSUPPORTED_VERSION', 'NOT_A_BALE_FILE'])

// Flips a bit inside the file header of `file`.
function damageHeader(file) {
  const bytes = fs.readFileSync(file)
  bytes[30] ^= 4
  fs.writeFileSync(file, bytes)
}

test('pack names a damaged staging file it leaves in place', async () => {
  const p = path.join(dir, `store-${++n}`)
  const w = ObjectStore.open(p, { create: true })
  w.addSync('staged')
  w.close()
  const [name] = fs.readdirSync(path.join(p, 'staging'))
  damageHeader(path.join(p, 'staging', name))
  const s = ObjectStore.open(p)
  const r = await s.pack()
  assert.equal(r.problems.length, 1, JSON.stringify(r))
  const [problem] = r.problems
  assert.equal(problem.file, `staging/${name}`)
  assert.equal(problem.id, undefined)
  assert.ok(codes.has(problem.code), problem.code)
  assert.match(problem.message, /left in place/)
  assert.ok(fs.existsSync(path.join(p, 'staging', name)))
  s.close()
})

test('rebuildIndex names the pack whose damaged header it writes anew, and keeps its records', async () => {
  const p = path.join(dir, `store-${++n}`)
  const w = ObjectStore.open(p, { create: true })
  const id = w.addSync('packed')
  w.packSync()
  w.close()
  damageHeader(path.join(p, 'packs', '0.pack'))
  fs.rmSync(path.join(p, 'index'))
  const s = ObjectStore.open(p, { repair: true })
  const r = s.rebuildIndexSync()
  assert.deepEqual(
    r.problems.map((x) => [x.file, x.id]),
    [['packs/0.pack', undefined]],
    JSON.stringify(r),
  )
  assert.ok(codes.has(r.problems[0].code), r.problems[0].code)
  assert.equal(r.objects, 1)
  assert.equal(s.getSync(id).toString(), 'packed')
  s.close()
})

// Zeroes the index's meta slot of its newest commit: it falls back to the
// commit before.
function zeroNewestMeta(file) {
  const bytes = fs.readFileSync(file)
  const txn = (p) => bytes.readBigUInt64LE(p * 4096 + 8)
  const page = txn(2) > txn(1) ? 2 : 1
  bytes.fill(0, page * 4096, (page + 1) * 4096)
  fs.writeFileSync(file, bytes)
}

test('a store whose index fell back says so, and validate reports it', async () => {
  const p = path.join(dir, `store-${++n}`)
  const w = ObjectStore.open(p, { create: true })
  const first = w.addSync('an early object')
  const last = w.addSync("the newest commit's object")
  w.close()
  zeroNewestMeta(path.join(p, 'index'))
  const s = ObjectStore.open(p)
  assert.match(s.indexWarning, /rebuild-index/)
  assert.equal(s.hasSync(first), true)
  assert.equal(s.hasSync(last), false)
  const v = s.validateSync()
  assert.equal(v.ok, false)
  assert.equal(v.problems[0].code, 'CORRUPT')
  assert.equal(v.unindexedObjects, 1)
  // The lost object's staging file is kept, and nothing that removes
  // records runs, until the rebuild.
  assert.equal(s.packSync().filesKept, 1)
  assert.throws(() => s.cleanSync(), { code: 'CORRUPT', message: /clean refused/ })
  let rebuilt = true
  try {
    s.rebuildIndexSync()
  } catch (e) {
    // Windows without POSIX rename semantics (and Wine) cannot replace the
    // index while it is open (FORMAT.md, "Windows").
    assert.equal(process.platform, 'win32', e.message)
    assert.equal(e.code, 'IO')
    rebuilt = false
  }
  if (rebuilt) {
    assert.equal(s.indexWarning, null)
    assert.equal(s.hasSync(last), true)
  }
  s.close()
  const fine = ObjectStore.open(path.join(dir, `store-${++n}`), { create: true })
  assert.equal(fine.indexWarning, null)
  fine.close()
})
