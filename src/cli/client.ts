/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import type { Client } from 'graphql-ws';

/** Exit codes of rollout:T5, and 5: a drain or maintenance SUCCEEDED but left workloads on its node (not safe to restart). */
export const EXIT = { DONE: 0, ENDED_BADLY: 1, REFUSED: 2, UNREACHABLE: 3, PAUSED: 4, NOT_SAFE_TO_RESTART: 5 } as const;

/** A failure the command reports in one line (or, with --json, one JSON document) and exits with. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    /** What --json reports: a GraphQL error code (NOT_FOUND, PRECONDITION_FAILED…) or the CLI's own (UNREACHABLE, UNAUTHENTICATED, USAGE…). */
    readonly code: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A typed refusal (rollout:T5: exit 2, printed with its code and message). */
export function refused(result: { code?: string; message?: string; __typename?: string; blockers?: { id: string; reasons: string[] }[] }): CliError {
  const blockers = (result.blockers ?? []).map((b) => `\n  ${b.id}: ${b.reasons.join('; ')}`).join('');
  const code = result.code ?? result.__typename ?? 'REFUSED';
  return new CliError(EXIT.REFUSED, `${code}: ${result.message ?? 'refused'}${blockers}`, code, {
    message: result.message ?? 'refused',
    ...(result.blockers?.length && { blockers: result.blockers }),
  });
}

interface GraphQLResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

const AUTH_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN']);

/**
 * One POST over node:http(s). Not `fetch`: Node 20 loads undici for it on first use, which
 * cost more than the rest of a CLI command together (about 1 s of 1.6 s on a loaded
 * two-core machine; issue 30, point 2).
 */
async function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; statusText: string; text: string }> {
  const { request } = url.startsWith('https:') ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** rollout:T1: one gateway, over HTTP for queries and mutations and graphql-ws for watching. */
export class GatewayClient {
  private ws: Client | null = null;

  constructor(
    readonly url: string,
    private readonly token: string | undefined,
  ) {}

  async request<T = any>(document: string, variables: Record<string, unknown> = {}): Promise<T> {
    let res: { status: number; statusText: string; text: string };
    try {
      res = await post(this.url, JSON.stringify({ query: document, variables }), {
        'content-type': 'application/json',
        ...(this.token && { authorization: `Bearer ${this.token}` }),
      });
    } catch (e) {
      const err = e as { code?: string; message?: string };
      throw new CliError(EXIT.UNREACHABLE, `cannot reach ${this.url}: ${err.code ?? err.message}`, 'UNREACHABLE', { url: this.url });
    }
    let body: GraphQLResponse;
    try {
      body = JSON.parse(res.text) as GraphQLResponse;
    } catch {
      throw new CliError(EXIT.UNREACHABLE, `${this.url} answered ${res.status} ${res.statusText}, not GraphQL`, 'NOT_GRAPHQL', {
        url: this.url,
        status: res.status,
      });
    }
    const authError = body.errors?.find((e) => AUTH_CODES.has(e.extensions?.code ?? ''));
    if (res.status === 401 || res.status === 403 || authError) {
      throw new CliError(
        EXIT.UNREACHABLE,
        `${this.url} refused the call (${res.status}): ${authError?.message ?? body.errors?.[0]?.message ?? res.statusText}`,
        authError?.extensions?.code ?? (res.status === 403 ? 'FORBIDDEN' : 'UNAUTHENTICATED'),
        { url: this.url, status: res.status },
      );
    }
    // Issue 27: the gateway answers, its database does not (a 503 before GraphQL ran, or fields
    // UNAVAILABLE naming it): the messages say "database unavailable"; try again later (exit 3).
    const unavailable = body.errors?.some((e) => e.extensions?.code === 'UNAVAILABLE');
    if (body.errors?.length && (res.status === 503 || unavailable))
      throw new CliError(EXIT.UNREACHABLE, body.errors.map((e) => e.message).join('; '), 'UNAVAILABLE', { errors: body.errors });
    if (body.errors?.length)
      throw new CliError(EXIT.REFUSED, body.errors.map((e) => e.message).join('; '), body.errors[0]!.extensions?.code ?? 'GRAPHQL_ERROR', {
        errors: body.errors,
      });
    return body.data as T;
  }

  /** Follows a subscription until `onNext` returns true (done) or the server completes it. */
  async subscribe<T>(document: string, variables: Record<string, unknown>, onNext: (data: T) => boolean | void): Promise<void> {
    // Loaded here: only the verbs that watch pay for graphql-ws and ws.
    const [{ createClient }, { default: WebSocket }] = await Promise.all([import('graphql-ws'), import('ws')]);
    this.ws ??= createClient({
      url: this.url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: this.token ? { authorization: `Bearer ${this.token}` } : {},
      retryAttempts: 5,
      shouldRetry: () => true,
    });
    return new Promise<void>((resolve, reject) => {
      const stop = this.ws!.subscribe<T>(
        { query: document, variables },
        {
          next: ({ data, errors }) => {
            if (errors?.length) return reject(new CliError(EXIT.REFUSED, errors.map((e) => e.message).join('; '), 'GRAPHQL_ERROR', { errors }));
            if (data && onNext(data as T) === true) {
              stop();
              resolve();
            }
          },
          error: (e) =>
            reject(new CliError(EXIT.UNREACHABLE, `lost ${this.url}: ${e instanceof Error ? e.message : JSON.stringify(e)}`, 'UNREACHABLE', { url: this.url })),
          complete: () => resolve(),
        },
      );
    });
  }

  async close(): Promise<void> {
    await this.ws?.dispose();
  }
}
