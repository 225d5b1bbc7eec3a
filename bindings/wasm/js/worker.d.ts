// Types of bale-wasm/worker: a store run in a Web Worker, driven through Promises.
import type {
  BytesOptions,
  CacheOptions,
  CacheStats,
  CheckOptions,
  CheckReport,
  CreateOptions,
  EstimateOptions,
  Key,
  RangeOptions,
  StoreEstimate,
  StoreStat,
} from '../pkg/bale_wasm.js';

export type { BaleError, ErrorCode } from '../pkg/bale_wasm.js';

/** What `WorkerStore.open()` accepts: a File or Blob is read lazily in the worker. */
export type WorkerSource = Blob | Uint8Array | ArrayBuffer;

/** A store's summary, from `open()`/`create()` and `refreshInfo()`. */
export interface StoreInfo {
  count: number;
  pageSize: number;
  formatVersion: number;
  fileBytes: number;
  writable: boolean;
  inTransaction: boolean;
  /** What the worker fetched from the source so far (lazily read stores). */
  bytesRead: number;
  readCount: number;
  /** Result buffers the worker moved to this thread so far, and their bytes. */
  transferredBuffers: number;
  transferredBytes: number;
}

/**
 * Marks a byte array argument (`put` value, `open` bytes) so that its buffer
 * moves to the worker instead of being copied; it is detached afterwards.
 */
export function transfer<T extends Uint8Array | ArrayBuffer>(bytes: T): T;

/**
 * A `Store` that lives in a Web Worker. Every method is the `Store` method
 * of that name run there, its result in a Promise; a failure rejects with
 * the same `BaleError` (name, `code`, `page`) the `Store` would throw.
 * Byte arrays in results are transferred from the worker, not copied.
 */
export class WorkerStore {
  /** Opens `source` in a new worker (`options`: the cache's for a Blob, `writable` for bytes). */
  static open(source: WorkerSource, options?: CacheOptions | BytesOptions, workerUrl?: string | URL): Promise<WorkerStore>;
  /** A new writable store in memory, in a new worker. */
  static create(options?: CreateOptions, workerUrl?: string | URL): Promise<WorkerStore>;

  /** What `refreshInfo()` last returned (at first, what opening did). */
  info: StoreInfo;
  /** Whether `close()` was called, or the worker failed. */
  readonly closed: boolean;

  get(key: Key): Promise<Uint8Array | undefined>;
  has(key: Key): Promise<boolean>;
  valueLength(key: Key): Promise<number | undefined>;
  getRange(key: Key, offset: number, length: number): Promise<Uint8Array | undefined>;
  /** Every entry of the range in an array: page with `gt` and `limit`. */
  range(options?: RangeOptions): Promise<[Uint8Array, Uint8Array][]>;
  /** Every key of the range in an array. */
  keys(options?: RangeOptions): Promise<Uint8Array[]>;
  /** Writable stores: see `Store.put`. */
  put(key: Key, value: Uint8Array | string): Promise<void>;
  delete(key: Key): Promise<boolean>;
  commit(): Promise<void>;
  abort(): Promise<void>;
  toBytes(): Promise<Uint8Array>;
  stat(): Promise<StoreStat>;
  estimate(options?: EstimateOptions): Promise<StoreEstimate>;
  /** `onProgress` runs on this thread, from the worker's progress messages. */
  check(options?: CheckOptions): Promise<CheckReport>;
  cacheStats(): Promise<CacheStats | undefined>;
  resetCounters(): Promise<void>;
  /** The store's summary now; also kept in `info`. */
  refreshInfo(): Promise<StoreInfo>;
  /** Closes the store and ends its worker; later calls reject with `CLOSED`. */
  close(): Promise<void>;
}
