// A Host test double: a manual clock, a settable RSS, stop signals delivered by hand, and
// every log record captured. Installs go through the real installShutdownSignals, so the
// double logs and skips a failed install exactly as the adapters do.
import type { Host, LogRecord, ShutdownSignal } from "../../src/core/host/host.ts";
import { createManualClock, type ManualClock } from "../../src/testing/manual_clock.ts";
import { installShutdownSignals } from "../../src/core/host/signals.ts";

export interface FakeHostOptions {
  /** Signals whose install throws (logged and skipped by installShutdownSignals). */
  failInstall?: readonly ShutdownSignal[];
  /** `onShutdownSignal` itself throws, breaking the Host contract. @default false */
  throwOnInstall?: boolean;
  /** @default a new manual clock at 0 */
  clock?: ManualClock;
  /** @default undefined (the runtime cannot tell) */
  rss?: number;
}

export interface FakeHost {
  readonly host: Host;
  readonly clock: ManualClock;
  /** Every record logged through the host. */
  readonly logs: LogRecord[];
  /** Signals with a listener installed now. */
  installed(): ShutdownSignal[];
  /** Delivers `name` to the installed listener; false when none is installed (the runtime's default action would apply). */
  signal(name: ShutdownSignal): boolean;
  rss: number | undefined;
}

export function createFakeHost(options: FakeHostOptions = {}): FakeHost {
  const clock = options.clock ?? createManualClock();
  const logs: LogRecord[] = [];
  const handlers = new Map<ShutdownSignal, () => void>();
  const fake: FakeHost = {
    clock,
    logs,
    rss: options.rss,
    installed: () => [...handlers.keys()],
    signal(name) {
      const handler = handlers.get(name);
      handler?.();
      return handler !== undefined;
    },
    host: {
      clock,
      rss: () => fake.rss,
      log: (record) => void logs.push(record),
      onShutdownSignal(listener) {
        if (options.throwOnInstall) throw new Error("signals are not available here");
        return installShutdownSignals(
          {
            add(signal, handler) {
              if (options.failInstall?.includes(signal)) throw new Error(`cannot listen for ${signal}`);
              handlers.set(signal, handler);
            },
            remove(signal, handler) {
              if (handlers.get(signal) === handler) handlers.delete(signal);
            },
          },
          listener,
          (record) => void logs.push(record),
        );
      },
    },
  };
  return fake;
}
