// Every exported call with wrong-typed arguments: each fails with an Error
// whose code is one of bale's codes (never a host error without one), and
// the ones whose argument has a type to keep fail with INVALID_ARGUMENT.
// Calls that return a promise never throw: they reject.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { Writable, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Tree, open, errorCodes, errorForCode, formatVersion } from '../../bindings/node/index.js'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const dir = tmpDir('arguments')
const BALE = new Set(errorCodes())
const MISSING = Symbol('missing')
const BAD = [42, 1.5, -1, NaN, Infinity, 'str', '', true, null, undefined, MISSING, {}, [], [42], Symbol('s'), 10n,
  () => 1, new Date(0), new Map()]
const show = (v) => (v === MISSING ? '(missing)' : typeof v === 'string' || Array.isArray(v) ? JSON.stringify(v)
  : typeof v === 'function' ? 'a function' : v?.constructor === Object ? '{}' : typeof v === 'object' && v !== null
  ? `a ${v.constructor.name}` : `${String(v)}${typeof v === 'bigint' ? 'n' : ''}`)
const assertNone = (problems) => {
  const found = problems.filter(Boolean)
  assert.equal(found.length, 0, `\n${found.join('\n')}`)
}

// Which values each kind of argument accepts; every other one is refused
// with INVALID_ARGUMENT.
const isKey = (v) => typeof v === 'string' || ArrayBuffer.isView(v) || v instanceof ArrayBuffer
const isCount = (v) => Number.isSafeInteger(v) && v >= 0
const absent = (v) => v === undefined || v === null || v === MISSING
const isOptions = (v) => absent(v) || (typeof v === 'object' && !isKey(v))
const ACCEPTS = {
  key: isKey,
  count: isCount,
  optCount: (v) => absent(v) || isCount(v),
  options: isOptions,
  string: (v) => typeof v === 'string',
  optString: (v) => absent(v) || typeof v === 'string',
  encoding: (v) => absent(v) || ['binary', 'utf8', 'json'].includes(v),
  fn: (v) => typeof v === 'function',
  keys: (v) => Array.isArray(v) && v.every(isKey),
  ops: (v) => Array.isArray(v) && v.length === 0,
  opsOrNone: (v) => v === MISSING || (Array.isArray(v) && v.length === 0),
  entries: (v) => Array.isArray(v) && v.every((e) => Array.isArray(e) && e.length === 2 && e.every(isKey)),
  ignored: () => true,
}

const existing = tmpStore(dir)
Tree.open(existing, { create: true }).close()

// A store with a small and a large value, opened afresh for each row.
function store() {
  const t = Tree.open(tmpStore(dir), { create: true })
  t.putManySync([['k', 'v'], ['big', Buffer.alloc(100_000, 7)]])
  return t
}

// Calls `f` with `a`, or with no argument for MISSING; `arg(a)` is `a` as
// one of several arguments (MISSING there is `undefined`).
const call1 = (f, a) => (a === MISSING ? f() : f(a))
const arg = (a) => (a === MISSING ? undefined : a)

// Methods of one argument, on a Tree and on a Txn: [name, kind].
const READS = [['get', 'key'], ['has', 'key'], ['getMany', 'keys'], ['valueLength', 'key'], ['count', 'ignored'],
  ['openValue', 'key']]
const RANGES = ['range', 'keys', 'values']
// On a Tree only: [name, kind, returns a promise].
const TREE_ONE = [['putManySync', 'entries'], ['delete', 'key', true], ['deleteSync', 'key'], ['transaction', 'fn', true],
  ['transactionSync', 'fn'], ['compact', 'ignored', true], ['compactSync', 'ignored'], ['flushed', 'ignored', true],
  ['stat', 'ignored'], ['check', 'ignored'], ['refresh', 'ignored'], ['close', 'ignored']]

