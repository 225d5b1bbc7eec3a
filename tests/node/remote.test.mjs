// Remotes of the object store, through a folder used as a bucket
// (file://): connecting, push and pull round trips in both forms, lazy
// pulls and fetches, refs, gc, progress callbacks, error codes, and pushes
// from worker threads and child processes at once.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { ObjectStore } from '../../bindings/node/index.js'
import { code } from './helpers/codes.mjs'
import { tmpDir } from './helpers/tmp.mjs'
import { pattern, SMALL_CHUNKS } from './helpers/objects-data.mjs'

const dir = tmpDir('remote')
let n = 0
const where = (name) => path.join(dir, `${name}-${++n}`)
const fresh = () => ObjectStore.open(where('store'), { create: true, ...SMALL_CHUNKS })
// A new empty bucket folder and its url.
const newBucket = () => {
  const b = where('bucket')
  return { bucket: b, url: `file://${b}` }
}
// Small objects, a compressible one and two chunked ones.
const contents = (seed) => [
  ...Array.from({ length: 20 }, (_, i) => pattern(50 + i * 97, seed * 100 + i)),
  Buffer.from(`object ${seed} `.repeat(500)),
  pattern(150_000, seed * 100 + 50),
  pattern(90_000, seed * 100 + 51),
]
const PACK = /^[0-9a-f]{64}$/

test('push then pull round-trips every object, with progress', async () => {
  const { bucket, url } = newBucket()
  const a = fresh()
  const b = fresh()
  const data = contents(1)
  const ids = await a.addMany(data)
  assert.equal(await a.connectRemote('origin', url), undefined)
  await b.connectRemote('origin', url)
  assert.ok(fs.statSync(path.join(bucket, 'manifest')).isFile())

  const seen = []
  const pushed = await a.push('origin', null, { progress: (done, total) => seen.push([done, total]) })
  assert.equal(pushed.objectsSent, new Set(ids).size)
  assert.equal(pushed.objectsPresent, 0)
  assert.equal(pushed.generation, 1)
  assert.equal(pushed.attempts, 1)
  assert.equal(pushed.revived, 0)
  assert.ok(pushed.recordsSent > ids.length && pushed.bytesSent > 0)
  assert.equal(pushed.packs.length, 1)
  assert.match(pushed.packs[0], PACK)
  assert.ok(fs.statSync(path.join(bucket, 'packs', `${pushed.packs[0]}.pack`)).isFile())
  // Delivered before the promise settled.
  assert.deepEqual(seen, [[1, 1]])

  seen.length = 0
  const pulled = await b.pull('origin', { progress: (done, total) => seen.push([done, total]) })
  assert.deepEqual(seen, [[1, 1]])
  assert.equal(pulled.objectsFetched, ids.length)
  assert.equal(pulled.objectsPresent, 0)
  assert.equal(pulled.recordsFetched, pushed.recordsSent)
  assert.equal(pulled.generation, 1)
  assert.ok(pulled.reads >= 1 && pulled.bytesReceived > 0)
  assert.deepEqual((await b.ids()).sort(), [...ids].sort())
  for (const [i, id] of ids.entries()) assert.deepEqual(await b.get(id, { verify: true }), data[i])
  assert.ok((await b.validate()).ok)

  // Nothing left to send or fetch: nothing is committed.
  const again = await a.push('origin')
  assert.deepEqual([again.objectsSent, again.objectsPresent, again.generation, again.packs], [0, ids.length, 1, []])
  assert.equal((await b.pull('origin')).objectsFetched, 0)

  // Back the other way.
  const made = await b.add('made in b')
  assert.equal((await b.push('origin', [made])).generation, 2)
  assert.equal((await a.fetch('origin', [made])).objectsFetched, 1)
  assert.equal((await a.get(made)).toString(), 'made in b')
  a.close()
  b.close()
})

