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
  /**
   * Its place in the log's one order of arrivals and answers: what arrived, or was answered,
   * before what. Checkers of order (the campaign's neon:C6–C9) compare these, not clock times.
   */
  seq?: number;
  /** The status answered, once an answer was sent; absent while unanswered or when the answer was lost. */
  status?: number;
  /** Where in the same order the answer was sent. */
  answeredSeq?: number;
  /** The answer's body, kept for the few reads a checker needs (timeline lists, one location's config). */
  response?: unknown;
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
  private next = 0;

  record(entry: LoggedRequest): LoggedRequest {
    entry.seq = this.next++;
    this.entries.push(entry);
    return entry;
  }

  /** The place the next arrival or answer will take. */
  get position(): number {
    return this.next;
  }

  /** The answer to `entry` was sent now. */
  answered(entry: LoggedRequest, status: number, response?: unknown): void {
    entry.status = status;
    entry.answeredSeq = this.next++;
    if (response !== undefined) entry.response = response;
  }

  /** Something that is not a request happened now (a campaign's kill, a pageserver's restart): `source` says who, `what` what. */
  mark(source: string, what: string, at: number): void {
    this.record({ source, method: 'MARK', path: what, query: {}, body: null, at });
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