// [name, kind, returns a promise, call(t, a)]: `a` goes in the slot under
// test, the other arguments are valid.
const TREE_ROWS = [
  ...[...READS, ...TREE_ONE].map(([name, kind, async]) => [name, kind, !!async, (t, a) => call1((x) => t[name](x), a)]),
  ...RANGES.map((name) => [name, 'options', false, (t, a) => [...call1((x) => t[name](x), a)]]),
  ['readRange key', 'key', false, (t, a) => t.readRange(arg(a), 0, 1)],
  ['readRange offset', 'count', false, (t, a) => t.readRange('k', arg(a), 1)],
  ['readRange length', 'count', false, (t, a) => call1((x) => t.readRange('k', 0, x), a)],
  ['put key', 'key', true, (t, a) => t.put(arg(a), 'v')],
  ['put value', 'key', true, (t, a) => call1((x) => t.put('k', x), a)],
  ['putSync key', 'key', false, (t, a) => t.putSync(arg(a), 'v')],
  ['putSync value', 'key', false, (t, a) => call1((x) => t.putSync('k', x), a)],
  ['putFile key', 'key', true, (t, a) => t.putFile(arg(a), existing)],
  ['putFile path', 'string', true, (t, a) => call1((x) => t.putFile('f', x), a)],
  ['createReadStream key', 'key', false, (t, a) => drain(t.createReadStream(arg(a)))],
  ['createReadStream options', 'options', false, (t, a) => drain(call1((x) => t.createReadStream('big', x), a))],
  ['createReadStream start', 'optCount', false, (t, a) => drain(t.createReadStream('big', { start: arg(a) }))],
  ['writeStream key', 'key', false, (t, a) => fill(t.writeStream(arg(a)))],
  ['writeStream options', 'options', false, (t, a) => fill(call1((x) => t.writeStream('w', x), a))],
  ['writeStream tmpDir', 'optString', false, (t, a) => fill(t.writeStream('w', { tmpDir: arg(a) }))],
  ['ValueReader.read offset', 'count', true, (t, a) => t.openValue('big').read(arg(a), 1)],
  ['ValueReader.readSync length', 'count', false, (t, a) => call1((x) => t.openValue('big').readSync(0, x), a)],
  ['Range.close', 'ignored', false, (t, a) => call1((x) => t.range().close(x), a)],
  ['batch', 'opsOrNone', true, (t, a) => call1((x) => t.batch(x), a)],
  ['batch op', 'ops', true, (t, a) => t.batch([arg(a)])],
  ['batchSync', 'ops', false, (t, a) => call1((x) => t.batchSync(x), a)],
  ['batchSync key', 'key', false, (t, a) => t.batchSync([{ type: 'del', key: arg(a) }])],
  ['chained put key', 'key', true, (t, a) => t.batch().put(arg(a), 'v').write()],
  ['chained del key', 'key', false, (t, a) => t.batch().del(arg(a)).writeSync()],
  ['chained write', 'ignored', true, (t, a) => call1((x) => t.batch().put('a', 'b').write(x), a)],
  ['get options', 'options', false, (t, a) => call1((x) => t.get('k', x), a)],
  ['get valueEncoding', 'encoding', false, (t, a) => t.get('k', { valueEncoding: arg(a) })],
  ['put options', 'options', true, (t, a) => call1((x) => t.put('k', 'v', x), a)],
  ['delete keyEncoding', 'encoding', true, (t, a) => t.delete('k', { keyEncoding: arg(a) })],
  ['range keyEncoding', 'encoding', false, (t, a) => t.range({ keyEncoding: arg(a) }).toArray()],
  ['createReadStream keyEncoding', 'encoding', false, (t, a) => drain(t.createReadStream('big', { keyEncoding: arg(a) }))],
]
// The same on the txn of a transaction callback (sync calls only).
const TXN_ROWS = [
  ...[...READS, ['delete', 'key'], ['clear', 'ignored']].map(([name, kind]) => [name, kind, (x, a) => call1((v) => x[name](v), a)]),
  ...RANGES.map((name) => [name, 'options', (x, a) => [...call1((v) => x[name](v), a)]]),
  ['readRange offset', 'count', (x, a) => x.readRange('k', arg(a), 1)],
  ['put key', 'key', (x, a) => x.put(arg(a), 'v')],
  ['put value', 'key', (x, a) => call1((v) => x.put('k', v), a)],
  ['put options', 'options', (x, a) => call1((v) => x.put('k', 'v', v), a)],
  ['get valueEncoding', 'encoding', (x, a) => x.get('k', { valueEncoding: arg(a) })],
]
const MODULE_ROWS = [
  ['Tree.open path', 'string', (a) => call1((x) => Tree.open(x), a).close()],
  ['Tree.open options', 'options', (a) => call1((x) => Tree.open(existing, x), a).close()],
  ['open keyEncoding', 'encoding', (a) => open(existing, { keyEncoding: arg(a) }).close()],
  ['errorForCode code', 'string', (a) => call1((x) => errorForCode(x), a)],
  ['errorForCode message', 'optString', (a) => call1((x) => errorForCode('IO', x), a)],
  ['errorCodes', 'ignored', (a) => call1((x) => errorCodes(x), a)],
  ['formatVersion', 'ignored', (a) => call1((x) => formatVersion(x), a)],
]

