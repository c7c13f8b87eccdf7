// The CPU a process may use under a Linux cgroup quota, from the files an adapter reads
// (pure parsing: the core reads no file). A container limited to half a core can never use
// 90 % of one: read against a whole core, its CPU storms looked like work that waits and the
// adaptive limit never shrank (a review).

/** Where cgroup v2 keeps the quota ("max 100000" or "<quota> <period>"), as the container sees its own cgroup. */
export const CGROUP_V2_CPU_MAX = "/sys/fs/cgroup/cpu.max";
/** cgroup v1's quota and period, in µs (-1: none). */
export const CGROUP_V1_CPU_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us";
export const CGROUP_V1_CPU_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us";

/**
 * The quota in cores (0.5: half a core) read through `read` (a file's text, or undefined when
 * it cannot be read), or undefined when there is none or it cannot be told.
 *
 * @example
 * ```ts
 * import { _cgroupCores } from "./cpu_quota.ts";
 * console.assert(_cgroupCores((path) => (path.endsWith("cpu.max") ? "50000 100000\n" : undefined)) === 0.5);
 * ```
 */
export function _cgroupCores(read: (path: string) => string | undefined): number | undefined {
  const v2 = read(CGROUP_V2_CPU_MAX);
  if (v2 !== undefined) {
    const [quota, period] = v2.trim().split(/\s+/);
    return _ratio(quota, period);
  }
  return _ratio(read(CGROUP_V1_CPU_QUOTA)?.trim(), read(CGROUP_V1_CPU_PERIOD)?.trim());
}

function _ratio(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return quota !== undefined && quota !== "" && period !== undefined && q > 0 && p > 0 && Number.isFinite(q / p) ? q / p : undefined;
}
