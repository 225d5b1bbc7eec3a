// The stores the inspector benchmark opens, written once by the release
// `bale` CLI into bench/work/inspector and reused while their description
// (a JSON file beside each) matches what this file would write:
//
// - tree-4g.bale: a tree store of exactly 1,000,000 keys, 999,996 small
//   pairs (`key/0000000`…, values of 10 to 46 bytes) loaded in one
//   transaction, then 4 large values (`large/0`…`large/3`) of incompressible
//   bytes streamed in so that the file is about GIB GiB;
// - objects-4g/: a directory object store of 100,000 small objects (1 to
//   16 KiB of incompressible bytes, added as a directory tree) and 4 large
//   ones streamed from stdin and packed, together about GIB GiB;
// - sqlite-1m.db: the peer's (sql.js) SQLite database of the tree store's
//   999,996 small pairs (`kv(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID`),
//   written by sql.js itself in Node in one transaction;
// - sqlite-<G>g.db: that database plus the tree store's 4 large keys, with
//   the first bytes of the same values, so that it is just over G GiB
//   (python3's sqlite3 adds them: sql.js in Node would hold the file in
//   memory twice).
//
// Incompressible bytes are an AES-128-CTR keystream, so the stores take the
// space they say and every run of this file writes the same ones.
import { spawn } from 'node:child_process';
import { createCipheriv } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

export const TREE_KEYS = 1_000_000;
export const LARGE_VALUES = 4;
export const SMALL_PAIRS = TREE_KEYS - LARGE_VALUES;
export const smallKey = (i) => `key/${String(i).padStart(7, '0')}`;
export const smallValue = (i) => `value ${i} ${'abcdefghijklmnopqrstuvwxyz0123456789'.slice(0, i % 37)}`;
export const largeKey = (i) => `large/${i}`;

const MiB = 1 << 20;
const GiB = 1 << 30;
const DESCRIPTION_VERSION = 1;

/** `len` bytes of keystream number `stream` from `offset` (a multiple of 16). */
function keystream(stream, offset, len) {
  const key = Buffer.alloc(16);
  key.writeUInt32BE(stream, 0);
  const iv = Buffer.alloc(16);
  iv.writeBigUInt64BE(BigInt(offset / 16), 8);
  return createCipheriv('aes-128-ctr', key, iv).update(Buffer.alloc(len));
}

/** Runs a program (the CLI) with stdin fed by `feed(stdin)` (or closed); returns stdout. */
function run(cli, args, feed) {
  return new Promise((ok, fail) => {
    const p = spawn(cli, args, { stdio: [feed ? 'pipe' : 'ignore', 'pipe', 'inherit'] });
    const out = [];
    p.stdout.on('data', (b) => out.push(b));
    p.on('error', fail);
    p.on('exit', (code) => (code === 0 ? ok(Buffer.concat(out).toString()) : fail(new Error(`${basename(cli)} ${args.map((a) => (a.length > 80 ? '…' : a)).join(' ')} exited with ${code}`))));
    if (feed) {
      p.stdin.on('error', fail);
      feed(p.stdin).catch(fail);
    }
  });
}

async function write(stdin, chunk) {
  if (!stdin.write(chunk)) await new Promise((r) => stdin.once('drain', r));
}

/** Writes `len` bytes of keystream `stream` into stdin, 4 MiB at a time. */
async function writeKeystream(stdin, stream, len) {
  for (let off = 0; off < len; off += 4 * MiB) await write(stdin, keystream(stream, off, Math.min(4 * MiB, len - off)));
}

/** Streams `len` bytes of keystream `stream` into stdin, then closes it. */
function streamBytes(stream, len) {
  return async (stdin) => {
    await writeKeystream(stdin, stream, len);
    stdin.end();
  };
}

/** The stored description of `path`, when it matches `want` and the data is there. */
function reusable(path, descPath, want) {
  if (!existsSync(path) || !existsSync(descPath)) return null;
  const have = JSON.parse(readFileSync(descPath, 'utf8'));
  for (const [k, v] of Object.entries(want)) if (have[k] !== v) return null;
  return have;
}

const seconds = (t0) => ((performance.now() - t0) / 1000).toFixed(1);

