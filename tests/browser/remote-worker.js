// Reads a remote inside a Web Worker, its keys' URLs given by an
// asynchronous resolver (as presigned URLs are), and posts the report.
import init, { RemoteObjects } from '/pkg/bale_wasm.js';
import { readRemote } from '/tests/browser/remote-read.js';

self.onmessage = async ({ data }) => {
  try {
    await init();
    const at = (dir) => async (key) => new URL(`${dir}${key}`, data.base).href;
    const out = await readRemote(
      () => RemoteObjects.fromResolver(at(data.remote)),
      data.id,
      () => RemoteObjects.fromResolver(at(data.damaged)),
    );
    self.postMessage({ ok: true, out });
  } catch (e) {
    self.postMessage({ ok: false, error: { name: e.name, code: e.code, message: e.message } });
  }
};
