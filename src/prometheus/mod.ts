/**
 * Prometheus metrics and rate-limited refusal logs for serve-hygiene. The exporter needs the
 * optional peer dependency prom-client 15; the core never imports it.
 *
 * @example
 * ```ts
 * import { createGuard, consoleLogger } from "serve-hygiene";
 * import { createPrometheusExporter, createShedLogger } from "serve-hygiene/prometheus";
 * const metrics = createPrometheusExporter();
 * const shedLog = createShedLogger({ log: consoleLogger });
 * const guard = createGuard({ onEvent: (e) => (metrics.onEvent(e), shedLog(e)) });
 * metrics.observeGuard(guard);
 * console.assert((await metrics.render()).includes("serve_hygiene_requests_in_flight 0"));
 * guard.dispose();
 * ```
 *
 * @module
 */
export * from "./exporter.ts";
export * from "./shed_log.ts";
