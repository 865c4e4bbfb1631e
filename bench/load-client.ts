/**
 * The load generator, run as a child process by `bench/load.ts` so that it does not share
 * an event loop (or a core) with the server it measures. It drives `concurrency`
 * keep-alive HTTP clients, each sending the next request as soon as the last answer is
 * read: a warm-up phase, then (when the parent says so) a measured phase. Each phase
 * stops issuing at its deadline or request cap and waits for requests in flight, so
 * every measured request started and ended inside the measured phase.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface LoadSpec {
  url: string;
  /** JSON request body, POSTed with content-type application/json. */
  body: string;
  /** Sent with every request (e.g. `authorization`). */
  headers?: Record<string, string>;
  /** Size of a correct response; any other size or status counts as an error. */
  expectedBytes: number;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Upper bound on requests per phase, whatever the duration. */
  maxRequests: number;
}

export type ParentMessage = { type: 'start'; spec: LoadSpec } | { type: 'measure' };

export interface PhaseResult {
  requests: number;
  errors: number;
  firstError: string | null;
  elapsedMs: number;
  latenciesMs: number[];
}

export type ChildMessage = { type: 'warm'; warmup: PhaseResult } | { type: 'done'; result: PhaseResult };

function send(message: ChildMessage): void {
  process.send!(message);
}

function post(agent: Agent, url: URL, body: Buffer, extra: Record<string, string> = {}): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { ...extra, 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length } },
      (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function phase(spec: LoadSpec, agent: Agent, durationMs: number): Promise<PhaseResult> {
  const url = new URL(spec.url);
  const body = Buffer.from(spec.body);
  const latenciesMs: number[] = [];
  let issued = 0;
  let errors = 0;
  let firstError: string | null = null;
  const started = performance.now();
  const deadline = started + durationMs;

  async function client(): Promise<void> {
    while (performance.now() < deadline && issued < spec.maxRequests) {
      issued++;
      const t0 = performance.now();
      try {
        const res = await post(agent, url, body, spec.headers);
        if (res.status !== 200 || res.bytes !== spec.expectedBytes) {
          errors++;
          firstError ??= `status ${res.status}, ${res.bytes} bytes (expected 200, ${spec.expectedBytes} bytes)`;
        } else latenciesMs.push(performance.now() - t0);
      } catch (e) {
        errors++;
        firstError ??= String(e);
      }
    }
  }

  await Promise.all(Array.from({ length: spec.concurrency }, client));
  return { requests: latenciesMs.length, errors, firstError, elapsedMs: performance.now() - started, latenciesMs };
}

let spec: LoadSpec | undefined;
let agent: Agent | undefined;

process.on('message', (message: ParentMessage) => {
  void (async () => {
    if (message.type === 'start') {
      spec = message.spec;
      agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
      const warmup = await phase(spec, agent, spec.warmupMs);
      send({ type: 'warm', warmup: { ...warmup, latenciesMs: [] } });
    } else {
      const result = await phase(spec!, agent!, spec!.durationMs);
      agent!.destroy();
      send({ type: 'done', result });
      process.disconnect();
    }
  })();
});