test('every call has its sync form', () => {
  const { url } = newBucket()
  const a = fresh()
  const b = fresh()
  const data = contents(2)
  const ids = a.addManySync(data)
  assert.equal(a.connectRemoteSync('origin', url, { graceMs: 60_000 }), undefined)
  b.connectRemoteSync('origin', url)
  assert.deepEqual(a.remotesSync(), { origin: { url, endpoint: null, region: null, pathStyle: null } })

  const seen = []
  const pushed = a.pushSync('origin', ids.slice(0, 5), { refs: { main: ids[0] }, progress: (d, t) => seen.push([d, t]) })
  assert.deepEqual(seen, [[1, 1]])
  assert.equal(pushed.objectsSent, 5)
  assert.equal(a.pushSync('origin').objectsSent, ids.length - 5)

  const lazy = b.pullSync('origin', { lazy: true })
  assert.deepEqual([lazy.objectsFetched, lazy.recordsFetched, lazy.reads, lazy.generation], [0, 0, 0, 2])
  assert.ok(lazy.bytesReceived > 0)
  assert.deepEqual(b.getSync(ids.at(-1), { remote: 'origin', verify: true }), data.at(-1))
  const got = b.fetchSync('origin', ids.slice(0, 3), { threads: 1 })
  assert.equal(got.objectsFetched, 3)

  const info = b.remoteInfoSync('origin')
  assert.equal(info.graceMs, 60_000)
  assert.equal(info.objects, ids.length)
  assert.deepEqual(info.refs, { main: ids[0] })
  const gc = b.remoteGcSync('origin', { dryRun: true })
  assert.deepEqual([gc.tombstoned, gc.deleted, gc.orphansDeleted, gc.bytesFreed], [[], [], [], 0])
  b.removeRemoteSync('origin')
  assert.deepEqual(b.remotesSync(), {})
  a.close()
  b.close()
})

test('remotes are recorded, listed and removed', async () => {
  const { url } = newBucket()
  const other = newBucket()
  const s = fresh()
  assert.deepEqual(await s.remotes(), {})
  await s.connectRemote('origin', url)
  await s.connectRemote('backup', other.url, { graceMs: 90_000 })
  assert.deepEqual(await s.remotes(), {
    backup: { url: other.url, endpoint: null, region: null, pathStyle: null },
    origin: { url, endpoint: null, region: null, pathStyle: null },
  })
  assert.deepEqual(Object.keys(await s.remotes()), ['backup', 'origin'])
  assert.equal((await s.remoteInfo('backup')).graceMs, 90_000)
  assert.equal((await s.remoteInfo('origin')).graceMs, 24 * 3600 * 1000)
  await assert.rejects(s.connectRemote('origin', url), code('CONFLICT'))
  await s.removeRemote('backup')
  assert.deepEqual(Object.keys(await s.remotes()), ['origin'])
  await assert.rejects(s.removeRemote('backup'), code('NOT_FOUND'))
  // The bucket outlives the record: connecting again joins it.
  await s.push('origin', [await s.add('kept')])
  await s.removeRemote('origin')
  await s.connectRemote('origin', url)
  assert.equal((await s.remoteInfo('origin')).generation, 1)
  s.close()
})

test('a lazy pull reads indexes and get({ remote }) fetches on demand', async () => {
  const { url } = newBucket()
  const a = fresh()
  const b = fresh()
  const data = contents(3)
  const ids = await a.addMany(data)
  await a.connectRemote('origin', url)
  await a.push('origin')
  await b.connectRemote('origin', url)

  const seen = []
  const lazy = await b.pull('origin', { lazy: true, progress: (d, t) => seen.push([d, t]) })
  assert.deepEqual([lazy.objectsFetched, lazy.generation, seen], [0, 1, []])
  assert.deepEqual(await b.ids(), [])
  await assert.rejects(b.get(ids[0]), code('NOT_FOUND'))
  assert.deepEqual(await b.get(ids[0], { remote: 'origin' }), data[0])
  assert.ok(await b.has(ids[0]))
  // A chunked object comes with every chunk under it.
  assert.deepEqual(await b.get(ids.at(-2), { remote: 'origin', verify: true }), data.at(-2))
  assert.ok((await b.meta(ids.at(-2))).chunked)

  const got = await b.fetch('origin', [...ids.slice(1, 4), ids[0]])
  assert.deepEqual([got.objectsFetched, got.objectsPresent], [3, 1])
  assert.ok((await b.validate()).ok)
  const absent = '00'.repeat(32)
  await assert.rejects(b.fetch('origin', [absent]), code('NOT_FOUND'))
  await assert.rejects(b.get(absent, { remote: 'origin' }), code('NOT_FOUND'))
  a.close()
  b.close()
})

