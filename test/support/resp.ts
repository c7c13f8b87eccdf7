// A minimal RESP2 connection over node:net for the tests' side door to Redis (PING while it
// starts, DEBUG SLEEP, INFO commandstats, SCRIPT FLUSH, FLUSHALL). It is no client for the
// library under test: one connection, commands answered in order, nothing retried.
import { connect, type Socket } from "node:net";

export type RespValue = string | number | null | RespValue[] | RespError;

/** An error reply (`-ERR …`) as a value, so a caller can assert on it. */
export class RespError extends Error {
  override name = "RespError";
}

/** Encodes one command as a RESP array of bulk strings. */
export function encode(args: readonly (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.from(String(arg));
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

/** Parses one reply at `at`; undefined when the buffer does not yet hold all of it. */
export function parse(buf: Buffer, at = 0): { value: RespValue; next: number } | undefined {
  const eol = buf.indexOf("\r\n", at);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[at]!);
  const line = buf.toString("utf8", at + 1, eol);
  switch (type) {
    case "+":
      return { value: line, next: eol + 2 };
    case "-":
      return { value: new RespError(line), next: eol + 2 };
    case ":":
      return { value: Number(line), next: eol + 2 };
    case "$": {
      const len = Number(line);
      if (len < 0) return { value: null, next: eol + 2 };
      if (buf.length < eol + 2 + len + 2) return undefined;
      return { value: buf.toString("utf8", eol + 2, eol + 2 + len), next: eol + 2 + len + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, next: eol + 2 };
      const items: RespValue[] = [];
      let next = eol + 2;
      for (let i = 0; i < count; i++) {
        const item = parse(buf, next);
        if (item === undefined) return undefined;
        items.push(item.value);
        next = item.next;
      }
      return { value: items, next };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}

export interface RespConnection {
  /** Sends one command; resolves with its reply (an error reply resolves as a RespError). */
  command(...args: (string | number)[]): Promise<RespValue>;
  close(): void;
}

/** Opens one connection to 127.0.0.1:`port`; rejects if it cannot connect. */
export function openResp(port: number): Promise<RespConnection> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: "127.0.0.1", port });
    let buffer: Buffer = Buffer.alloc(0);
    const waiting: { resolve: (v: RespValue) => void; reject: (e: Error) => void }[] = [];
    const failAll = (error: Error) => {
      for (const w of waiting.splice(0)) w.reject(error);
    };
    socket.once("error", reject);
    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      for (;;) {
        const reply = parse(buffer);
        if (reply === undefined) break;
        buffer = buffer.subarray(reply.next);
        waiting.shift()?.resolve(reply.value);
      }
    });
    socket.on("close", () => failAll(new Error("RESP connection closed")));
    socket.once("connect", () => {
      socket.off("error", reject);
      socket.on("error", failAll);
      resolve({
        command: (...args) =>
          new Promise((res, rej) => {
            if (socket.destroyed) return rej(new Error("RESP connection closed"));
            waiting.push({ resolve: res, reject: rej });
            socket.write(encode(args));
          }),
        close: () => socket.destroy(),
      });
    });
  });
}

/** One command on a fresh connection (closed afterwards). */
export async function respOnce(port: number, ...args: (string | number)[]): Promise<RespValue> {
  const conn = await openResp(port);
  try {
    return await conn.command(...args);
  } finally {
    conn.close();
  }
}
