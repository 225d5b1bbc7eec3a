// Bitables from Node against lmdb-js: build N sorted pairs (24-byte keys,
// 8-byte values, the Bitable paper's shape), then N random point lookups
// in one thread, each value touched; prints one JSON line.
//
// usage: node bitable_bench.mjs ENGINE WORK [PAIRS]
//
// ENGINE:
//   bale      BitableWriter.append + finishSync({durable: false}),
//             Bitable.openSync + getSync (a Buffer per value)
//   bale-into the same build, getInto (one reused buffer)
//   lmdb-js   one transactionSync of putSync (its default sync at commit),
//             then getBinary (a Buffer per value) in the same read txn
//   lmdb-js-fast  the same data, getBinaryFast (one reused buffer)
// Keys are made by a seeded generator before any clock starts.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const [engine, work, pairsArg] = process.argv.slice(2)
const n = Number(pairsArg || 2_000_000)

// xorshift64*: deterministic bytes without a dependency.
let s = 0x2545f4914f6cdd1dn
const next = () => {
  s ^= s >> 12n
  s ^= (s << 25n) & 0xffffffffffffffffn
  s ^= s >> 27n
  return (s * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn
}
const step = (1n << 64n) / BigInt(n)
const keys = new Array(n)
const values = new Array(n)
for (let i = 0; i < n; i++) {
  const k = Buffer.alloc(24)
  k.writeBigUInt64BE(BigInt(i) * step, 0)
  k.writeBigUInt64LE(next(), 8)
  k.writeBigUInt64LE(next(), 16)
  keys[i] = k
  const v = Buffer.alloc(8)
  v.writeBigUInt64LE(BigInt(i), 0)
  values[i] = v
}
const order = Array.from({ length: n }, () => keys[Number(next() % BigInt(n))])

fs.rmSync(work, { recursive: true, force: true })
fs.mkdirSync(work, { recursive: true })
let build, lookup, cs = 0, size
if (engine === 'bale' || engine === 'bale-into') {
  const { Bitable, BitableWriter } = require('../../bindings/node/index.js')
  const file = path.join(work, 't.bitable')
  let t0 = performance.now()
  const w = BitableWriter.create(file)
  for (let i = 0; i < n; i++) w.append(keys[i], values[i])
  w.finishSync({ durable: false })
  build = (performance.now() - t0) / 1000
  size = fs.statSync(file).size
  const t = Bitable.openSync(file)
  const buf = Buffer.alloc(64)
  const get = engine === 'bale' ? (k) => t.getSync(k) : (k) => (t.getInto(k, buf), buf)
  for (let i = 0; i < n / 4; i++) get(order[i])
  t0 = performance.now()
  for (let i = 0; i < n; i++) cs += get(order[i])[0]
  lookup = (performance.now() - t0) / 1000
  t.close()
} else if (engine === 'lmdb-js' || engine === 'lmdb-js-fast') {
  const { open } = require('lmdb')
  const dir = path.join(work, 'lmdb')
  let t0 = performance.now()
  const db = open({ path: dir, encoding: 'binary', keyEncoding: 'binary', mapSize: Math.max(1 << 30, n * 100) })
  db.transactionSync(() => {
    for (let i = 0; i < n; i++) db.putSync(keys[i], values[i])
  })
  build = (performance.now() - t0) / 1000
  size = fs.statSync(dir).isDirectory() ? fs.statSync(path.join(dir, 'data.mdb')).size : fs.statSync(dir).size
  const get = engine === 'lmdb-js' ? (k) => db.getBinary(k) : (k) => db.getBinaryFast(k)
  for (let i = 0; i < n / 4; i++) get(order[i])
  t0 = performance.now()
  for (let i = 0; i < n; i++) cs += get(order[i])[0]
  lookup = (performance.now() - t0) / 1000
  await db.close()
} else {
  console.error(`unknown engine ${engine} (bale, bale-into, lmdb-js, lmdb-js-fast)`)
  process.exit(2)
}
fs.rmSync(work, { recursive: true, force: true })
console.log(JSON.stringify({
  engine: `node-${engine}`,
  workload: 'bt-node',
  pairs: n,
  build_s: Number(build.toFixed(4)),
  pairs_per_s: Math.round(n / build),
  lookups: n,
  lookup_s: Number(lookup.toFixed(4)),
  lookups_per_s: Math.round(n / lookup),
  file_bytes: size,
  checksum: cs,
}))
