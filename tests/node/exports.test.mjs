// `import ... from 'bale'`: the package's exports map sends ES modules to
// index.mjs, which hands out the CommonJS entry's very objects.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import bale, * as named from 'bale'
import { open, Tree, ObjectStore, errorCodes } from 'bale'
import { tmpDir, tmpStore } from './helpers/tmp.mjs'

const require = createRequire(import.meta.url)
const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bindings/node')
const dir = tmpDir('exports-esm')
// The file an entry resolves to, through links: npm links the workspace's
// package as node_modules/bale, which Wine shows Node as a plain folder.
const real = (p) => fs.realpathSync.native(p)

test('import resolves to the ES module entry and works', () => {
  assert.equal(real(fileURLToPath(import.meta.resolve('bale'))), path.join(pkg, 'index.mjs'))
  const t = open(tmpStore(dir), { create: true, valueEncoding: 'utf8' })
  t.putSync('k', 'v')
  assert.equal(t.get('k'), 'v')
  assert.ok(t instanceof Tree)
  t.close()
  assert.ok(errorCodes().includes('NOT_FOUND'))
})

test('the named and default exports are the CommonJS entry\'s objects', () => {
  const cjs = require('bale')
  assert.equal(real(require.resolve('bale')), path.join(pkg, 'index.js'))
  assert.equal(bale, cjs)
  const names = Object.keys(named).filter((n) => n !== 'default').sort()
  assert.deepEqual(names, Object.keys(cjs).sort())
  for (const n of names) assert.equal(named[n], cjs[n], n)
  // One set of classes: a tree opened through require is a Tree of import.
  const t = cjs.open(tmpStore(dir), { create: true })
  assert.ok(t instanceof Tree)
  t.close()
  const o = cjs.ObjectStore.open(path.join(dir, 'objects'), { create: true })
  assert.ok(o instanceof ObjectStore)
  o.close()
})

test('only the entry and package.json are exported', async () => {
  await assert.rejects(import('bale/lib/encoding.js'), (e) => e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED')
  assert.equal(require('bale/package.json').name, 'bale')
})
