/* eslint-disable @typescript-eslint/no-explicit-any -- the report is read as DOCUMENTS.rehearsal selects it; test/cli/documents.test.ts validates the document */
import { formatDuration } from '../domain/durations.ts';
import { table } from './output.ts';

const q = (d: { p10: number; p50: number; p90: number } | null) =>
  d ? `${formatDuration(d.p10)} / ${formatDuration(d.p50)} / ${formatDuration(d.p90)}` : null;
const percent = (p: number) => `${Math.round(p * 100)}%`;

/** Width of the timeline's time axis, in characters. */
const AXIS = 60;

/**
 * The waves on a time axis (median start to median end; `·` spans p10–p90 of the end), so an
 * operator sees at a glance where the night goes.
 */
function timeline(report: any): string {
  const end = Math.max(report.duration.p90, ...report.waves.map((w: any) => w.start.p50 + w.duration.p90), 1);
  const col = (seconds: number) => Math.min(AXIS, Math.round((seconds / end) * AXIS));
  const label = (w: any) => `wave ${w.wave}`;
  const width = Math.max(...report.waves.map((w: any) => label(w).length), 4);
  const lines = report.waves.map((w: any) => {
    const from = col(w.start.p50);
    const to = Math.max(from + 1, col(w.start.p50 + w.duration.p50));
    const late = Math.max(to, col(w.start.p50 + w.duration.p90));
    const bar = `${' '.repeat(from)}${'█'.repeat(to - from)}${'·'.repeat(late - to)}`.padEnd(AXIS);
    return `${label(w).padEnd(width)} |${bar}| ${w.nodeIds.join(', ')}`;
  });
  const marks = `${'0'.padEnd(AXIS / 2)}${formatDuration(end / 2).padEnd(AXIS / 2)}${formatDuration(end)}`;
  return `${lines.join('\n')}\n${' '.repeat(width)} ${marks}\n`;
}

/** `rollout rehearse`: what the rehearsal predicts, as tables and a timeline (durations p10 / p50 / p90). */
export function rehearsalText(r: any): string {
  const report = r.report;
  const head = `rehearsal ${r.id}: ${r.state} (${r.samples} sample(s), seed ${r.seed}) — ${r.summary}\n`;
  if (!report) return `${head}${r.error ? `error: ${r.error}\n` : ''}`;
  const sources = report.durationSources;
  const guessed = sources.default ? `; ${sources.default} duration(s) from the backend's defaults, no history` : '';
  const out = [
    head,
    `total (p10 / p50 / p90): ${q(report.duration)}   peak nodes out: ${report.peakNodesOut}   samples: ${report.outcomes.succeeded} succeeded, ${report.outcomes.gaveUp} gave up, ${report.outcomes.failed} failed${guessed}\n\n`,
    table(
      ['WAVE', 'NODES', 'STARTS AT (p50)', 'DURATION p10 / p50 / p90'],
      report.waves.map((w: any) => [w.wave, w.nodeIds.join(', '), formatDuration(w.start.p50), q(w.duration)]),
    ),
    '\n',
    table(
      ['NODE', 'WAVE', 'DURATION p10 / p50 / p90', 'SAFE TO RESTART', 'LEFT ON NODE'],
      report.nodes.map((n: any) => [
        n.nodeId,
        n.wave,
        q(n.duration),
        n.safeToRestart === null ? null : n.safeToRestart ? 'yes' : 'no',
        n.leftOnNode.length ? n.leftOnNode.join(', ') : 'nothing',
      ]),
    ),
    '\n',
    report.pauses.length
      ? table(
          ['PAUSE', 'PROBABILITY', 'AT (p50)', 'NODE', 'WORKLOAD', 'WHY'],
          report.pauses.map((p: any) => [p.reason, percent(p.probability), formatDuration(p.typicalAtSeconds), p.nodeId, p.workload, p.message]),
        )
      : 'no pause in any sample\n',
    '\n',
    report.vmsLeftStopped.length
      ? `VMs left stopped: ${report.vmsLeftStopped.map((v: any) => `${v.vmId} (${percent(v.probability)})`).join(', ')}\n`
      : 'VMs left stopped: none\n',
    '\n',
    timeline(report),
  ];
  return out.join('');
}
