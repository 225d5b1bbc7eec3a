// Run by packages.test.mjs inside a fresh project that installed bale from
// its tarballs: `import` gives the ES module entry, whose objects are the
// CommonJS entry's; a store written through one reads through the other.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import bale, { open, Tree } from 'bale'

const require = createRequire(import.meta.url)
const cjs = require('bale')
assert.equal(bale, cjs)
assert.equal(open, cjs.open)
const dir = mkdtempSync(join(tmpdir(), 'bale-installed-esm-'))
try {
  const t = open(join(dir, 'a.bale'), { create: true, valueEncoding: 'utf8' })
  await t.put('k', 'v')
  t.close()
  const r = cjs.open(join(dir, 'a.bale'), { readonly: true, valueEncoding: 'utf8' })
  assert.ok(r instanceof Tree)
  console.log(JSON.stringify({
    entry: fileURLToPath(import.meta.resolve('bale')),
    main: require.resolve('bale'),
    value: r.get('k'),
    addons: Object.keys(require.cache).filter((f) => f.endsWith('.node')),
  }))
  r.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
