/** Small HTTP helpers for the server and the REST facade: bounded body reading, headers, JSON replies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LockkeeperError } from '../domain/errors.ts';

/** The request body is larger than the facade accepts (HTTP 413). */
export class PayloadTooLargeError extends LockkeeperError {
  readonly code = 'PAYLOAD_TOO_LARGE';
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/** A refusal that belongs to HTTP itself (bad path, unknown route, wrong method), not to the domain. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * Reads the whole body, refusing more than `limit` bytes with PayloadTooLargeError. A
 * declared Content-Length over the limit is refused at once, unread (the reply should
 * close the connection). A chunked body that grows past the limit is read to its end
 * and discarded, never buffered, so the client gets the reply.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new PayloadTooLargeError(limit));
      return;
    }
    let tooLarge = false;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => (tooLarge ? reject(new PayloadTooLargeError(limit)) : resolve(Buffer.concat(chunks))));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A request header's (first) value. */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
