// Type-checked only (`tsc -p bindings/node/tsconfig.json`, part of
// `make test-node`): the generated index.d.ts must describe the package as
// typed code uses it. Each line would fail to compile if a type drifted.
import { Readable, Writable } from 'node:stream'
import {
  Tree,
  Txn,
  Range,
  KeyRange,
  ValueReader,
  errorCodes,
  errorForCode,
  formatVersion,
  type OpenOptions,
  type RangeOptions,
  type Stat,
  type CheckReport,
  type CompactReport,
  type Key,
  type ErrorCode,
  type BaleError,
} from '../../bindings/node'

async function main(path: string): Promise<void> {
  const opts: OpenOptions = { create: true, pageSize: 8192, durable: true, mmap: false, wait: true, readonly: false }
  const tree: Tree = Tree.open(path, opts)
  const v: Buffer | undefined = tree.get('k')
  const h: boolean = tree.has(new Uint8Array([1, 2]))
  const many: Array<Buffer | undefined> = tree.getMany(['a', Buffer.from('b')])
  const len: number | undefined = tree.valueLength('k')
  const part: Buffer | undefined = tree.readRange('k', 0, 10)
  const n: number = tree.count()
  tree.putSync('k', 'v')
  tree.putManySync([['a', Buffer.from('1')], [new Uint8Array([2]), '2']])
  const existed: boolean = tree.deleteSync('k')
  const r: number = tree.transactionSync((txn: Txn) => {
    txn.put('x', 'y')
    const got: Buffer | undefined = txn.get('x')
    const inTxn: Array<[Buffer, Buffer]> = [...txn.range({ prefix: 'x' })]
    const txnKeys: KeyRange = txn.keys()
    const vals: Array<Buffer | undefined> = txn.getMany(['x'])
    const l: number | undefined = txn.valueLength('x')
    const p: Buffer | undefined = txn.readRange('x', 0, 1)
    const vr: ValueReader = txn.openValue('x')
    void [inTxn, txnKeys, vals, l, p, vr.readSync(0, 1)]
    return txn.count() + (got ? got.length : 0)
  })
  await tree.put('k', Buffer.alloc(3))
  const removed: boolean = await tree.delete('k')
  const s: string = await tree.transaction((txn) => (txn.has('x') ? 'yes' : 'no'))
  const bytes: number = await tree.putFile('f', '/dev/null')
  await tree.flushed()
  const ro: RangeOptions = { gte: 'a', lt: Buffer.from('z'), prefix: 'p', reverse: true, offset: 2, limit: 10 }
  const range: Range = tree.range(ro)
  for (const [key, value] of range) {
    const kv: [Buffer, Buffer] = [key, value]
    void kv
  }
  for await (const [key, value] of tree.range()) void (key.length + value.length)
  const keys: KeyRange = tree.keys({ gt: 'a' })
  for (const key of keys) void (key as Buffer)
  for await (const key of tree.keys()) void (key as Buffer)
  const first: IteratorResult<[Buffer, Buffer]> = tree.range()[Symbol.iterator]().next()
  const rs: Readable = tree.createReadStream('f', { start: 0, end: 99, highWaterMark: 65536 })
  const ws: Writable = tree.writeStream('f', { tmpDir: '/tmp' })
  const reader: ValueReader = tree.openValue('f')
  const piece: Buffer = await reader.read(0, 10)
  const st: Stat = tree.stat()
  const ck: CheckReport = tree.check()
  const cr: CompactReport = await tree.compact()
  const cr2: CompactReport = tree.compactSync()
  const codes: ErrorCode[] = errorCodes()
  const e: BaleError = errorForCode('CORRUPT')
  const ec: ErrorCode = e.code
  // @ts-expect-error: not one of bale's codes
  const notACode: ErrorCode = 'StringExpected'
  try {
    tree.get('k')
  } catch (err) {
    if ((err as BaleError).code === 'NOT_FOUND') void err
  }
  const fv: number = formatVersion() + tree.formatVersion + tree.pageSize + tree.maxKeyLength
  const k: Key = 'key'
  tree.refresh()
  tree.close()
  const closed: boolean = tree.closed
  void [v, h, many, len, part, n, existed, r, removed, s, bytes, first, rs, ws, piece, st.entries, ck.problems, cr.bytesAfter]
  void [cr2, codes, e.code, ec, notACode, fv, k, closed, tree.path, tree.readonly]
}

void main
