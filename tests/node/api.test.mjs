// The Node API: reads, durable async and sync writes, transactions, ranges,
// snapshots, streams, maintenance, options and errors.
import { after, test, describe } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { Tree, errorCodes, errorForCode, formatVersion } from '../../bindings/node/index.js'
import { tmpDir, tmpStore, nextTurn } from './helpers/tmp.mjs'
import { replacesOpenFiles, refusal } from './helpers/replace.mjs'

const dir = tmpDir('api')
const fresh = (opts = {}) => Tree.open(tmpStore(dir), { create: true, ...opts })
const str = (b) => (b === undefined ? undefined : b.toString())
const code = (c) => (e) => {
  assert.ok(e instanceof Error, `not an Error: ${e}`)
  assert.equal(e.code, c, e.message)
  return true
}

describe('errors', () => {
  test('every core error kind maps to an Error with its code', () => {
    const codes = errorCodes()
    assert.deepEqual(codes, [
      'NOT_FOUND', 'CORRUPT', 'CHECKSUM_MISMATCH', 'UNSUPPORTED_VERSION', 'NOT_A_BALE_FILE', 'LOCKED',
      'INVALID_ARGUMENT', 'TOO_LARGE', 'CONFLICT', 'CLOSED', 'IO',
    ])
    for (const c of codes) {
      const e = errorForCode(c, 'details')
      assert.ok(e instanceof Error)
      assert.equal(e.code, c)
      assert.equal(e.message, `${c}: details`)
    }
    assert.equal(errorForCode('NO_SUCH_CODE').code, 'INVALID_ARGUMENT')
  })

  test('open errors', () => {
    assert.throws(() => Tree.open(path.join(dir, 'missing.bale')), code('NOT_FOUND'))
    const junk = path.join(dir, 'junk.bale')
    fs.writeFileSync(junk, 'this is not a store file, just text that is long enough to have a header'.repeat(4))
    assert.throws(() => Tree.open(junk), code('NOT_A_BALE_FILE'))
    assert.throws(() => Tree.open(tmpStore(dir), { create: true, pageSize: 1000 }), code('INVALID_ARGUMENT'))
    assert.throws(() => Tree.open(dir, { create: true }), code('IO'))
  })

  test('bad arguments are INVALID_ARGUMENT, long keys TOO_LARGE', async () => {
    const t = fresh()
    assert.throws(() => t.get(42), code('INVALID_ARGUMENT'))
    assert.throws(() => t.putSync({}, 'v'), code('INVALID_ARGUMENT'))
    assert.throws(() => t.readRange('k', -1, 4), code('INVALID_ARGUMENT'))
    assert.throws(() => t.range({ limit: 1.5 }), code('INVALID_ARGUMENT'))
    const long = Buffer.alloc(t.maxKeyLength + 1, 1)
    assert.throws(() => t.putSync(long, 'v'), code('TOO_LARGE'))
    await assert.rejects(t.put(long, 'v'), code('TOO_LARGE'))
    t.putSync(Buffer.alloc(t.maxKeyLength, 1), 'v')
    t.close()
  })
})

