/**
 * serve-hygiene: keep one HTTP server process healthy under overload, abuse and shutdown.
 * The root export is the runtime-agnostic core as users use it: the guard, the limiters, the
 * client key, the lifecycle (shutdown controller, drain, health, exit codes), the shed
 * logger, the errors, the manual clock for tests, and their types. Adapters live at
 * `serve-hygiene/bun`, `serve-hygiene/deno` and `serve-hygiene/node`; Hono middleware at
 * `serve-hygiene/hono`; the prom-client exporter at `serve-hygiene/prometheus`; the Redis
 * store that shares keyed limits across instances at `serve-hygiene/redis`.
 *
 * The list is explicit: the core's building blocks (deadline wheel, keyed gates, key table,
 * config resolution, the adapters' serve path) are not part of the API
 * (test/exports.test.ts pins what each subpath exports).
 * @module
 */

// The request path.
export { createGuard } from "./core/mod.ts";
export type {
  ExemptOption,
  Guard,
  GuardedHandler,
  GuardedInfo,
  GuardOptions,
  GuardWork,
  KeyedGatesOptions,
  RateLimitRule,
  RefusalHeaders,
  RequestContext,
  ResolvedConfig,
  RouteBodyLimit,
  ServeHygieneConfig,
  ServeInfo,
  DeclaredLength,
} from "./core/mod.ts";

// The limiters and their answers.
export {
  createAdaptiveLimit,
  createConcurrencyLimit,
  createFixedWindowLimiter,
  createFlowQueue,
  createInFlightLimiter,
  createRateStore,
  createScopedLimiter,
  createTokenBucketLimiter,
  denyResponse,
  rateLimitedResponse,
  rateLimitHeaders,
} from "./core/mod.ts";
export type {
  AbortSignalLike,
  AdaptiveLimit,
  AdaptiveLimitOptions,
  ConcurrencyLimit,
  ConcurrencyLimitOptions,
  DenyResponseOptions,
  FixedWindowLimiter,
  FixedWindowLimiterOptions,
  FlowQueue,
  FlowQueueOptions,
  FlowTaskOptions,
  InFlightLimiter,
  InFlightLimiterOptions,
  InFlightRefusal,
  LoadMonitor,
  LoadMonitorOptions,
  LoadRefusal,
  MemoryCeiling,
  Permit,
  RateDecision,
  RateDenyReason,
  RateLimitedResponseOptions,
  RateLimiter,
  RateLimitHeadersOptions,
  RateScope,
  Refusal,
  ScopedLimiter,
  ScopedLimiterOptions,
  ScopedRateDecision,
  SharedLimiterOptions,
  SharedRateLimiter,
  SharedScopedLimiter,
  SizeGauge,
  StoreFailureMode,
  Slot,
  TokenBucketLimiter,
  TokenBucketLimiterOptions,
} from "./core/mod.ts";

// Shared stores: the contract a backend (serve-hygiene/redis, or your own) fulfils.
export type {
  RateAlgorithm,
  RateStore,
  RateStoreBackend,
  RateStoreCheck,
  RateStoreFailure,
  RateStoreFailureReason,
  RateStoreOptions,
  RateStoreReply,
  RateStoreResult,
} from "./core/mod.ts";

// The client key.
export { clientKey, createClientKey } from "./core/mod.ts";
export type { ClientKeyFunction, ClientKeyInfo, ClientKeyOptions } from "./core/mod.ts";

// The lifecycle.
export { createHealth, createShutdownController, EXIT_CODES, exitCodeFor, runUntilDrained } from "./core/mod.ts";
export type {
  BackgroundTask,
  DrainOptions,
  DrainOutcome,
  Health,
  HealthOptions,
  InFlightWork,
  Readiness,
  Server,
  ServerAddress,
  ShutdownController,
  ShutdownControllerOptions,
  StopInfo,
} from "./core/mod.ts";

// Events, logs and the Host a runtime supplies.
export { consoleLogger, createHost, createShedLogger } from "./core/mod.ts";
export type {
  Clock,
  DenyEvent,
  DenyLayer,
  EventSink,
  FaultEvent,
  Host,
  HostOptions,
  HygieneEvent,
  Logger,
  LogRecord,
  PeerAddress,
  RequestEvent,
  ShedLogger,
  ShedLoggerOptions,
  ShutdownSignal,
  SignalApi,
  StoreEvent,
  TimerHandle,
  TimerOptions,
} from "./core/mod.ts";

// The serve path's options and handle (the adapters' `serve()` takes and returns them).
export type { ServeHandle, ServeOptions } from "./core/mod.ts";

// Errors.
export {
  BodyTooLargeError,
  FlowQueueFullError,
  HygieneError,
  type HygieneErrorCode,
  isBodyTooLargeError,
  isFlowQueueFullError,
  isHygieneError,
  isPeerBusyError,
  isRateLimitedError,
  isServeError,
  PeerBusyError,
  RateLimitedError,
  ServeError,
} from "./core/mod.ts";
export type { ServeErrorCode, ServeErrorKind } from "./core/mod.ts";

// For users' own tests: time that moves only when told.
export { createManualClock } from "./testing/mod.ts";
export type { ManualClock } from "./testing/mod.ts";
