// Opens the directory store whose FileList the page posts (from
// <input webkitdirectory>), lists its objects and reads the smallest one,
// counting what each step fetched from the files.
import init, { ObjectStore } from '/pkg/bale_wasm.js';

const ready = init();

self.onmessage = async ({ data: files }) => {
  let store;
  try {
    await ready;
    const paths = [...files].map((f) => f.webkitRelativePath);
    store = ObjectStore.fromFiles(files);
    const opened = { bytes: store.bytesRead, reads: store.readCount };
    const ids = store.ids();
    const metas = ids.map((id) => store.meta(id));
    const listed = { bytes: store.bytesRead, reads: store.readCount };
    // One small object, stored whole: a read of it should touch a few
    // chunks of one file, not the store.
    const small = metas.filter((m) => m.size > 0 && !m.chunked).sort((a, b) => a.size - b.size)[0];
    store.resetCounters();
    const bytes = store.get(small.id, { verify: true });
    const oneGet = { bytes: store.bytesRead, reads: store.readCount };
    self.postMessage({
      ok: true,
      root: paths[0]?.split('/')[0],
      paths,
      isFileList: files instanceof FileList,
      fileBytes: store.fileBytes,
      hash: store.hash,
      singleFile: store.singleFile,
      ids,
      metas,
      stats: store.stats(),
      small: { id: small.id, size: small.size, bytes },
      opened,
      listed,
      oneGet,
    });
  } catch (e) {
    self.postMessage({ ok: false, error: { name: e.name, code: e.code, message: e.message } });
  } finally {
    store?.close();
  }
};
