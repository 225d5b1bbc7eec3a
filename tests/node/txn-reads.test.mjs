// Reads inside a transaction callback: every read of the tree, and every
// read of the txn, sees the transaction's own writes.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { Tree } from '../../bindings/node/index.js'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const dir = tmpDir('txn-reads')
const str = (b) => (b === undefined ? undefined : b.toString())
const code = (c) => (e) => {
  assert.equal(e.code, c, e.message)
  return true
}

const before = crypto.randomBytes(100_000)
const after = crypto.randomBytes(150_000)

// The store before the callback: a=1, b=2, big=before.
function seeded() {
  const t = Tree.open(tmpStore(dir), { create: true })
  t.putManySync([['a', '1'], ['b', '2'], ['big', before]])
  return t
}

// What each read returns inside the callback after its writes.
function assertSeesWrites(r) {
  assert.deepEqual([...r.range()].map(([k, v]) => [str(k), k.equals(Buffer.from('big')) ? v.length : str(v)]),
    [['b', 'two'], ['big', after.length], ['c', '3']])
  assert.deepEqual([...r.keys({ reverse: true })].map(str), ['c', 'big', 'b'])
  assert.deepEqual([...r.keys({ gte: 'b', lt: 'c', offset: 1 })].map(str), ['big'])
  assert.deepEqual(r.getMany(['a', 'b', 'c']).map(str), [undefined, 'two', '3'])
  assert.equal(r.valueLength('big'), after.length)
  assert.equal(r.valueLength('a'), undefined)
  assert.ok(r.readRange('big', 100_000, 1000).equals(after.subarray(100_000, 101_000)))
  assert.equal(r.readRange('a', 0, 1), undefined)
  const v = r.openValue('big')
  assert.equal(v.length, after.length)
  assert.ok(v.readSync(149_000, 5000).equals(after.subarray(149_000)))
  v.close()
  assert.throws(() => r.openValue('a'), code('NOT_FOUND'))
  assert.equal(str(r.get('b')), 'two')
  assert.equal(r.has('a'), false)
  assert.equal(r.count(), 3)
}

function write(txn) {
  txn.put('c', '3')
  txn.delete('a')
  txn.put('b', 'two')
  txn.put('big', after)
}

describe('reads inside a transaction callback see the transaction', () => {
  const forms = {
    transactionSync: (t, fn) => t.transactionSync(fn),
    transaction: (t, fn) => t.transaction(fn),
  }
  for (const [name, run] of Object.entries(forms)) {
    test(`${name}: tree and txn reads`, async () => {
      const t = seeded()
      await run(t, (txn) => {
        write(txn)
        assertSeesWrites(t)
        assertSeesWrites(txn)
      })
      assertSeesWrites(t)
      t.close()
    })

    test(`${name}: a throw leaves the last commit`, async () => {
      const t = seeded()
      const boom = new Error('boom')
      await assert.rejects(async () => run(t, (txn) => {
        write(txn)
        throw boom
      }), (e) => e === boom)
      assert.deepEqual([...t.keys()].map(str), ['a', 'b', 'big'])
      assert.equal(t.valueLength('big'), before.length)
      t.close()
    })
  }

  test('ranges and value readers made in a callback end with it', async () => {
    const t = seeded()
    let range, keys, reader
    t.transactionSync((txn) => {
      range = t.range()
      keys = txn.keys()
      reader = txn.openValue('big')
    })
    assert.throws(() => [...range], code('CLOSED'))
    assert.throws(() => [...keys], code('CLOSED'))
    assert.throws(() => reader.readSync(0, 1), code('CLOSED'))
    await assert.rejects(reader.read(0, 1), code('CLOSED'))
    // Outside a callback, reads are back on the turn's snapshot.
    assert.deepEqual([...t.keys()].map(str), ['a', 'b', 'big'])
    t.close()
  })

  test('async iteration of a range made in a callback', async () => {
    const t = seeded()
    let next
    t.transactionSync((txn) => {
      txn.put('c', '3')
      // The first batch is read while the transaction is open.
      next = txn.keys()[Symbol.asyncIterator]().next()
    })
    const first = await next
    assert.equal(str(first.value), 'a')
    t.close()
  })
})