describe('reads and writes', () => {
  test('keys and values as Buffer, Uint8Array, ArrayBuffer or string', () => {
    const t = fresh()
    t.putSync('s', 'string value')
    t.putSync(new Uint8Array([1, 2, 3]), new Uint8Array([4, 5]))
    t.putSync(new Uint8Array([9, 9, 9, 9]).subarray(1, 3), new Uint16Array([0x0201]))
    t.putSync(new Uint8Array([7]).buffer, Buffer.alloc(0))
    assert.equal(str(t.get('s')), 'string value')
    assert.deepEqual([...t.get(Buffer.from([1, 2, 3]))], [4, 5])
    assert.deepEqual([...t.get(Buffer.from([9, 9]))], [1, 2])
    assert.equal(t.get(Buffer.from([7])).length, 0)
    assert.equal(t.get('nope'), undefined)
    assert.equal(t.has('s'), true)
    assert.equal(t.has('nope'), false)
    assert.equal(t.count(), 4)
    // A returned Buffer is a copy owned by JS.
    const b = t.get('s')
    b.fill(0)
    assert.equal(str(t.get('s')), 'string value')
    t.close()
  })

  test('put/delete resolve after the commit; one batch per burst', async () => {
    const t = fresh()
    const before = t.stat().txn
    const puts = []
    for (let i = 0; i < 1000; i++) puts.push(t.put(`k${String(i).padStart(4, '0')}`, `v${i}`))
    const del = t.delete('k0005')
    const delMissing = t.delete('zzz')
    await Promise.all(puts)
    assert.equal(await del, true)
    assert.equal(await delMissing, false)
    assert.equal(t.count(), 999)
    assert.equal(t.get('k0005'), undefined)
    assert.ok(t.stat().txn - before <= 2, `burst took ${t.stat().txn - before} commits`)
    // Call order is commit order.
    t.put('x', '1')
    t.delete('x')
    await t.put('y', '2')
    assert.equal(t.get('x'), undefined)
    // Durable: a second handle sees everything.
    const u = Tree.open(t.path)
    assert.equal(u.count(), 1000)
    u.close()
    t.close()
  })

  test('sync writes', () => {
    const t = fresh()
    t.putSync('a', '1')
    t.putManySync([['b', '2'], ['c', '3']])
    assert.equal(t.deleteSync('a'), true)
    assert.equal(t.deleteSync('a'), false)
    assert.deepEqual(t.getMany(['a', 'b', 'c']).map(str), [undefined, '2', '3'])
    t.close()
  })

  test('large values: whole, ranged, length', async () => {
    const t = fresh()
    const big = crypto.randomBytes(300_000)
    await t.put('big', big)
    assert.ok(t.get('big').equals(big))
    assert.equal(t.valueLength('big'), big.length)
    assert.equal(t.valueLength('none'), undefined)
    assert.ok(t.readRange('big', 70_000, 1000).equals(big.subarray(70_000, 71_000)))
    assert.ok(t.readRange('big', 299_990, 100).equals(big.subarray(299_990)))
    assert.equal(t.readRange('none', 0, 1), undefined)
    // Around the 64 KiB scratch that get() copies through, and in ranges.
    const sizes = [0, 1, 4000, 65535, 65536, 65537, 1 << 20]
    const vals = sizes.map((n) => crypto.randomBytes(n))
    await t.transaction((txn) => sizes.forEach((n, i) => txn.put(`s${String(i).padStart(2, '0')}`, vals[i])))
    sizes.forEach((n, i) => assert.ok(t.get(`s${String(i).padStart(2, '0')}`).equals(vals[i]), `size ${n}`))
    t.transactionSync((txn) => {
      assert.ok(t.get('s05').equals(vals[5]))
      sizes.forEach((n, i) => assert.ok(txn.get(`s${String(i).padStart(2, '0')}`).equals(vals[i]), `txn size ${n}`))
    })
    const got = [...t.range({ prefix: 's' })].map(([, v]) => v)
    assert.equal(got.length, sizes.length)
    got.forEach((v, i) => assert.ok(v.equals(vals[i]), `range size ${sizes[i]}`))
    const agot = []
    for await (const [, v] of t.range({ prefix: 's', reverse: true })) agot.push(v)
    agot.reverse().forEach((v, i) => assert.ok(v.equals(vals[i]), `async range size ${sizes[i]}`))
    t.close()
  })
})

