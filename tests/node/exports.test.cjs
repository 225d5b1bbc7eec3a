// `require('bale')`: the package's exports map sends CommonJS to index.js.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { open, Tree, ChainedBatch, ObjectStore, errorForCode } = require('bale')

const pkg = path.resolve(__dirname, '../../bindings/node')
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bale-node-exports-cjs-'))
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))

// The file an entry resolves to, through links: npm links the workspace's
// package as node_modules/bale, which Wine shows Node as a plain folder.
const real = (p) => fs.realpathSync.native(p)

test('require resolves to the CommonJS entry and works', async () => {
  assert.equal(real(require.resolve('bale')), path.join(pkg, 'index.js'))
  const t = open(path.join(dir, 'a.bale'), { create: true, keyEncoding: 'utf8', valueEncoding: 'json' })
  await t.batch().put('k', { n: 1 }).write()
  assert.ok(t.batch() instanceof ChainedBatch)
  assert.deepEqual(t.get('k'), { n: 1 })
  assert.ok(t instanceof Tree)
  t.close()
  assert.throws(() => Tree.open(path.join(dir, 'missing.bale')), (e) => e.code === 'NOT_FOUND')
  assert.equal(errorForCode('IO').code, 'IO')
})

test('the object store through require', async () => {
  const s = ObjectStore.open(path.join(dir, 'objects'), { create: true, hash: 'sha256' })
  const id = s.addSync('hello')
  assert.equal(id, require('node:crypto').createHash('sha256').update('hello').digest('hex'))
  assert.equal((await s.get(id)).toString(), 'hello')
  assert.equal(await s.addStream([Buffer.from('hel'), 'lo']), id)
  const parts = []
  for await (const c of s.createReadStream(id, { start: 1 })) parts.push(c)
  assert.equal(Buffer.concat(parts).toString(), 'ello')
  s.close()
  await assert.rejects(s.get(id), (e) => e.code === 'CLOSED')
  assert.throws(() => ObjectStore.open(path.join(dir, 'missing')), (e) => e.code === 'NOT_FOUND')
})

test('import() from CommonJS gives the same objects', async () => {
  const esm = await import('bale')
  assert.equal(esm.default, require('bale'))
  assert.equal(esm.open, open)
})

test('only the entry and package.json are exported', () => {
  assert.throws(() => require('bale/lib/encoding.js'), (e) => e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED')
  assert.equal(require('bale/package.json').name, 'bale')
})
