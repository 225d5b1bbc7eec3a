// Compiled (not run) by types.test.mjs with tsc --strict, in a project that
// installed bale-wasm: the package's types must accept this code and refuse
// the lines marked @ts-expect-error.
import init, {
  Bitable,
  BitableCursor,
  ObjectStore,
  RemoteObjects,
  Store,
  bitableFormatVersion,
  errorCodes,
  type BitableCheckReport,
  type BitableStats,
  type CacheStats,
  type CheckReport,
  type ErrorCode,
  type EstimateOptions,
  type ObjectArea,
  type ObjectChunk,
  type ObjectFileUsage,
  type ObjectMeta,
  type ObjectOverview,
  type ObjectStats,
  type ObjectValidateReport,
  type RemoteObjectInfo,
  type RemoteTraffic,
  type PageKindName,
  type PageMap,
  type StoreEstimate,
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
  const checked: CheckReport = db.check({ pageMap: true, onProgress: (done: number, total: number) => done / total });
  const map: PageMap | undefined = checked.pageMap;
  const kind: PageKindName | undefined = map?.kindNames[map.kinds[3]];
  const pages: number = map ? map.counts.leaf + map.counts.valueBlock + map.fill[0] : db.check().pages;
  const options: EstimateOptions = { samples: 128, seed: 7 };
  const est: StoreEstimate = db.estimate(options);
  const depth: number = db.estimate().depth + est.leafFill + est.largeShare;
  // @ts-expect-error no such option
  db.estimate({ sample: 128 });
  // @ts-expect-error no such option
  db.check({ page_map: true });
  // @ts-expect-error progress is (done, total) => void
  db.check({ onProgress: (message: string) => message });
  // @ts-expect-error values are bytes or strings
  db.put('k', 42);
  // @ts-expect-error bounds are keys
  db.range({ gt: 1 });
  // @ts-expect-error no such option
  Store.create({ page_size: 4096 });
  keys.length + stat.entries + codes.length + pages + depth;
  kind;
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
  const report: ObjectValidateReport = fromArray.validate({ sample: 10, onProgress: (done: number, total: number) => void (done / total) });
  const byUrl = ObjectStore.fromUrl('https://example.com/store/', { chunkBytes: 1 << 16 });
  const fileByUrl = ObjectStore.fromUrl('https://example.com/store.bale');
  // @ts-expect-error the URL is a string
  ObjectStore.fromUrl(new URL('https://example.com/store/'));
  // @ts-expect-error progress is a function
  byUrl.validate({ onProgress: 'bar' });
  byUrl.close();
  fileByUrl.close();
  const code: ErrorCode | undefined = report.problems[0]?.code;
  const hash: 'blake3' | 'sha256' | 'sha1' = single.hash;
  const counted: number = dir.bytesRead + dir.readCount + dir.fileBytes + dir.formatVersion;
  const overview: ObjectOverview = dir.overview();
  const page: ObjectMeta[] = dir.list({ after: ids[0], limit: 50, reverse: true });
  const first: ObjectMeta[] = fromMap.list();
  const chunks: ObjectChunk[] = dir.chunks(bytes);
  const chunkPage: ObjectChunk[] = dir.chunks(ids[0], { offset: 1 << 20, limit: 100 });
  // @ts-expect-error the offset is a number
  dir.chunks(ids[0], { offset: 'start' });
  const area: ObjectArea = chunks[0].area;
  const usage: ObjectFileUsage[] = dir.files({ onProgress: (done: number, total: number) => void (done / total) });
  const missing: number | null = usage[0].fileBytes;
  const where: string | null = chunks[0].file;
  // @ts-expect-error no such option
  dir.list({ from: ids[0] });
  // @ts-expect-error the limit is a number
  dir.list({ limit: '10' });
  // @ts-expect-error progress is a function
  dir.files({ onProgress: true });
  overview.records + overview.packBytes + chunkPage.length + page.length + first.length + (missing ?? 0);
  area && where && overview.compression;
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

export function bitable(file: File, bytes: Uint8Array, read: (offset: number, length: number) => Uint8Array): BitableCheckReport {
  const t = Bitable.fromBlob(file, { chunkBytes: 4096, cacheBytes: 1 << 20, maxValueBytes: 1 << 20 });
  const fromBytes = Bitable.fromBytes(bytes.buffer as ArrayBuffer, { maxValueBytes: 1 << 30 });
  const lazy = Bitable.fromReader(bytes.length, read);
  const value: Uint8Array | undefined = t.get('user/42');
  const part: Uint8Array | undefined = t.getRange(new Uint8Array([1]), 0, 4096);
  const length: number | undefined = t.valueLength('user/42');
  const found: boolean = t.has('user/42');
  const rank: number = t.rank('user/5');
  const c: BitableCursor = t.lowerBound('user/');
  const key: Uint8Array | undefined = c.key;
  const moved: boolean = c.valid && c.next() && c.prev() && c.seek('user/7');
  const ordinal: number = c.ordinal + t.select(10).ordinal + t.upperBound('a').ordinal;
  const exact: BitableCursor | undefined = t.find('user/42');
  for (const [k, v] of t.range({ gte: 'user/', lt: 'user0', reverse: true, offset: 100, limit: 50 })) {
    k.byteLength + v.byteLength;
  }
  const keys: Uint8Array[] = t.keys({ prefix: 'user/' }).toArray();
  const page: [Uint8Array, Uint8Array][] = fromBytes.prefix('user/', { gt: keys[0], limit: 10 }).toArray();
  const stats: BitableStats = lazy.stats();
  const completion: 'durable' | 'fast' | 'unknown' = stats.completion;
  const counted: number = t.bytesRead + t.readCount + t.fileBytes + t.count + t.pageSize + t.formatVersion + t.maxValueBytes;
  const cache: CacheStats | undefined = t.cacheStats();
  // @ts-expect-error keys are bytes or strings
  t.get(42);
  // @ts-expect-error no such option
  Bitable.fromBytes(bytes, { chunkBytes: 4096 });
  // @ts-expect-error the prefix is the first argument
  t.prefix('a', { prefix: 'b' });
  // @ts-expect-error a cursor's key is read-only
  c.key = new Uint8Array();
  value && part && length && found && rank && key && moved && ordinal && exact && page && completion && counted && cache;
  bitableFormatVersion();
  const report = t.check((done: number, total: number) => done / total);
  const code: ErrorCode | undefined = report.problems[0]?.code;
  code;
  t.close();
  return report;
}

export async function remote(presign: (key: string) => Promise<string>): Promise<Uint8Array> {
  const r: RemoteObjects = await RemoteObjects.fromUrl('https://example.com/remotes/photos/');
  const byUrl = await RemoteObjects.fromUrl(new URL('https://example.com/remotes/photos/?token=t'));
  const signed = await RemoteObjects.fromResolver(presign);
  const plain = await RemoteObjects.fromResolver((key: string) => new URL(key, 'https://example.com/r/'));
  const counts: number = r.generation + r.packCount + r.objectCount + r.size('ab');
  const hash: 'blake3' | 'sha256' | 'sha1' = signed.hash;
  const page: RemoteObjectInfo[] = r.list({ after: new Uint8Array(32), limit: 10, reverse: true });
  const chunked: boolean = page[0].chunked && r.has(page[0].id);
  const whole: Uint8Array = await r.get(page[0].id);
  const part: Uint8Array = await byUrl.getRange(page[0].id, 0, 100);
  const t: RemoteTraffic = plain.traffic();
  // @ts-expect-error fromResolver takes a function
  RemoteObjects.fromResolver('https://example.com/');
  // @ts-expect-error a resolver is given keys
  RemoteObjects.fromResolver((key: number) => String(key));
  // @ts-expect-error get is asynchronous
  const sync: Uint8Array = r.get(page[0].id);
  // @ts-expect-error no such option
  r.list({ from: 'ab' });
  sync;
  counts + t.requests + t.bytesReceived + whole.length;
  hash && chunked;
  r.close();
  return part;
}
