/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates the documents against schema.graphql */
/**
 * The dashboard at `/` (rollout:W1–W2): nodes by zone, operations and rollouts with
 * progress, ETA and waiting-on, live over graphql-ws; every action previewed first, then
 * confirmed with a reason. Preact with htm templates: no build-time JSX, no CDN.
 */
import { h, render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { DatabaseUnavailable, followEvents, gql, NeedsToken, token, tokenProblem } from './api.ts';
import { formatDuration } from '../domain/durations.ts';
import { operationEta, WEB_DOCUMENTS as D } from './documents.ts';
import { PredictedVsActual, RehearsalReport, RehearsalStatus } from './rehearsal.ts';

type Message = { kind: 'ok' | 'error'; text: string; details?: string[] };
/**
 * `force` on a cancel or disable (issue 17, docs/runbook.md §4): what it does, said in the
 * dialog before it can be confirmed.
 */
interface ForceOption {
  label: string;
  warning: string;
}

/** An action waiting for its confirmation: what it will do (the preview), then the call. */
interface Pending {
  title: string;
  preview: any;
  /** Offers a `force` checkbox; the call gets its value. */
  forceOption?: ForceOption;
  run: (reason: string, force: boolean) => Promise<any>;
}

const ABANDON_WARNING =
  'Force: do not wait for the moves in flight. Each is recorded ABANDONED with its last known state and re-checked against the backend on every read; the operation ends at once. ' +
  'An abandoned move may still complete in the cluster later: check the node’s safe-to-restart before powering it off.';
const FORCE_CANCEL: ForceOption = { label: 'Force: abandon the cut-overs in flight (a backend that never answers)', warning: ABANDON_WARNING };
const FORCE_DISABLE: ForceOption = { label: 'Force: abandon the VM actions and cut-overs in flight', warning: ABANDON_WARNING };

const ENDED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

function describeResult(result: any): Message {
  if (!result || result.__typename === 'Operation' || result.__typename === 'DisableMaintenanceResult') {
    return { kind: 'ok', text: result?.id ? `${result.kind.toLowerCase()} ${result.id} ${result.state}` : 'done' };
  }
  const details = result.blockers
    ? result.blockers.map((b: any) => `${b.id}: ${b.reasons.join('; ')}`)
    : (result.changes ?? []).map((c: any) => `${c.code}: ${c.message}`);
  return { kind: 'error', text: `${result.code}: ${result.message}`, details };
}

/**
 * What an operation's state reads as (issue 31, point 2): each its own word and colour, so
 * they differ without colour too. A RUNNING operation with a stalled step reads STALLED; a
 * CANCELLED one that a forced cancel ended (error FORCED) reads FORCED.
 */
function shownState(op: any): string {
  if (op.state === 'RUNNING' && op.stalled) return 'STALLED';
  if (op.state === 'CANCELLED' && op.error === 'FORCED') return 'FORCED';
  return op.state;
}

const STATE_LABELS: Record<string, string> = {
  RUNNING: '▶ running',
  STALLED: '⚠ stalled',
  PAUSED: '❚❚ paused',
  CANCELLING: '■ cancelling',
  SUCCEEDED: '✓ succeeded',
  CANCELLED: '■ cancelled',
  FORCED: '⚠ forced',
  FAILED: '✗ failed',
};

/** Done work fills the bar in the state's colour; what failed or was abandoned shows apart, at its end. */
function Progress({ op }: { op: any }) {
  const c = op.counts;
  const lost = c.failed + c.abandoned;
  const done = c.moved + c.stopped + c.skipped + lost;
  const share = (n: number) => (c.total ? Math.round((100 * n) / c.total) : 0);
  // A full bar means done: only a SUCCEEDED operation with nothing to do shows one for 0/0.
  const ok = c.total ? share(done - lost) : op.state === 'SUCCEEDED' ? 100 : 0;
  return html`<div class=${`progress ${shownState(op)}`} title=${`${done}/${c.total}${lost ? `, ${c.failed} failed, ${c.abandoned} abandoned` : ''}`}>
    <div class="bar" style=${`width:${ok}%`}></div>
    ${lost ? html`<div class="bar lost" style=${`width:${share(lost)}%`}></div>` : null}
    <span>${done}/${c.total}</span>
  </div>`;
}

/** UTC, to the second: the same on every screen of a shift. */
function when(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 19).replace('T', ' ') : '';
}

