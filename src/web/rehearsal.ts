/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates the documents against schema.graphql */
/**
 * Rehearsals in the dashboard (issue 33, points 2 and 3, docs/operations.md): the report of a
 * rehearsal, its waves drawn on a time axis, and a running rollout's waves against the
 * rehearsal it was started with.
 */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { formatDuration } from '../domain/durations.ts';

/** formatDuration, but a rehearsal of a fast cluster predicts seconds: under 10 s, to the tenth (never `0s` for 0.4 s). */
const seconds = (s: number) => (s > 0 && s < 9.95 ? `${s.toFixed(1)}s` : formatDuration(s));

const percent = (p: number) => `${Math.round(p * 100)}%`;
const quantiles = (q: { p10: number; p50: number; p90: number }) => `${seconds(q.p10)} / ${seconds(q.p50)} / ${seconds(q.p90)}`;

/**
 * Each wave a bar from its median start to its median end, with a whisker over where its end
 * falls from p10 to p90; the axis runs to the latest p90 end (at least the total's p90).
 */
function Timeline({ report }: { report: any }) {
  const end = Math.max(report.duration.p90, ...report.waves.map((w: any) => w.start.p50 + w.duration.p90), 1);
  const at = (s: number) => `${Math.min(100, (100 * s) / end).toFixed(2)}%`;
  return html`<div class="timeline" role="img" aria-label="the waves on a time axis">
    ${report.waves.map(
      (w: any) =>
        html`<div class="wave" data-wave=${w.wave}>
          <span class="wave-label">wave ${w.wave}</span>
          <div class="track" title=${`wave ${w.wave} (${w.nodeIds.join(', ')}): starts at ${seconds(w.start.p50)}, takes ${quantiles(w.duration)}`}>
            <div class="whisker" style=${`left:${at(w.start.p50 + w.duration.p10)};width:calc(${at(w.duration.p90 - w.duration.p10)} + 1px)`}></div>
            <div class="bar" style=${`left:${at(w.start.p50)};width:calc(${at(w.duration.p50)} + 2px)`}></div>
          </div>
          <span class="wave-nodes">${w.nodeIds.join(', ')}</span>
        </div>`,
    )}
    <div class="axis"><span>0</span><span>${seconds(end / 2)}</span><span>${seconds(end)}</span></div>
  </div>`;
}

/** The report of a SUCCEEDED rehearsal: totals, the time axis, pauses (first one first), VMs left stopped. */
export function RehearsalReport({ rehearsal }: { rehearsal: any }) {
  const r = rehearsal.report;
  const o = r.outcomes;
  const s = r.durationSources;
  return html`<div class="rehearsal-report" data-rehearsal=${rehearsal.id}>
    <p class="totals">
      total (p10 / p50 / p90): <strong class="total">${quantiles(r.duration)}</strong> · peak nodes out: <strong class="peak">${r.peakNodesOut}</strong> ·
      samples: ${o.succeeded} succeeded, ${o.gaveUp} gave up, ${o.failed} failed${o.cancelled ? `, ${o.cancelled} cancelled` : ''}
      ${s.default ? html`<br /><span class="warn">${s.default} duration(s) from the backend’s defaults, no history</span>` : null}
    </p>
    <${Timeline} report=${r} />
    ${
      r.pauses.length
        ? html`<table class="pauses">
            <tr>
              <th>pause</th>
              <th>probability</th>
              <th>at (p50)</th>
              <th>node</th>
              <th>workload</th>
              <th>why</th>
            </tr>
            ${r.pauses.map(
              (p: any) =>
                html`<tr data-pause=${p.reason}>
                  <td>${p.reason}</td>
                  <td>${percent(p.probability)}</td>
                  <td>${seconds(p.typicalAtSeconds)}</td>
                  <td>${p.nodeId ?? ''}</td>
                  <td>${p.workload ?? ''}</td>
                  <td>${p.message}</td>
                </tr>`,
            )}
          </table>`
        : html`<p class="ok no-pauses">No pause in any sample.</p>`
    }
    <p class="left-stopped">
      VMs left stopped: ${r.vmsLeftStopped.length ? r.vmsLeftStopped.map((v: any) => `${v.vmId} (${percent(v.probability)})`).join(', ') : 'none'}
    </p>
  </div>`;
}

