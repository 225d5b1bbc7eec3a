// The npm packages as users install them. scripts/node-packages.mjs packs
// `bale`, `bale-linux-x64-gnu` (the addon `make node-build` made) and
// `bale-win32-x64`; fresh projects install them with --offline the way npm
// installs from the registry: `bale` as their dependency, the platform
// packages through its optionalDependencies (sent to the tarballs by
// `overrides`), picked by their os/cpu/libc fields. There they are used
// through require and import (stores written and read, the golden corpus),
// and a missing or foreign platform must fail with an error that names the
// package and how to install it.
//
// The Windows addon comes from the x86_64-pc-windows-gnu build, whose path
// BALE_NODE_WIN32_X64 names (make: NODE_WIN32_X64). Without it, the package
// holds a placeholder and only its layout and its choice by npm and by the
// loader are checked.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NODE_PKG, PLATFORMS_DIR, npmEnv, packMain, packPlatform } from '../../scripts/node-packages.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const CORPUS = process.env.CORPUS_DIR ? resolve(process.env.CORPUS_DIR) : join(HERE, '../corpus')
const MAIN = JSON.parse(readFileSync(join(NODE_PKG, 'package.json'), 'utf8'))
const PLATFORMS = readdirSync(PLATFORMS_DIR).sort()
const manifestOf = (p) => JSON.parse(readFileSync(join(PLATFORMS_DIR, p, 'package.json'), 'utf8'))
const WIN32_ADDON = process.env.BALE_NODE_WIN32_X64 ? resolve(process.env.BALE_NODE_WIN32_X64) : undefined

let work
const tarballs = {}

before(() => {
  work = mkdtempSync(join(tmpdir(), 'bale-npm-'))
  const out = join(work, 'tarballs')
  tarballs.main = packMain(out)
  tarballs['linux-x64-gnu'] = packPlatform('linux-x64-gnu', join(NODE_PKG, 'bale.linux-x64-gnu.node'), out)
  let win = WIN32_ADDON
  if (win === undefined) {
    win = join(work, 'placeholder.node')
    writeFileSync(win, 'placeholder: set BALE_NODE_WIN32_X64 to the x86_64-pc-windows-gnu build\n')
    console.log('bale-win32-x64: placeholder addon, its layout is checked (BALE_NODE_WIN32_X64 not set)')
  }
  tarballs['win32-x64'] = packPlatform('win32-x64', win, out)
})

after(() => rmSync(work, { recursive: true, force: true }))

/** A fresh project with bale from its tarball; `npmArgs` go to npm install. */
function project(name, npmArgs = []) {
  const dir = join(work, name)
  mkdirSync(dir)
  const overrides = Object.fromEntries(
    Object.entries(tarballs).filter(([k]) => k !== 'main').map(([, t]) => [t.name, `file:${t.path}`]),
  )
  writeFileSync(join(dir, 'package.json'), JSON.stringify({
    name: `bale-user-${name}`,
    private: true,
    dependencies: { bale: `file:${tarballs.main.path}` },
    overrides,
  }))
  for (const f of ['use.cjs', 'use.mjs', 'fake-host.cjs']) copyFileSync(join(HERE, 'installed', f), join(dir, f))
  const r = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(work, 'npm-cache'), ...npmArgs], {
    cwd: dir,
    env: npmEnv(),
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, `npm install ${npmArgs.join(' ')} failed:\n${r.stdout}${r.stderr}`)
  return dir
}

const installed = (dir) => readdirSync(join(dir, 'node_modules')).filter((n) => !n.startsWith('.')).sort()

/** Runs `args` with node in `dir`, the fake-host preload given `fake`'s host. */
function run(dir, args, fake = {}) {
  const env = { ...process.env, BALE_FAKE_PLATFORM: fake.platform ?? '', BALE_FAKE_ARCH: fake.arch ?? '', BALE_FAKE_LIBC: fake.libc ?? '' }
  return spawnSync(process.execPath, ['-r', './fake-host.cjs', ...args], { cwd: dir, env, encoding: 'utf8' })
}

/** The error `require('bale')` throws in `dir` on the host `fake`, as {code, message}. */
function loadError(dir, fake) {
  const r = run(dir, ['-e', `try { require('bale') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); process.exit(3) }`], fake)
  assert.equal(r.status, 3, `require('bale') did not fail on ${JSON.stringify(fake)}: ${r.stdout}${r.stderr}`)
  return JSON.parse(r.stdout)
}

