// A 127.0.0.1 file server that answers as static hosts and buckets do:
// HEAD with the length, single `bytes=a-b` ranges with 206 and exactly those
// bytes (416 from past the end), anything else with the whole file. Under
// /norange/ it serves the same files ignoring ranges (200), as a server that
// does not honour them. Optionally it refuses HEAD (405), as a presigned
// URL signed for GET does, and checks each request's query (403), as a
// bucket checks signatures. The browser suites (harness.mjs), the remote
// suite (tests/wasm/remote.test.mjs) and the inspector benchmark use it.
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, resolve, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
};

/**
 * Starts the server. `route(path)` gives `[prefix, dir]` for a URL path
 * (or nothing: 404); `heard({ method, path, query, range, status, bytes })`
 * hears every request, `query` its query string, `range` its Range header
 * (or null), `bytes` the body sent. Options: `refuseHead` answers HEAD with
 * 405; `authorize(path, searchParams)` returning false answers 403.
 * Returns `{ base, close }`.
 */
export async function startRangeServer(route, heard = () => {}, { refuseHead = false, authorize = () => true } = {}) {
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    let path = decodeURIComponent(url.pathname);
    const honoursRange = !path.startsWith('/norange/');
    if (!honoursRange) path = path.slice('/norange'.length);
    const answer = (status, bytes) => heard({ method: req.method, path, query: url.search, range: req.headers.range ?? null, status, bytes });
    if (refuseHead && req.method === 'HEAD') {
      answer(405, 0);
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (!authorize(path, url.searchParams)) {
      answer(403, 0);
      res.writeHead(403).end('forbidden');
      return;
    }
    const [prefix, dir] = route(path) ?? [];
    const file = dir && resolve(dir, `.${path.slice(prefix.length - 1)}`);
    if (!file || (file !== dir && !file.startsWith(dir + sep)) || !existsSync(file) || !statSync(file).isFile()) {
      answer(404, 0);
      res.writeHead(404).end('not found');
      return;
    }
    const size = statSync(file).size;
    const head = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', 'accept-ranges': 'bytes' };
    if (req.method === 'HEAD') {
      answer(200, 0);
      res.writeHead(200, { ...head, 'content-length': size }).end();
      return;
    }
    const m = honoursRange && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    let [start, end, status] = [0, size - 1, 200];
    if (m && Number(m[1]) >= size) {
      answer(416, 0);
      res.writeHead(416, { ...head, 'content-range': `bytes */${size}` }).end();
      return;
    }
    if (m) {
      [start, end, status] = [Number(m[1]), Math.min(Number(m[2]), size - 1), 206];
      head['content-range'] = `bytes ${start}-${end}/${size}`;
    }
    const length = Math.max(0, end - start + 1);
    answer(status, length);
    res.writeHead(status, { ...head, 'content-length': length });
    if (length === 0) res.end();
    else createReadStream(file, { start, end }).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((ok) => server.close(ok));
    },
  };
}
