// Builds lmdb-js's own per-call stores next to the ones `bale-bench
// percall-build` makes: lmdb-js ships its own LMDB build, which cannot open
// the environments heed writes (it crashes opening them), so it gets its own.
//
// usage: node percall_build.mjs DATADIR WORK GIB
//   WORK/small/lmdb-js.mdb   the N records of DATADIR/kv.bin
//   WORK/large/lmdb-js.mdb   the same records plus GIB GiB of random bytes as
//                            1 GiB values `~large/000`, `~large/001`, ...
//                            (LMDB caps a value below 4 GiB; one 1 GiB buffer
//                            is refilled for each, so memory stays bounded)
// A `.stamp` file next to each makes reruns reuse it. Prints one JSON line
// per store and writes them to WORK/stores-node.jsonl.
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { open } = require('lmdb')
const KL = 16
const VL = 100
const RL = KL + VL
const [datadir, work, gibArg] = process.argv.slice(2)
const gib = Number(gibArg)
const buf = fs.readFileSync(path.join(datadir, 'kv.bin'))
const n = buf.length / RL
const lmdbVersion = JSON.parse(fs.readFileSync(new URL('node_modules/lmdb/package.json', import.meta.url))).version
const stamp = `n=${n} gib=${gib} lmdb-js=${lmdbVersion}\n`
const GIB = 2 ** 30
const lines = []

for (const [store, large] of [['small', 0], ['large', Math.round(gib * GIB)]]) {
  const dir = path.join(work, store)
  fs.mkdirSync(dir, { recursive: true })
  const p = path.join(dir, 'lmdb-js.mdb')
  const t = performance.now()
  if (fs.readFileSync(`${p}.stamp`, { encoding: 'utf8', flag: 'a+' }) !== stamp || !fs.existsSync(p)) {
    console.error(`== building ${p}`)
    fs.rmSync(p, { force: true })
    fs.rmSync(`${p}-lock`, { force: true })
    const db = open({
      path: p,
      keyEncoding: 'binary',
      encoding: 'binary',
      mapSize: large + 2 * GIB,
      noSync: true, // one sync at the end instead
    })
    db.transactionSync(() => {
      for (let i = 0; i < n; i++) db.putSync(buf.subarray(i * RL, i * RL + KL), buf.subarray(i * RL + KL, (i + 1) * RL))
    })
    if (large > 0) {
      let chunk = Buffer.alloc(Math.min(large, GIB))
      for (let part = 0, left = large; left > 0; part++) {
        const len = Math.min(left, GIB)
        if (len !== chunk.length) chunk = chunk.subarray(0, len)
        crypto.randomFillSync(chunk)
        db.transactionSync(() => db.putSync(`~large/${String(part).padStart(3, '0')}`, chunk))
        left -= len
      }
    }
    await db.flushed
    db.close()
    const fd = fs.openSync(p, 'r+')
    fs.fsyncSync(fd)
    fs.closeSync(fd)
    fs.writeFileSync(`${p}.stamp`, stamp)
  }
  const st = fs.statSync(p)
  const line = JSON.stringify({
    bench: 'percall-store',
    store,
    engine: 'lmdb-js',
    n,
    large_value_bytes: large,
    file_bytes: st.size,
    file_alloc_bytes: st.blocks * 512,
    build_s: +((performance.now() - t) / 1000).toFixed(1),
  })
  console.error(line)
  lines.push(line)
}
fs.writeFileSync(path.join(work, 'stores-node.jsonl'), lines.join('\n') + '\n')
console.log(lines.join('\n'))
