// Ordered per-key lanes: a fixed set of workers, each running one task at a time in arrival
// order; a key always lands on the same worker, so one key's tasks never overlap or reorder.
// Each worker holds at most its share of the capacity and sheds past it: a task is never
// moved to another worker (that would break the key's order) and never run inline (that
// would be an unbounded queue in disguise: the caller's own stack).
import type { EventSink, HygieneEvent } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _hasCode, HygieneError } from "../errors.ts";
import { _fail, _object, _options, _positiveInt, _show, type _KeyList } from "../_validate.ts";

const CODE = "ERR_FLOW_QUEUE_FULL";
const SHED: HygieneEvent = Object.freeze({ type: "deny", layer: "flow", reason: "queue-full", status: 503 });
/**
 * The most workers a queue may have: each is allocated when the queue is created (a typo of
 * `1e8` would take gigabytes), and each runs a task at once — far past any useful parallelism.
 */
const MAX_WORKERS = 65_536;

/** Options of {@linkcode createFlowQueue}. */
export interface FlowQueueOptions {
  /** How many tasks may run at once: each worker runs one at a time. At most 65,536. */
  workers: number;
  /**
   * Tasks held at once, running and waiting, over all workers. Each worker holds at most
   * `⌊capacity ÷ workers⌋` and sheds past it, so it must be at least `workers`.
   */
  capacity: number;
  /** Receives a deny event (layer `"flow"`, reason `"queue-full"`) for each shed task. */
  onEvent?: EventSink | undefined;
}

/** Options of one {@linkcode FlowQueue.run}. */
export interface FlowTaskOptions {
  /** Aborting it while the task waits removes it from its worker at once (rejects with the signal's reason); a running task is not stopped. */
  signal?: AbortSignal | undefined;
}

/** Ordered per-key lanes over a fixed set of workers. */
export interface FlowQueue {
  /**
   * Queues `task` on the worker of `key`, behind every task that worker already holds, and
   * settles as the task does. Rejects with {@linkcode FlowQueueFullError} at once when the
   * worker holds its share of the capacity. `task` never starts inside this call. Keys share
   * workers: a task must not await another `run` of this queue (on the same worker — its own
   * key's always is — neither would ever end), and one that never settles holds its worker,
   * and every key on it, for good.
   */
  run<T>(key: string, task: () => T | Promise<T>, options?: FlowTaskOptions): Promise<T>;
  /** The worker (0 … workers − 1) of `key`: a stable hash, the same across restarts and runtimes. */
  workerOf(key: string): number;
  /** Tasks held now, running and waiting. */
  readonly size: number;
  /** Tasks shed since creation. */
  readonly shed: number;
}

/**
 * A task was refused because its worker already held its share of the capacity.
 *
 * @example
 * ```ts
 * import { FlowQueueFullError, isFlowQueueFullError } from "serve-hygiene";
 * const error = new FlowQueueFullError({ worker: 2, limit: 16 });
 * console.assert(isFlowQueueFullError(error) && error.code === "ERR_FLOW_QUEUE_FULL");
 * ```
 */
export class FlowQueueFullError extends HygieneError {
  declare readonly code: typeof CODE;
  /** The worker that was full. */
  readonly worker: number;
  /** Its share of the capacity: the tasks it holds at most. */
  readonly limit: number;
  constructor(data: { worker: number; limit: number }, options?: { cause?: unknown }) {
    super(CODE, `Flow queue full: worker ${data.worker} holds ${data.limit} tasks`, options);
    this.name = new.target === FlowQueueFullError ? "FlowQueueFullError" : new.target.name;
    this.worker = data.worker;
    this.limit = data.limit;
  }
}

/**
 * Whether `error` is a {@linkcode FlowQueueFullError}, from this copy of the package or another.
 *
 * @example
 * ```ts
 * import { isFlowQueueFullError } from "serve-hygiene";
 * console.assert(!isFlowQueueFullError(new Error("x")));
 * ```
 */
export function isFlowQueueFullError(error: unknown): error is FlowQueueFullError {
  return _hasCode<FlowQueueFullError>(error, CODE, "worker");
}

