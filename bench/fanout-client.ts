/**
 * The subscription fan-out benchmark's clients (bench/fanout.ts), in a child process so
 * that they share neither an event loop nor a core with the server measured: `clients`
 * graphql-ws connections, each with one subscription; changes are driven by GraphQL
 * mutations over HTTP, one after the other. Each client's j-th event answers the j-th
 * mutation (a subscriber sees events in order), so its latency is its arrival time less
 * the time the mutation was sent.
 */
import { performance } from 'node:perf_hooks';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export interface FanoutSpec {
  wsUrl: string;
  httpUrl: string;
  token?: string | undefined;
  clients: number;
  subscription: string;
  /** JSON bodies of the mutations, sent in turn (warm-up ones until every client heard one). */
  mutations: string[];
  /** Mutations measured. */
  changes: number;
}

export interface FanoutResult {
  events: number;
  elapsedMs: number;
  latenciesMs: number[];
}

export type FanoutParentMessage = { type: 'start'; spec: FanoutSpec };
export type FanoutChildMessage = { type: 'done'; result: FanoutResult } | { type: 'failed'; error: string };

const CONNECT_WAVE = 50;
const QUIET_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function mutate(url: string, body: string, token: string | undefined): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) }, body });
  const text = await res.text();
  if (res.status !== 200 || text.includes('"errors"')) throw new Error(`mutation answered ${res.status}: ${text.slice(0, 300)}`);
}

async function run(spec: FanoutSpec): Promise<FanoutResult> {
  const arrivals: number[][] = Array.from({ length: spec.clients }, () => []);
  let failure: unknown = null;
  const clients: Client[] = [];
  let lastArrival = 0;
  // Connected in waves, as a fleet of watchers connects over time, not in one millisecond: a
  // thousand connection_init at once overrun graphql-ws's 3 s acknowledgement wait on a busy machine.
  let wave: Promise<void>[] = [];
  for (let c = 0; c < spec.clients; c++) {
    if (wave.length === CONNECT_WAVE) {
      await Promise.all(wave);
      wave = [];
    }
    let connected!: () => void;
    wave.push(new Promise<void>((resolve) => (connected = resolve)));
    const client = createClient({
      on: { connected: () => connected(), closed: () => connected() },
      url: spec.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      ...(spec.token && { connectionParams: { authorization: `Bearer ${spec.token}` } }),
    });
    clients.push(client);
    client.subscribe(
      { query: spec.subscription },
      {
        next: (value) => {
          if (value.errors) failure ??= new Error(JSON.stringify(value.errors));
          lastArrival = performance.now();
          arrivals[c]!.push(lastArrival);
        },
        error: (e) => (failure ??= e),
        complete: () => {},
      },
    );
  }
  await Promise.all(wave);
  let turn = 0;
  const next = () => spec.mutations[turn++ % spec.mutations.length]!;
  // Warm-up: changes until every subscriber has heard one (each is listening then), then a pause for stragglers.
  for (let tries = 0; arrivals.some((a) => a.length === 0); tries++) {
    if (failure) throw failure;
    if (tries > 300) throw new Error(`only ${arrivals.filter((a) => a.length).length} of ${spec.clients} subscribers heard the warm-up`);
    await mutate(spec.httpUrl, next(), spec.token);
    await sleep(100);
  }
  // Then quiet: a warm-up event still on its way on a loaded machine would be counted as a measured one.
  while (performance.now() - lastArrival < QUIET_MS) await sleep(100);
  for (const a of arrivals) a.length = 0;
  const sent: number[] = [];
  for (let k = 0; k < spec.changes; k++) {
    sent.push(performance.now());
    await mutate(spec.httpUrl, next(), spec.token);
  }
  const deadline = performance.now() + 120_000;
  while (arrivals.some((a) => a.length < spec.changes)) {
    if (failure) throw failure;
    if (performance.now() > deadline) throw new Error(`events missing: ${arrivals.filter((a) => a.length < spec.changes).length} subscribers short`);
    await sleep(5);
  }
  const latenciesMs: number[] = [];
  let last = 0;
  for (const a of arrivals) {
    if (a.length > spec.changes) throw new Error(`a subscriber heard ${a.length} events for ${spec.changes} changes`);
    a.forEach((t, j) => latenciesMs.push(t - sent[j]!));
    last = Math.max(last, a[a.length - 1]!);
  }
  await Promise.all(clients.map((c) => c.dispose()));
  return { events: spec.clients * spec.changes, elapsedMs: last - sent[0]!, latenciesMs: latenciesMs.sort((x, y) => x - y) };
}

process.once('message', (message: FanoutParentMessage) => {
  run(message.spec).then(
    (result) => process.send!({ type: 'done', result } satisfies FanoutChildMessage, () => process.exit(0)),
    (e: unknown) =>
      process.send!({ type: 'failed', error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies FanoutChildMessage, () => process.exit(1)),
  );
});
