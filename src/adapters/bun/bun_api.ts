// The part of Bun's API the adapter uses, declared here so the adapter type-checks where
// Bun's own types are absent (Deno, JSR, a Node consumer's tsc). test/adapters/bun_api.test.ts
// checks under tsc, with bun-types, that Bun's real `Bun.serve` fits this declaration.

/** The server (and the fetch handler's second argument) as the adapter uses it. */
export interface BunServerLike {
  readonly hostname: string | undefined;
  readonly port: number | undefined;
  /** The address bound (Bun's `hostname` is the one given). */
  readonly address?: { address: string } | null | undefined;
  requestIP(request: Request): { address: string; port: number; family: string } | null;
  timeout(request: Request, seconds: number): void;
  stop(closeActiveConnections?: boolean): Promise<void>;
  /** Requests in progress, a response still streaming included (a connection with no full head yet is not one). */
  readonly pendingRequests: number;
}

/** The options of `Bun.serve` the adapter passes. */
export interface BunServeConfig {
  port: number;
  hostname: string;
  idleTimeout: number;
  reusePort: boolean;
  maxRequestBodySize: number;
  fetch(request: Request, server: BunServerLike): Response | Promise<Response>;
  error(error: Error): Response;
}

/** `globalThis.Bun`, reduced to `serve`. */
export interface BunLike {
  serve(options: BunServeConfig): BunServerLike;
}

/** Bun's global, typed by {@linkcode BunLike}: only called on Bun. */
export function _bun(): BunLike {
  return (globalThis as unknown as { Bun: BunLike }).Bun;
}
