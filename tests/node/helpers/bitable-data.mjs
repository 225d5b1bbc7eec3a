// Tables for bitable.test.mjs and its workers: a random model, and a
// digest of everything a table gives back.
import crypto from 'node:crypto'

// Incompressible bytes, the same for the same seed.
export function pseudo(len, seed) {
  const out = Buffer.alloc(len)
  let x = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < len; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    out[i] = x & 0xff
  }
  return out
}

// A Map of Buffer keys to Buffer values: keys from a small alphabet (shared
// prefixes are common), the empty key and keys of 1 KiB; values mostly
// small, one in `largeEvery` large, and three large ones whenever
// `largeEvery` is given.
export function randomModel(seed, n, largeEvery) {
  let x = (seed * 7919 + 1) >>> 0
  // xorshift32: every bit is as random as the others (an LCG's low bits repeat soon).
  const rand = (m) => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x % m
  }
  const byHex = new Map([
    ['', Buffer.from('the empty key')],
    ['ff'.repeat(1024), Buffer.from('a 1 KiB key')],
    ['61'.repeat(1023) + '62', Buffer.alloc(0)],
  ])
  if (largeEvery) {
    // Large at every page size, whatever the draws give.
    for (const [i, len] of [20000, 70000, 200000].entries()) byHex.set(Buffer.from(`large${i}`).toString('hex'), pseudo(len, seed + i))
  }
  while (byHex.size < n) {
    const k = Buffer.from(Array.from({ length: rand(12) }, () => [0x61, 0x62, 0x00, 0xff][rand(4)]))
    const v = largeEvery && rand(largeEvery) === 0 ? pseudo(20000 + rand(200000), rand(1 << 30)) : pseudo(rand(40), rand(1000))
    byHex.set(k.toString('hex'), v)
  }
  return new Map([...byHex].map(([k, v]) => [Buffer.from(k, 'hex'), v]))
}

// A SHA-256 over every read of the table: the pairs of a sync and of an
// async range, each key's value, rank and cursor, and each large value
// streamed.
export async function digest(t) {
  const h = crypto.createHash('sha256')
  const add = (x) => h.update(x === undefined ? 'undefined' : Buffer.isBuffer(x) ? x : String(x)).update('|')
  for (const [k, v] of t.range()) {
    add(k)
    add(v)
    add(t.getSync(k))
    add(t.rank(k))
    const c = t.lowerBound(k)
    add(c.ordinal)
    c.next()
    add(c.key)
    c.close()
    if (v.length > 1024) {
      for await (const piece of t.createReadStream(k, { highWaterMark: 4096 })) add(piece)
    }
  }
  for await (const [k, v] of t.range({ reverse: true })) {
    add(k)
    add(v)
  }
  add((await t.check()).ok)
  return h.digest('hex')
}
