// One large value through the streams: `writeStream` (temp file beside the
// store, then one durable commit) and `createReadStream` (pieces read on the
// thread pool), with the peak RSS of each direction. Memory must stay
// bounded whatever the size. The generator alternates incompressible and
// compressible 1 MiB segments (as bench/src's bigvalue does), and a SHA-1
// of what was generated is compared with one of what was read back.
//
// usage: node bigvalue.mjs WORKDIR [GIB=1]
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Tree } = require('../../bindings/node/index.js')
const [work, gibArg] = process.argv.slice(2)
const total = Math.round(Number(gibArg ?? 1) * 2 ** 30)
const SEG = 1 << 20
fs.rmSync(work, { recursive: true, force: true })
fs.mkdirSync(work, { recursive: true })
const file = path.join(work, 'big.bale')

// Peak RSS of the process so far, in MB (Linux: VmHWM, reset through clear_refs).
function resetPeak() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5')
  } catch {}
}
function peakMB() {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
  return m ? Math.round(Number(m[1]) / 1024) : Math.round(process.resourceUsage().maxRSS / 1024)
}

function* segments() {
  const random = crypto.randomBytes(SEG)
  const words = Buffer.alloc(SEG)
  for (let i = 0; i < SEG; i += 32) crypto.randomBytes(4).copy(words, i, 0, 4)
  for (let at = 0, i = 0; at < total; at += SEG, i++) {
    const n = Math.min(SEG, total - at)
    // Fresh bytes per segment so nothing repeats across segments.
    const seg = Buffer.from(i % 2 ? words.subarray(0, n) : random.subarray(0, n))
    seg.writeUInt32LE(i, 0)
    yield seg
  }
}

const tree = Tree.open(file, { create: true })
const wrote = crypto.createHash('sha1')
resetPeak()
let t = performance.now()
await pipeline(Readable.from((function* () {
  for (const s of segments()) {
    wrote.update(s)
    yield s
  }
})()), tree.writeStream('big'))
const writeS = (performance.now() - t) / 1000
const writePeak = peakMB()
const stored = fs.statSync(file).size

resetPeak()
const read = crypto.createHash('sha1')
let got = 0
t = performance.now()
await pipeline(tree.createReadStream('big'), new Writable({
  write(chunk, _e, cb) {
    got += chunk.length
    read.update(chunk)
    cb()
  },
}))
const readS = (performance.now() - t) / 1000
const readPeak = peakMB()
tree.close()
const verified = got === total && wrote.digest('hex') === read.digest('hex')
console.log(JSON.stringify({
  bench: 'node-bigvalue', bytes: total, stored_bytes: stored,
  write_s: +writeS.toFixed(3), write_mb_s: Math.round(total / 1e6 / writeS), write_peak_rss_mb: writePeak,
  read_s: +readS.toFixed(3), read_mb_s: Math.round(total / 1e6 / readS), read_peak_rss_mb: readPeak,
  verified,
}))
fs.rmSync(work, { recursive: true, force: true })
if (!verified) process.exit(1)