describe('transactions', () => {
  test('transaction resolves to the callback result after commit', async () => {
    const t = fresh()
    const r = await t.transaction((txn) => {
      txn.put('a', '1')
      txn.put('b', '2')
      assert.equal(str(txn.get('a')), '1')
      assert.equal(txn.has('b'), true)
      assert.equal(txn.delete('b'), true)
      return { count: txn.count() }
    })
    assert.deepEqual(r, { count: 1 })
    assert.equal(str(t.get('a')), '1')
    assert.equal(await t.transaction(() => 7), 7)
    t.close()
  })

  test('a throw rolls back and rejects with that error', async () => {
    const t = fresh()
    t.putSync('keep', '1')
    const boom = new Error('boom')
    await assert.rejects(t.transaction((txn) => {
      txn.put('lost', '1')
      txn.delete('keep')
      throw boom
    }), (e) => e === boom)
    assert.throws(() => t.transactionSync((txn) => {
      txn.put('lost', '1')
      t.putSync('lost2', '1')
      throw boom
    }), (e) => e === boom)
    assert.equal(t.get('lost'), undefined)
    assert.equal(t.get('lost2'), undefined)
    assert.equal(str(t.get('keep')), '1')
    t.close()
  })

  test('async callbacks are refused; txn ends with its callback; no nesting', async () => {
    const t = fresh()
    await assert.rejects(t.transaction(async (txn) => txn.put('a', '1')), code('INVALID_ARGUMENT'))
    assert.equal(t.get('a'), undefined)
    let kept
    t.transactionSync((txn) => {
      kept = txn
      assert.throws(() => t.transactionSync(() => 1), code('INVALID_ARGUMENT'))
    })
    assert.throws(() => kept.put('a', '1'), code('CLOSED'))
    t.close()
  })

  test('tree reads and sync writes inside a callback use its transaction', () => {
    const t = fresh()
    const n = t.transactionSync((txn) => {
      t.putSync('a', '1')
      assert.equal(str(txn.get('a')), '1')
      assert.equal(str(t.get('a')), '1')
      assert.equal(t.has('a'), true)
      return t.count()
    })
    assert.equal(n, 1)
    assert.equal(str(t.get('a')), '1')
    t.close()
  })

  test('writes queued during a callback run after it, in order', async () => {
    const t = fresh()
    let later
    t.transactionSync(() => {
      later = t.put('q', 'queued')
    })
    await later
    assert.equal(str(t.get('q')), 'queued')
    const seen = []
    const a = t.transaction((txn) => { seen.push(str(txn.get('o'))); txn.put('o', 'a') })
    const b = t.put('o', 'b')
    const c = t.transaction((txn) => { seen.push(str(txn.get('o'))) })
    await Promise.all([a, b, c])
    assert.deepEqual(seen, [undefined, 'b'])
    t.close()
  })
})

describe('snapshots', () => {
  test('reads see one snapshot per turn, own commits at once', async () => {
    const t = fresh()
    const other = Tree.open(t.path)
    t.putSync('k', '1')
    assert.equal(str(t.get('k')), '1')
    other.putSync('k', '2')
    assert.equal(str(t.get('k')), '1', 'same turn: same snapshot')
    await nextTurn()
    assert.equal(str(t.get('k')), '2', 'next turn: latest commit')
    other.putSync('k', '3')
    t.refresh()
    assert.equal(str(t.get('k')), '3', 'refresh: latest commit')
    const r = t.range()
    other.putSync('k', '4')
    t.refresh()
    assert.deepEqual([...r].map(([, v]) => str(v)), ['3'], 'a range keeps its snapshot')
    t.refresh()
    assert.equal(str(t.get('k')), '4', 'refresh after a range: latest commit')
    t.refresh()
    assert.equal(str(t.get('k')), '4', 'refresh with nothing new: same content')
    other.close()
    // After a compaction through this handle, refresh reads the new file;
    // where the system cannot replace an open file (helpers/replace.mjs),
    // the compaction is refused and the handle goes on with its file.
    if (replacesOpenFiles()) t.compactSync()
    else assert.throws(() => t.compactSync(), refusal)
    const later = Tree.open(t.path)
    later.putSync('k', '5')
    t.refresh()
    assert.equal(str(t.get('k')), '5', 'refresh after compact: the new file')
    later.close()
    t.close()
  })
})