const sameDay = (a: string, b: string) => a.slice(0, 10) === b.slice(0, 10);

/** The waiting-on cell: a failure says what failed, a stall says what and since when, else what it waits on. */
function Waiting({ op }: { op: any }) {
  if (op.state === 'FAILED') return html`<span class="failure">failed: ${op.error ?? 'no reason recorded'}</span>`;
  if (ENDED.includes(op.state)) return null;
  const stalled = op.waitingOn?.stalled ?? [];
  if (op.stalled && stalled.length) {
    return html`<div class="stall" role="alert">
      ${stalled.map(
        (s: any) =>
          html`<div data-stalled=${s.workloadId}>
            stalled: ${s.workloadKind} ${s.workloadId} ${s.action.toLowerCase()} since ${when(s.since)} UTC (expected ${formatDuration(s.expectedSeconds)}, over
            by ${formatDuration(s.overSeconds)})
          </div>`,
      )}
    </div>`;
  }
  return html`${op.waitingOn?.description ?? ''}`;
}

function Preview({ preview }: { preview: any }) {
  if (!preview) return null;
  if (preview.text) return html`<p>${preview.text}</p>`;
  if (preview.maintenance) {
    const p = preview.maintenance;
    return html`<div>
      <p class=${p.accepted ? 'ok' : 'error'}>${p.accepted ? 'Would be accepted.' : 'Would be refused:'}</p>
      <ul>
        ${p.refusals.map((r: any) => html`<li class="error">${r.code}: ${r.message}${r.blockers.map((b: any) => html`<br />${b.id}: ${b.reasons.join('; ')}`)}</li>`)}
      </ul>
      <table>
        <tr>
          <th>VM</th>
          <th>action</th>
          <th>to</th>
          <th>restart</th>
        </tr>
        ${p.vms.map(
          (v: any) =>
            html`<tr>
              <td>${v.vmId}</td>
              <td>${v.action}</td>
              <td>${v.targetNodeId ?? ''}</td>
              <td>${v.restart ?? ''}</td>
            </tr>`,
        )}
      </table>
      ${p.shards.length ? html`<p>${p.shards.filter((s: any) => s.action === 'CUT_OVER').length} shard(s) cut over, ${p.shards.filter((s: any) => s.action === 'SKIP').length} skipped</p>` : null}
    </div>`;
  }
  if (preview.rollout) {
    const p = preview.rollout;
    if (p.__typename !== 'RolloutPlan') return html`<p class="error">${p.code}: ${p.message}</p>`;
    return html`<table>
      <tr>
        <th>wave</th>
        <th>node</th>
        <th>plan</th>
      </tr>
      ${p.nodes.map((n: any) => {
        const plan = n.maintenance
          ? n.maintenance.accepted
            ? 'maintenance accepted'
            : `refused: ${n.maintenance.refusals.map((r: any) => r.message).join('; ')}`
          : n.drainRefusal
            ? `drain refused: ${n.drainRefusal}`
            : n.drain
              ? `drain: ${n.drain.filter((s: any) => s.action === 'CUT_OVER').length} cut-over(s), ${n.drain.filter((s: any) => s.action === 'SKIP').length} skipped`
              : 'no shard attached: nothing to drain';
        return html`<tr>
          <td>${n.wave}</td>
          <td>${n.nodeId}</td>
          <td>${plan}</td>
        </tr>`;
      })}
    </table>`;
  }
  return null;
}

function Confirm({ pending, onDone, onClose }: { pending: Pending; onDone: (m: Message) => void; onClose: () => void }) {
  const [reason, setReason] = useState('');
  const [force, setForce] = useState(false);
  const [busy, setBusy] = useState(false);
  const go = async () => {
    setBusy(true);
    try {
      onDone(describeResult(await pending.run(reason, force)));
    } catch (e) {
      onDone({ kind: 'error', text: (e as Error).message });
    } finally {
      setBusy(false);
      onClose();
    }
  };
  return html`<section class="confirm" role="dialog" aria-label=${pending.title}>
    <h2>${pending.title}</h2>
    <${Preview} preview=${pending.preview} />
    <label
      >Reason <input name="reason" value=${reason} onInput=${(e: any) => setReason(e.currentTarget.value)} placeholder="why (recorded in the audit log)"
    /></label>
    ${
      pending.forceOption &&
      html`<label class="force"
          ><input type="checkbox" name="force" checked=${force} onChange=${(e: any) => setForce(e.currentTarget.checked)} /> ${pending.forceOption.label}</label
        >
        ${force && html`<p class="force-warning warn" role="alert">${pending.forceOption.warning}</p>`}`
    }
    <button class=${force ? 'primary danger' : 'primary'} disabled=${busy} onClick=${go}>${force ? 'Confirm with force' : 'Confirm'}</button>
    <button onClick=${onClose}>Close</button>
  </section>`;
}

