// Compiled (not run) by types.test.mjs with tsc --strict, in a project that
// installed bale-wasm: the package's types must accept this code and refuse
// the lines marked @ts-expect-error.
import init, {
  ObjectStore,
  Store,
  errorCodes,
  type CacheStats,
  type ErrorCode,
  type ObjectMeta,
  type ObjectStats,
  type ObjectValidateReport,
  type StoreStat,
} from 'bale-wasm';
import { WorkerStore, transfer, type StoreInfo } from 'bale-wasm/worker';

export async function inMemory(): Promise<Uint8Array> {
  await init();
  const db = Store.create({ pageSize: 16384 });
  db.put('asset/1/name', 'tree.png');
  db.put(new Uint8Array([1, 2]), new Uint8Array(100));
  const name: Uint8Array | undefined = db.get('asset/1/name');
  const existed: boolean = db.delete('asset/1/name');
  const open: boolean = db.inTransaction && db.writable && existed && name !== undefined;
  if (open) db.commit();
  else db.abort();
  for (const [key, value] of db.range({ prefix: 'asset/', reverse: true, limit: 10 })) {
    key.byteLength + value.byteLength;
  }
  const keys: Uint8Array[] = db.keys({ gte: 'a', lt: 'b' }).toArray();
  const stat: StoreStat = db.stat();
  const codes: ErrorCode[] = errorCodes();
  // @ts-expect-error values are bytes or strings
  db.put('k', 42);
  // @ts-expect-error bounds are keys
  db.range({ gt: 1 });
  // @ts-expect-error no such option
  Store.create({ page_size: 4096 });
  keys.length + stat.entries + codes.length;
  return db.toBytes();
}

export function lazy(file: Blob, bytes: Uint8Array): CacheStats | undefined {
  const loaded = Store.fromBytes(bytes, { writable: true });
  loaded.put('x', 'y');
  const store = Store.fromBlob(file, { chunkBytes: 65536, cacheBytes: 32 << 20 });
  return store.cacheStats();
}

export async function inAWorker(file: File): Promise<StoreInfo> {
  const store = await WorkerStore.open(file, { cacheBytes: 1 << 20 });
  const value: Uint8Array | undefined = await store.get('key');
  const entries: [Uint8Array, Uint8Array][] = await store.range({ prefix: 'a/', limit: 50 });
  const db = await WorkerStore.create();
  await db.put('big', transfer(new Uint8Array(1 << 20)));
  await db.commit();
  const out: Uint8Array = await db.toBytes();
  try {
    await store.get('missing');
  } catch (e) {
    const code: ErrorCode | undefined = (e as { code?: ErrorCode }).code;
    code;
  }
  // @ts-expect-error keys are bytes or strings
  await store.get(7);
  value;
  entries;
  out;
  await db.close();
  return store.refreshInfo();
}

export function objects(picked: FileList, files: File[], map: Map<string, Blob>, bytes: Uint8Array): ObjectMeta {
  const dir = ObjectStore.fromFiles(picked);
  const fromArray = ObjectStore.fromFiles(files, { chunkBytes: 4096 });
  const fromMap = ObjectStore.fromFiles(map);
  const fromObject = ObjectStore.fromFiles({ config: bytes, index: bytes.buffer as ArrayBuffer, 'packs/0.pack': new Blob([]) });
  const single = ObjectStore.fromBlob(files[0], { cacheBytes: 1 << 20 });
  const ids: string[] = dir.ids();
  const data: Uint8Array = dir.get(ids[0], { verify: true });
  const part: Uint8Array = fromMap.getRange(bytes, 0, 10);
  const found: boolean = fromObject.has(ids[0]);
  const stats: ObjectStats = ObjectStore.fromBytes(bytes).stats();
  const report: ObjectValidateReport = fromArray.validate({ sample: 10 });
  const code: ErrorCode | undefined = report.problems[0]?.code;
  const hash: 'blake3' | 'sha256' | 'sha1' = single.hash;
  const counted: number = dir.bytesRead + dir.readCount + dir.fileBytes + dir.formatVersion;
  // @ts-expect-error ids are hex strings or bytes
  dir.get(42);
  // @ts-expect-error no such option
  dir.get(ids[0], { verified: true });
  // @ts-expect-error a single file is opened with fromBlob or fromBytes
  ObjectStore.fromFiles(files[0]);
  data.length + part.length + stats.objects + counted;
  found && code && hash && single.singleFile;
  single.close();
  return dir.meta(ids[0]);
}
