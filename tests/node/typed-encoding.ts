// Type-checked only (with typed.ts): the encodings decide the types reads
// return and writes take. Each `@ts-expect-error` line must fail to
// compile, and every other line must compile.
import { Tree, open, ChainedBatch, type Range, type KeyRange, type ValueRange, type Txn, type BatchOperation } from '../../bindings/node'

interface Asset {
  kind: string
  size: number
}

async function main(path: string): Promise<void> {
  // Default: Buffers out, bytes or strings in.
  const bin = open(path, { create: true })
  const b1: Buffer | undefined = bin.get('k')
  const b2: Buffer | undefined = bin.get(new Uint8Array([1]), {})
  // @ts-expect-error: a binary tree reads Buffers
  const b3: string | undefined = bin.get('k')
  // @ts-expect-error: keys are bytes or strings
  bin.get(42)
  // @ts-expect-error: no such encoding
  bin.get('k', { valueEncoding: 'hex' })
  // @ts-expect-error: get takes encodings only
  bin.get('k', { limit: 1 })

  // Per call: the call's encoding decides.
  const c1: string | undefined = bin.get('k', { valueEncoding: 'utf8' })
  const c2: Asset | undefined = bin.get('k', { valueEncoding: 'json' })
  const c3: Buffer | undefined = bin.get('k', { valueEncoding: null })
  bin.get(42, { keyEncoding: 'json' })
  await bin.put({ id: 1 }, [1, 2], { keyEncoding: 'json', valueEncoding: 'json' })
  const c4: Array<string | undefined> = bin.getMany(['a', 'b'], { valueEncoding: 'utf8' })
  const c5: Range<string, Buffer> = bin.range({ gte: 'a', keyEncoding: 'utf8' })
  const c6: ValueRange<Asset> = bin.values({ valueEncoding: 'json', limit: 3 })
  const anyEnc = (e: 'utf8' | 'binary') => bin.get('k', { valueEncoding: e })
  const c7: string | Buffer | undefined = anyEnc('utf8')

  // At open: the handle's types.
  const u = Tree.open(path, { keyEncoding: 'utf8', valueEncoding: 'utf8' })
  const u1: string | undefined = u.get('k')
  u.putSync('k', 'v')
  // @ts-expect-error: a utf8 tree takes strings
  u.putSync('k', Buffer.from('v'))
  // @ts-expect-error: and its keys are strings
  u.get(Buffer.from('k'))
  const u2: Buffer | undefined = u.get(Buffer.from('k'), { keyEncoding: 'binary', valueEncoding: 'binary' })
  const u3: KeyRange<string> = u.keys({ gt: 'a' })
  // @ts-expect-error: bounds are keys in the key encoding
  u.keys({ gt: Buffer.from('a') })
  const u4: string[] = u.keys().toArray()
  u.putManySync([['a', '1']])
  // @ts-expect-error: entries too
  u.putManySync([['a', Buffer.from('1')]])
  const u5: boolean = await u.delete('a')

  // JSON: any JSON value, and a typed tree by annotation.
  const j: Tree<string, Asset> = open(path, { keyEncoding: 'utf8', valueEncoding: 'json' })
  const j1: number | undefined = j.get('k')?.size
  await j.put('k', { kind: 'png', size: 3 })
  // @ts-expect-error: not an Asset
  await j.put('k', { kind: 'png' })
  for (const [k, v] of j.range({ prefix: 'asset/' })) {
    const key: string = k
    const value: Asset = v
    void [key, value]
  }
  for await (const v of j.values()) void (v.kind as string)
  const arr: Array<[string, Asset]> = j.range().toArray()
  const n: number = j.transactionSync((txn: Txn<string, Asset>) => {
    txn.put('a', { kind: 'x', size: 1 })
    const got: Asset | undefined = txn.get('a')
    // @ts-expect-error: the txn has the tree's types
    txn.put('a', 'text')
    return got ? got.size : 0
  })
  const r: string[] = await j.transaction((txn) => txn.keys().toArray())
  // Batches take keys and values in the encodings too.
  await j.batch([{ type: 'put', key: 'a', value: { kind: 'x', size: 1 } }, { type: 'del', key: 'b' }])
  // @ts-expect-error: a 'put' needs a value
  await j.batch([{ type: 'put', key: 'a' }])
  // @ts-expect-error: 'delete' is spelled 'del'
  j.batchSync([{ type: 'delete', key: 'a' }])
  const ops: BatchOperation[] = [{ type: 'del', key: Buffer.from('k') }]
  bin.batchSync(ops)
  const chain: ChainedBatch<string, Asset> = j.batch().put('a', { kind: 'y', size: 2 }).del('b')
  const len: number = chain.length
  await chain.write()
  // @ts-expect-error: not an Asset
  j.batch().put('a', 7)
  bin.batch().put('k', 'v').del(Buffer.from('k')).writeSync()
  const jj = open(path, { keyEncoding: 'json', valueEncoding: 'json' })
  jj.putSync(['user', 1], { anything: true })
  const k: any = jj.keys().toArray()[0]

  void [b1, b2, b3, c1, c2, c3, c4, c5, c6, c7, u1, u2, u3, u4, u5, j1, arr, n, r, k, len]
}

void main
