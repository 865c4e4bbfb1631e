/** What a verb writes to, and whether a person is watching (rollout:T3, rollout:T4). */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** stdout is a terminal: tables and redrawn progress bars; otherwise plain lines. */
  isTTY: boolean;
  /** The stream a progress bar draws on. */
  stream: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
  now(): number;
}

type Cell = string | number | boolean | null | undefined;

/** Columns padded to their widest cell, a header, two spaces between. */
export function table(header: string[], rows: Cell[][]): string {
  const text = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))))];
  const widths = header.map((_, i) => Math.max(...text.map((r) => r[i]?.length ?? 0)));
  return `${text.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n')}\n`;
}

/** rollout:T3: one JSON document for scripts. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export const stamp = (now: number) => new Date(now).toISOString();
