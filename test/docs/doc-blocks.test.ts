/**
 * Issue 30, point 1: the docs are executed. Every fenced block of README.md, docs/ and
 * examples/ in a runnable language is marked in its info string (docs/doc-tests.md):
 *
 * - `run=demo`: run here, in document order, against a demo gateway of that file's own
 *   (GraphQL documents over HTTP and graphql-ws; `lockkeeper` commands through the real
 *   binary on PATH; `curl` as written). A refusal (GraphQL `errors`, a typed error the text
 *   does not announce with `# expect: <Type>`, an exit code the line's comment does not
 *   announce with `exits N`) fails, and so does an answer that no longer matches the output
 *   the text shows (`$ ` prompt lines followed by their output, or an `output` block after the
 *   block), compared after the normalisation rules below;
 * - `run-by=<file>`: run by that test or script (it must exist and name the page);
 * - `norun="<reason>"`: not meant to run here, and why.
 *
 * An unmarked block of a runnable language fails, so nothing is silently skipped.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT, until } from '../support/child-server.ts';
import { fencedBlocks, markdownFiles, readDoc, type FencedBlock } from '../support/markdown.ts';

const TOKEN = 'doc-blocks-bootstrap-admin-token-0123456789';
const RUNNABLE = new Set(['graphql', 'gql', 'sh', 'bash', 'shell', 'zsh', 'console', 'ts', 'typescript', 'js', 'javascript', 'http']);
const SHELL = new Set(['sh', 'bash', 'shell', 'zsh', 'console']);

/** The pages whose blocks are run or marked: the README, docs/ (not the generated references) and examples/. */
const PAGES = markdownFiles().filter((f) => f === 'README.md' || (f.startsWith('docs/') && !f.startsWith('docs/reference/')) || f.startsWith('examples/'));

type Mark = { kind: 'run' } | { kind: 'run-by'; file: string } | { kind: 'norun'; reason: string } | { kind: 'output' } | { kind: 'none' };

function markOf(block: FencedBlock): Mark {
  if (/(^|\s)run=demo(\s|$)/.test(block.meta)) return { kind: 'run' };
  const by = /(?:^|\s)run-by=(\S+)/.exec(block.meta);
  if (by) return { kind: 'run-by', file: by[1]! };
  const no = /(?:^|\s)norun="([^"]*)"/.exec(block.meta);
  if (no) return { kind: 'norun', reason: no[1]!.trim() };
  if (/(^|\s)output(\s|$)/.test(block.meta)) return { kind: 'output' };
  return { kind: 'none' };
}

/**
 * The normalisation rules (docs/doc-tests.md says the same): applied to the answer and to the
 * text before they are compared.
 */
function normalise(text: string, origin: string): string {
  return (
    text
      .replaceAll(origin, 'http://127.0.0.1:4000')
      // 1. times: ISO-8601 instants, and the CLI's clock times
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g, '<time>')
      .replace(/\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b/g, '<time>')
      // 2. ids: UUIDs (operations, tokens, audit rows)
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<id>')
      // 3. tokens
      .replace(/\blk_[A-Za-z0-9_-]{43}\b/g, 'lk_<token>')
      // 4. durations and ETAs: 1m05s, 2h03m, 42s, 0.5s, 300ms, and seconds as numbers in JSON
      .replace(/\b\d+h\d{2}m\b|\b\d+m\d{2}s\b|\b\d+(?:\.\d+)?m?s\b/g, '<duration>')
      .replace(/("(?:etaSeconds|expectedSeconds|overSeconds|etaOverdueSeconds|durationMs)": )\d+(?:\.\d+)?/g, '$1<duration>')
      .replace(/[ \t]+$/gm, '')
      .trim()
  );
}

/** The expected text as a pattern: `…` matches anything within a line; a line that is only `…` matches any lines. */
function matches(actual: string, expected: string): boolean {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = expected
    .split('\n')
    .map((line) => (line.trim() === '…' ? '(?:[^\\n]*(?:\\n|$))*?' : `${line.split('…').map(escape).join('[^\\n]*')}\\n`))
    .join('');
  return new RegExp(`^${pattern}$`).test(`${actual}\n`);
}

