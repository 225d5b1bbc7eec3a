// Deterministic object contents shared by the object store suites and
// their workers and child processes.

// `n` bytes that differ with `seed` and do not repeat (xorshift32), so that
// content-defined chunking finds real cut points and nothing dedupes.
export function pattern(n, seed = 1) {
  const b = Buffer.allocUnsafe(n)
  let x = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    b[i] = x & 255
  }
  return b
}

// The i-th object a writer adds: mostly small, every 7th chunked under the
// small chunk sizes of SMALL_CHUNKS.
export const content = (tag, i) => (i % 7 === 3 ? pattern(20_000 + i, i + 1) : Buffer.from(`${tag} object ${i}`))

// Chunk sizes small enough that a few MB make thousands of chunks and
// several chunk-list levels.
export const SMALL_CHUNKS = { chunkMin: 256, chunkAvg: 1024, chunkMax: 4096, fanout: 16 }
