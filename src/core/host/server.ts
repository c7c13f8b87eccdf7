/** The address a server is bound to. */
export interface ServerAddress {
  readonly hostname: string;
  readonly port: number;
}

/** The remote end of one request, as the transport saw it (before any proxy headers). */
export interface PeerAddress {
  readonly address: string;
  readonly port?: number | undefined;
  readonly family?: "IPv4" | "IPv6" | undefined;
}

/**
 * What a listening server can do, supplied by an adapter. The lifecycle is written
 * against this, so every runtime gets the same drain.
 */
export interface Server {
  /** Where it listens. */
  readonly address: ServerAddress;
  /**
   * Stops taking new connections and lets in-flight requests finish; settles when the
   * listener is closed (not necessarily when every request has finished).
   */
  stopAccepting(): Promise<void>;
  /** Force-closes whatever remains: open connections, in-flight responses. */
  closeAll(): void | Promise<void>;
  /** Settles when the server ends on its own; rejects on a listener error. */
  readonly closed: Promise<void>;
  /** Open connections, where the runtime lets the adapter see them. */
  connectionCount?(): number;
  /** The transport peer of `request`, where the runtime exposes it. */
  peerAddress?(request: Request): PeerAddress | undefined;
}
