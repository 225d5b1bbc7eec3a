// Bitables (Bitable, BitableWriter, UnsortedBitableWriter): round trips
// against a Map model, every read in its sync and async forms, large values
// streamed both ways, argument and ordering errors, damaged files, builds
// that end without a table, calls while the writer is lent out, and
// worker_threads reading one file.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { Readable } from 'node:stream'
import { Bitable, BitableWriter, UnsortedBitableWriter, Tree } from '../../bindings/node/index.js'
import { code } from './helpers/codes.mjs'
import { tmpDir } from './helpers/tmp.mjs'
import { replacesOpenFiles, refusal } from './helpers/replace.mjs'
import { randomModel, digest, pseudo } from './helpers/bitable-data.mjs'

const dir = tmpDir('bitable')
let n = 0
const where = (name = 't') => path.join(fs.mkdtempSync(path.join(dir, `${name}-${++n}-`)), `${name}.bitable`)
const collect = async (readable) => {
  const parts = []
  for await (const c of readable) parts.push(c)
  return Buffer.concat(parts)
}
const cmp = Buffer.compare
const hex = (b) => (b === undefined ? undefined : b.toString('hex'))

// Writes the model's pairs in key order; the keys in `streamed` go through
// appendStream (a Readable or an async generator, in turn).
async function build(file, model, { streamed = new Set(), ...options } = {}) {
  const w = BitableWriter.create(file, options)
  let i = 0
  for (const [k, v] of [...model].sort(([a], [b]) => cmp(a, b))) {
    if (streamed.has(k)) {
      const chunks = []
      for (let at = 0; at < v.length; at += 7000) chunks.push(v.subarray(at, at + 7000))
      const src = i++ % 2 ? Readable.from(chunks) : (async function* () { yield* chunks })()
      await w.appendStream(k, src)
    } else {
      w.append(k, v)
    }
  }
  assert.equal(w.length, model.size)
  return w.finish()
}

// Every read of `t` against the model (keys are Buffers; `model` is keyed
// by hex for lookups).
async function checkModel(t, model) {
  const keys = [...model.keys()].sort(cmp)
  const byHex = new Map([...model].map(([k, v]) => [hex(k), v]))
  const valueOf = (k) => byHex.get(hex(k))
  assert.equal(t.count, keys.length)
  assert.deepEqual([...t.keys()], keys)
  assert.deepEqual(t.range().toArray(), keys.map((k) => [k, valueOf(k)]))
  assert.deepEqual([...t.values({ reverse: true })], keys.map(valueOf).reverse())
  const asyncKeys = []
  for await (const k of t.keys({ reverse: true })) asyncKeys.push(k)
  assert.deepEqual(asyncKeys, [...keys].reverse())
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]
    assert.deepEqual(t.getSync(k), valueOf(k))
    assert.equal(t.has(k), true)
    assert.equal(t.rank(k), i)
    const c = t.select(i)
    assert.deepEqual([c.key, c.value, c.ordinal, c.valid, c.valueLength], [k, valueOf(k), i, true, valueOf(k).length])
    assert.deepEqual(t.find(k).key, k)
  }
  for (const k of keys.filter((_, i) => i % 7 === 0)) assert.deepEqual(await t.get(k), valueOf(k))
  assert.equal(t.select(keys.length).valid, false)
  assert.equal(t.select(keys.length).ordinal, keys.length)
  assert.deepEqual(t.first().key, keys[0])
  assert.deepEqual(t.last().key, keys.at(-1))
  const probes = [...keys, ...keys.slice(0, 50).map((k) => Buffer.concat([k, Buffer.from([0])])),
    ...keys.slice(0, 50).filter((k) => k.length).map((k) => k.subarray(0, -1)), Buffer.alloc(2000, 0xff)]
  for (const p of probes) {
    const lo = keys.findIndex((k) => cmp(k, p) >= 0)
    const hi = keys.findIndex((k) => cmp(k, p) > 0)
    assert.deepEqual(t.lowerBound(p).key, lo < 0 ? undefined : keys[lo])
    assert.deepEqual(t.upperBound(p).key, hi < 0 ? undefined : keys[hi])
    assert.equal(t.rank(p), lo < 0 ? keys.length : lo)
    if (valueOf(p) === undefined) {
      assert.equal(t.getSync(p), undefined)
      assert.equal(await t.get(p), undefined)
      assert.equal(t.has(p), false)
      assert.equal(t.find(p), null)
    }
  }
  for (let round = 0; round < 40; round++) {
    const [a, b] = [probes[(round * 37) % probes.length], probes[(round * 101 + 7) % probes.length]].sort(cmp)
    const within = keys.filter((k) => cmp(k, a) >= 0 && cmp(k, b) < 0)
    assert.deepEqual([...t.keys({ gte: a, lt: b })], within)
    assert.deepEqual([...t.keys({ gte: a, lt: b, reverse: true })], [...within].reverse())
    const [offset, limit] = [round % 9, (round * 3) % 11]
    assert.deepEqual([...t.keys({ gt: a, lte: b, offset, limit })],
      keys.filter((k) => cmp(k, a) > 0 && cmp(k, b) <= 0).slice(offset, offset + limit))
    const down = keys.filter((k) => cmp(k, a) >= 0).reverse().slice(offset)
    const got = []
    for await (const [k, v] of t.range({ gte: a, reverse: true, offset })) got.push([k, v])
    assert.deepEqual(got, down.map((k) => [k, valueOf(k)]))
    const p = a.subarray(0, round % 3)
    assert.deepEqual([...t.prefix(p)].map(([k]) => k), keys.filter((k) => k.subarray(0, p.length).equals(p)))
    assert.deepEqual([...t.prefix(p, { reverse: true, limit: 3 })].map(([k]) => k),
      keys.filter((k) => k.subarray(0, p.length).equals(p)).reverse().slice(0, 3))
  }
  // One cursor all the way forwards, then back.
  const c = t.first()
  const seen = []
  while (c.valid) {
    seen.push(c.key)
    c.next()
  }
  assert.deepEqual(seen, keys)
  assert.equal(c.next(), false)
  assert.equal(c.key, undefined)
  assert.equal(c.value, undefined)
  assert.equal(c.last(), true)
  while (c.prev()) seen.pop()
  assert.equal(seen.length, 1)
  assert.deepEqual(seen[0], keys[0])
  assert.equal(c.ordinal, keys.length)
  assert.equal(c.seek(keys[keys.length >> 1]), true)
  assert.deepEqual(c.key, keys[keys.length >> 1])
  c.close()
  const report = await t.check()
  assert.equal(report.ok, true)
  assert.equal(report.entriesChecked, keys.length)
  assert.deepEqual(report.problems, [])
  assert.equal(t.checkSync().ok, true)
}

