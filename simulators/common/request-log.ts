import type { IncomingHttpHeaders } from 'node:http';

/**
 * Every request a simulator received, in the order they arrived, across all the
 * simulators of a test that share one log (pageservers and the compute hook): acceptance
 * tests read the order of calls from it (neon:scenario-1).
 */
export interface LoggedRequest {
  /** Which simulator: `node 1`, `hook`. */
  source: string;
  method: string;
  path: string;
  /** Query parameters as sent. */
  query: Record<string, string>;
  /** The parsed JSON body, or the raw text when it is not JSON; null without a body. */
  body: unknown;
  /** The simulator's clock when it arrived. */
  at: number;
  /** Who sent it, as its `x-lockkeeper-sender` header says (a gateway replica: `holder@epoch`), when it says (ha:L3). */
  sender?: string;
}

/** Where another process reads the log (the simulators' own route, not Neon's): `{ items: LoggedRequest[] }`, never logged itself. */
export const REQUESTS_PATH = '/simulator/v1/requests';

/** The `x-lockkeeper-sender` a request names, if one. */
export function senderOf(headers: IncomingHttpHeaders): { sender?: string } {
  const sender = headers['x-lockkeeper-sender'];
  return typeof sender === 'string' ? { sender } : {};
}

export class RequestLog {
  readonly entries: LoggedRequest[] = [];

  record(entry: LoggedRequest): void {
    this.entries.push(entry);
  }

  /** Entries matching the filter, e.g. `{ source: 'node 2', method: 'PUT' }`, with the path tested as a pattern. */
  find(filter: { source?: string; method?: string; path?: RegExp }): LoggedRequest[] {
    return this.entries.filter(
      (e) => (!filter.source || e.source === filter.source) && (!filter.method || e.method === filter.method) && (!filter.path || filter.path.test(e.path)),
    );
  }

  clear(): void {
    this.entries.length = 0;
  }
}

export function parseBody(raw: string): unknown {
  if (!raw) return null;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
