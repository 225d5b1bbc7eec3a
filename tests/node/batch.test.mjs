// batch(ops), batchSync(ops) and the chained batch: puts and deletes in one
// atomic commit; an invalid operation fails the whole batch with nothing
// written.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { Tree, open, ChainedBatch } from '../../bindings/node/index.js'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const dir = tmpDir('batch')
const str = (b) => (b === undefined ? undefined : b.toString())
const code = (c) => (e) => {
  assert.equal(e.code, c, e.message)
  return true
}
const fresh = (opts) => {
  const t = Tree.open(tmpStore(dir), { create: true, ...opts })
  t.putManySync([['a', '1'], ['b', '2']])
  return t
}
const OPS = [{ type: 'put', key: 'c', value: '3' }, { type: 'del', key: 'a' }, { type: 'del', key: 'nope' },
  { type: 'put', key: Buffer.from('d'), value: new Uint8Array([52]) }]
const AFTER = [['b', '2'], ['c', '3'], ['d', '4']]
const entries = (t) => t.range().toArray().map(([k, v]) => [str(k), str(v)])

describe('batch', () => {
  test('batch(ops) resolves once its one commit is durable', async () => {
    const t = fresh()
    const before = t.stat().txn
    assert.equal(await t.batch(OPS), undefined)
    assert.equal(t.stat().txn, before + 1)
    assert.deepEqual(entries(t), AFTER)
    const other = Tree.open(t.path, { readonly: true })
    assert.deepEqual(entries(other), AFTER)
    other.close()
    t.close()
  })

  test('batchSync(ops) commits before returning', () => {
    const t = fresh()
    const before = t.stat().txn
    assert.equal(t.batchSync(OPS), undefined)
    assert.equal(t.stat().txn, before + 1)
    assert.deepEqual(entries(t), AFTER)
    t.batchSync([])
    t.close()
  })

  test('the chained batch: put, del, clear, length, write and writeSync', async () => {
    const t = fresh()
    const b = t.batch()
    assert.ok(b instanceof ChainedBatch)
    assert.equal(b.put('x', 'gone').clear().length, 0)
    assert.equal(b.put('c', '3').del('a').del('nope').put('d', '4').length, 4)
    assert.equal(t.get('c'), undefined, 'nothing is written before write()')
    await b.write()
    assert.deepEqual(entries(t), AFTER)
    assert.throws(() => b.put('e', '5'), code('CLOSED'))
    await assert.rejects(b.write(), code('CLOSED'))
    t.batch().del('b').del('c').writeSync()
    assert.deepEqual(entries(t), [['d', '4']])
    t.close()
  })

  test('queued with other writes, in call order', async () => {
    const t = fresh()
    const p1 = t.put('x', '1')
    const p2 = t.batch([{ type: 'del', key: 'x' }, { type: 'put', key: 'y', value: '2' }])
    const p3 = t.put('x', '3')
    await Promise.all([p1, p2, p3])
    assert.equal(str(t.get('x')), '3')
    assert.equal(str(t.get('y')), '2')
    t.close()
  })

  test('an invalid operation fails the whole batch, nothing written', async () => {
    const t = fresh({ pageSize: 4096 })
    const long = Buffer.alloc(t.maxKeyLength + 1, 1)
    const cases = [
      [{ type: 'delete', key: 'a' }, 'INVALID_ARGUMENT'],
      [{ type: 'put', key: 42, value: 'x' }, 'INVALID_ARGUMENT'],
      [{ type: 'put', key: 'k' }, 'INVALID_ARGUMENT'],
      [{ type: 'put', key: 'k', value: {} }, 'INVALID_ARGUMENT'],
      [{ type: 'del', key: 'k', value: 'x' }, 'INVALID_ARGUMENT'],
      [{ type: 'put', key: 'k', value: 'v', sync: true }, 'INVALID_ARGUMENT'],
      [{ key: 'k' }, 'INVALID_ARGUMENT'],
      [null, 'INVALID_ARGUMENT'],
      ['put', 'INVALID_ARGUMENT'],
      [Buffer.from('put'), 'INVALID_ARGUMENT'],
      [{ type: 'put', key: long, value: 'v' }, 'TOO_LARGE'],
      [{ type: 'del', key: long }, 'TOO_LARGE'],
    ]
    const txn = t.stat().txn
    for (const [bad, c] of cases) {
      const ops = [{ type: 'put', key: 'new', value: 'v' }, { type: 'del', key: 'a' }, bad, { type: 'put', key: 'z', value: 'v' }]
      const what = JSON.stringify(bad)
      await assert.rejects(t.batch(ops), code(c), what)
      assert.throws(() => t.batchSync(ops), code(c), what)
    }
    const chained = [[(b) => b.put(42, 'x'), 'INVALID_ARGUMENT'], [(b) => b.put('k', {}), 'INVALID_ARGUMENT'],
      [(b) => b.del(long), 'TOO_LARGE']]
    for (const [add, c] of chained) {
      await assert.rejects(add(t.batch().put('new', 'v').del('a')).put('z', 'v').write(), code(c))
      assert.throws(() => add(t.batch().put('new', 'v').del('a')).writeSync(), code(c))
    }
    assert.throws(() => t.batchSync([{ type: 'put' }]), /batch operation 0: key must be bytes or a string, not undefined/)
    assert.throws(() => t.batchSync([{ type: 'put', key: 'k', value: 'v' }, { type: 'delete', key: 'k' }]),
      /batch operation 1: type must be 'put' or 'del', not "delete"/)
    await t.flushed()
    assert.equal(t.stat().txn, txn, 'no commit')
    assert.deepEqual(entries(t), [['a', '1'], ['b', '2']])
    t.close()
  })

  test('encodings: the tree\'s, or the call\'s', async () => {
    const t = open(tmpStore(dir), { create: true, keyEncoding: 'json', valueEncoding: 'json' })
    await t.batch([{ type: 'put', key: ['a', 1], value: { n: 1 } }, { type: 'put', key: ['b'], value: [2] }])
    t.batch().put(['c'], null).del(['b']).writeSync()
    t.batchSync([{ type: 'put', key: 'raw', value: 'bytes' }], { keyEncoding: 'utf8', valueEncoding: 'utf8' })
    assert.deepEqual(t.range({ lt: 'r', keyEncoding: 'utf8' }).toArray(), [['["a",1]', { n: 1 }], ['["c"]', null]])
    assert.equal(t.get('raw', { keyEncoding: 'utf8', valueEncoding: 'utf8' }), 'bytes')
    assert.throws(() => t.batchSync([{ type: 'put', key: ['x'], value: undefined }]), code('INVALID_ARGUMENT'))
    assert.throws(() => t.batch().put(['x'], 10n), code('INVALID_ARGUMENT'))
    assert.equal(t.count(), 3)
    t.close()
  })

  test('batchSync inside a transaction callback writes into it', () => {
    const t = fresh()
    const boom = new Error('boom')
    assert.throws(() => t.transactionSync(() => {
      t.batchSync([{ type: 'del', key: 'a' }])
      assert.equal(t.get('a'), undefined)
      throw boom
    }), (e) => e === boom)
    assert.equal(str(t.get('a')), '1')
    t.transactionSync((txn) => {
      t.batch().del('a').put('c', '3').writeSync()
      assert.deepEqual(txn.keys().toArray().map(str), ['b', 'c'])
    })
    assert.deepEqual(entries(t), [['b', '2'], ['c', '3']])
    t.close()
  })
})
