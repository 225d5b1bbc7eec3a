// W1 (bulk load), W2 (1M random gets), W3 (full ordered scan) for the bale
// Node package and its Node peers, one engine per process, same contract as
// the peer benchmark's kv_bench.mjs (/work/shared/peers): inputs are Buffer
// views of kv.bin / order.bin made before the clock starts; W1 runs from
// open/create through the durable commit and close; W2 reopens and does the
// gets in order.bin order in one read transaction; W3 scans everything in
// key order in that same transaction; every value is touched.
//
// usage: node kv_bench.mjs ENGINE DATADIR WORKDIR
// ENGINE: bale | bale-async | bale-putmany | lmdb-js | lmdb-js-async | better-sqlite3
// Prints one JSON line. lmdb and better-sqlite3 come from bench/node/package.json.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const KL = 16
const VL = 100
const RL = KL + VL
const [engine, datadir, work] = process.argv.slice(2)
const buf = fs.readFileSync(path.join(datadir, 'kv.bin'))
const n = buf.length / RL
const keys = new Array(n)
const vals = new Array(n)
for (let i = 0; i < n; i++) {
  keys[i] = buf.subarray(i * RL, i * RL + KL)
  vals[i] = buf.subarray(i * RL + KL, (i + 1) * RL)
}
const ob = fs.readFileSync(path.join(datadir, 'order.bin'))
const order = new Uint32Array(ob.buffer, ob.byteOffset, n)
const rkeys = Array.from(order, (i) => keys[i])
fs.rmSync(work, { recursive: true, force: true })
fs.mkdirSync(work, { recursive: true })
const now = () => performance.now() / 1000

function dirSize(p) {
  let app = 0
  let alloc = 0
  for (const e of fs.readdirSync(p, { withFileTypes: true })) {
    const q = path.join(p, e.name)
    if (e.isDirectory()) {
      const [a, b] = dirSize(q)
      app += a
      alloc += b
    } else {
      const st = fs.statSync(q)
      app += st.size
      alloc += st.blocks * 512
    }
  }
  return [app, alloc]
}

async function runBale(mode) {
  const { Tree } = require('../../bindings/node/index.js')
  const p = path.join(work, 'kv.bale')
  let t = now()
  let db = Tree.open(p, { create: true })
  if (mode === 'sync') {
    db.transactionSync(() => {
      for (let i = 0; i < n; i++) db.putSync(keys[i], vals[i])
    })
  } else if (mode === 'putmany') {
    const entries = new Array(n)
    for (let i = 0; i < n; i++) entries[i] = [keys[i], vals[i]]
    db.putManySync(entries)
  } else {
    // Puts issued in one turn are batched into one commit on the thread pool.
    let last
    for (let i = 0; i < n; i++) last = db.put(keys[i], vals[i])
    await last
  }
  db.close()
  const w1 = now() - t
  db = Tree.open(p)
  let cs = 0
  t = now()
  // One synchronous stretch reads one snapshot: the read transaction.
  for (let i = 0; i < n; i++) {
    const v = db.get(rkeys[i])
    cs += v[0] + v.length
  }
  const w2 = now() - t
  t = now()
  let cnt = 0
  for (const [, value] of db.range()) {
    cnt++
    cs += value[0] + value.length
  }
  const w3 = now() - t
  const s = db.stat()
  db.close()
  return { w1, w2, w3, cnt, cs, extra: { depth: s.depth, fill: +s.fill.toFixed(3) } }
}

async function runLmdb(async_) {
  const { open } = require('lmdb')
  const p = path.join(work, 'lmdb')
  const opts = { path: p, keyEncoding: 'binary', encoding: 'binary' }
  let t = now()
  let db = open(opts)
  if (async_) {
    let last
    for (let i = 0; i < n; i++) last = db.put(keys[i], vals[i])
    await last
  } else {
    db.transactionSync(() => {
      for (let i = 0; i < n; i++) db.putSync(keys[i], vals[i])
    })
  }
  await db.flushed
  await db.close()
  const w1 = now() - t
  db = open(opts)
  let cs = 0
  t = now()
  for (let i = 0; i < n; i++) {
    const v = db.get(rkeys[i])
    cs += v[0] + v.length
  }
  const w2 = now() - t
  t = now()
  let cnt = 0
  for (const { value } of db.getRange({})) {
    cnt++
    cs += value[0] + value.length
  }
  const w3 = now() - t
  await db.close()
  return { w1, w2, w3, cnt, cs, extra: {} }
}

function runSqlite() {
  const Database = require('better-sqlite3')
  const p = path.join(work, 'sqlite.db')
  let t = now()
  let db = new Database(p)
  db.exec('CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID')
  const ins = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
  db.transaction(() => {
    for (let i = 0; i < n; i++) ins.run(keys[i], vals[i])
  })()
  db.close()
  const w1 = now() - t
  db = new Database(p)
  const sel = db.prepare('SELECT v FROM kv WHERE k = ?').pluck()
  db.exec('BEGIN')
  let cs = 0
  t = now()
  for (let i = 0; i < n; i++) {
    const v = sel.get(rkeys[i])
    cs += v[0] + v.length
  }
  const w2 = now() - t
  const scan = db.prepare('SELECT k, v FROM kv ORDER BY k').raw()
  t = now()
  let cnt = 0
  for (const row of scan.iterate()) {
    cnt++
    const v = row[1]
    cs += v[0] + v.length
  }
  const w3 = now() - t
  db.exec('COMMIT')
  db.close()
  return { w1, w2, w3, cnt, cs, extra: {} }
}

let r
if (engine === 'bale') r = await runBale('sync')
else if (engine === 'bale-async') r = await runBale('async')
else if (engine === 'bale-putmany') r = await runBale('putmany')
else if (engine === 'lmdb-js' || engine === 'lmdb-js-async') r = await runLmdb(engine === 'lmdb-js-async')
else if (engine === 'better-sqlite3') r = runSqlite()
else {
  console.error(`unknown engine ${engine}`)
  process.exit(2)
}
if (r.cnt !== n) throw new Error(`scan count ${r.cnt} != ${n}`)
const [app, alloc] = dirSize(work)
console.log(JSON.stringify({
  engine: `node-${engine}`, n, w1_s: +r.w1.toFixed(4), w2_s: +r.w2.toFixed(4), w3_s: +r.w3.toFixed(4),
  file_bytes: app, file_alloc_bytes: alloc, checksum: r.cs, ...r.extra,
}))
fs.rmSync(work, { recursive: true, force: true })