function drain(stream) {
  return pipeline(stream, new Writable({ write(c, e, cb) { cb() } }))
}
function fill(stream) {
  return pipeline(Readable.from([Buffer.from('x')]), stream)
}

// What a call did: { ok }, { threw } or { rejected }.
async function outcome(call) {
  let r
  try {
    r = call()
  } catch (e) {
    return { threw: e }
  }
  if (r === null || typeof r?.then !== 'function') return { ok: true }
  try {
    await r
    return { ok: true, promise: true }
  } catch (e) {
    return { rejected: e, promise: true }
  }
}

// What is wrong with an outcome, or nothing.
function judge(what, kind, value, out, async) {
  const err = out.threw ?? out.rejected
  const call = `${what}(${show(value)})`
  if (err !== undefined && !(err instanceof Error)) return `${call}: threw a non-Error ${String(err)}`
  if (err !== undefined && !BALE.has(err.code)) return `${call}: code ${err.code} is not bale's (${err.message})`
  if (async && out.threw !== undefined) return `${call}: threw instead of rejecting`
  if (!ACCEPTS[kind](value) && err?.code !== 'INVALID_ARGUMENT') return `${call}: not refused (${err?.code ?? 'no error'})`
  return null
}

test('Tree methods', async () => {
  const problems = []
  for (const [name, kind, async, call] of TREE_ROWS) {
    for (const value of BAD) {
      const t = store()
      problems.push(judge(name, kind, value, await outcome(() => call(t, value)), async))
      if (!t.closed) t.close()
    }
  }
  assertNone(problems)
})

test('Txn methods', () => {
  const problems = []
  const t = store()
  for (const [name, kind, call] of TXN_ROWS) {
    for (const value of BAD) {
      let out
      t.transactionSync((txn) => {
        try {
          call(txn, value)
          out = { ok: true }
        } catch (e) {
          out = { threw: e }
        }
      })
      problems.push(judge(`txn.${name}`, kind, value, out, false))
    }
  }
  t.close()
  assertNone(problems)
})

test('module functions', async () => {
  const problems = []
  for (const [name, kind, call] of MODULE_ROWS) {
    for (const value of BAD) problems.push(judge(name, kind, value, await outcome(() => call(value)), false))
  }
  assertNone(problems)
})

test('err.code is typed as exactly the codes errorCodes() lists', () => {
  const dts = fs.readFileSync(new URL('../../bindings/node/index.d.ts', import.meta.url), 'utf8')
  const union = /export type ErrorCode =([^;]*?)\n\n/.exec(dts)
  assert.ok(union, 'index.d.ts declares ErrorCode')
  assert.deepEqual([...union[1].matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]), errorCodes())
})

test('open options of the wrong type', () => {
  for (const o of [{ create: 'yes' }, { readonly: 1 }, { pageSize: '4096' }, { pageSize: 4096.5 }, { pageSize: -1 },
    { durable: {} }, { mmap: 'no' }, { wait: 0 }, { pagesize: 8192 }]) {
    assert.throws(() => Tree.open(tmpStore(dir), { create: true, ...o }), (e) => e.code === 'INVALID_ARGUMENT',
      JSON.stringify(o))
  }
  // `undefined` and `null` leave an option out.
  Tree.open(tmpStore(dir), { create: true, readonly: undefined, pageSize: null }).close()
})

test('a method called on another object', async () => {
  // Every method of every class, taken off its object (`const { stat } =
  // tree; stat()`, `keys.forEach(tree.deleteSync)`).
  const t = store()
  const objects = { Tree: t, Range: t.range(), ValueReader: t.openValue('k'), ChainedBatch: t.batch() }
  t.transactionSync((txn) => {
    objects.Txn = txn
  })
  const problems = []
  for (const [cls, obj] of Object.entries(objects)) {
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(obj))) {
      const f = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(obj), name).value
      if (typeof f !== 'function' || name === 'constructor' || name.startsWith('_')) continue
      for (const self of [{}, undefined]) {
        const out = await outcome(() => f.call(self, 'k', 'v'))
        const err = out.threw ?? out.rejected
        if (err?.code !== 'INVALID_ARGUMENT') problems.push(`${cls}.${name} on ${String(self)}: ${err?.code} ${err?.message}`)
      }
    }
  }
  // Their snapshots hold the file open, which Windows cannot then delete.
  objects.Range.close()
  objects.ValueReader.close()
  t.close()
  assertNone(problems)
})