/** The ~GIB GiB tree store of 1,000,000 keys: { path, fileBytes, keys, ... }. */
export async function treeStore(dir, cli, gib) {
  const path = join(dir, `tree-${gib}g.bale`);
  const descPath = `${path}.json`;
  const want = { version: DESCRIPTION_VERSION, keys: TREE_KEYS, gib };
  const have = reusable(path, descPath, want);
  if (have && statSync(path).size === have.fileBytes) return { path, ...have };
  rmSync(path, { force: true });
  rmSync(descPath, { force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  console.log(`writing ${path}: ${SMALL_PAIRS.toLocaleString('en-US')} small pairs…`);
  await run(cli, ['kv', 'load', path, '--create'], async (stdin) => {
    const step = 10_000;
    for (let i = 0; i < SMALL_PAIRS; i += step) {
      let lines = '';
      for (let j = i; j < Math.min(i + step, SMALL_PAIRS); j++) lines += `${smallKey(j)}\t${smallValue(j)}\n`;
      await write(stdin, lines);
    }
    stdin.end();
  });
  const small = statSync(path).size;
  // Large values fill the file up to the size asked for.
  const largeLen = Math.max(MiB, Math.floor((gib * GiB - small) / LARGE_VALUES / MiB) * MiB);
  for (let i = 0; i < LARGE_VALUES; i++) {
    console.log(`writing ${path}: ${largeKey(i)} (${largeLen / MiB} MiB)…`);
    await run(cli, ['kv', 'put', path, largeKey(i), '-'], streamBytes(i + 1, largeLen));
  }
  const desc = { ...want, smallPairs: SMALL_PAIRS, largeValues: LARGE_VALUES, largeBytes: largeLen, fileBytes: statSync(path).size, writeSeconds: Number(seconds(t0)) };
  writeFileSync(descPath, `${JSON.stringify(desc, null, 2)}\n`);
  console.log(`wrote ${path} (${desc.fileBytes.toLocaleString('en-US')} bytes) in ${desc.writeSeconds} s`);
  return { path, ...desc };
}

export const SMALL_OBJECTS = 100_000;
export const LARGE_OBJECTS = 4;
const smallObjectLen = (i) => 1024 + ((i * 2654435761) % (15 * 1024));

/** Total bytes of the files under `dir`. */
function treeBytes(dir) {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? treeBytes(p) : statSync(p).size;
  }
  return n;
}

/** The ~GIB GiB directory object store: { path, fileBytes, objects, ... }. */
export async function objectStore(dir, cli, gib) {
  const path = join(dir, `objects-${gib}g`);
  const descPath = `${path}.json`;
  const want = { version: DESCRIPTION_VERSION, smallObjects: SMALL_OBJECTS, largeObjects: LARGE_OBJECTS, gib };
  const have = reusable(path, descPath, want);
  if (have && treeBytes(path) === have.fileBytes) return { path, ...have };
  rmSync(path, { recursive: true, force: true });
  rmSync(descPath, { force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  await run(cli, ['obj', 'init', path]);
  // The small objects as files of a directory tree, added in one go.
  const tmp = join(dir, 'objects-tmp');
  rmSync(tmp, { recursive: true, force: true });
  console.log(`writing ${path}: ${SMALL_OBJECTS.toLocaleString('en-US')} small objects…`);
  try {
    for (let i = 0; i < SMALL_OBJECTS; i++) {
      const sub = join(tmp, String(Math.floor(i / 1000)).padStart(3, '0'));
      if (i % 1000 === 0) mkdirSync(sub, { recursive: true });
      writeFileSync(join(sub, `${i}`), keystream(1000 + i, 0, smallObjectLen(i)));
    }
    await run(cli, ['obj', 'add', path, tmp]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const small = treeBytes(path);
  const largeLen = Math.max(MiB, Math.floor((gib * GiB - small) / LARGE_OBJECTS / MiB) * MiB);
  for (let i = 0; i < LARGE_OBJECTS; i++) {
    console.log(`writing ${path}: large object ${i} (${largeLen / MiB} MiB)…`);
    await run(cli, ['obj', 'add', path, '-'], streamBytes(100 + i, largeLen));
    // Packed one at a time, so the staging copy never holds them all.
    await run(cli, ['obj', 'pack', path]);
  }
  const stat = JSON.parse(await run(cli, ['--json', 'obj', 'stat', path]));
  const desc = { ...want, objects: stat.objects ?? null, largeBytes: largeLen, fileBytes: treeBytes(path), writeSeconds: Number(seconds(t0)) };
  writeFileSync(descPath, `${JSON.stringify(desc, null, 2)}\n`);
  console.log(`wrote ${path} (${desc.fileBytes.toLocaleString('en-US')} bytes in its files) in ${desc.writeSeconds} s`);
  return { path, ...desc };
}

export const SQLITE_SCHEMA = 'CREATE TABLE kv(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID';

/**
 * The SQLite database of the tree store's small pairs, for sql.js (the
 * peer): { path, fileBytes, pairs, ... }. `SQL` is sql.js, initialised in
 * Node; it builds the database in memory and exports it, as a sql.js
 * user would.
 */
export async function sqliteStore(dir, SQL) {
  const path = join(dir, 'sqlite-1m.db');
  const descPath = `${path}.json`;
  const want = { version: DESCRIPTION_VERSION, pairs: SMALL_PAIRS, schema: SQLITE_SCHEMA };
  const have = reusable(path, descPath, want);
  if (have && statSync(path).size === have.fileBytes) return { path, ...have };
  rmSync(path, { force: true });
  rmSync(descPath, { force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  console.log(`writing ${path}: ${SMALL_PAIRS.toLocaleString('en-US')} small pairs (sql.js in Node)…`);
  const db = new SQL.Database();
  let bytes;
  try {
    db.run(SQLITE_SCHEMA);
    db.run('BEGIN');
    const put = db.prepare('INSERT INTO kv VALUES (?, ?)');
    for (let i = 0; i < SMALL_PAIRS; i++) put.run([smallKey(i), Buffer.from(smallValue(i))]);
    put.free();
    db.run('COMMIT');
    bytes = db.export();
  } finally {
    db.close();
  }
  writeFileSync(`${path}.tmp`, bytes);
  renameSync(`${path}.tmp`, path);
  const desc = { ...want, fileBytes: statSync(path).size, writeSeconds: Number(seconds(t0)) };
  writeFileSync(descPath, `${JSON.stringify(desc, null, 2)}\n`);
  console.log(`wrote ${path} (${desc.fileBytes.toLocaleString('en-US')} bytes) in ${desc.writeSeconds} s`);
  return { path, ...desc };
}

/** Adds rows (argv: the database, the value length, the keys) whose values are read from stdin. */
const ADD_VALUES_PY = `
import sqlite3, sys
path, length, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
db = sqlite3.connect(path)
with db:
    for key in keys:
        value = sys.stdin.buffer.read(length)
        if len(value) != length:
            sys.exit(f"{key}: {len(value)} bytes on stdin, not {length}")
        db.execute("INSERT INTO kv VALUES (?, ?)", (key, value))
db.close()
`;

/**
 * The SQLite database of just over GIB GiB: the small pairs' database plus
 * the tree store's large keys, each with the first bytes of its value
 * there (the same keystream). It shows what sql.js, which holds the whole
 * file in memory, does with a file that large (2 GiB: Chromium reads no
 * File or response that large into an ArrayBuffer, so sql.js gets no bytes
 * to open).
 */
export async function sqliteLargeStore(dir, small, gib) {
  const path = join(dir, `sqlite-${gib}g.db`);
  const descPath = `${path}.json`;
  // Rounded up, so that the file is over GIB GiB; SQLite keeps a value under 1e9 bytes (SQLITE_MAX_LENGTH).
  const largeLen = Math.min(Math.floor(1e9 / MiB) * MiB, Math.max(MiB, Math.ceil((gib * GiB - small.fileBytes) / LARGE_VALUES / MiB) * MiB));
  const want = { version: DESCRIPTION_VERSION, pairs: SMALL_PAIRS, largeValues: LARGE_VALUES, largeBytes: largeLen, gib, schema: SQLITE_SCHEMA };
  const have = reusable(path, descPath, want);
  if (have && statSync(path).size === have.fileBytes) return { path, ...have };
  rmSync(path, { force: true });
  rmSync(descPath, { force: true });
  const t0 = performance.now();
  const keys = Array.from({ length: LARGE_VALUES }, (_, i) => largeKey(i));
  console.log(`writing ${path}: ${keys.join(', ')} (${largeLen / MiB} MiB each, python3's sqlite3) beside the small pairs…`);
  const tmp = `${path}.tmp`;
  copyFileSync(small.path, tmp);
  try {
    await run('python3', ['-c', ADD_VALUES_PY, tmp, String(largeLen), ...keys], async (stdin) => {
      for (let i = 0; i < LARGE_VALUES; i++) await writeKeystream(stdin, i + 1, largeLen);
      stdin.end();
    });
    renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
  const desc = { ...want, fileBytes: statSync(path).size, writeSeconds: Number(seconds(t0)) };
  writeFileSync(descPath, `${JSON.stringify(desc, null, 2)}\n`);
  console.log(`wrote ${path} (${desc.fileBytes.toLocaleString('en-US')} bytes) in ${desc.writeSeconds} s`);
  return { path, ...desc };
}