interface Operation {
  source: string;
  operation: OperationDefinitionNode;
  /** From a `# expect: <Type>` line just above the operation. */
  expect: string | null;
}

function operationsOf(block: string): Operation[] {
  return parse(block)
    .definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
    .map((operation, i, all) => {
      const before = block.slice(i === 0 ? 0 : all[i - 1]!.loc!.end, operation.loc!.start);
      return { source: block.slice(operation.loc!.start, operation.loc!.end), operation, expect: /# expect: (\w+)/.exec(before)?.[1] ?? null };
    });
}

/** Every `__typename` in a result, and the ids of the operations it returned. */
function walk(value: unknown, out: { types: string[]; operations: string[] } = { types: [], operations: [] }) {
  if (Array.isArray(value)) for (const v of value) walk(v, out);
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.__typename === 'string') out.types.push(o.__typename);
    if (o.__typename === 'Operation' && typeof o.id === 'string') out.operations.push(o.id);
    for (const v of Object.values(o)) walk(v, out);
  }
  return out;
}

/** A shell block's commands: `$ ` prompts dropped, `\` continuations joined, each with the output the text shows after it. */
function commandsOf(body: string): { command: string; shown: string | null }[] {
  const lines = body.split('\n');
  const prompted = lines.some((l) => l.startsWith('$ '));
  const out: { command: string; shown: string[] | null }[] = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    if (prompted && !line.startsWith('$ ')) {
      out.at(-1)?.shown?.push(line);
      continue;
    }
    if (prompted) line = line.slice(2);
    if (!line.trim() || line.trim().startsWith('#')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]!.trim()}`;
    out.push({ command: line, shown: prompted ? [] : null });
  }
  return out.map((c) => ({ command: c.command, shown: c.shown && c.shown.join('\n').trim() ? c.shown.join('\n') : null }));
}

/** The exit code a command's comment announces (`… # … exits 5 …`), else 0. */
const expectedExit = (command: string) => Number(/#.*\bexits (\d+)\b/.exec(command)?.[1] ?? 0);

describe('every runnable block of the docs is marked (issue 30, point 1)', () => {
  it('the pages are there', () => {
    expect(PAGES).toEqual(expect.arrayContaining(['README.md', 'docs/runbook.md', 'docs/operations.md', 'docs/rollouts-and-cli.md', 'docs/doc-tests.md']));
  });

  it('the runbook’s triage query, the first thing pasted in an incident, is run', () => {
    const [triage] = fencedBlocks(readDoc('docs/runbook.md'));
    expect(triage!.body).toContain('waitingOn');
    expect(markOf(triage!)).toEqual({ kind: 'run' });
  });

  it('each block of a runnable language says run=demo, run-by=<file> or norun="<reason>"; run-by files exist and name the page', () => {
    const problems: string[] = [];
    for (const page of PAGES) {
      for (const block of fencedBlocks(readDoc(page))) {
        const mark = markOf(block);
        const where = `${page}:${block.line} (${block.lang})`;
        if (mark.kind === 'none' && RUNNABLE.has(block.lang)) problems.push(`${where}: unmarked`);
        if (mark.kind === 'norun' && mark.reason.length < 10) problems.push(`${where}: norun without a reason`);
        if (mark.kind === 'run' && !['graphql', ...SHELL].includes(block.lang)) problems.push(`${where}: run=demo runs graphql and shell blocks only`);
        if (mark.kind === 'run-by') {
          if (!existsSync(join(PROJECT_ROOT, mark.file))) problems.push(`${where}: run-by ${mark.file} does not exist`);
          else if (!readFileSync(join(PROJECT_ROOT, mark.file), 'utf8').includes(page.replace(/^docs\//, '')))
            problems.push(`${where}: ${mark.file} does not name ${page}`);
        }
        if (mark.kind === 'run' && SHELL.has(block.lang))
          for (const { command } of commandsOf(block.body))
            if (!/^(lockkeeper|curl)\s/.test(command)) problems.push(`${where}: run=demo shell blocks run lockkeeper and curl only: ${command}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the mark is checked: an unmarked graphql or lockkeeper block, and a reasonless norun, are found', () => {
    const blocks = fencedBlocks('```graphql\n{ nodes { totalCount } }\n```\n\n```sh norun=""\nlockkeeper nodes\n```\n\n```json\n{}\n```\n');
    expect(blocks.map((b) => [b.lang, markOf(b).kind])).toEqual([
      ['graphql', 'none'],
      ['sh', 'norun'],
      ['json', 'none'],
    ]);
  });

  it('the normalisation rules and the … wildcard', () => {
    const origin = 'http://127.0.0.1:39123';
    expect(
      normalise(`op 0b8e0c7e-5e0e-4c55-9d1e-2f3b4c5d6e7f at 2026-12-07T16:04:12.123Z, eta 1m05s (in 42s), ${origin}/graphql lk_${'a'.repeat(43)}`, origin),
    ).toBe('op <id> at <time>, eta <duration> (in <duration>), http://127.0.0.1:4000/graphql lk_<token>');
    expect(matches('a\nb\nc\nd', 'a\n…\nd')).toBe(true);
    expect(matches('node 1: ACTIVE (since x)', 'node 1: … (since x)')).toBe(true);
    expect(matches('node 1: ACTIVE', 'node 2: …')).toBe(false);
    expect(matches('a\nb', 'a')).toBe(false);
  });
});

for (const page of PAGES) {
  const blocks = fencedBlocks(readDoc(page));
  const runnable = blocks
    .map((block, i) => ({ block, output: blocks[i + 1] && markOf(blocks[i + 1]!).kind === 'output' ? blocks[i + 1]! : null }))
    .filter(({ block }) => markOf(block).kind === 'run');
  if (!runnable.length) continue;

  describe(`${page}: the run=demo blocks against a demo gateway, in order (issue 30, point 1)`, () => {
    let dir: string;
    let s: Started;
    let origin: string;

    async function gql(query: string): Promise<{ data?: any; errors?: unknown[] }> {
      const res = await fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ query }),
      });
      return (await res.json()) as { data?: any; errors?: unknown[] };
    }

    /** Nothing runs and every node is ACTIVE (back from a restart): what a reader waits for before the next block. */
    async function settle(after: string) {
      await until(
        async () => {
          const { data } = await gql('{ operations(states: [RUNNING, CANCELLING]) { totalCount } nodes { edges { node { availability } } } }');
          return data.operations.totalCount === 0 && data.nodes.edges.every((e: any) => e.node.availability === 'ACTIVE') ? true : undefined;
        },
        `the demo to settle after: ${after.slice(0, 80)}`,
        120_000,
        50,
      );
    }

    async function firstEvent(query: string): Promise<{ errors?: readonly unknown[]; data?: unknown }> {
      const client = createClient({
        url: s.url.replace(/^http/, 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${TOKEN}` },
        retryAttempts: 0,
      });
      let timer: NodeJS.Timeout | undefined;
      try {
        return await new Promise((resolve, reject) => {
          // A hang is the failure here, not a timing: the demo delivers a first event at once or never.
          timer = setTimeout(() => reject(new Error(`${query.slice(0, 60)}: no event within 30 s`)), 30_000);
          client.subscribe({ query }, { next: resolve, error: reject, complete: () => reject(new Error(`${query.slice(0, 60)}: completed without an event`)) });
        });
      } finally {
        clearTimeout(timer);
        await client.dispose();
      }
    }

    /** One command line through bash, `lockkeeper` being the real binary on PATH (as `npm link` puts it). */
    function shell(command: string) {
      return new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn('bash', ['-c', command.replaceAll('http://127.0.0.1:4000', origin)], {
          cwd: dir,
          stdio: ['ignore', 'pipe', 'pipe'],
          env: {
            ...process.env,
            PATH: `${join(dir, 'bin')}:${process.env.PATH}`,
            LOCKKEEPER_URL: s.url,
            LOCKKEEPER_TOKEN: TOKEN,
            LOCKKEEPER_ADMIN_TOKEN: TOKEN,
            NO_COLOR: '1',
          },
        });
        let output = '';
        child.stdout.on('data', (d: Buffer) => (output += d.toString()));
        child.stderr.on('data', (d: Buffer) => (output += d.toString()));
        child.on('exit', (code) => resolve({ code, output }));
      });
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lk-doc-blocks-'));
      mkdirSync(join(dir, 'bin'));
      writeFileSync(join(dir, 'bin', 'lockkeeper'), `#!/bin/sh\nexec '${process.execPath}' '${join(PROJECT_ROOT, 'bin/lockkeeper.js')}' "$@"\n`);
      chmodSync(join(dir, 'bin', 'lockkeeper'), 0o755);
      // The default demo (no config), with authentication on so that the token examples run too.
      s = await startLockkeeper({ log: createLogger('silent'), env: { LOCKKEEPER_ADMIN_TOKEN: TOKEN }, cwd: dir, port: 0 });
      origin = new URL(s.url).origin;
      // Quicker than the demo's visible latencies; nothing else differs.
      const fast = await gql('mutation { simulation { setLatencies(input: { migrate: 60, stop: 30, start: 30, cutOver: 20, cordon: 5 }) { __typename } } }');
      expect(fast.errors).toBeUndefined();
    }, 60_000);

    afterAll(async () => {
      await s?.app.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('each answers as the text says', async () => {
      let lastOperation: string | null = null;
      for (const { block, output } of runnable) {
        const where = `${page}:${block.line}`;
        if (block.lang === 'graphql') {
          let last: unknown;
          for (const example of operationsOf(block.body)) {
            const source = lastOperation ? example.source.replaceAll('"…"', `"${lastOperation}"`) : example.source;
            if (example.operation.operation === 'subscription') {
              expect(source, `${where}: a subscription needs an operation started before it`).not.toContain('"…"');
              const event = await firstEvent(source);
              expect(event.errors, `${where}: ${source}`).toBeUndefined();
              expect(event.data, `${where}: ${source}`).toBeTruthy();
              last = event.data;
              continue;
            }
            const result = await gql(source);
            expect(result.errors, `${where}: ${source}`).toBeUndefined();
            const { types, operations } = walk(result.data);
            if (example.expect) expect(types, `${where}: ${source}`).toContain(example.expect);
            else
              expect(
                types.filter((t) => t.endsWith('Error')),
                `${where}: ${source}`,
              ).toEqual([]);
            last = result.data;
            if (example.operation.operation === 'mutation') {
              lastOperation = operations.at(-1) ?? lastOperation;
              await settle(source);
            }
          }
          if (output) {
            const actual = normalise(JSON.stringify(last, null, 2), origin);
            expect(matches(actual, normalise(output.body, origin)), `${where}: the answer no longer matches the text:\n${actual}`).toBe(true);
          }
          continue;
        }
        const commands = commandsOf(block.body);
        const outputs: string[] = [];
        for (const { command, shown } of commands) {
          const { code, output: printed } = await shell(command);
          expect(code, `${where}: ${command}\n${printed}`).toBe(expectedExit(command));
          const actual = normalise(printed, origin);
          if (shown !== null)
            expect(matches(actual, normalise(shown, origin)), `${where}: ${command} no longer prints what the text shows:\n${actual}`).toBe(true);
          outputs.push(actual);
          lastOperation = /\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/.exec(printed)?.[1] ?? lastOperation;
          await settle(command);
        }
        if (output) {
          const actual = outputs.join('\n');
          expect(matches(actual, normalise(output.body, origin)), `${where}: the output no longer matches the text:\n${actual}`).toBe(true);
        }
      }
    }, 300_000);
  });
}
