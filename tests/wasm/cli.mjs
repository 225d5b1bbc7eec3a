// The `bale` CLI of this workspace, for tests that need a store written (or
// read back) by native code, with the inspector embedded (`bale inspect`):
// the one BALE_INSPECTOR_CLI names (make test-wasm builds it), else built
// once per run (dev profile, as `cargo test` builds it). Run with stdin fed
// from the test.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let built = process.env.BALE_INSPECTOR_CLI || null;

/** The path of the CLI binary, building it first if needed. */
export function cliPath() {
  if (built) return built;
  // These suites run after `make wasm-pkg`, which the inspector needs.
  const build = spawnSync('cargo', ['build', '--locked', '-q', '-p', 'bale-cli', '--features', 'inspector'], { cwd: REPO, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('cargo build -p bale-cli --features inspector failed');
  const target = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
  // cargo puts a build for CARGO_BUILD_TARGET (make test sets it) under the triple.
  built = join(target, process.env.CARGO_BUILD_TARGET || '', 'debug', 'bale');
  return built;
}

/** Runs `bale ...args` with `input` on stdin; throws unless it exits 0. Returns stdout. */
export function bale(args, input = '') {
  const r = spawnSync(cliPath(), args, { input, maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`bale ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** Runs `bale ...args` with stdin written by `feed(stdin)` (for inputs too big to hold). */
export function baleStreamed(args, feed) {
  return new Promise((ok, fail) => {
    const p = spawn(cliPath(), args, { stdio: ['pipe', 'ignore', 'inherit'] });
    p.on('error', fail);
    p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`bale ${args.join(' ')} exited with ${code}`))));
    p.stdin.on('error', fail);
    feed(p.stdin).catch(fail);
  });
}