describe('round trips', () => {
  const shapes = [
    { pageSize: 4096, align: 1 },
    { pageSize: 16384, align: 8, compression: 'never' },
    { pageSize: 65536, align: 256, compression: 'always' },
  ]
  for (const shape of shapes) {
    for (const mmap of [true, false]) {
      test(`pages of ${shape.pageSize}, align ${shape.align}, mmap ${mmap}`, async () => {
        const model = randomModel(shape.pageSize, 1200, 300)
        const large = new Set([...model].filter(([, v]) => v.length > shape.pageSize / 4).map(([k]) => k))
        assert.ok(large.size > 0)
        const file = where()
        const summary = await build(file, model, { streamed: large, ...shape })
        assert.equal(summary.entries, model.size)
        assert.equal(summary.fileBytes, fs.statSync(file).size)
        assert.deepEqual(fs.readdirSync(path.dirname(file)), ['t.bitable'])
        const t = mmap ? await Bitable.open(file) : Bitable.openSync(file, { mmap: false })
        assert.equal(t.mapped, mmap)
        assert.equal(t.formatVersion, 1)
        await checkModel(t, model)
        const s = t.stats()
        assert.deepEqual([s.entries, s.pageSize, s.align, s.largeValues, s.completion],
          [model.size, shape.pageSize, shape.align, large.size, 'durable'])
        assert.equal(s.levelPages[0], s.leafPages)
        assert.equal(s.levelPages.reduce((a, b) => a + b, 0), s.leafPages + s.branchPages)
        assert.equal(s.longestKey, 1024)
        for (const k of large) {
          const v = model.get(k)
          assert.deepEqual(await collect(t.createReadStream(k)), v)
          assert.deepEqual(await collect(t.createReadStream(k, { start: 70000 % v.length, highWaterMark: 1000 })),
            v.subarray(70000 % v.length))
          assert.deepEqual(await collect(t.createReadStream(k, { start: 10, end: 19 })), v.subarray(10, 20))
        }
        t.close()
      })
    }
  }

  test('an empty table', async () => {
    const file = where()
    const s = await build(file, new Map())
    assert.deepEqual([s.entries, s.depth], [0, 0])
    const t = Bitable.openSync(file)
    assert.equal(t.count, 0)
    assert.deepEqual([...t.keys()], [])
    assert.equal(t.getSync(''), undefined)
    assert.equal(t.first().valid, false)
    assert.equal(t.rank('x'), 0)
    assert.deepEqual(t.stats().levelPages, [])
    assert.equal(t.checkSync().ok, true)
    t.close()
  })

  test('keys and values as Buffers, views, ArrayBuffers and strings; getSync beyond the slab', () => {
    const file = where()
    const w = BitableWriter.create(file)
    assert.equal(w.maxKeyLength, 1024)
    w.append('a', 'text value')
    w.append(new Uint8Array([0x62]), new Uint16Array([0x4141, 0x4242]))
    w.append(new Uint8Array([0x63]).buffer, Buffer.alloc(1024, 'x')) // the inline limit exactly
    w.append(Buffer.from('d'), Buffer.alloc(70000, 'y')) // past the slab's room: a Buffer of its own
    w.finishSync({ durable: false })
    const t = Bitable.openSync(file)
    assert.equal(t.getSync('a').toString(), 'text value')
    assert.deepEqual(t.getSync(Buffer.from('b')), Buffer.from([0x41, 0x41, 0x42, 0x42]))
    assert.deepEqual(t.getSync(new Uint8Array([0x63])), Buffer.alloc(1024, 'x'))
    const big = t.getSync('d')
    assert.deepEqual(big, Buffer.alloc(70000, 'y'))
    // Many small reads share the slab, each its own view.
    const reads = Array.from({ length: 200 }, () => t.getSync('a'))
    assert.ok(reads.every((r) => r.toString() === 'text value'))
    assert.equal(t.stats().completion, 'fast')
    t.close()
  })

  test('getInto reads into the caller\'s buffer and says how long the value is', () => {
    const file = where()
    const w = BitableWriter.create(file, { pageSize: 4096 })
    w.append('a', 'text value')
    w.append('big', Buffer.alloc(70000, 'y')) // a large value
    w.append('empty', '')
    w.finishSync({ durable: false })
    const t = Bitable.openSync(file, { mmap: false })
    const buf = Buffer.alloc(16, '.')
    assert.equal(t.getInto('a', buf), 10)
    assert.equal(buf.toString(), 'text value......')
    assert.equal(t.getInto('a', buf, 8), 10) // 8 bytes of room: cut short
    assert.equal(buf.toString(), 'text valtext val')
    assert.equal(t.getInto('a', buf, 16), 10) // no room: nothing copied
    assert.equal(buf.toString(), 'text valtext val')
    assert.equal(t.getInto('missing', buf), undefined)
    assert.equal(t.getInto('empty', buf), 0)
    // A plain Uint8Array at an offset into a larger ArrayBuffer.
    const backing = new ArrayBuffer(100000)
    const view = new Uint8Array(backing, 8, 70004)
    assert.equal(t.getInto('big', view, 4), 70000)
    assert.equal(Buffer.from(backing, 12, 70000).equals(Buffer.alloc(70000, 'y')), true)
    assert.equal(new Uint8Array(backing)[11], 0)
    assert.equal(new Uint8Array(backing)[70012], 0)
    const small = new Uint8Array(5)
    assert.equal(t.getInto('big', small), 70000)
    assert.deepEqual(Buffer.from(small), Buffer.from('yyyyy'))
    for (const [target, offset] of [['string', 0], [[1, 2], 0], [buf, -1], [buf, 1.5], [buf, 17], [new Uint16Array(4), 0]]) {
      assert.throws(() => t.getInto('a', target, offset), code('INVALID_ARGUMENT'))
    }
    const { getInto } = t
    assert.throws(() => getInto('a', buf), code('INVALID_ARGUMENT'))
    // Keys of every kind: small byte keys travel in the slab, the rest as they are.
    assert.equal(t.getInto(new Uint8Array([0x61]), buf), 10)
    assert.equal(t.getInto(new Uint8Array([0x61]).buffer, buf), 10) // an ArrayBuffer
    assert.equal(t.getInto(new DataView(new Uint8Array([0x61]).buffer), buf), 10)
    assert.equal(t.has(new Uint8Array([0x61])), true)
    t.close()
    assert.throws(() => t.getInto('a', buf), code('CLOSED'))
  })
})

