// What remote.html runs on the main thread and remote-worker.js in a
// worker: open a remote over HTTP (RemoteObjects), read one object whole
// and one range of it, and a damaged copy's error; report hashes and hex
// for chromium.test.mjs to check.
import { RemoteObjects } from '/pkg/bale_wasm.js';

const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const sha256 = async (b) => hex(new Uint8Array(await crypto.subtle.digest('SHA-256', b)));

/** `open()` gives the remote; `id` is the object to read, `damaged` a remote whose `id` is damaged. */
export async function readRemote(open, id, damaged) {
  const r = await open();
  const opened = { generation: r.generation, hash: r.hash, packCount: r.packCount, objectCount: r.objectCount, traffic: r.traffic() };
  const whole = await r.get(id);
  const range = await r.getRange(id, 1_234_567, 100);
  const out = {
    opened,
    size: whole.length,
    sha256: await sha256(whole),
    range: hex(range),
    rangeMatches: hex(whole.subarray(1_234_567, 1_234_667)) === hex(range),
    listed: r.list({ limit: 3 }).map((o) => o.id),
    traffic: r.traffic(),
  };
  try {
    await (await damaged()).get(id);
    out.damaged = 'read';
  } catch (e) {
    out.damaged = { name: e.name, code: e.code, isError: e instanceof Error };
  }
  r.close();
  return out;
}
