'use strict'
// Finds and loads the Node-API addon. An install from the registry has it in
// one small package per platform, `bale-<platform>`, which the main package
// lists in `optionalDependencies`; their `os`, `cpu` and `libc` fields make
// npm install only the one that fits. A checkout has instead the file that
// `npm run build` (napi build --platform) leaves next to this one.
//
// The addon uses Node-API only (version 8, the napi crate's `napi8`
// feature), never V8's ABI, so one file per platform loads in every Node.js
// from 18 on and in Electron without a rebuild.

const { existsSync, readFileSync } = require('node:fs')
const path = require('node:path')
const { name, version } = require('./package.json')

const NAPI_VERSION = 8

// The platforms with a package, by their name in napi-rs's scheme.
const PACKAGES = {
  'linux-x64-gnu': 'linux x64 (glibc)',
  'linux-arm64-gnu': 'linux arm64 (glibc)',
  'win32-x64': 'win32 x64',
  'darwin-x64': 'darwin x64',
  'darwin-arm64': 'darwin arm64',
}

// musl or glibc: Alpine's ldd is musl's; the process report names the glibc
// a process runs with when there is no ldd to read.
function linuxLibc() {
  try {
    return readFileSync('/usr/bin/ldd', 'latin1').includes('musl') ? 'musl' : 'gnu'
  } catch {
    const header = process.report?.getReport?.()?.header
    return header?.glibcVersionRuntime ? 'gnu' : 'musl'
  }
}

function hostName() {
  const { platform, arch } = process
  return platform === 'linux' ? `${platform}-${arch}-${linuxLibc()}` : `${platform}-${arch}`
}

function describe(host) {
  const [platform, arch, libc] = host.split('-')
  return `${platform} ${arch}${libc ? ` (${libc === 'gnu' ? 'glibc' : libc})` : ''}`
}

function loadError(message, code, cause) {
  const e = new Error(`${name}: ${message}`)
  e.code = code
  if (cause !== undefined) e.cause = cause
  return e
}

function requireAddon(file, from) {
  try {
    return require(file)
  } catch (e) {
    throw loadError(`the native addon ${from} failed to load: ${e.message}`, e.code ?? 'ERR_DLOPEN_FAILED', e)
  }
}

// Whether `pkg` is installed where this package can see it (its package.json
// resolves; its addon may still fail to load, which is a different error).
function installed(pkg) {
  try {
    return require.resolve(`${pkg}/package.json`)
  } catch (e) {
    if (e.code === 'MODULE_NOT_FOUND') return undefined
    throw e
  }
}

function load() {
  const napi = Number(process.versions.napi)
  if (!(napi >= NAPI_VERSION)) {
    throw loadError(
      `the native addon needs Node-API ${NAPI_VERSION} or later; this runtime (${process.version}) ` +
        `has ${process.versions.napi === undefined ? 'none' : `Node-API ${process.versions.napi}`}`,
      'ERR_DLOPEN_FAILED',
    )
  }
  const host = hostName()
  const pkg = PACKAGES[host] === undefined ? undefined : `${name}-${host}`
  if (pkg !== undefined && installed(pkg) !== undefined) return requireAddon(pkg, `of the package ${pkg}`)
  // A build from a checkout; napi names the Windows files by toolchain.
  const suffixes = process.platform === 'win32' ? [host, `${host}-msvc`, `${host}-gnu`] : [host]
  for (const suffix of suffixes) {
    const file = path.join(__dirname, `${name}.${suffix}.node`)
    if (existsSync(file)) return requireAddon(file, file)
  }
  if (pkg === undefined) {
    const known = Object.entries(PACKAGES).map(([p, d]) => `${d}: ${name}-${p}`)
    throw loadError(
      `no prebuilt native addon for ${describe(host)}. Prebuilt ones exist for ${known.join('; ')}. ` +
        `On another platform, build it from the source repository (\`npm run build\` in bindings/node, ` +
        `which needs Rust) to get ${name}.${host}.node next to ${__filename}.`,
      'MODULE_NOT_FOUND',
    )
  }
  throw loadError(
    `the native addon for ${describe(host)} is missing: it comes in the package ${pkg}@${version}, ` +
      `an optional dependency of ${name}@${version} that npm installs on ${describe(host)} only, and it is ` +
      `not installed. Install it with \`npm install ${pkg}@${version}\`. (npm leaves it out when run with ` +
      `--omit=optional or --no-optional, or when node_modules or package-lock.json were made on another ` +
      `platform; to bundle it for another platform, e.g. an Electron app, use npm install's --os, --cpu ` +
      `and --libc options.)`,
    'MODULE_NOT_FOUND',
  )
}

module.exports = load()