function RolloutForm({ nodes, ask }: { nodes: any[]; ask: (p: Pending) => void }) {
  const [form, setForm] = useState({ action: 'MAINTENANCE', restart: 'WAIT_FOR_REATTACH', maxUnavailable: 1, order: 'ZONE_BY_ZONE', force: false });
  const [chosen, setChosen] = useState<string[]>([]);
  const set = (k: string) => (e: any) =>
    setForm({
      ...form,
      [k]:
        e.currentTarget.type === 'checkbox'
          ? e.currentTarget.checked
          : e.currentTarget.type === 'number'
            ? Number(e.currentTarget.value)
            : e.currentTarget.value,
    });
  const input = (reason?: string) => ({ nodes: chosen.length ? chosen : nodes.map((n) => n.id), ...form, ...(reason && { reason }) });
  const preview = async () => {
    const plan = await gql(D.rolloutPlan, { input: input() });
    ask({
      title: `Rollout of ${input().nodes.join(', ')}`,
      preview: { rollout: plan.rolloutPlan },
      run: async (reason) => (await gql(D.startRollout, { input: input(reason) })).result,
    });
  };
  const [samples, setSamples] = useState(20);
  /** The rehearsal of this form's input (issue 33): read every half second until it ends. */
  const [rehearsal, setRehearsal] = useState<{ input: any; read: any } | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const poll = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(poll.current), []);
  const follow = (id: string, rehearsed: any) => {
    poll.current = setTimeout(async () => {
      try {
        const read = (await gql(D.rehearsal, { id })).rehearsal;
        setRehearsal({ input: rehearsed, read });
        if (read.__typename === 'Rehearsal' && read.state === 'RUNNING') follow(id, rehearsed);
      } catch (e) {
        setRefusal((e as Error).message);
      }
    }, REHEARSAL_POLL_MS);
  };
  const rehearse = async () => {
    clearTimeout(poll.current);
    setRefusal(null);
    const rehearsed = input();
    try {
      const started = (await gql(D.rehearseRollout, { input: rehearsed, samples })).result;
      if (started.__typename !== 'Rehearsal') return setRefusal(`${started.code}: ${started.message}`);
      setRehearsal({ input: rehearsed, read: { ...started, samples, summary: '', progress: null } });
      follow(started.id, rehearsed);
    } catch (e) {
      setRefusal((e as Error).message);
    }
  };
  const read = rehearsal?.read;
  const startRehearsed = async () => {
    const plan = await gql(D.rolloutPlan, { input: rehearsal!.input });
    ask({
      title: `Rollout of ${rehearsal!.input.nodes.join(', ')}, as rehearsed in ${read.id}`,
      preview: { rollout: plan.rolloutPlan },
      run: async (reason) => (await gql(D.startRollout, { input: { ...rehearsal!.input, ...(reason && { reason }) }, rehearsal: read.id })).result,
    });
  };
  return html`<details class="rollout-form">
    <summary>New rollout…</summary>
    <div class="row">
      ${nodes.map(
        (n) =>
          html`<label
            ><input
              type="checkbox"
              checked=${chosen.includes(n.id)}
              onChange=${(e: any) => setChosen(e.currentTarget.checked ? [...chosen, n.id] : chosen.filter((c) => c !== n.id))}
            />${n.name}</label
          >`,
      )}<em>(none ticked: all)</em>
    </div>
    <div class="row">
      <label
        >action
        <select value=${form.action} onChange=${set('action')}>
          <option>MAINTENANCE</option>
          <option>DRAIN_FILL</option>
        </select></label
      >
      <label
        >restart
        <select value=${form.restart} onChange=${set('restart')}>
          <option>WAIT_FOR_REATTACH</option>
          <option>NONE</option>
          <option>CONFIRM</option>
        </select></label
      >
      <label>max unavailable <input type="number" min="1" value=${form.maxUnavailable} onInput=${set('maxUnavailable')} /></label>
      <label
        >order
        <select value=${form.order} onChange=${set('order')}>
          <option>ZONE_BY_ZONE</option>
          <option>BY_ID</option>
          <option>GIVEN</option>
        </select></label
      >
      <label><input type="checkbox" checked=${form.force} onChange=${set('force')} /> force</label>
      <button onClick=${preview}>Preview rollout</button>
      <label
        >samples <input type="number" name="samples" min="1" max="200" value=${samples} onInput=${(e: any) => setSamples(Number(e.currentTarget.value))}
      /></label>
      <button class="rehearse" disabled=${read?.state === 'RUNNING'} onClick=${rehearse}>Rehearse</button>
    </div>
    ${refusal && html`<p class="error rehearsal-refused" role="alert">${refusal}</p>`}
    ${
      read &&
      (read.__typename === 'Rehearsal'
        ? html`<section class="rehearsal">
            <${RehearsalStatus} rehearsal=${read} />
            ${read.state === 'SUCCEEDED' && html`<${RehearsalReport} rehearsal=${read} /><button onClick=${startRehearsed}>Start this rollout…</button>`}
          </section>`
        : html`<p class="error" role="alert">${read.code}: ${read.message}</p>`)
    }
  </details>`;
}