test('long keys, keys that are views of earlier values, and every read agreeing', () => {
  const file = where()
  const w = BitableWriter.create(file, { pageSize: 65536 })
  const long = Buffer.alloc(9000, 'k') // past the keys that travel in the slab
  const mid = Buffer.alloc(4096, 'm') // the longest that does
  w.append('a', 'b')
  w.append('b', 'c')
  w.append(long, 'long key')
  w.append(mid, 'mid key')
  w.finishSync({ durable: false })
  const t = Bitable.openSync(file)
  for (const [k, v] of [[long, 'long key'], [mid, 'mid key'], [Buffer.alloc(9000, 'k').subarray(0, 4097), undefined]]) {
    assert.equal(t.getSync(k)?.toString(), v)
    assert.equal(t.has(k), v !== undefined)
    const into = Buffer.alloc(16)
    const n = t.getInto(k, into)
    assert.equal(n, v === undefined ? undefined : v.length)
    if (v !== undefined) assert.equal(into.subarray(0, n).toString(), v)
  }
  // A value returned by getSync is a view of the slab; used as the next key
  // it is copied within the slab.
  let k = t.getSync('a')
  for (let i = 0; i < 3000; i++) {
    const v = t.getSync(k)
    assert.equal(v.toString(), 'c', `step ${i}`)
    assert.equal(t.getSync(v), undefined)
    k = t.getSync(Buffer.from('a'))
  }
  t.close()
})

