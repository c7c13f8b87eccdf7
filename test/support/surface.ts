// The public surface: each export-map key and the runtime value names its module exports,
// sorted. Types are not listed (they have no runtime value); the root's type list is in
// src/mod.ts. A change here is a change to the package's API: say so in the changelog.
export const PUBLIC_SURFACE: Readonly<Record<string, readonly string[]>> = {
  ".": [
    "BodyTooLargeError",
    "EXIT_CODES",
    "HygieneError",
    "PeerBusyError",
    "RateLimitedError",
    "ServeError",
    "clientKey",
    "consoleLogger",
    "createClientKey",
    "createConcurrencyLimit",
    "createFixedWindowLimiter",
    "createGuard",
    "createHealth",
    "createInFlightLimiter",
    "createManualClock",
    "createScopedLimiter",
    "createShedLogger",
    "createShutdownController",
    "createTokenBucketLimiter",
    "denyResponse",
    "exitCodeFor",
    "isBodyTooLargeError",
    "isHygieneError",
    "isPeerBusyError",
    "isRateLimitedError",
    "isServeError",
    "rateLimitHeaders",
    "rateLimitedResponse",
    "runUntilDrained",
  ],
  "./bun": ["createBunHost", "serve"],
  "./deno": ["createDenoHost", "serve"],
  "./node": ["createNodeHost", "serve"],
  "./hono": ["bodyLimit", "hygiene", "hygieneContext", "inFlightCap", "noTimeout", "peerOf", "rateLimit", "timeout"],
  "./prometheus": ["createPrometheusExporter"],
};

/** The runtime value names of a loaded module, sorted as the pin is. */
export const exportNames = (mod: object): string[] => Object.keys(mod).sort();