/** How often a running rehearsal is read again (its progress lives on the gateway running it). */
const REHEARSAL_POLL_MS = 500;

const PAGE_SIZE = 20;
const STATE_FILTERS = ['RUNNING', 'PAUSED', 'CANCELLING', 'SUCCEEDED', 'CANCELLED', 'FAILED'];
const KIND_FILTERS = ['DRAIN', 'FILL', 'MAINTENANCE', 'ROLLOUT', 'MIGRATE', 'FAILOVER', 'DELETE'];

interface OpsQuery {
  state: string;
  kind: string;
  nodeId: string;
  /** The page: after a cursor (older) or before one (newer); neither: the newest. */
  after?: string;
  before?: string;
}

function opsVariables(q: OpsQuery): Record<string, unknown> {
  return {
    ...(q.before ? { last: PAGE_SIZE, before: q.before } : { first: PAGE_SIZE, ...(q.after && { after: q.after }) }),
    ...(q.state && { states: [q.state] }),
    ...(q.kind && { kind: q.kind }),
    ...(q.nodeId && { nodeId: q.nodeId }),
  };
}

/** How often the page tries again while the database is unavailable. */
const OUTAGE_RETRY_MS = 2000;
const READY_URL = new URL('/readyz', location.href).toString();

/** issue 27, point 1: an outage said as one, with the age of what is still shown. */
function OutageBanner({ outage }: { outage: { database: string; shownFrom: string | null } }) {
  const shown = outage.shownFrom ? `showing the last data from ${when(outage.shownFrom)} UTC` : 'no data loaded yet';
  return html`<p class="outage" role="alert">Database unavailable: ${outage.database} — ${shown}; retrying</p>`;
}

/** The operation a `#operation=<id>` link opens. */
const linkedOperation = () => new URLSearchParams(location.hash.slice(1)).get('operation');

