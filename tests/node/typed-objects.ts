// Type-checked only (with typed.ts): the object store as typed code uses
// it. Each `@ts-expect-error` line must fail to compile, and every other
// line must compile.
import { Readable } from 'node:stream'
import {
  ObjectStore,
  Tree,
  type ObjectStoreOptions,
  type ObjectStoreConfig,
  type ObjectIdLike,
  type ObjectMeta,
  type ObjectStats,
  type PackReport,
  type ValidateReport,
  type ObjectProblem,
  type RebuildReport,
  type CleanReport,
  type AddTreeReport,
  type TransferReport,
  type HashName,
  type CompressionPolicy,
  type ErrorCode,
  type ConnectRemoteOptions,
  type PushReport,
  type PullReport,
  type RemoteConfig,
  type RemoteGcReport,
  type RemoteInfo,
} from '../../bindings/node'

async function main(path: string): Promise<void> {
  const opts: ObjectStoreOptions = {
    create: true,
    readonly: false,
    singleFile: false,
    hash: 'sha256',
    compression: 'auto',
    chunkMin: 256,
    chunkAvg: 1024,
    chunkMax: 4096,
    packTarget: 1 << 20,
    fanout: 16,
    repair: null,
  }
  // @ts-expect-error: not a hash bale knows
  const badHash: ObjectStoreOptions = { hash: 'md5' }
  const s: ObjectStore = ObjectStore.open(path, opts)
  const h: HashName = s.hash
  const cfg: ObjectStoreConfig = s.config
  const policy: CompressionPolicy = cfg.compression
  const flags: boolean[] = [s.readonly, s.singleFile, s.closed]
  const where: string = s.path
  const version: number = s.formatVersion

  const id: string = await s.add(Buffer.from('x'))
  const id2: string = s.addSync('text')
  const id3: string = s.addSync(new Uint8Array([1, 2]))
  const fromFile: string = await s.addFile('/etc/hosts')
  const fromFileSync: string = s.addFileSync('/etc/hosts')
  const many: string[] = await s.addMany(['a', Buffer.from('b')])
  const manySync: string[] = s.addManySync([new ArrayBuffer(3)])
  // @ts-expect-error: data is bytes or a string
  s.addSync(42)
  const streamed: string = await s.addStream(Readable.from([Buffer.from('a')]))
  const fromIterable: string = await s.addStream(['a', Buffer.from('b')])
  const fromGenerator: string = await s.addStream(
    (async function* () {
      yield new Uint8Array([1])
    })(),
  )
  // @ts-expect-error: a source is an iterable of chunks, not one string
  void s.addStream(42)

  const raw: ObjectIdLike = Buffer.from(id, 'hex')
  const data: Buffer = await s.get(id)
  const verified: Buffer = await s.get(raw, { verify: true })
  const dataSync: Buffer = s.getSync(id, null)
  const part: Buffer = await s.getRange(id, 0, 10)
  const partSync: Buffer = s.getRangeSync(id, 0, 10)
  const rs: Readable = s.createReadStream(id, { start: 0, end: 99, highWaterMark: 4096, verify: true })
  // @ts-expect-error: no such read stream option
  s.createReadStream(id, { encoding: 'utf8' })
  const has: boolean = await s.has(id)
  const hasSync: boolean = s.hasSync(raw)
  const hasMany: boolean[] = await s.hasMany([id, raw])
  const hasManySync: boolean[] = s.hasManySync([id])
  const meta: ObjectMeta = await s.meta(id)
  const metaSync: ObjectMeta = s.metaSync(id)
  const ids: string[] = await s.ids()
  const idsSync: string[] = s.idsSync()
  const stats: ObjectStats = await s.stats()
  const statsSync: ObjectStats = s.statsSync()
  // @ts-expect-error: get resolves to a Buffer, not a string
  const notText: string = await s.get(id)

  const deleted: number = await s.delete(id)
  const deletedSync: number = s.deleteSync([id, raw])
  const packed: PackReport = await s.pack()
  const packedSync: PackReport = s.packSync()
  const repacked: PackReport = await s.repack({ compression: 'never' })
  const repackedSync: PackReport = s.repackSync()
  // @ts-expect-error: not a compression policy
  void s.repack({ compression: 'zstd' })
  const valid: ValidateReport = await s.validate({ sample: 10 })
  const validSync: ValidateReport = s.validateSync()
  const problem: ObjectProblem | undefined = valid.problems[0]
  const problemCode: ErrorCode | undefined = problem?.code
  const packProblem: ObjectProblem | undefined = packed.problems[0]
  const rebuildProblemFile: string | undefined = (await s.rebuildIndex()).problems[0]?.file
  void [packProblem?.file, rebuildProblemFile]
  const rebuilt: RebuildReport = await s.rebuildIndex()
  const rebuiltSync: RebuildReport = s.rebuildIndexSync()
  const cleaned: CleanReport = await s.clean()
  const cleanedSync: CleanReport = s.cleanSync()
  const tree = Tree.open('/tmp/paths.bale', { create: true })
  const added: AddTreeReport = await s.addTree('/tmp/dir', { paths: tree, links: 'skip' })
  const addedSync: AddTreeReport = s.addTreeSync('/tmp/dir', { paths: '/tmp/paths.bale' })
  // @ts-expect-error: links are refused or skipped, never followed
  void s.addTree('/tmp/dir', { links: 'follow' })
  const other = ObjectStore.open('/tmp/other', { create: true })
  const exported: TransferReport = await s.exportTo(other, [id])
  const exportedSync: TransferReport = s.exportToSync('/tmp/other')
  const imported: TransferReport = await s.importFrom('/tmp/other', null)
  const importedSync: TransferReport = s.importFromSync(other)
  for await (const [manyId, manyData] of s.getMany([id, raw], { skipMissing: true })) {
    const pair: [string, Buffer] = [manyId, manyData]
    void pair
  }
  for (const [manyId, manyData] of s.getManySync([id], null)) void [manyId.length, manyData.byteLength]
  // @ts-expect-error: skipMissing is a boolean
  void s.getManySync([id], { skipMissing: 1 })
  const fromDos: TransferReport = await s.importDos('/tmp/container')
  const fromDosSync: TransferReport = s.importDosSync('/tmp/container')
  const connect: ConnectRemoteOptions = { endpoint: 'http://127.0.0.1:9000', region: null, pathStyle: true, graceMs: 1000 }
  await s.connectRemote('origin', 's3://bucket/prefix', connect)
  s.connectRemoteSync('local', 'file:///tmp/bucket')
  // @ts-expect-error: the grace period is a number of milliseconds
  void s.connectRemote('origin', 'file:///tmp/b', { graceMs: '1h' })
  const remotes: Record<string, RemoteConfig> = await s.remotes()
  const pathStyle: boolean | null = s.remotesSync()['origin'].pathStyle
  const pushed: PushReport = await s.push('origin', [id], { refs: { main: raw }, progress: (d, t) => void (d + t) })
  const pushedSync: PushReport = s.pushSync('origin', null, { threads: 2 })
  // @ts-expect-error: refs are an object of names to ids
  void s.push('origin', null, { refs: [['main', id]] })
  const pulled: PullReport = await s.pull('origin', { lazy: true, progress: null })
  const pulledSync: PullReport = s.pullSync('origin')
  const fetched: PullReport = await s.fetch('origin', [id], { threads: 1 })
  const fromRemote: Buffer = await s.get(id, { remote: 'origin', verify: true })
  const info: RemoteInfo = await s.remoteInfo('origin')
  const refs: Record<string, string> = s.remoteInfoSync('origin').refs
  const gc: RemoteGcReport = await s.remoteGc('origin', { dryRun: true })
  await s.removeRemote('local')
  s.close()

  void [badHash, h, policy, flags, where, version, id2, id3, fromFile, fromFileSync, many, manySync, streamed]
  void [fromIterable, fromGenerator, data, verified, dataSync, part, partSync, rs, has, hasSync, hasMany]
  void [hasManySync, meta.size + metaSync.storedSize, ids, idsSync, stats.objects, statsSync.chunks, notText]
  void [deleted, deletedSync, packed.filesRemoved, packedSync, repacked, repackedSync, validSync.ok, problemCode]
  void [rebuilt.objects, rebuiltSync, cleaned.bytesFreed, cleanedSync, added.skipped, addedSync.files]
  void [exported.objectsCopied, exportedSync, imported.objectsPresent, importedSync.bytesCopied]
  void [fromDos.objectsCopied, fromDosSync.objectsPresent]
  void [remotes, pathStyle, pushed.packs, pushedSync.generation, pulled.bytesReceived, pulledSync, fetched.reads]
  void [fromRemote, info.graceMs, refs, gc.orphansDeleted, s.fetchSync, s.remoteGcSync, s.removeRemoteSync]
}

void main