interface _Task {
  readonly fn: () => unknown;
  readonly resolve: (value: never) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface _Worker {
  readonly index: number;
  /** Waiting tasks in arrival order (a Set: removal on abort is O(1), order is kept). */
  readonly waiting: Set<_Task>;
  running: boolean;
}

/** Every option of {@linkcode FlowQueueOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const FLOW_QUEUE_KEYS: _KeyList<FlowQueueOptions> = { workers: true, capacity: true, onEvent: true };

/**
 * Creates ordered per-key lanes: tasks with the same key run one at a time, in the order
 * they were queued, on the one worker the key hashes to; tasks of keys on other workers run
 * at the same time. A worker holding `⌊capacity ÷ workers⌋` tasks (running and waiting)
 * sheds the next with {@linkcode FlowQueueFullError}, counts it (`shed`) and emits a deny
 * event; it never hands the task to another worker and never runs it inline. A task that
 * throws rejects its own promise and its worker goes on with the next. Use it where order
 * per key matters more than throughput per key: writes to one document, one account's
 * ledger, one device's commands.
 *
 * @example Serialise writes per document
 * ```ts
 * import { createFlowQueue, isFlowQueueFullError } from "serve-hygiene";
 * const queue = createFlowQueue({ workers: 4, capacity: 64 });
 * const doc: string[] = [];
 * const write = (id: string, text: string) =>
 *   queue.run(id, async () => {
 *     await new Promise((resolve) => setTimeout(resolve, text.length)); // the storage round trip
 *     doc.push(text);
 *   });
 * await Promise.all([write("doc-1", "a long first edit"), write("doc-1", "second")]);
 * console.assert(doc.join("|") === "a long first edit|second"); // arrival order, whatever each took
 * const answer = await write("doc-2", "x").then(() => 200, (e) => (isFlowQueueFullError(e) ? 503 : 500));
 * console.assert(answer === 200);
 * ```
 */
export function createFlowQueue(options: FlowQueueOptions): FlowQueue {
  const what = "create flow queue";
  const o = _options(what, options, FLOW_QUEUE_KEYS);
  const workers = _positiveInt(what, "workers", o.workers);
  if (workers > MAX_WORKERS) _fail(what, "workers", `at most ${MAX_WORKERS}`, workers);
  const capacity = _positiveInt(what, "capacity", o.capacity);
  if (capacity < workers) {
    throw new RangeError(`Cannot ${what} as "capacity" must be at least "workers": current values are ${capacity} and ${workers}`);
  }
  const share = Math.floor(capacity / workers);
  const sinks = [o.onEvent];
  const lanes: _Worker[] = Array.from({ length: workers }, (_, index) => ({ index, waiting: new Set(), running: false }));
  let size = 0;
  let shed = 0;

  const keyOf = (doing: string, key: unknown): string => {
    if (typeof key !== "string") throw new TypeError(`Cannot ${doing} as "key" must be a string: current value is ${_show(key)}`);
    return key;
  };
  // The signal is checked before anything is counted: one that could not be listened to
  // rejected the run after `size` had counted it, for good.
  const signalOf = (runOptions: FlowTaskOptions | undefined): AbortSignal | undefined => {
    if (runOptions === undefined) return undefined;
    const signal = _object("run flow task", "options", runOptions).signal;
    if (signal !== undefined && !(typeof signal === "object" && signal !== null && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function")) {
      throw new TypeError(`Cannot run flow task as "signal" must be an AbortSignal: current value is ${_show(signal)}`);
    }
    return signal;
  };

  const hash = (key: string): number => {
    // FNV-1a over the UTF-16 code units: stable across processes and runtimes.
    let h = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    return (h >>> 0) % workers;
  };

  const next = (lane: _Worker): void => {
    if (lane.running) return;
    const task = lane.waiting.values().next().value;
    if (task === undefined) return;
    lane.waiting.delete(task);
    if (task.onAbort !== undefined) task.signal!.removeEventListener("abort", task.onAbort);
    lane.running = true;
    // Started from a promise reaction: never inside run(), and a synchronous throw rejects too.
    // The worker is free (and its next task queued) before the caller hears of the outcome.
    Promise.resolve()
      .then(task.fn)
      .then(
        (value) => (done(lane), task.resolve(value as never)),
        (error) => (done(lane), task.reject(error)),
      );
  };

  const done = (lane: _Worker): void => {
    size--;
    lane.running = false;
    next(lane);
  };

  return {
    run<T>(key: string, task: () => T | Promise<T>, runOptions?: FlowTaskOptions): Promise<T> {
      keyOf("run flow task", key);
      if (typeof task !== "function") throw new TypeError(`Cannot run flow task as "task" must be a function: current value is ${_show(task)}`);
      const signal = signalOf(runOptions);
      if (signal?.aborted) return Promise.reject(signal.reason);
      const lane = lanes[hash(key)]!;
      if (lane.waiting.size + (lane.running ? 1 : 0) >= share) {
        shed++;
        _emit(sinks, SHED);
        return Promise.reject(new FlowQueueFullError({ worker: lane.index, limit: share }));
      }
      return new Promise<T>((resolve, reject) => {
        const entry: _Task = { fn: task, resolve: resolve as (value: never) => void, reject, signal, onAbort: undefined };
        if (signal !== undefined) {
          entry.onAbort = () => {
            if (!lane.waiting.delete(entry)) return;
            size--;
            reject(signal.reason);
          };
          // A signal whose listener cannot be added rejects the run here, before it is counted.
          signal.addEventListener("abort", entry.onAbort, { once: true });
        }
        size++;
        lane.waiting.add(entry);
        next(lane);
      });
    },
    workerOf: (key) => hash(keyOf("find flow worker", key)),
    get size() {
      return size;
    },
    get shed() {
      return shed;
    },
  };
}