test('the main package and the platform packages agree', () => {
  assert.deepEqual(PLATFORMS, ['darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-x64-gnu', 'win32-x64'])
  assert.equal(MAIN.private, undefined)
  assert.deepEqual(MAIN.optionalDependencies, Object.fromEntries(PLATFORMS.map((p) => [`bale-${p}`, MAIN.version])))
  assert.deepEqual(MAIN.binary, { napi_versions: [8] })
  // The Node-API version the addon is built for (napi crate feature).
  assert.match(readFileSync(join(NODE_PKG, 'Cargo.toml'), 'utf8'), /features = \["napi8"\]/)
  for (const p of PLATFORMS) {
    const m = manifestOf(p)
    const [os, cpu, libc] = p.split('-')
    assert.equal(m.name, `bale-${p}`)
    assert.equal(m.version, MAIN.version)
    assert.equal(m.license, MAIN.license)
    assert.equal(m.main, `bale.${p}.node`)
    assert.deepEqual(m.files, [m.main])
    assert.deepEqual(m.os, [os])
    assert.deepEqual(m.cpu, [cpu])
    assert.deepEqual(m.libc, libc === 'gnu' ? ['glibc'] : undefined, p)
    assert.deepEqual(m.engines, MAIN.engines)
  }
})

test('the tarballs hold what a user installs and nothing else', () => {
  const files = (t) => t.files.map((f) => f.path).sort()
  assert.equal(tarballs.main.name, 'bale')
  assert.deepEqual(files(tarballs.main), [
    'README.md', 'binding.js', 'index.d.mts', 'index.d.ts', 'index.js', 'index.mjs',
    'lib/args.js', 'lib/batch.js', 'lib/bitable.js', 'lib/encoding.js', 'lib/objects.js',
    'lib/reads.js', 'lib/streams.js', 'lib/writes.js', 'package.json',
  ].sort())
  for (const p of ['linux-x64-gnu', 'win32-x64']) {
    assert.equal(tarballs[p].name, `bale-${p}`)
    assert.deepEqual(files(tarballs[p]), ['README.md', `bale.${p}.node`, 'package.json'])
  }
  const addon = readFileSync(join(NODE_PKG, 'bale.linux-x64-gnu.node'))
  assert.equal(tarballs['linux-x64-gnu'].files.find((f) => f.path.endsWith('.node')).size, addon.length)
  console.log(`tarballs: bale ${tarballs.main.size} bytes, bale-linux-x64-gnu ${tarballs['linux-x64-gnu'].size} bytes`)
})

test('the linux-x64-gnu addon needs no newer glibc than its package says', () => {
  // The newest GLIBC_x.y among the symbol versions the addon needs.
  const dump = spawnSync('objdump', ['-T', join(NODE_PKG, 'bale.linux-x64-gnu.node')], { encoding: 'utf8' })
  assert.equal(dump.status, 0, dump.stderr)
  const versions = [...dump.stdout.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])])
  assert.ok(versions.length > 0, 'no glibc symbol versions found')
  const [major, minor] = versions.reduce((a, b) => (a[0] * 1000 + a[1] >= b[0] * 1000 + b[1] ? a : b))
  console.log(`bale-linux-x64-gnu: the addon needs glibc ${major}.${minor}`)
  const stated = manifestOf('linux-x64-gnu').description.match(/glibc (\d+)\.(\d+) or later/)
  assert.ok(stated, 'the package description states no glibc')
  assert.ok(major * 1000 + minor <= Number(stated[1]) * 1000 + Number(stated[2]), `needs ${major}.${minor}, says ${stated[0]}`)
})

test('on linux x64 (glibc) npm brings bale-linux-x64-gnu only, and require and import load its addon', () => {
  const dir = project('linux')
  assert.deepEqual(installed(dir), ['bale', 'bale-linux-x64-gnu'])
  const addon = join(dir, 'node_modules/bale-linux-x64-gnu/bale.linux-x64-gnu.node')

  const r = run(dir, ['use.cjs', CORPUS])
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.deepEqual(out.addons, [addon])
  assert.deepEqual(out.treeRead, { value: { name: 'rock.png' }, keys: ['asset/1', 'asset/2', 'asset/3'] })
  assert.deepEqual(out.bitableRead, { count: 1000, value: 'value 421', rank: 500 })
  assert.ok(out.treeCases >= 20 && out.bitableCases >= 20, `${out.treeCases} tree and ${out.bitableCases} bitable cases`)
  assert.equal(out.codes, 11)

  const m = run(dir, ['use.mjs'])
  assert.equal(m.status, 0, m.stderr)
  const esm = JSON.parse(m.stdout)
  assert.equal(esm.entry, join(dir, 'node_modules/bale/index.mjs'))
  assert.equal(esm.main, join(dir, 'node_modules/bale/index.js'))
  assert.equal(esm.value, 'v')
  assert.deepEqual(esm.addons, [addon])
})

