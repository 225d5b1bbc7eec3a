// Type-checked only (with typed.ts): bitables as typed code uses them. Each
// `@ts-expect-error` line must fail to compile, and every other line must
// compile.
import { Readable } from 'node:stream'
import {
  Bitable,
  BitableCursor,
  BitableRange,
  BitableWriter,
  UnsortedBitableWriter,
  Tree,
  type BitableOpenOptions,
  type BitableWriterOptions,
  type UnsortedBitableWriterOptions,
  type BitableStats,
  type BitableCheckReport,
  type BitableProblem,
  type BitableSummary,
  type BitableRangeOptions,
  type ErrorCode,
} from '../../bindings/node'

async function main(path: string): Promise<void> {
  const layout: BitableWriterOptions = { pageSize: 8192, align: 8, compression: 'never' }
  // @ts-expect-error: not a compression policy
  const badLayout: BitableWriterOptions = { compression: 'zstd' }
  const w: BitableWriter = BitableWriter.create(path, layout)
  w.append('a', 'text')
  w.append(Buffer.from('b'), new Uint8Array([1, 2]))
  await w.appendStream('c', Readable.from([Buffer.from('streamed')]))
  await w.appendStream('d', ['chunks', Buffer.from('too')])
  // @ts-expect-error: a value is bytes or a string
  w.append('e', 5)
  const appended: number = w.length
  const maxKey: number = w.maxKeyLength
  const done: BitableSummary = await w.finish({ durable: false })
  const fileBytes: number = done.fileBytes

  const opts: BitableOpenOptions = { mmap: false }
  const t: Bitable = await Bitable.open(path, opts)
  const t2: Bitable = Bitable.openSync(path, null)
  const v: Buffer | undefined = t.getSync('a')
  const later: Buffer | undefined = await t.get(Buffer.from('a'))
  const has: boolean = t.has('a')
  const count: number = t.count
  const c: BitableCursor = t.lowerBound('a')
  const key: Buffer | undefined = c.key
  const value: Buffer | undefined = c.value
  const moved: boolean = c.next() && c.prev() && c.seek('b') && c.first() && c.last()
  const ordinal: number = c.ordinal
  c.close()
  const gone: boolean = c.closed
  const found: BitableCursor | null = t.find('zz')
  const rank: number = t.rank('b')
  const picked: BitableCursor = t.select(1)
  const ro: BitableRangeOptions = { gte: 'a', lt: Buffer.from('z'), prefix: 'a', reverse: true, offset: 1, limit: 5 }
  const pairs: BitableRange<[Buffer, Buffer]> = t.range(ro)
  for (const [k, val] of pairs) void [k.length, val.length]
  for await (const k of t.keys({ gt: 'a' })) void k.byteLength
  const values: Buffer[] = t.values().toArray()
  const under: Array<[Buffer, Buffer]> = t.prefix('a', { limit: 2 }).toArray()
  // @ts-expect-error: prefix() takes its prefix once
  void t.prefix('a', { prefix: 'b' })
  const stream: Readable = t.createReadStream('c', { start: 1, end: 3 })
  const stats: BitableStats = t.stats()
  const completion: 'durable' | 'fast' | 'unknown' = stats.completion
  const report: BitableCheckReport = await t.check({ progress: (done: number, total: number) => void [done, total] })
  const problems: BitableProblem[] = t.checkSync().problems
  for (const p of problems) {
    const pc: ErrorCode = p.code
    void [pc, p.page, p.message]
  }
  t.close()

  const sortOpts: UnsortedBitableWriterOptions = { memoryBudget: 1 << 20, onDuplicate: 'error', pageSize: 4096 }
  // @ts-expect-error: not a duplicate policy
  const badSort: UnsortedBitableWriterOptions = { onDuplicate: 'oldest' }
  const u: UnsortedBitableWriter = UnsortedBitableWriter.create(`${path}.u`, sortOpts)
  u.add('z', 'last')
  await u.addStream('a', ['first'])
  const runs: number = u.runs
  const sorted: BitableSummary = u.finishSync()

  const m = BitableWriter.create(`${path}.m`)
  const merged: number = await m.merge([t2, Bitable.openSync(`${path}.u`)], { onDuplicate: 'newest' })
  const tree: Tree = Tree.open(`${path}.tree`, { create: true })
  const exported: number = m.appendTreeSync(tree)
  m.discard()

  void [badLayout, appended, maxKey, fileBytes, v, later, has, count, key, value, moved, ordinal, found, rank]
  void [picked, gone, values, under, stream, report.ok, runs, sorted.entries, merged, exported, badSort]
}

void main
