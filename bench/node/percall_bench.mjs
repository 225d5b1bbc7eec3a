// Per-call reads from Node: a fresh snapshot (read transaction) for every
// get, bale against lmdb-js, on the per-call stores that
// `bale-bench percall-build` makes (bench/percall.sh builds them).
//
// usage: node percall_bench.mjs ENGINE DATADIR STOREDIR [PASSES]
//
// ENGINE:
//   bale          tree.refresh(); tree.get(key)
//   lmdb-js       db.resetReadTxn(); db.getBinaryFast(key)
//       Both packages keep one snapshot per event-loop turn and hand it to
//       every read of that turn, so a plain loop of gets would share one
//       snapshot. refresh() / resetReadTxn() drop it, so each get takes a
//       fresh one: what a get costs when it is the only read of its turn
//       (a request handler's single lookup), without the event loop's cost.
//   bale-turn     tree.get(key)           one snapshot for the whole loop
//   lmdb-js-turn  db.getBinaryFast(key)   one read txn for the whole loop
//       For reference only: not per-call.
//
// Keys are the N records of DATADIR/kv.bin in DATADIR/order.bin order (Buffer
// views made before the clock starts). One warm-up pass, then PASSES timed
// passes (between passes the event loop turns, so pending snapshot releases
// run); every value is touched (v[0] + v.length). Prints one JSON line.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { setImmediate as tick } from 'node:timers/promises'

const require = createRequire(import.meta.url)
const KL = 16
const VL = 100
const RL = KL + VL
const [engine, datadir, store, passesArg] = process.argv.slice(2)
const passes = Number(passesArg || 3)
const buf = fs.readFileSync(path.join(datadir, 'kv.bin'))
const n = buf.length / RL
const ob = fs.readFileSync(path.join(datadir, 'order.bin'))
const order = new Uint32Array(ob.buffer, ob.byteOffset, n)
const keys = Array.from(order, (i) => buf.subarray(i * RL, i * RL + KL))

let run
let close = async () => {}
if (engine === 'bale' || engine === 'bale-turn') {
  const { Tree } = require('../../bindings/node/index.js')
  const tree = Tree.open(path.join(store, 'kv.bale'), { readonly: true })
  close = async () => tree.close()
  run =
    engine === 'bale'
      ? () => {
          let cs = 0
          for (let i = 0; i < n; i++) {
            tree.refresh()
            const v = tree.get(keys[i])
            cs += v[0] + v.length
          }
          return cs
        }
      : () => {
          let cs = 0
          for (let i = 0; i < n; i++) {
            const v = tree.get(keys[i])
            cs += v[0] + v.length
          }
          return cs
        }
} else if (engine === 'lmdb-js' || engine === 'lmdb-js-turn') {
  const { open } = require('lmdb')
  const db = open({ path: path.join(store, 'lmdb-js.mdb'), readOnly: true, keyEncoding: 'binary', encoding: 'binary' })
  close = () => db.close()
  run =
    engine === 'lmdb-js'
      ? () => {
          let cs = 0
          for (let i = 0; i < n; i++) {
            db.resetReadTxn()
            const v = db.getBinaryFast(keys[i])
            cs += v[0] + v.length
          }
          return cs
        }
      : () => {
          let cs = 0
          for (let i = 0; i < n; i++) {
            const v = db.getBinaryFast(keys[i])
            cs += v[0] + v.length
          }
          return cs
        }
} else {
  console.error(`unknown engine ${engine} (bale, lmdb-js, bale-turn, lmdb-js-turn)`)
  process.exit(2)
}

// Lets pending setImmediate/setTimeout(0) snapshot releases run.
const settle = async () => {
  await tick()
  await new Promise((r) => setTimeout(r, 1))
}
const want = run() // warm-up
await settle()
const times = []
for (let p = 0; p < passes; p++) {
  const t = performance.now()
  const cs = run()
  times.push((performance.now() - t) / 1000)
  if (cs !== want) throw new Error(`checksum ${cs} != ${want}`)
  await settle()
}
await close()
console.log(
  JSON.stringify({
    bench: 'percall',
    host: 'node',
    engine,
    store: path.basename(store),
    n,
    passes_s: times.map((t) => +t.toFixed(6)),
    best_ops_per_s: Math.round(n / Math.min(...times)),
    checksum: want,
    peak_rss_kb: Math.round(process.resourceUsage().maxRSS),
  }),
)