test('a missing platform package fails with its name, the host and the command that installs it', () => {
  // What a lockfile from another platform or --omit=optional leaves.
  const dir = project('omitted', ['--omit=optional'])
  assert.deepEqual(installed(dir), ['bale'])
  const hosts = [
    [{}, 'linux-x64-gnu', 'linux x64 (glibc)'],
    [{ arch: 'arm64' }, 'linux-arm64-gnu', 'linux arm64 (glibc)'],
    [{ platform: 'win32', arch: 'x64' }, 'win32-x64', 'win32 x64'],
    [{ platform: 'darwin', arch: 'x64' }, 'darwin-x64', 'darwin x64'],
    [{ platform: 'darwin', arch: 'arm64' }, 'darwin-arm64', 'darwin arm64'],
  ]
  for (const [fake, p, host] of hosts) {
    const e = loadError(dir, fake)
    assert.equal(e.code, 'MODULE_NOT_FOUND')
    assert.ok(e.message.startsWith(`bale: the native addon for ${host} is missing`), e.message)
    assert.ok(e.message.includes(`the package bale-${p}@${MAIN.version}`), e.message)
    assert.ok(e.message.includes(`\`npm install bale-${p}@${MAIN.version}\``), e.message)
    assert.ok(e.message.includes('--omit=optional'), e.message)
  }
})

test('a host with no platform package fails with the list of those there are', () => {
  const dir = project('unsupported', ['--omit=optional'])
  for (const [fake, host] of [
    [{ libc: 'musl' }, 'linux x64 (musl)'],
    [{ platform: 'freebsd' }, 'freebsd x64'],
    [{ platform: 'win32', arch: 'arm64' }, 'win32 arm64'],
  ]) {
    const e = loadError(dir, fake)
    assert.equal(e.code, 'MODULE_NOT_FOUND')
    assert.ok(e.message.startsWith(`bale: no prebuilt native addon for ${host}.`), e.message)
    for (const p of PLATFORMS) assert.ok(e.message.includes(`bale-${p}`), `${p} not listed: ${e.message}`)
    assert.ok(e.message.includes('npm run build'), e.message)
  }
})

test('npm installs bale-win32-x64 for win32 x64 only, and the loader picks it there', () => {
  const dir = project('win32', ['--os=win32', '--cpu=x64'])
  assert.deepEqual(installed(dir), ['bale', 'bale-win32-x64'])
  const file = join(dir, 'node_modules/bale-win32-x64/bale.win32-x64.node')
  assert.deepEqual(readdirSync(dirname(file)).sort(), ['README.md', 'bale.win32-x64.node', 'package.json'])
  if (WIN32_ADDON !== undefined) {
    // A PE image for x86-64 that is a DLL.
    const b = readFileSync(file)
    assert.equal(b.toString('latin1', 0, 2), 'MZ')
    const pe = b.readUInt32LE(0x3c)
    assert.equal(b.toString('latin1', pe, pe + 4), 'PE\0\0')
    assert.equal(b.readUInt16LE(pe + 4), 0x8664)
    assert.ok(b.readUInt16LE(pe + 22) & 0x2000, 'not a DLL')
  }
  // Here the file cannot load (not an ELF object): the error shows the
  // loader chose that package's file.
  const e = loadError(dir, { platform: 'win32', arch: 'x64' })
  assert.equal(e.code, 'ERR_DLOPEN_FAILED')
  assert.ok(e.message.startsWith('bale: the native addon of the package bale-win32-x64 failed to load: '), e.message)
  assert.ok(e.message.includes(file), e.message)
  // On linux itself the package is left out, like any foreign one.
  assert.ok(!existsSync(join(project('linux-no-win'), 'node_modules/bale-win32-x64')))
})

test('npm leaves bale-linux-x64-gnu out on musl (its libc field)', () => {
  const dir = project('musl', ['--libc=musl'])
  assert.deepEqual(installed(dir), ['bale'])
})
