// The inspector benchmark's 127.0.0.1 server (tests/browser/range-server.mjs:
// HEAD and single byte ranges, as static hosts and buckets answer them):
// the inspector and the package (bindings/wasm: /www/, /pkg/) and the
// benchmark's stores under /data/. It counts, per path under /data/, the
// requests and the body bytes it sent, so a run can set them beside the
// page's own counter.
import { startRangeServer } from '../../tests/browser/range-server.mjs';

/** Starts the server; `roots` maps URL prefixes ('/data/') to directories. */
export async function startServer(roots) {
  const sent = new Map();
  const heard = ({ method, path, bytes }) => {
    if (!path.startsWith('/data/')) return;
    let c = sent.get(path);
    if (!c) sent.set(path, (c = { heads: 0, requests: 0, bytes: 0 }));
    if (method === 'HEAD') c.heads++;
    else {
      c.requests++;
      c.bytes += bytes;
    }
  };
  const server = await startRangeServer((path) => roots.find(([prefix]) => path.startsWith(prefix)), heard);
  return {
    ...server,
    /**
     * { heads, requests, bytes } sent for `path` since the last reset; for
     * a path ending in `/`, summed over the files under it.
     */
    sent: (path) => {
      const out = { heads: 0, requests: 0, bytes: 0 };
      for (const [p, c] of sent) {
        if (p === path || (path.endsWith('/') && p.startsWith(path))) for (const k of Object.keys(out)) out[k] += c[k];
      }
      return out;
    },
    reset: () => sent.clear(),
  };
}
