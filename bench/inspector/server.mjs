// A 127.0.0.1 server for the inspector benchmark: the inspector and the
// package (bindings/wasm: /www/, /pkg/) and the benchmark's stores under
// /data/, answering HEAD and single `bytes=a-b` ranges (206) as static hosts
// and buckets do. It counts, per path under /data/, the requests and the
// body bytes it sent, so a run can set them beside the page's own counter.
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

/** Starts the server; `roots` maps URL prefixes ('/data/') to directories. */
export async function startServer(roots) {
  const sent = new Map();
  const count = (path) => {
    let c = sent.get(path);
    if (!c) sent.set(path, (c = { heads: 0, requests: 0, bytes: 0 }));
    return c;
  };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const root = roots.find(([prefix]) => path.startsWith(prefix));
    const file = root && resolve(root[1], `.${path.slice(root[0].length - 1)}`);
    if (!file || (file !== root[1] && !file.startsWith(root[1] + sep)) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    const size = statSync(file).size;
    const head = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', 'accept-ranges': 'bytes' };
    const counted = path.startsWith('/data/') ? count(path) : null;
    if (req.method === 'HEAD') {
      if (counted) counted.heads++;
      res.writeHead(200, { ...head, 'content-length': size }).end();
      return;
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    let [start, end, status] = [0, size - 1, 200];
    if (m) {
      [start, end, status] = [Number(m[1]), Math.min(Number(m[2]), size - 1), 206];
      head['content-range'] = `bytes ${start}-${end}/${size}`;
    }
    const length = Math.max(0, end - start + 1);
    if (counted) {
      counted.requests++;
      counted.bytes += length;
    }
    res.writeHead(status, { ...head, 'content-length': length });
    if (length === 0) res.end();
    else createReadStream(file, { start, end }).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    /** { heads, requests, bytes } sent for `path` since the last reset. */
    sent: (path) => ({ heads: 0, requests: 0, bytes: 0, ...sent.get(path) }),
    reset: () => sent.clear(),
    close: () => {
      server.closeAllConnections();
      return new Promise((ok) => server.close(ok));
    },
  };
}
