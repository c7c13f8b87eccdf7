/**
 * Prometheus metrics for serve-hygiene. The exporter needs the optional peer dependency
 * prom-client 15; the core never imports it. (The rate-limited refusal log,
 * `createShedLogger`, needs no prom-client: it is in the package root.)
 *
 * @example
 * ```ts
 * import { consoleLogger, createGuard, createShedLogger } from "serve-hygiene";
 * import { createPrometheusExporter } from "serve-hygiene/prometheus";
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
