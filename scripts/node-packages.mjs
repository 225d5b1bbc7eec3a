#!/usr/bin/env node
// Packs the npm packages of the Node binding as they are published: `bale`
// (bindings/node: entry points, loader, types; no addon) and, for each addon
// file given, its `bale-<platform>` package, made from
// bindings/node/npm/<platform>/ with the file copied in under the name that
// package's `main` gives. Staging happens in a temporary directory, so
// nothing is written into the source tree.
//
//   node scripts/node-packages.mjs <out-dir> [<platform>=<addon file> ...]
//
// e.g. linux-x64-gnu=bindings/node/bale.linux-x64-gnu.node, or
// win32-x64=<the x86_64-pc-windows-gnu build>. Prints the tarballs' paths.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_PKG = resolve(dirname(fileURLToPath(import.meta.url)), '../bindings/node');
export const PLATFORMS_DIR = join(NODE_PKG, 'npm');

// npm's own settings from a calling `npm run` (npm_config_*) stay out.
export function npmEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return { ...env, ...extra };
}

/** `npm pack` in `dir`; returns npm's report of the tarball (path, files). */
function pack(dir, outDir) {
  mkdirSync(outDir, { recursive: true });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', resolve(outDir)], {
    cwd: dir,
    env: npmEnv(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [report] = JSON.parse(out);
  return { ...report, path: join(resolve(outDir), report.filename) };
}

/** The main package, `bale`, from bindings/node (built: index.d.ts is generated). */
export function packMain(outDir) {
  if (!existsSync(join(NODE_PKG, 'index.d.ts'))) throw new Error('bindings/node/index.d.ts is missing: run `make node-build`');
  return pack(NODE_PKG, outDir);
}

/** The package of `platform` (a directory of bindings/node/npm) holding `addon`. */
export function packPlatform(platform, addon, outDir) {
  const template = join(PLATFORMS_DIR, platform);
  if (!existsSync(join(template, 'package.json'))) throw new Error(`no package for ${platform} in ${PLATFORMS_DIR}`);
  if (!existsSync(addon)) throw new Error(`the addon for ${platform} is missing: ${addon}`);
  const manifest = JSON.parse(readFileSync(join(template, 'package.json'), 'utf8'));
  const stage = mkdtempSync(join(tmpdir(), `bale-npm-${platform}-`));
  try {
    for (const f of ['package.json', 'README.md']) copyFileSync(join(template, f), join(stage, f));
    copyFileSync(addon, join(stage, manifest.main));
    return pack(stage, outDir);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [outDir, ...addons] = process.argv.slice(2);
  if (!outDir) {
    console.error('usage: node scripts/node-packages.mjs <out-dir> [<platform>=<addon file> ...]');
    process.exit(2);
  }
  console.log(packMain(outDir).path);
  for (const arg of addons) {
    const at = arg.indexOf('=');
    if (at < 1) throw new Error(`not <platform>=<file>: ${arg}`);
    console.log(packPlatform(arg.slice(0, at), resolve(arg.slice(at + 1)), outDir).path);
  }
}