test('refs are committed with the push', async () => {
  const { url } = newBucket()
  const a = fresh()
  const one = await a.add('one')
  const two = await a.add(pattern(40_000, 3))
  await a.connectRemote('origin', url)
  await a.push('origin', [one], { refs: { main: one, 'tags/v1': one } })
  const info = await a.remoteInfo('origin')
  assert.deepEqual(info, {
    name: 'origin',
    url,
    hash: 'blake3',
    generation: 1,
    graceMs: 24 * 3600 * 1000,
    packs: 1,
    tombstones: 0,
    objects: 1,
    records: 1,
    bytes: info.bytes,
    tombstonedBytes: 0,
    refs: { main: one, 'tags/v1': one },
  })
  assert.ok(info.bytes > 0)

  // A ref alone is a commit; it must name an object sent or on the remote.
  const moved = await a.push('origin', [], { refs: { release: one } })
  assert.deepEqual([moved.objectsSent, moved.generation], [0, 2])
  await assert.rejects(a.push('origin', [], { refs: { main: two } }), code('NOT_FOUND'))
  const pushed = await a.push('origin', null, { refs: { main: Buffer.from(two, 'hex') } })
  assert.deepEqual([pushed.objectsSent, pushed.generation], [1, 3])
  assert.deepEqual((await a.remoteInfo('origin')).refs, { main: two, release: one, 'tags/v1': one })

  await assert.rejects(a.push('origin', null, { refs: { 'has space': one } }), code('INVALID_ARGUMENT'))
  await assert.rejects(a.push('origin', null, { refs: [['main', one]] }), code('INVALID_ARGUMENT'))
  await assert.rejects(a.push('origin', null, { refs: 'main' }), code('INVALID_ARGUMENT'))
  await assert.rejects(a.push('origin', null, { refs: { main: 'xyz' } }), code('INVALID_ARGUMENT'))
  assert.equal((await a.remoteInfo('origin')).generation, 3)
  a.close()
})

test('a gc dry run reports and changes nothing', async () => {
  const { bucket, url } = newBucket()
  const a = fresh()
  await a.connectRemote('origin', url, { graceMs: 3_600_000 })
  await a.push('origin', await a.addMany(contents(4)))
  // A pack no manifest names, as a push that died leaves, two hours ago;
  // a younger one may belong to a push under way.
  const orphan = 'ab'.repeat(32)
  const young = 'cd'.repeat(32)
  const packs = path.join(bucket, 'packs')
  fs.writeFileSync(path.join(packs, `${orphan}.pack`), 'left by a dead push')
  fs.writeFileSync(path.join(packs, `${orphan}.idx`), 'its index')
  fs.writeFileSync(path.join(packs, `${young}.pack`), 'a push under way')
  const past = new Date(Date.now() - 2 * 3600 * 1000)
  for (const ext of ['pack', 'idx']) fs.utimesSync(path.join(packs, `${orphan}.${ext}`), past, past)

  const dry = await a.remoteGc('origin', { dryRun: true })
  assert.deepEqual(dry, {
    tombstoned: [],
    deleted: [],
    orphansDeleted: [orphan],
    bytesFreed: 'left by a dead push'.length + 'its index'.length,
    uploadsAborted: 0,
    generation: 1,
  })
  assert.ok(fs.existsSync(path.join(packs, `${orphan}.pack`)))
  assert.equal((await a.remoteInfo('origin')).generation, 1)

  const done = await a.remoteGc('origin')
  assert.deepEqual(done.orphansDeleted, [orphan])
  assert.ok(!fs.existsSync(path.join(packs, `${orphan}.pack`)))
  assert.ok(!fs.existsSync(path.join(packs, `${orphan}.idx`)))
  assert.ok(fs.existsSync(path.join(packs, `${young}.pack`)))
  assert.deepEqual((await a.remoteGc('origin')).orphansDeleted, [])
  const b = fresh()
  await b.connectRemote('origin', url)
  assert.equal((await b.pull('origin')).objectsFetched, (await a.ids()).length)
  a.close()
  b.close()
})

