// keyEncoding / valueEncoding ('binary', 'utf8', 'json'), at open and per
// call, on every read and write path: point reads and writes, ranges
// (bounds and results), transactions, streams.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Tree, open } from '../../bindings/node/index.js'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const dir = tmpDir('encoding')
const code = (c) => (e) => {
  assert.equal(e.code, c, e.message)
  return true
}
const raw = (t, k) => t.get(k, { keyEncoding: 'binary', valueEncoding: 'binary' })

describe('utf8', () => {
  test('strings in and out on every read', async () => {
    const t = open(tmpStore(dir), { create: true, keyEncoding: 'utf8', valueEncoding: 'utf8' })
    t.putSync('a', 'één')
    await t.put('b', 'two')
    t.putManySync([['c', 'three'], ['d', 'four']])
    assert.equal(t.get('a'), 'één')
    assert.equal(t.get('missing'), undefined)
    assert.deepEqual(t.getMany(['a', 'x', 'c']), ['één', undefined, 'three'])
    assert.deepEqual(t.range({ gt: 'a', lte: 'c' }).toArray(), [['b', 'two'], ['c', 'three']])
    assert.deepEqual(t.keys({ reverse: true, limit: 2 }).toArray(), ['d', 'c'])
    assert.deepEqual(t.values({ gte: 'b', offset: 1 }).toArray(), ['three', 'four'])
    const seen = []
    for await (const [k, v] of t.range({ prefix: 'a' })) seen.push(k, v)
    assert.deepEqual(seen, ['a', 'één'])
    // Stored as UTF-8 bytes.
    assert.ok(raw(t, 'a').equals(Buffer.from('één')))
    assert.equal(t.valueLength('a'), Buffer.byteLength('één'))
    t.close()
  })
})

describe('json', () => {
  test('keys and values are JSON values, stored as their JSON text', async () => {
    const t = open(tmpStore(dir), { create: true, keyEncoding: 'json', valueEncoding: 'json' })
    t.putSync(['user', 1], { name: 'ada', tags: ['x'] })
    await t.put(['user', 2], { name: 'bob' })
    t.putManySync([[['user', 3], null], [['group', 1], [1, 2, 3]]])
    assert.deepEqual(t.get(['user', 1]), { name: 'ada', tags: ['x'] })
    assert.equal(t.get(['user', 3]), null)
    assert.equal(t.get(['user', 9]), undefined)
    assert.equal(t.has(['group', 1]), true)
    assert.deepEqual(t.getMany([['user', 2], ['nobody']]), [{ name: 'bob' }, undefined])
    // Bounds are encoded like keys; a prefix is the leading text.
    assert.deepEqual(t.keys({ gte: ['user', 2] }).toArray(), [['user', 2], ['user', 3]])
    assert.deepEqual(t.keys({ prefix: '["user",' }).toArray(), [['user', 1], ['user', 2], ['user', 3]])
    // JSON text order: '["group",1]' < '["user",0]' < '["user",1]'.
    assert.deepEqual(t.range({ lt: ['user', 0] }).toArray(), [[['group', 1], [1, 2, 3]]])
    assert.deepEqual(t.values({ prefix: '["user"', limit: 2 }).toArray(), [{ name: 'ada', tags: ['x'] }, { name: 'bob' }])
    assert.equal(raw(t, '["user",2]').toString(), '{"name":"bob"}')
    assert.equal(t.valueLength(['user', 2]), '{"name":"bob"}'.length)
    assert.equal(t.readRange(['user', 2], 2, 4).toString(), 'name')
    const reader = t.openValue(['user', 2])
    assert.equal(reader.readSync(0, 100).toString(), '{"name":"bob"}')
    reader.close()
    assert.equal(await t.delete(['user', 3]), true)
    assert.equal(t.deleteSync(['group', 1]), true)
    assert.equal(t.count(), 2)
    t.close()
  })

  test('values without a JSON form and stored bytes that are not JSON are INVALID_ARGUMENT', async () => {
    const t = open(tmpStore(dir), { create: true, valueEncoding: 'json' })
    const cycle = {}
    cycle.self = cycle
    for (const v of [undefined, () => 1, 10n, cycle, Symbol('s')]) {
      assert.throws(() => t.putSync('k', v), code('INVALID_ARGUMENT'))
      await assert.rejects(t.put('k', v), code('INVALID_ARGUMENT'))
    }
    assert.equal(t.count(), 0)
    t.putSync('text', 'not json', { valueEncoding: 'binary' })
    assert.throws(() => t.get('text'), code('INVALID_ARGUMENT'))
    assert.throws(() => t.range().toArray(), code('INVALID_ARGUMENT'))
    assert.equal(t.get('text', { valueEncoding: 'utf8' }), 'not json')
    t.close()
  })
})

