// JSON lines from kv_bench.mjs -> markdown: min / median per engine and
// workload, and bale's ratios to lmdb-js (sync and async loads compared
// like with like) and better-sqlite3.
// usage: node summarize.mjs RESULTS.jsonl...
import fs from 'node:fs'

const rows = process.argv.slice(2).flatMap((f) =>
  fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)))
const by = new Map()
for (const r of rows) {
  if (!by.has(r.engine)) by.set(r.engine, [])
  by.get(r.engine).push(r)
}
const sorted = (xs) => [...xs].sort((a, b) => a - b)
const min = (xs) => sorted(xs)[0]
const med = (xs) => {
  const s = sorted(xs)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const fmt = (x) => (x < 0.1 ? x.toFixed(4) : x.toFixed(3))
const stat = (e, w) => by.get(e)?.map((r) => r[w]) ?? []

console.log('| engine | runs | W1 load s | W2 gets s | W3 scan s | µs/get (min) | file MB | checksum |')
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const [e, rs] of by) {
  const cells = ['w1_s', 'w2_s', 'w3_s'].map((w) => `${fmt(min(stat(e, w)))} / ${fmt(med(stat(e, w)))}`)
  const sums = [...new Set(rs.map((r) => r.checksum))].join(', ')
  console.log(`| ${e} | ${rs.length} | ${cells.join(' | ')} | ${(min(stat(e, 'w2_s')) * 1e6 / rs[0].n).toFixed(2)} | ${(rs[0].file_bytes / 1e6).toFixed(1)} | ${sums} |`)
}
console.log()
console.log('| ratio (min, median in brackets) | W1 load | W2 gets | W3 scan |')
console.log('| --- | --- | --- | --- |')
const pairs = [
  ['node-bale', 'node-lmdb-js'],
  ['node-bale-async', 'node-lmdb-js-async'],
  ['node-bale-putmany', 'node-lmdb-js'],
  ['node-bale', 'node-better-sqlite3'],
]
for (const [a, b] of pairs) {
  if (!by.has(a) || !by.has(b)) continue
  const cells = ['w1_s', 'w2_s', 'w3_s'].map((w) =>
    `${(min(stat(a, w)) / min(stat(b, w))).toFixed(2)}× (${(med(stat(a, w)) / med(stat(b, w))).toFixed(2)}×)`)
  console.log(`| ${a.slice(5)} / ${b.slice(5)} | ${cells.join(' | ')} |`)
}