test('errors have their codes; async forms reject, sync forms throw', async () => {
  const { bucket, url } = newBucket()
  const s = fresh()
  const id = await s.add('x')
  const missing = [
    () => s.push('nope'),
    () => s.pull('nope'),
    () => s.fetch('nope', [id]),
    () => s.remoteInfo('nope'),
    () => s.remoteGc('nope'),
    () => s.removeRemote('nope'),
    () => s.get('00'.repeat(32), { remote: 'nope' }),
  ]
  for (const call of missing) await assert.rejects(call(), code('NOT_FOUND'))
  assert.throws(() => s.pushSync('nope'), code('NOT_FOUND'))
  assert.throws(() => s.getSync('00'.repeat(32), { remote: 'nope' }), code('NOT_FOUND'))
  // An object the store has is read without the remote.
  assert.equal((await s.get(id, { remote: 'nope' })).toString(), 'x')

  // A file:// url names an absolute path; on Windows the core takes any
  // path there (file://C:\dir), relative ones too.
  const relative = process.platform === 'win32' ? [] : ['file://relative/path']
  for (const bad of ['http://example.com/b', ...relative, 's3://Bad_Bucket/p', 's3://', 'bucket']) {
    await assert.rejects(s.connectRemote('origin', bad), code('INVALID_ARGUMENT'))
    assert.throws(() => s.connectRemoteSync('origin', bad), code('INVALID_ARGUMENT'))
  }
  for (const name of ['', '.hidden', 'a/b', 'x'.repeat(65)]) {
    await assert.rejects(s.connectRemote(name, url), code('INVALID_ARGUMENT'))
  }
  // The S3 client is built in: an s3:// url's endpoint is read (and this
  // one refused) before any request.
  await assert.rejects(s.connectRemote('origin', 's3://bucket/prefix', { endpoint: 'ftp://host' }), (e) => {
    assert.equal(e.code, 'INVALID_ARGUMENT')
    assert.match(e.message, /http/)
    return true
  })
  // Wrong types and unknown options reject (the async forms never throw).
  await assert.rejects(s.connectRemote(3, url), code('INVALID_ARGUMENT'))
  await assert.rejects(s.connectRemote('origin', url, { graceMs: '1h' }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.connectRemote('origin', url, { graceMs: -1 }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.connectRemote('origin', url, { grace: 1 }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.connectRemote('origin', url, { pathStyle: 'yes' }), code('INVALID_ARGUMENT'))
  assert.deepEqual(await s.remotes(), {})

  await s.connectRemote('origin', url)
  await assert.rejects(s.push(Buffer.from('origin')), code('INVALID_ARGUMENT'))
  await assert.rejects(s.push('origin', id), code('INVALID_ARGUMENT'))
  await assert.rejects(s.push('origin', null, { progress: 'not a function' }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.push('origin', null, { threads: 0 }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.pull('origin', { threads: '4' }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.pull('origin', { lazy: 1 }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.remoteGc('origin', { dry: true }), code('INVALID_ARGUMENT'))
  await assert.rejects(s.get(id, { remote: 7 }), code('INVALID_ARGUMENT'))
  assert.throws(() => s.pullSync('origin', { bogus: 1 }), code('INVALID_ARGUMENT'))

  // A damaged manifest: cut short, a byte changed, or garbage.
  const manifest = path.join(bucket, 'manifest')
  const good = fs.readFileSync(manifest)
  const flipped = Buffer.from(good)
  flipped[flipped.length - 1] ^= 1
  const other = fresh()
  for (const [damaged, c] of [
    [good.subarray(0, 80), 'CORRUPT'],
    [flipped, 'CHECKSUM_MISMATCH'],
    [pattern(300, 5), 'NOT_A_BALE_FILE'],
  ]) {
    fs.writeFileSync(manifest, damaged)
    const calls = [
      () => s.push('origin'),
      () => s.pull('origin'),
      () => s.pull('origin', { lazy: true }),
      () => s.remoteInfo('origin'),
      () => s.remoteGc('origin', { dryRun: true }),
    ]
    for (const call of calls) {
      await assert.rejects(call(), (e) => {
        assert.equal(e.code, c, e.message)
        assert.match(e.message, /manifest/)
        return true
      })
    }
    assert.throws(() => s.remoteInfoSync('origin'), code(c))
    // Joining a remote whose manifest is damaged records nothing.
    await assert.rejects(other.connectRemote('origin', url), code(c))
    assert.deepEqual(await other.remotes(), {})
  }

  // Remotes need a directory store.
  const single = ObjectStore.open(where('single.bale'), { create: true, singleFile: true })
  await assert.rejects(single.connectRemote('origin', url), code('INVALID_ARGUMENT'))
  assert.throws(() => single.remotesSync(), code('INVALID_ARGUMENT'))
  single.close()

  s.close()
  await assert.rejects(s.push('origin'), code('CLOSED'))
  assert.throws(() => s.remotesSync(), code('CLOSED'))
  other.close()
})

test('a throw from progress fails the call once the push has committed', async () => {
  const { url } = newBucket()
  const a = fresh()
  await a.addMany(contents(6))
  await a.connectRemote('origin', url)
  const calls = []
  const boom = new Error('stop telling me')
  const progress = (d, t) => {
    calls.push([d, t])
    throw boom
  }
  await assert.rejects(a.push('origin', null, { progress }), (e) => e === boom)
  assert.deepEqual(calls, [[1, 1]])
  assert.equal((await a.remoteInfo('origin')).generation, 1)
  await a.add('one more')
  assert.throws(() => a.pushSync('origin', null, { progress }), (e) => e === boom)
  assert.equal((await a.remoteInfo('origin')).generation, 2)
  a.close()
})

test('pushes from worker threads and child processes at once all land', async () => {
  const { url } = newBucket()
  const pusher = new URL('./helpers/remote-pusher.mjs', import.meta.url)
  const n = 6
  const expected = new Map()
  const dirs = []
  for (let i = 0; i < n; i++) {
    const s = fresh()
    for (const d of contents(10 + i).slice(0, 8)) expected.set(await s.add(d), d)
    await s.connectRemote('origin', url)
    dirs.push(s.path)
    s.close()
  }
  // Half in worker threads, half in child processes.
  const runners = dirs.map((d, i) =>
    i % 2 === 0
      ? new Worker(pusher, { workerData: { dir: d, ref: `p${i}` } })
      : fork(fileURLToPath(pusher), [d, `p${i}`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  const ready = runners.map((r) => new Promise((resolve) => r.once('message', resolve)))
  const results = runners.map(
    (r, i) =>
      new Promise((resolve, reject) => {
        r.on('message', (m) => m !== 'ready' && resolve(m))
        r.on('error', reject)
        r.on('exit', (c) => c !== 0 && reject(new Error(`pusher ${i} exited with ${c}`)))
      }),
  )
  assert.deepEqual(await Promise.all(ready), Array(n).fill('ready'))
  for (const r of runners) (r instanceof Worker ? r.postMessage('go') : r.send('go'))
  const reports = await Promise.all(results)
  for (const m of reports) assert.equal(m.error, undefined, m.error)
  // Every push committed once, each on its own generation.
  assert.deepEqual(reports.map((m) => m.report.generation).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6])
  assert.equal(reports.reduce((sum, m) => sum + m.report.objectsSent, 0), expected.size)

  const reader = fresh()
  await reader.connectRemote('origin', url)
  const info = await reader.remoteInfo('origin')
  assert.deepEqual([info.generation, info.objects, Object.keys(info.refs).length], [n, expected.size, n])
  assert.equal((await reader.pull('origin', { threads: 3 })).objectsFetched, expected.size)
  for (const [id, d] of expected) assert.deepEqual(await reader.get(id), d)
  reader.close()
})