function App() {
  const [data, setData] = useState<any>(null);
  const [live, setLive] = useState(false);
  /** Non-null: the token prompt is shown, with this sentence (issue 31, point 4). */
  const [tokenPrompt, setTokenPrompt] = useState<string | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  /** Non-null during a database outage (ha:DB5): which database, and when the data shown was loaded. */
  const [outage, setOutage] = useState<{ database: string; shownFrom: string | null } | null>(null);
  const loadedAt = useRef<string | null>(null);
  const retry = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [pending, setPending] = useState<Pending | null>(null);
  const [opsQuery, setOpsQuery] = useState<OpsQuery>({ state: '', kind: '', nodeId: '' });
  const [opened, setOpened] = useState<string | null>(linkedOperation());
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const query = useRef(opsQuery);
  query.current = opsQuery;

  const refused = useCallback((e: NeedsToken) => {
    setTokenPrompt(tokenProblem(e));
    token.clear();
    setData(null);
  }, []);
  const load = useCallback(async () => {
    try {
      setData(await gql(D.dashboard, opsVariables(query.current)));
      loadedAt.current = new Date().toISOString();
      setOutage(null);
    } catch (e) {
      if (e instanceof NeedsToken) refused(e);
      else if (e instanceof DatabaseUnavailable) {
        // The subscription stays open through an outage and may deliver nothing: the page itself
        // retries until a load succeeds, keeping the last data on screen meanwhile.
        setOutage({ database: e.database, shownFrom: loadedAt.current });
        retry.current ??= setTimeout(() => {
          retry.current = undefined;
          void load();
        }, OUTAGE_RETRY_MS);
      } else setMessage({ kind: 'error', text: (e as Error).message });
    }
  }, []);
  useEffect(() => () => clearTimeout(retry.current), []);
  // An open subscription stays quiet through an outage (ha:DB5), so a page left open would keep
  // saying "live" over stale data: /readyz (no database, no token) says when to ask again.
  useEffect(() => {
    const watch = setInterval(() => {
      void fetch(READY_URL)
        .then((r) => r.json())
        .then((r: { database?: string }) => {
          if (r.database === 'down' && retry.current === undefined) void load();
        })
        .catch(() => {});
    }, OUTAGE_RETRY_MS * 2);
    return () => clearInterval(watch);
  }, []);
  // Bursts of events (a drain moves many shards) cost one reload each quarter second.
  const reloadSoon = useCallback(() => {
    timer.current ??= setTimeout(() => {
      timer.current = undefined;
      void load();
    }, 250);
  }, [load]);

  useEffect(() => {
    const follow = () => setOpened(linkedOperation());
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  useEffect(() => void load(), [opsQuery]);
  useEffect(() => {
    if (tokenPrompt !== null) return undefined;
    return followEvents(
      reloadSoon,
      (up) => {
        setLive(up);
        if (up) reloadSoon();
      },
      refused,
    );
  }, [tokenPrompt]);

  const act = (title: string, preview: any, run: Pending['run'], forceOption?: ForceOption) =>
    setPending({ title, preview, run, ...(forceOption && { forceOption }) });
  const call = (doc: string, vars: Record<string, unknown>) => async (reason: string) => (await gql(doc, { ...vars, reason: reason || null })).result;
  /** A cancel or disable: `force` only when ticked (the mutations' default is false). */
  const callForce = (doc: string, vars: Record<string, unknown>) => async (reason: string, force: boolean) =>
    (await gql(doc, { ...vars, force, reason: reason || null })).result;

  if (tokenPrompt !== null) {
    return html`<main>
      <h1>Lockkeeper</h1>
      <${TokenForm}
        key=${tokenPrompt}
        problem=${tokenPrompt}
        onAccepted=${() => {
          setTokenPrompt(null);
          void load();
        }}
      />
    </main>`;
  }
  if (!data)
    return html`<main>
      <h1>Lockkeeper</h1>
      <p>Loading…</p>
      ${outage && html`<${OutageBanner} outage=${outage} />`} ${message && html`<p class="message error">${message.text}</p>`}
    </main>`;

  const nodes = data.nodes.edges.map((e: any) => e.node);
  const ops = data.operations.edges.map((e: any) => e.node);
  const page = data.operations.pageInfo;
  const zones = [...new Set(nodes.map((n: any) => n.zone ?? '(no zone)'))] as string[];
  // Buttons follow the token's scope (issue 31, point 3): a viewer is offered none.
  const mayOperate = data.caller.scope !== 'VIEWER';
  const filter = (k: keyof OpsQuery) => (e: any) => setOpsQuery({ ...opsQuery, [k]: e.currentTarget.value, after: undefined, before: undefined });
  return html`<main>
    <header>
      <h1>Lockkeeper</h1>
      <span class=${live ? 'live' : 'offline'}>${live ? '● live' : '○ reconnecting…'}</span>
      <span class="caller" data-scope=${data.caller.scope}>${data.caller.name} (${data.caller.scope.toLowerCase()})</span>
      <a href="/graphql">GraphiQL</a
      >${token.get() && html`<button onClick=${() => (token.clear(), setTokenPrompt(tokenProblem(new NeedsToken(''))))}>Forget token</button>`}
    </header>
    ${outage && html`<${OutageBanner} outage=${outage} />`}
    ${message && html`<div class=${`message ${message.kind}`} role="status">${message.text}${message.details?.map((d) => html`<div>${d}</div>`)}<button onClick=${() => setMessage(null)}>×</button></div>`}
    ${pending && html`<${Confirm} pending=${pending} onDone=${setMessage} onClose=${() => setPending(null)} />`}
    <h2>Nodes</h2>
    <div class="zones">
      ${zones.map(
        (zone) =>
          html`<section class="zone">
            <h3>${zone}</h3>
            <table class="nodes">
              <tr>
                <th>node</th>
                <th>availability</th>
                <th>policy</th>
                <th>maintenance</th>
                <th>operation</th>
                <th>safe to restart</th>
                ${mayOperate && html`<th></th>`}
              </tr>
              ${nodes
                .filter((n: any) => (n.zone ?? '(no zone)') === zone)
                .map((n: any) => {
                  const running = n.operation && !ENDED.includes(n.operation.state) ? n.operation : null;
                  return html`<tr data-node=${n.id}>
                    <td class="name">${n.name}${n.cordoned ? html` <span class="tag">cordoned</span>` : null}</td>
                    <td class=${n.availability === 'ACTIVE' ? 'ok' : 'warn'}>${n.availability}</td>
                    <td>${n.schedulingPolicy}</td>
                    <td>${n.maintenancePhase ?? ''}</td>
                    <td>${n.operation ? `${n.operation.kind} ${n.operation.state}` : ''}</td>
                    <td class=${n.safeToRestart ? 'ok' : 'warn'} data-safe=${String(n.safeToRestart)} title=${remainingTitle(n.remainingWorkloads)}>
                      ${n.safeToRestart ? 'yes' : `no: ${n.remainingWorkloads.length} remain`}
                    </td>
                    ${
                      mayOperate &&
                      html`<td class="actions">
                        ${
                          !running &&
                          !n.maintenancePhase &&
                          html`<button
                            onClick=${async () =>
                              act(
                                `Maintenance of ${n.name}`,
                                { maintenance: (await gql(D.maintenancePlan, { nodeId: n.id })).maintenancePlan },
                                call(D.enableMaintenanceMode, { nodeId: n.id }),
                              )}
                          >
                            Maintenance…
                          </button>`
                        }
                        ${
                          n.maintenancePhase &&
                          html`<button
                            onClick=${() =>
                              act(
                                `End maintenance of ${n.name}`,
                                { text: 'Uncordons the node and restarts the VMs tracked to restart.' },
                                callForce(D.disableMaintenanceMode, { nodeId: n.id }),
                                FORCE_DISABLE,
                              )}
                          >
                            Disable…
                          </button>`
                        }
                        ${
                          !running &&
                          !n.maintenancePhase &&
                          html`<button
                              onClick=${async () => {
                                const plan = await gql(D.rolloutPlan, { input: { nodes: [n.id], action: 'DRAIN_FILL' } }).catch(() => null);
                                act(
                                  `Drain ${n.name}`,
                                  plan ? { rollout: plan.rolloutPlan } : { text: 'Moves the node’s shards to their warm secondaries.' },
                                  call(D.startNodeDrain, { nodeId: n.id }),
                                );
                              }}
                            >
                              Drain…
                            </button>
                            <button
                              onClick=${() => act(`Fill ${n.name}`, { text: 'Promotes the node’s secondaries back, up to its fair share.' }, call(D.startNodeFill, { nodeId: n.id }))}
                            >
                              Fill…
                            </button>`
                        }
                        ${
                          running &&
                          (running.kind === 'DRAIN' || running.kind === 'FILL') &&
                          html`<button
                            onClick=${() =>
                              act(
                                `Cancel the ${running.kind.toLowerCase()} of ${n.name}`,
                                { text: 'Moves in flight finish; nothing new starts.' },
                                callForce(running.kind === 'DRAIN' ? D.cancelNodeDrain : D.cancelNodeFill, { nodeId: n.id }),
                                FORCE_CANCEL,
                              )}
                          >
                            Cancel…
                          </button>`
                        }
                      </td>`
                    }
                  </tr>`;
                })}
            </table>
          </section>`,
      )}
    </div>
    ${mayOperate && html`<${RolloutForm} nodes=${nodes} ask=${setPending} />`}
    <h2>Operations <span class="count">${data.operations.totalCount}</span></h2>
    <div class="filters row">
      <label
        >state
        <select name="state" value=${opsQuery.state} onChange=${filter('state')}>
          <option value="">any</option>
          ${STATE_FILTERS.map((s) => html`<option>${s}</option>`)}
        </select></label
      >
      <label
        >kind
        <select name="kind" value=${opsQuery.kind} onChange=${filter('kind')}>
          <option value="">any</option>
          ${KIND_FILTERS.map((k) => html`<option>${k}</option>`)}
        </select></label
      >
      <label
        >node
        <select name="node" value=${opsQuery.nodeId} onChange=${filter('nodeId')}>
          <option value="">any</option>
          ${nodes.map((n: any) => html`<option value=${n.id}>${n.name}</option>`)}
        </select></label
      >
      <button disabled=${!page.hasPreviousPage} onClick=${() => setOpsQuery({ ...opsQuery, after: undefined, before: page.startCursor })}>← Newer</button>
      <button disabled=${!page.hasNextPage} onClick=${() => setOpsQuery({ ...opsQuery, before: undefined, after: page.endCursor })}>Older →</button>
    </div>
    <table class="ops">
      <tr>
        <th>id</th>
        <th>kind</th>
        <th>node</th>
        <th>state</th>
        <th>progress</th>
        <th>started → ended (UTC)</th>
        <th>by, reason</th>
        <th>ETA / waiting on</th>
        ${mayOperate && html`<th></th>`}
      </tr>
      ${ops.map((op: any) => {
        const shown = shownState(op);
        return html`<tr data-operation=${op.id} data-kind=${op.kind} data-state=${op.state} data-shown=${shown}>
            <td class="id"><a href=${`#operation=${op.id}`} title=${op.id}>${op.id.slice(0, 8)}</a></td>
            <td>${op.kind}${op.rollout?.currentWave ? ` (wave ${op.rollout.currentWave})` : ''}</td>
            <td>${op.nodeId ?? op.rollout?.nodes.map((x: any) => x.nodeId).join(', ')}</td>
            <td class=${`state ${shown}`}>
              <span class="label">${STATE_LABELS[shown] ?? shown}</span>${op.error && op.state !== 'FAILED' && op.error !== 'FORCED' ? ` (${op.error})` : ''}${
                op.counts.abandoned ? html` <span class="tag warn" data-abandoned=${op.counts.abandoned}>${op.counts.abandoned} abandoned</span>` : null
              }
            </td>
            <td><${Progress} op=${op} /></td>
            <td class="time">
              <div>${when(op.startedAt)}</div>
              ${op.finishedAt && html`<div>→ ${sameDay(op.startedAt, op.finishedAt) ? when(op.finishedAt).slice(11) : when(op.finishedAt)}</div>`}
            </td>
            <td class="who">
              <div class="actor">${op.startedBy ?? ''}</div>
              <div class="reason">${op.reason ?? ''}</div>
            </td>
            <td class="waiting">
              ${ENDED.includes(op.state) || op.stalled ? null : html`<div class="eta">${operationEta(op)}</div>`}<${Waiting} op=${op} /><${AbandonedSteps}
                op=${op}
              />
            </td>
            ${
              mayOperate &&
              html`<td class="actions">
                ${
                  op.kind === 'ROLLOUT' && !ENDED.includes(op.state) && op.state !== 'CANCELLING'
                    ? html`${op.state === 'RUNNING' && html`<button onClick=${() => act('Pause the rollout', { text: 'No new node starts; the nodes in flight go on.' }, call(D.pauseRollout, { id: op.id }))}>Pause…</button>`}
                        ${op.state === 'PAUSED' && html`<button onClick=${() => act('Resume the rollout', { text: op.waitingOn?.description ?? '' }, call(D.resumeRollout, { id: op.id }))}>Resume…</button>`}
                        ${op.rollout.nodes
                          .filter((x: any) => x.phase === 'WAITING_FOR_CONFIRM')
                          .map(
                            (x: any) =>
                              html`<button
                                onClick=${() => act(`Node ${x.nodeId} was restarted`, { text: 'The rollout brings it back.' }, call(D.continueRollout, { id: op.id, nodeId: x.nodeId }))}
                              >
                                Continue ${x.nodeId}…
                              </button>`,
                          )}
                        <button
                          onClick=${() => act('Cancel the rollout', { text: 'The node in flight is brought back into service; no other starts.' }, call(D.cancelRollout, { id: op.id }))}
                        >
                          Cancel…
                        </button>`
                    : null
                }
              </td>`
            }
          </tr>
          ${
            op.rehearsal?.report &&
            !ENDED.includes(op.state) &&
            html`<tr class="vs-row">
              <td colspan=${mayOperate ? 9 : 8}><${PredictedVsActual} op=${op} /></td>
            </tr>`
          }`;
      })}
    </table>
    ${opened && html`<${OperationDetails} id=${opened} />`}
  </main>`;
}

/** The prompt: the token is tried before the prompt goes, so a refused one keeps it, with the reason. */
function TokenForm({ problem, onAccepted }: { problem: string; onAccepted: () => void }) {
  const [said, setSaid] = useState(problem);
  const [busy, setBusy] = useState(false);
  return html`<form
    class="token"
    onSubmit=${async (e: Event) => {
      e.preventDefault();
      const value = ((e.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement).value.trim();
      setBusy(true);
      token.set(value);
      try {
        await gql(D.caller);
        onAccepted();
      } catch (err) {
        setSaid(err instanceof NeedsToken ? tokenProblem(err) : (err as Error).message);
        token.clear();
      } finally {
        setBusy(false);
      }
    }}
  >
    <p class=${said.startsWith('Authentication is on') ? 'prompt' : 'prompt message error'} role="alert">${said}</p>
    <p>The token is kept in this tab only.</p>
    <input name="token" type="password" placeholder="lk_…" /><button class="primary" disabled=${busy}>Use token</button>
  </form>`;
}

/** An operation's events and the audit rows of its node while it ran (`#operation=<id>`). */
function OperationDetails({ id }: { id: string }) {
  const [details, setDetails] = useState<any>(null);
  useEffect(() => {
    let current = true;
    void (async () => {
      const first = await gql(D.operationDetails, { id });
      const op = first.operation;
      if (op.__typename !== 'Operation') return current && setDetails({ op });
      // Audit rows carry no operation id: those of its node from its start to its end (inclusive).
      const to = op.finishedAt ? new Date(Date.parse(op.finishedAt) + 1000).toISOString() : null;
      const full = await gql(D.operationDetails, { id, nodeId: op.nodeId, from: op.startedAt.slice(0, 19) + 'Z', to });
      if (current) setDetails({ op, events: full.eventLog.events, audit: full.auditLog.edges.map((e: any) => e.node) });
    })().catch((e) => current && setDetails({ op: { message: (e as Error).message } }));
    return () => {
      current = false;
    };
  }, [id]);
  if (!details) return html`<section class="details"><p>Loading ${id}…</p></section>`;
  const { op } = details;
  if (!details.events) return html`<section class="details"><p class="error">${op.code ?? ''} ${op.message}</p></section>`;
  return html`<section class="details" data-details=${op.id}>
    <h2>${op.kind} ${op.id} <a href="#">close</a></h2>
    <p>
      ${op.state}${op.error ? ` (${op.error})` : ''}, started ${when(op.startedAt)} UTC by
      ${op.startedBy ?? '?'}${op.finishedAt ? `, ended ${when(op.finishedAt)} UTC` : ''}${op.reason ? `: ${op.reason}` : ''}
    </p>
    <h3>Events</h3>
    <table class="events">
      ${details.events.map(
        (e: any) =>
          html`<tr data-seq=${e.seq}>
            <td class="time">${when(e.at)}</td>
            <td>${e.type}</td>
            <td class="payload">${JSON.stringify(e.payload)}</td>
          </tr>`,
      )}
    </table>
    <h3>Audit</h3>
    <table class="audit">
      ${details.audit.map(
        (a: any) =>
          html`<tr data-audit=${a.id}>
            <td class="time">${when(a.at)}</td>
            <td>${a.actor}</td>
            <td>${a.action}</td>
            <td>${a.outcome}</td>
            <td>${a.reason ?? ''}</td>
          </tr>`,
      )}
    </table>
  </section>`;
}

render(h(App, {}), document.getElementById('app')!);

/** The steps a forced cancel or disable abandoned, each with its last known state and where the backend says it is now (`recheck`, read at each load). */
function AbandonedSteps({ op }: { op: any }) {
  const steps = op.abandonedSteps.edges.map((e: any) => e.node);
  if (!steps.length) return null;
  return html`<ul class="abandoned">
    ${steps.map(
      (s: any) =>
        html`<li data-step=${s.workloadId} data-settled=${String(s.recheck?.settled ?? false)}>
          ${s.workloadKind} ${s.workloadId} ABANDONED:${' '}
          ${s.error ?? ''}${s.recheck ? html`<br />now: ${s.recheck.description}${s.recheck.settled ? ' (settled)' : ' (still under way)'}` : null}
        </li>`,
    )}
  </ul>`;
}

/** The tooltip of a node's "safe to restart" cell: each workload that remains and why. */
function remainingTitle(remaining: { kind: string; id: string; reason: string }[]): string {
  return remaining.map((w) => `${w.kind.toLowerCase()} ${w.id}: ${w.reason}`).join('\n');
}