describe('per call', () => {
  test('a call overrides either side of the handle\'s encodings', async () => {
    const t = Tree.open(tmpStore(dir), { create: true })
    t.putSync('obj', { a: 1 }, { valueEncoding: 'json' })
    await t.put({ k: 1 }, 'v', { keyEncoding: 'json', valueEncoding: 'utf8' })
    assert.ok(Buffer.isBuffer(t.get('obj')))
    assert.equal(t.get('obj').toString(), '{"a":1}')
    assert.deepEqual(t.get('obj', { valueEncoding: 'json' }), { a: 1 })
    assert.equal(t.get({ k: 1 }, { keyEncoding: 'json', valueEncoding: 'utf8' }), 'v')
    assert.deepEqual(t.getMany(['obj'], { valueEncoding: 'json' }), [{ a: 1 }])
    assert.deepEqual(t.keys({ keyEncoding: 'utf8' }).toArray(), ['obj', '{"k":1}'])
    assert.deepEqual(t.range({ gte: 'obj', lt: 'p', valueEncoding: 'json' }).toArray().map(([k, v]) => [k.toString(), v]),
      [['obj', { a: 1 }]])
    assert.deepEqual(t.values({ gt: { k: 0 }, keyEncoding: 'json', valueEncoding: 'utf8' }).toArray(), ['v'])
    const u = open(t.path, { keyEncoding: 'utf8', valueEncoding: 'json' })
    assert.ok(Buffer.isBuffer(u.get('obj', { valueEncoding: 'binary' })))
    assert.deepEqual(u.get('obj', { valueEncoding: null }), { a: 1 }, 'null keeps the handle\'s')
    u.close()
    t.close()
  })

  test('unknown encodings and option names are INVALID_ARGUMENT', async () => {
    const p = tmpStore(dir)
    for (const o of [{ keyEncoding: 'hex' }, { valueEncoding: 'buffer' }, { valueEncoding: 1 }, { keyEncoding: 'toString' }]) {
      assert.throws(() => open(p, { create: true, ...o }), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    const t = open(p, { create: true })
    for (const o of [{ valueEncoding: 'hex' }, { encoding: 'utf8' }, 'utf8', 7]) {
      assert.throws(() => t.get('k', o), code('INVALID_ARGUMENT'), JSON.stringify(o))
      assert.throws(() => t.putSync('k', 'v', o), code('INVALID_ARGUMENT'), JSON.stringify(o))
      await assert.rejects(t.put('k', 'v', o), code('INVALID_ARGUMENT'), JSON.stringify(o))
    }
    assert.throws(() => t.range({ valueEncoding: 'hex' }), code('INVALID_ARGUMENT'))
    assert.throws(() => t.keys({ keyEncoding: 'utf8', lmit: 1 }), code('INVALID_ARGUMENT'))
    assert.equal(t.count(), 0)
    t.close()
  })
})

describe('transactions and streams', () => {
  test('the txn and the tree\'s reads inside a callback use the tree\'s encodings', async () => {
    const t = open(tmpStore(dir), { create: true, keyEncoding: 'utf8', valueEncoding: 'json' })
    const n = await t.transaction((txn) => {
      txn.put('a', { n: 1 })
      txn.put('b', { n: 2 }, { valueEncoding: 'json' })
      assert.deepEqual(txn.get('a'), { n: 1 })
      assert.deepEqual(t.get('b'), { n: 2 })
      assert.deepEqual(txn.range().toArray(), [['a', { n: 1 }], ['b', { n: 2 }]])
      assert.equal(txn.delete('a'), true)
      return txn.count()
    })
    assert.equal(n, 1)
    t.transactionSync((txn) => {
      assert.deepEqual(txn.keys().toArray(), ['b'])
      assert.equal(txn.get('b', { valueEncoding: 'utf8' }), '{"n":2}')
    })
    t.close()
  })

  test('stream keys take the key encoding', async () => {
    const t = open(tmpStore(dir), { create: true, keyEncoding: 'json' })
    await pipeline(Readable.from([Buffer.from('hello '), Buffer.from('world')]), t.writeStream({ id: 7 }))
    assert.equal(t.get('{"id":7}', { keyEncoding: 'binary' }).toString(), 'hello world')
    const chunks = []
    await pipeline(t.createReadStream({ id: 7 }, { start: 6 }), new Writable({
      write(c, e, cb) { chunks.push(c); cb() },
    }))
    assert.equal(Buffer.concat(chunks).toString(), 'world')
    const f = path.join(dir, 'file.txt')
    fs.writeFileSync(f, 'from a file')
    assert.equal(await t.putFile(['file'], f), 11)
    assert.equal(t.get(['file']).toString(), 'from a file')
    t.close()
  })
})