// Keys 000..299 (step 1) as a model for the range options.
describe('ranges', () => {
  const t = fresh()
  after(() => t.close())
  const all = []
  for (let i = 0; i < 300; i++) all.push(String(i).padStart(3, '0'))
  t.putManySync(all.map((k) => [k, `v${k}`]))

  const model = (o) => {
    let ks = all.filter((k) =>
      (o.gt === undefined || k > o.gt) && (o.gte === undefined || k >= o.gte) &&
      (o.lt === undefined || k < o.lt) && (o.lte === undefined || k <= o.lte) &&
      (o.prefix === undefined || k.startsWith(o.prefix)))
    if (o.reverse) ks.reverse()
    if (o.offset !== undefined) ks = ks.slice(o.offset)
    if (o.limit !== undefined) ks = ks.slice(0, o.limit)
    return ks
  }

  test('bounds, prefix, reverse, offset and limit agree with a model', () => {
    const pick = () => String(Math.floor(Math.random() * 320)).padStart(3, '0')
    for (let i = 0; i < 400; i++) {
      const o = {}
      if (Math.random() < 0.4) o[Math.random() < 0.5 ? 'gt' : 'gte'] = pick()
      if (Math.random() < 0.4) o[Math.random() < 0.5 ? 'lt' : 'lte'] = pick()
      if (Math.random() < 0.3) o.prefix = pick().slice(0, 1 + Math.floor(Math.random() * 2))
      if (Math.random() < 0.5) o.reverse = true
      if (Math.random() < 0.2) o.offset = Math.floor(Math.random() * 30)
      if (Math.random() < 0.3) o.limit = Math.floor(Math.random() * 50)
      const want = model(o)
      assert.deepEqual([...t.keys(o)].map(str), want, JSON.stringify(o))
      const entries = [...t.range(o)]
      assert.deepEqual(entries.map(([k]) => str(k)), want, JSON.stringify(o))
      for (const [k, v] of entries) assert.equal(str(v), `v${k}`)
    }
  })

  test('unknown option names and two bounds on one side are INVALID_ARGUMENT', () => {
    // lmdb-style names are not aliases: they would widen the range silently.
    for (const o of [{ start: 'c' }, { end: 'c' }, { gte: 'a', lmit: 3 }]) {
      assert.throws(() => t.range(o), code('INVALID_ARGUMENT'), JSON.stringify(o))
      assert.throws(() => t.keys(o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    assert.throws(() => t.range({ start: 'c' }), /unknown range option "start"/)
    for (const o of [{ gt: '100', gte: '100' }, { gt: '200', gte: '100' }, { lt: '100', lte: '200' }]) {
      assert.throws(() => t.keys(o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    for (const o of [{ limit: -1 }, { limit: 1.5 }, { offset: -1 }, { reverse: 'yes' }, { gt: 42 }, { prefix: {} }]) {
      assert.throws(() => t.keys(o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    assert.throws(() => t.keys('gt'), code('INVALID_ARGUMENT'))
    // A missing value is the same as leaving the option out.
    assert.equal([...t.keys({ gt: undefined, limit: null })].length, 300)
  })

  test('offset skips after the direction, limit counts after the offset', () => {
    assert.deepEqual([...t.keys({ prefix: '1', reverse: true, offset: 5, limit: 3 })].map(str), ['194', '193', '192'])
    assert.deepEqual([...t.range({ gte: '290', offset: 8 })].map(([k]) => str(k)), ['298', '299'])
    assert.deepEqual([...t.keys({ offset: 300 })], [])
  })

  test('values() and toArray() agree with the model, offset included', async () => {
    const opts = [{}, { prefix: '1', reverse: true, offset: 5, limit: 3 }, { gte: '290', offset: 8 }, { offset: 300 },
      { gt: '100', lt: '110', offset: 2, limit: 0 }, { lte: '005', reverse: true, offset: 1 }]
    for (const o of opts) {
      const want = model(o)
      const what = JSON.stringify(o)
      assert.deepEqual(t.values(o).toArray().map(str), want.map((k) => `v${k}`), what)
      assert.deepEqual(t.keys(o).toArray().map(str), want, what)
      assert.deepEqual(t.range(o).toArray().map(([k, v]) => [str(k), str(v)]), want.map((k) => [k, `v${k}`]), what)
      const values = []
      for await (const v of t.values(o)) values.push(str(v))
      assert.deepEqual(values, want.map((k) => `v${k}`), what)
    }
    // A range is read once: what toArray took is gone.
    const r = t.values({ prefix: '29' })
    assert.equal(r.toArray().length, 10)
    assert.deepEqual(r.toArray(), [])
    // Values of every size, a large one alone in its batch.
    const u = fresh()
    const big = crypto.randomBytes(300_000)
    u.putManySync([['a', 'x'], ['b', big], ['c', ''], ['d', 'y']])
    const got = u.values().toArray()
    assert.deepEqual(got.map((v) => v.length), [1, big.length, 0, 1])
    assert.ok(got[1].equals(big))
    assert.deepEqual(u.values({ reverse: true, offset: 1, limit: 2 }).toArray().map((v) => v.length), [0, big.length])
    u.close()
  })

  test('async iteration, early exit and batch boundaries', async () => {
    const got = []
    for await (const [k, v] of t.range({ gte: '100', reverse: true })) got.push([str(k), str(v)])
    assert.deepEqual(got.map(([k]) => k), model({ gte: '100', reverse: true }))
    const keys = []
    for await (const k of t.keys({ prefix: '2' })) keys.push(str(k))
    assert.deepEqual(keys, model({ prefix: '2' }))
    let n = 0
    for (const _ of t.range()) if (++n === 3) break
    assert.equal(n, 3)
    const u = fresh()
    u.putManySync(Array.from({ length: 5000 }, (_, i) => [`k${String(i).padStart(5, '0')}`, Buffer.alloc(i % 7, i % 256)]))
    u.putSync('k00010', crypto.randomBytes(200_000))
    let count = 0
    let prev = ''
    for (const [k] of u.range()) {
      assert.ok(str(k) > prev)
      prev = str(k)
      count++
    }
    assert.equal(count, 5000)
    let acount = 0
    for await (const _ of u.keys()) acount++
    assert.equal(acount, 5000)
    u.close()
  })
})

describe('streams', () => {
  test('writeStream commits on finish; createReadStream reads back in pieces', async () => {
    const t = fresh()
    const chunks = []
    for (let i = 0; i < 40; i++) chunks.push(crypto.randomBytes(100_000 + i))
    const whole = Buffer.concat(chunks)
    const ws = t.writeStream('blob')
    let finished = false
    ws.on('finish', () => {
      finished = true
      // Durable and visible when 'finish' fires.
      const other = Tree.open(t.path)
      assert.equal(other.valueLength('blob'), whole.length)
      other.close()
    })
    await pipeline(Readable.from(chunks), ws)
    assert.ok(finished)
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.bale-tmp')), [])
    const pieces = []
    await pipeline(t.createReadStream('blob', { highWaterMark: 256 * 1024 }), new Writable({
      write(c, _e, cb) { pieces.push(c); cb() },
    }))
    assert.ok(Buffer.concat(pieces).equals(whole))
    assert.ok(pieces.every((p) => p.length <= 256 * 1024))
    const part = []
    for await (const c of t.createReadStream('blob', { start: 123_456, end: 2_000_000 })) part.push(c)
    assert.ok(Buffer.concat(part).equals(whole.subarray(123_456, 2_000_001)))
    t.close()
  })

  test('stream errors: missing key, failed source, read-only store', async () => {
    const t = fresh()
    await assert.rejects(pipeline(t.createReadStream('missing'), new Writable({ write(c, e, cb) { cb() } })),
      code('NOT_FOUND'))
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1000))
        this.destroy(new Error('source failed'))
      },
    })
    const half = t.writeStream('half')
    const closed = new Promise((resolve) => half.on('close', resolve))
    await assert.rejects(pipeline(failing, half), /source failed/)
    await closed
    await t.flushed()
    assert.equal(t.get('half'), undefined)
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.bale-tmp')), [])
    t.putSync('small', 'x')
    const ro = Tree.open(t.path, { readonly: true })
    await assert.rejects(pipeline(Readable.from([Buffer.from('x')]), ro.writeStream('k')), code('INVALID_ARGUMENT'))
    assert.throws(() => ro.putSync('k', 'v'), code('INVALID_ARGUMENT'))
    await assert.rejects(ro.put('k', 'v'), code('INVALID_ARGUMENT'))
    assert.equal(str(ro.get('small')), 'x')
    ro.close()
    t.close()
  })

  test('putFile streams a file into one value', async () => {
    const t = fresh()
    const f = path.join(dir, 'input.bin')
    const data = crypto.randomBytes(1_000_000)
    fs.writeFileSync(f, data)
    assert.equal(await t.putFile('file', f), data.length)
    assert.ok(t.get('file').equals(data))
    await assert.rejects(t.putFile('nofile', path.join(dir, 'does-not-exist')), code('IO'))
    t.close()
  })
})

// The fields of stat(), as the core lists them (in every JS host).
const STAT_FIELDS = [
  'branchPages', 'depth', 'entries', 'filePages', 'fill', 'freeListPages', 'freePages', 'inlineValueBytes',
  'largePages', 'largeStoredBytes', 'largeValueBytes', 'largeValues', 'leafPages', 'metaSlot', 'pageSize', 'txn',
]

describe('maintenance and lifecycle', () => {
  test('stat, check, compact', async () => {
    const t = fresh({ pageSize: 8192 })
    assert.equal(t.pageSize, 8192)
    assert.equal(t.formatVersion, formatVersion())
    t.putManySync(Array.from({ length: 3000 }, (_, i) => [`k${i}`, crypto.randomBytes(200)]))
    const s = t.stat()
    assert.equal(s.entries, 3000)
    assert.equal(s.pageSize, 8192)
    assert.ok(s.depth >= 2 && s.leafPages > 0 && s.fill > 0 && s.fill <= 1)
    assert.deepEqual(Object.keys(s).sort(), STAT_FIELDS)
    const c = t.check()
    assert.equal(c.ok, true)
    assert.deepEqual(c.problems, [])
    assert.equal(c.entries, 3000)
    t.transactionSync((txn) => { for (let i = 0; i < 2900; i++) txn.delete(`k${i}`) })
    if (!replacesOpenFiles()) {
      // The open file cannot be replaced here: compaction fails and the
      // store goes on as it was.
      const size = fs.statSync(t.path).size
      await assert.rejects(t.compact(), refusal)
      assert.throws(() => t.compactSync(), refusal)
      assert.equal(fs.statSync(t.path).size, size)
      assert.equal(fs.existsSync(`${t.path}.compact-tmp`), false, 'the failed compaction left its file')
      assert.equal(t.count(), 100)
      assert.equal(t.check().ok, true)
      t.putSync('k0', 'again')
      assert.equal(str(t.get('k0')), 'again')
      t.close()
      return
    }
    const r = await t.compact()
    assert.equal(r.entries, 100)
    assert.ok(r.bytesAfter < r.bytesBefore)
    assert.equal(t.count(), 100)
    assert.equal(t.compactSync().entries, 100)
    assert.equal(t.check().ok, true)
    t.close()
  })

  test('another handle writing after a compaction gets CONFLICT', () => {
    const t = fresh()
    t.putSync('a', '1')
    const other = Tree.open(t.path)
    if (!replacesOpenFiles()) {
      // Refused here: the file stays, so the other handle's writes go on.
      assert.throws(() => t.compactSync(), refusal)
      other.putSync('b', '2')
      t.refresh()
      assert.equal(str(t.get('b')), '2')
      other.close()
      t.close()
      return
    }
    t.compactSync()
    assert.throws(() => other.putSync('b', '2'), code('CONFLICT'))
    other.close()
    t.close()
  })

  test('close: CLOSED everywhere, queued writes rejected', async () => {
    const t = fresh()
    t.putSync('a', '1')
    const running = t.put('b', '2')
    t.transactionSync(() => {})
    const queued = t.put('c', '3')
    t.close()
    assert.equal(t.closed, true)
    await running
    await assert.rejects(queued, code('CLOSED'))
    assert.throws(() => t.get('a'), code('CLOSED'))
    assert.throws(() => t.putSync('a', '1'), code('CLOSED'))
    assert.throws(() => t.range(), code('CLOSED'))
    assert.throws(() => t.stat(), code('CLOSED'))
    await assert.rejects(t.put('a', '1'), code('CLOSED'))
    await assert.rejects(t.transaction(() => 1), code('CLOSED'))
    const u = Tree.open(t.path, { readonly: true })
    assert.deepEqual([...u.keys()].map(str), ['a', 'b'])
    u.close()
  })

  test('a damaged newest meta is reported by check, and stat names the slot in use', () => {
    const corpus = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'corpus', 'tree', 'v1')
    const file = path.join(corpus, 'newest-meta-fails-field-check.bale')
    assert.ok(fs.existsSync(file), `missing ${file}`)
    const t = Tree.open(file, { readonly: true })
    const c = t.check()
    assert.equal(c.ok, false)
    assert.equal(c.problems[0].page, 3 - c.metaSlot)
    assert.match(c.problems[0].message, /meta slot \d is invalid/)
    assert.equal(t.stat().metaSlot, c.metaSlot)
    t.close()
  })

  test('close of a non-durable store syncs and returns', () => {
    const t = fresh({ durable: false })
    t.putSync('k', 'v')
    assert.equal(t.close(), undefined)
    assert.equal(t.close(), undefined)
    const u = Tree.open(t.path, { readonly: true })
    assert.equal(str(u.get('k')), 'v')
    u.close()
  })

  test('damage surfaces as coded errors on every read path', async () => {
    const corpus = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'corpus', 'invalid', 'tree', 'v1')
    const leaf = path.join(corpus, 'leaf-bit-flip.bale')
    assert.ok(fs.existsSync(leaf), `missing ${leaf}`)
    const t = Tree.open(leaf, { readonly: true })
    assert.throws(() => [...t.range()], code('CHECKSUM_MISMATCH'))
    await assert.rejects((async () => { for await (const _ of t.keys()) { /* read on */ } })(), code('CHECKSUM_MISMATCH'))
    assert.equal(t.check().ok, false)
    t.close()
    const block = Tree.open(path.join(corpus, 'value-block-bit-flip.bale'), { readonly: true, mmap: false })
    const big = [...block.keys()].find((k) => block.valueLength(k) > 4096)
    assert.ok(big, 'the case holds a large value')
    assert.throws(() => block.get(big), code('CHECKSUM_MISMATCH'))
    await assert.rejects(pipeline(block.createReadStream(big), new Writable({ write(c, e, cb) { cb() } })),
      code('CHECKSUM_MISMATCH'))
    block.close()
  })

  test('two writers in one process: LOCKED; non-durable handles work', async () => {
    const t = fresh()
    const other = Tree.open(t.path, { durable: false, mmap: false })
    t.transactionSync(() => {
      assert.throws(() => other.putSync('x', '1'), code('LOCKED'))
    })
    await other.put('y', '2')
    assert.equal(str(t.get('y')), '2')
    other.close()
    t.close()
  })
})