describe('errors', () => {
  test('keys out of order or too long are refused and the build goes on', () => {
    const file = where()
    const w = BitableWriter.create(file)
    w.append('b', '1')
    for (const bad of ['b', 'a', '']) {
      assert.throws(() => w.append(bad, '2'), (e) => code('INVALID_ARGUMENT')(e) && /ascending/.test(e.message))
    }
    assert.throws(() => w.append(Buffer.alloc(1025, 'c'), ''), code('TOO_LARGE'))
    w.append(Buffer.alloc(1024, 'c'), '3')
    assert.equal(w.length, 2)
    w.finishSync()
    const t = Bitable.openSync(file)
    assert.deepEqual(t.range().toArray().map(([k, v]) => [k.length, v.toString()]), [[1, '1'], [1024, '3']])
    t.close()
  })

  test('arguments of the wrong type or value', async () => {
    const p = where()
    for (const o of [{ pageSize: '4096' }, { align: 1.5 }, { compression: 3 }, { bogus: 1 }, { pageSize: 1000 },
      { pageSize: 131072 }, { align: 3 }, { align: 512 }, { compression: 'zstd' }, { pageSize: 2 ** 40 }]) {
      assert.throws(() => BitableWriter.create(p, o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    for (const o of [{ memoryBudget: 1000 }, { onDuplicate: 'oldest' }, { memoryBudget: -1 }, { durable: true }]) {
      assert.throws(() => UnsortedBitableWriter.create(p, o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    assert.throws(() => BitableWriter.create(42), code('INVALID_ARGUMENT'))
    assert.deepEqual(fs.readdirSync(path.dirname(p)), [])
    const w = BitableWriter.create(p)
    for (const bad of [1, null, {}, [1]]) {
      assert.throws(() => w.append(bad, 'v'), code('INVALID_ARGUMENT'))
      assert.throws(() => w.append('k', bad), code('INVALID_ARGUMENT'))
    }
    await assert.rejects(w.appendStream('k', 'a string'), code('INVALID_ARGUMENT'))
    await assert.rejects(w.appendStream('k', [1, 2]), code('INVALID_ARGUMENT'))
    await assert.rejects(w.finish({ durable: 'yes' }), code('INVALID_ARGUMENT'))
    w.append('k', 'v')
    w.finishSync()
    const t = Bitable.openSync(p)
    for (const bad of [1, undefined, {}]) {
      assert.throws(() => t.getSync(bad), code('INVALID_ARGUMENT'))
      assert.throws(() => t.has(bad), code('INVALID_ARGUMENT'))
      assert.throws(() => t.lowerBound(bad), code('INVALID_ARGUMENT'))
      await assert.rejects(t.get(bad), code('INVALID_ARGUMENT'))
    }
    assert.throws(() => t.select(-1), code('INVALID_ARGUMENT'))
    assert.throws(() => t.select(1.5), code('INVALID_ARGUMENT'))
    // The range options are the tree store's: lmdb's start/end are not among them.
    for (const o of [{ start: 'a' }, { end: 'b' }, { gt: 'a', gte: 'a' }, { limit: -1 }, { offset: 1.5 },
      { reverse: 'yes' }, 'a string']) {
      assert.throws(() => t.range(o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    assert.throws(() => t.prefix('k', { prefix: 'j' }), code('INVALID_ARGUMENT'))
    await assert.rejects(t.check({ progress: 5 }), code('INVALID_ARGUMENT'))
    assert.throws(() => t.checkSync({ bogus: 1 }), code('INVALID_ARGUMENT'))
    await assert.rejects(Bitable.open(p, { mmap: 'no' }), code('INVALID_ARGUMENT'))
    assert.throws(() => Bitable.openSync(p, { map: true }), code('INVALID_ARGUMENT'))
    // Methods taken off their object.
    const { getSync, lowerBound, get, range } = t
    assert.throws(() => getSync('k'), code('INVALID_ARGUMENT'))
    assert.throws(() => lowerBound('k'), code('INVALID_ARGUMENT'))
    assert.throws(() => range(), code('INVALID_ARGUMENT'))
    await assert.rejects(get('k'), code('INVALID_ARGUMENT'))
    const w2 = BitableWriter.create(where())
    const { append, appendStream } = w2
    assert.throws(() => append('k', 'v'), code('INVALID_ARGUMENT'))
    await assert.rejects(appendStream('k', ['v']), code('INVALID_ARGUMENT'))
    w2.discard()
    t.close()
  })

  test('damaged and foreign files fail with their codes', async () => {
    const file = where()
    const model = new Map(Array.from({ length: 3000 }, (_, i) => [Buffer.from(String(i).padStart(5, '0')),
      Buffer.from(`value ${i}`)]))
    model.set(Buffer.from('large'), pseudo(200000, 1))
    await build(file, model)
    const good = fs.readFileSync(file)
    await assert.rejects(Bitable.open(path.join(dir, 'missing.bitable')), code('NOT_FOUND'))
    assert.throws(() => Bitable.openSync(path.join(dir, 'missing.bitable')), code('NOT_FOUND'))
    fs.writeFileSync(file, good.subarray(0, good.length >> 1))
    assert.throws(() => Bitable.openSync(file), code('CORRUPT'))
    await assert.rejects(Bitable.open(file), code('CORRUPT'))
    const text = path.join(path.dirname(file), 'text.bitable')
    fs.writeFileSync(text, 'hello, not a table'.repeat(300))
    assert.throws(() => Bitable.openSync(text), code('NOT_A_BALE_FILE'))
    const treeFile = path.join(path.dirname(file), 'tree.bale')
    const tree = Tree.open(treeFile, { create: true })
    tree.putSync('k', 'v')
    tree.close()
    assert.throws(() => Bitable.openSync(treeFile), (e) => code('INVALID_ARGUMENT')(e) && /not a bitable/.test(e.message))
    // One flipped byte in leaf page 2: reads of that page fail, check lists it.
    const damaged = Buffer.from(good)
    damaged[2 * 4096 + 100] ^= 0x40
    fs.writeFileSync(file, damaged)
    for (const mmap of [true, false]) {
      const t = Bitable.openSync(file, { mmap })
      assert.throws(() => t.range().toArray(), (e) => code('CHECKSUM_MISMATCH')(e) && e.page === 2)
      await assert.rejects(async () => {
        for await (const _ of t.keys()) { /* to the damaged page */ }
      }, code('CHECKSUM_MISMATCH'))
      for (const report of [t.checkSync(), await t.check()]) {
        assert.equal(report.ok, false)
        assert.ok(report.problemCount >= 1)
        assert.deepEqual([report.problems[0].page, report.problems[0].code], [2, 'CHECKSUM_MISMATCH'])
      }
      assert.equal(t.getSync('00000').toString(), 'value 0')
      // Windows cannot rewrite a file that is open (or mapped).
      t.close()
    }
    // A flipped bit in a large value's first block.
    fs.writeFileSync(file, good)
    const whole = Bitable.openSync(file)
    const s = whole.stats()
    whole.close()
    const block = Buffer.from(good)
    block[s.fileBytes - s.valueRegionBytes + 100] ^= 1
    fs.writeFileSync(file, block)
    const t = Bitable.openSync(file)
    assert.equal(t.getSync('00001').toString(), 'value 1')
    assert.throws(() => t.getSync('large'), code('CHECKSUM_MISMATCH'))
    await assert.rejects(t.get('large'), code('CHECKSUM_MISMATCH'))
    await assert.rejects(collect(t.createReadStream('large')), code('CHECKSUM_MISMATCH'))
    await assert.rejects(collect(t.createReadStream('missing')), code('NOT_FOUND'))
    assert.equal(t.checkSync().problems[0].code, 'CHECKSUM_MISMATCH')
    t.close()
  })
})

describe('building', () => {
  test('a build that is discarded leaves nothing, and a table is replaced at finish only', async () => {
    const file = where()
    const d = path.dirname(file)
    const w = BitableWriter.create(file)
    w.append('a', '1')
    w.append('b', pseudo(100000, 2)) // a spilled large value too
    w.discard()
    w.discard() // once ended, nothing to do
    assert.deepEqual(fs.readdirSync(d), [])
    assert.equal(w.closed, true)
    assert.throws(() => w.append('c', '3'), code('CLOSED'))
    await assert.rejects(w.finish(), code('CLOSED'))
    await build(file, new Map([[Buffer.from('old'), Buffer.from('table')]]))
    const w2 = BitableWriter.create(file)
    w2.append('new', 'pairs')
    assert.equal(fs.readdirSync(d).length, 2)
    // Finishing replaces the table while a reader has it open.
    const old = Bitable.openSync(file)
    assert.equal(old.getSync('old').toString(), 'table')
    if (!replacesOpenFiles()) {
      // Refused here: the build fails at its end, and the old table stays.
      await assert.rejects(w2.finish(), refusal)
      assert.equal(old.getSync('old').toString(), 'table')
      old.close()
      assert.deepEqual(fs.readdirSync(d), ['t.bitable'])
      const again = Bitable.openSync(file)
      assert.equal(again.getSync('old').toString(), 'table')
      assert.equal(again.count, 1)
      again.close()
      assert.throws(() => w2.finishSync(), code('CLOSED'))
      return
    }
    const s = await w2.finish()
    assert.equal(old.getSync('old').toString(), 'table', 'a reader keeps the table it opened')
    old.close()
    assert.equal(s.entries, 1)
    assert.deepEqual(fs.readdirSync(d), ['t.bitable'])
    const replaced = Bitable.openSync(file)
    assert.equal(replaced.getSync('new').toString(), 'pairs')
    replaced.close()
    assert.throws(() => w2.finishSync(), code('CLOSED'))
  })

  test('a stream that fails leaves the pair out and the build going', async () => {
    const file = where()
    const w = BitableWriter.create(file)
    w.append('a', '1')
    const boom = new Error('from the source')
    const failing = (before) => (async function* () {
      for (const c of before) yield c
      throw boom
    })()
    await assert.rejects(w.appendStream('b', failing([])), (e) => e === boom)
    await assert.rejects(w.appendStream('b', failing([Buffer.alloc(70000, 1), Buffer.alloc(70000, 2)])), (e) => e === boom)
    await assert.rejects(w.appendStream('a', ['x']), code('INVALID_ARGUMENT')) // out of order, from the stream's thread
    await w.appendStream('b', [Buffer.alloc(5000, 3), 'tail'])
    w.append('c', '3')
    await w.finish()
    const t = Bitable.openSync(file)
    assert.deepEqual(t.range().toArray().map(([k, v]) => [k.toString(), v.length]), [['a', 1], ['b', 5004], ['c', 1]])
    assert.equal(t.checkSync().ok, true)
    t.close()
  })

  test('calls made while the writer is lent out fail with LOCKED', async () => {
    const src = where('src')
    await build(src, new Map([[Buffer.from('m'), Buffer.from('merged')]]))
    const table = Bitable.openSync(src)
    const w = BitableWriter.create(where())
    w.append('a', '1')
    // The stream holds the writer until its source ends, which waits for `gate`.
    let open
    const gate = new Promise((r) => (open = r))
    const streaming = w.appendStream('b', (async function* () {
      yield 'part'
      await gate
      yield 'end'
    })())
    const locked = (e) => code('LOCKED')(e) && /appendStream/.test(e.message)
    assert.throws(() => w.append('c', 'v'), locked)
    assert.throws(() => w.finishSync(), locked)
    assert.throws(() => w.mergeSync([table]), locked)
    assert.throws(() => w.discard(), locked)
    await assert.rejects(w.merge([table]), locked)
    const tree = Tree.open(path.join(path.dirname(src), 't.bale'), { create: true })
    await assert.rejects(w.appendTree(tree), locked)
    tree.close()
    await assert.rejects(w.appendStream('c', ['v']), locked)
    await assert.rejects(w.finish(), locked)
    open()
    await streaming
    assert.equal(await w.merge([table]), 1)
    w.append('n', 'v')
    assert.equal(w.length, 4)
    const out = w.path
    assert.equal((await w.finish()).entries, 4)
    table.close()
    const built = Bitable.openSync(out)
    assert.deepEqual(built.range().toArray().map(([k, v]) => [k.toString(), v.toString()]),
      [['a', '1'], ['b', 'partend'], ['m', 'merged'], ['n', 'v']])
    built.close()
  })

  test('merge and appendTree, in both forms', async () => {
    const oldF = where('old')
    const newF = where('new')
    const old = new Map(Array.from({ length: 150 }, (_, i) => [Buffer.from(String(i * 2).padStart(3, '0')), Buffer.from('old')]))
    const nu = new Map(Array.from({ length: 100 }, (_, i) => [Buffer.from(String(i * 3).padStart(3, '0')), Buffer.from('new')]))
    nu.set(Buffer.from('large'), pseudo(100000, 3))
    await build(oldF, old)
    await build(newF, nu)
    const a = Bitable.openSync(oldF)
    const b = Bitable.openSync(newF, { mmap: false })
    const want = new Map([...old, ...nu].map(([k, v]) => [k.toString(), v]))
    for (const sync of [false, true]) {
      const w = BitableWriter.create(where('m'))
      w.append('', 'first')
      assert.equal(sync ? w.mergeSync([a, b]) : await w.merge([a, b], { onDuplicate: 'newest' }), want.size)
      assert.equal(w.length, want.size + 1)
      const out = w.path
      sync ? w.finishSync() : await w.finish()
      const merged = Bitable.openSync(out)
      const got = merged.range().toArray()
      merged.close()
      assert.deepEqual(got.map(([k, v]) => [k.toString(), v]), [['', Buffer.from('first')], ...[...want].sort()])
    }
    const e = BitableWriter.create(where('e'))
    await assert.rejects(e.merge([a, b], { onDuplicate: 'error' }), (err) => code('INVALID_ARGUMENT')(err) && /both hold/.test(err.message))
    assert.throws(() => e.mergeSync([a, 'b']), code('INVALID_ARGUMENT'))
    assert.throws(() => e.mergeSync(a), code('INVALID_ARGUMENT'))
    e.discard()
    const treeFile = path.join(path.dirname(oldF), 'tree.bale')
    const tree = Tree.open(treeFile, { create: true })
    tree.putManySync(Array.from({ length: 1000 }, (_, i) => [`k${i}`, `v${i}`]))
    tree.putSync('big', pseudo(300000, 4))
    for (const sync of [false, true]) {
      const w = BitableWriter.create(where('x'))
      assert.equal(sync ? w.appendTreeSync(tree) : await w.appendTree(tree), 1001)
      const out = w.path
      await w.finish()
      const appended = Bitable.openSync(out)
      assert.deepEqual(appended.range().toArray(), tree.range().toArray())
      appended.close()
    }
    const y = BitableWriter.create(where('y'))
    assert.throws(() => y.appendTreeSync(a), code('INVALID_ARGUMENT'))
    y.discard()
    tree.close()
    a.close()
    b.close()
  })

  test('an unsorted build', async () => {
    const pairs = []
    const order = pseudo(4 * 20000, 7)
    for (let i = 0; i < 20000; i++) pairs.push([String(order.readUInt32LE(4 * i) % 4000), `v${i}`])
    for (let i = 0; i < 3; i++) pairs.push([`large-${i}`, pseudo(30000, i)])
    const model = new Map(pairs) // the last added wins
    const file = where()
    const u = UnsortedBitableWriter.create(file, { memoryBudget: 1 << 16, pageSize: 8192 })
    for (const [k, v] of pairs) {
      if (k === 'large-1') await u.addStream(k, Readable.from([v.subarray(0, 1000), v.subarray(1000)]))
      else u.add(k, v)
    }
    assert.equal(u.length, pairs.length)
    assert.ok(u.runs >= 2, `${u.runs} runs`)
    const s = await u.finish()
    assert.equal(s.entries, model.size)
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['t.bitable'])
    const t = Bitable.openSync(file)
    assert.deepEqual(t.range().toArray().map(([k, v]) => [k.toString(), Buffer.from(v)]),
      [...model].sort(([a], [b]) => cmp(Buffer.from(a), Buffer.from(b))).map(([k, v]) => [k, Buffer.from(v)]))
    t.close()
    const e = UnsortedBitableWriter.create(file, { onDuplicate: 'error' })
    e.add('b', '1')
    e.add('a', '2')
    e.add('b', '3')
    assert.throws(() => e.finishSync(), (err) => code('INVALID_ARGUMENT')(err) && /more than once/.test(err.message))
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['t.bitable'])
    const d = UnsortedBitableWriter.create(file)
    d.add('x', '1')
    d.discard()
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['t.bitable'])
    const kept = Bitable.openSync(file)
    assert.equal(kept.getSync('x'), undefined)
    kept.close()
  })
})

describe('reading', () => {
  test('check reports progress in order, before it settles; a throw from progress fails it', async () => {
    const file = where()
    const w = BitableWriter.create(file)
    for (let i = 0; i < 60000; i++) w.append(String(i).padStart(6, '0'), 'v'.repeat(50))
    await w.finish()
    const t = Bitable.openSync(file)
    const calls = []
    const report = await t.check({ progress: (done, total) => calls.push([done, total]) })
    assert.equal(report.ok, true)
    assert.ok(calls.length >= 2)
    assert.deepEqual(calls.at(-1), [report.pagesChecked, report.pagesChecked])
    assert.deepEqual(calls.map(([d]) => d), calls.map(([d]) => d).sort((a, b) => a - b))
    const syncCalls = []
    assert.equal(t.checkSync({ progress: (d, n) => syncCalls.push([d, n]) }).ok, true)
    assert.deepEqual(syncCalls, calls)
    const boom = new Error('from progress')
    for (const run of [() => t.check({ progress: () => { calls.push('called'); throw boom } }),
      async () => t.checkSync({ progress: () => { calls.push('called'); throw boom } })]) {
      calls.length = 0
      await assert.rejects(run(), (e) => e === boom)
      assert.deepEqual(calls, ['called']) // not called again after it threw
    }
    t.close()
  })

  test('a closed table, and what outlives it', async () => {
    const file = where()
    const model = new Map(Array.from({ length: 500 }, (_, i) => [Buffer.from(String(i).padStart(3, '0')), Buffer.from(`v${i}`)]))
    model.set(Buffer.from('large'), pseudo(50000, 5))
    await build(file, model)
    const t = Bitable.openSync(file)
    const c = t.lowerBound('100')
    const it = t.keys()[Symbol.iterator]()
    assert.equal(it.next().value.toString(), '000')
    const stream = t.createReadStream('large', { highWaterMark: 1000 })
    const pieces = stream[Symbol.asyncIterator]()
    const parts = [(await pieces.next()).value] // opened: it holds the value now
    t.close()
    t.close()
    assert.equal(t.closed, true)
    for (const call of [() => t.getSync('000'), () => t.has('000'), () => t.count, () => t.range(), () => t.stats(),
      () => t.checkSync(), () => t.first(), () => t.lowerBound('a')]) {
      assert.throws(call, code('CLOSED'))
    }
    await assert.rejects(t.get('000'), code('CLOSED'))
    await assert.rejects(t.check(), code('CLOSED'))
    assert.equal(c.key.toString(), '100')
    assert.equal(c.next(), true)
    assert.equal(c.key.toString(), '101')
    assert.equal(it.next().value.toString(), '001')
    for (let p = await pieces.next(); !p.done; p = await pieces.next()) parts.push(p.value)
    assert.deepEqual(Buffer.concat(parts), pseudo(50000, 5))
    await assert.rejects(collect(t.createReadStream('large')), code('CLOSED'))
    // A cursor lets its handle go at close() rather than when collected.
    assert.equal(c.closed, false)
    c.close()
    c.close()
    assert.equal(c.closed, true)
    for (const call of [() => c.valid, () => c.key, () => c.value, () => c.valueLength, () => c.ordinal,
      () => c.next(), () => c.prev(), () => c.seek('1'), () => c.first(), () => c.last()]) {
      assert.throws(call, code('CLOSED'))
    }
    it.return()
    // Nothing holds the file now: Windows too lets it go.
    fs.rmSync(file)
    assert.equal(fs.existsSync(file), false)
  })

  test('worker_threads open one file and read it alike', async () => {
    const file = where()
    const model = randomModel(99, 3000, 400)
    await build(file, model)
    const table = Bitable.openSync(file)
    const want = await digest(table)
    table.close()
    const results = await Promise.all([1, 2, 3, 4].map((i) => new Promise((resolve, reject) => {
      const w = new Worker(new URL('./helpers/bitable-worker.mjs', import.meta.url), {
        workerData: { file, mmap: i % 2 === 0 },
      })
      // It closes its table after posting: the test ends once it has ended,
      // so that nothing holds the file then.
      let msg
      w.once('message', (m) => { msg = m })
      w.once('error', reject)
      w.once('exit', (c) => c !== 0 ? reject(new Error(`worker exited with ${c}`)) : resolve(msg))
    })))
    for (const r of results) assert.equal(r, want)
  })
})