/** While a rehearsal runs: its samples done; once it failed: why. */
export function RehearsalStatus({ rehearsal }: { rehearsal: any }) {
  if (rehearsal.state === 'RUNNING') {
    const p = rehearsal.progress;
    return html`<p class="rehearsal-progress" role="status">
      Rehearsing ${rehearsal.summary}: ${p ? `${p.done}/${p.total}` : `0/${rehearsal.samples}`} samples…
    </p>`;
  }
  if (rehearsal.state === 'FAILED') return html`<p class="error" role="alert">Rehearsal ${rehearsal.id} failed: ${rehearsal.error ?? 'no reason recorded'}</p>`;
  return html`<p class="ok">Rehearsal ${rehearsal.id}: ${rehearsal.samples} sample(s), seed ${rehearsal.seed} — ${rehearsal.summary}</p>`;
}

/** Where a wave actually is: its first node's start to its last node's end (seconds from the rollout's start). */
function actualWave(op: any, wave: number, now: number) {
  const nodes = op.rollout.nodes.filter((n: any) => n.wave === wave);
  const starts = nodes
    .map((n: any) => n.startedAt)
    .filter(Boolean)
    .map((t: string) => Date.parse(t));
  if (!starts.length) return null;
  const begin = Math.min(...starts);
  const done = nodes.every((n: any) => n.finishedAt);
  const end = done ? Math.max(...nodes.map((n: any) => Date.parse(n.finishedAt))) : now;
  return { start: (begin - Date.parse(op.startedAt)) / 1000, elapsed: Math.max(0, (end - begin) / 1000), done };
}

/** How an actual duration sits in the predicted interval. */
function verdict(elapsed: number, done: boolean, d: any): { text: string; cls: string } {
  if (elapsed > d.p90) return { text: 'over p90', cls: 'warn' };
  if (!done) return { text: 'running', cls: '' };
  return elapsed < d.p10 ? { text: 'under p10', cls: 'ok' } : { text: 'within p10–p90', cls: 'ok' };
}

/** A rollout started with a rehearsal, while it runs: each wave's predicted start and duration beside what happened so far. */
export function PredictedVsActual({ op }: { op: any }) {
  // A running wave's time so far moves on between the reloads that events bring.
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, []);
  const report = op.rehearsal.report;
  return html`<table class="vs" data-vs=${op.id}>
    <caption>
      Predicted by rehearsal ${op.rehearsal.id} (total ${quantiles(report.duration)}) against actual
    </caption>
    <tr>
      <th>wave</th>
      <th>nodes</th>
      <th>predicted start (p50)</th>
      <th>predicted p10 / p50 / p90</th>
      <th>actual start</th>
      <th>actual</th>
      <th></th>
    </tr>
    ${report.waves.map((w: any) => {
      const a = actualWave(op, w.wave, now);
      const v = a && verdict(a.elapsed, a.done, w.duration);
      return html`<tr data-wave=${w.wave}>
        <td>${w.wave}</td>
        <td>${w.nodeIds.join(', ')}</td>
        <td class="predicted-start">${seconds(w.start.p50)}</td>
        <td class="predicted">${quantiles(w.duration)}</td>
        <td class="actual-start">${a ? seconds(a.start) : ''}</td>
        <td class="actual">${a ? `${seconds(a.elapsed)}${a.done ? '' : ' so far'}` : 'not started'}</td>
        <td class=${`verdict ${v?.cls ?? ''}`}>${v?.text ?? ''}</td>
      </tr>`;
    })}
  </table>`;
}
