import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { COMPILED, projectPath } from '../project-root.ts';
import type { RehearsalSample } from '../domain/rehearsal/types.ts';
import type { RehearsalRequest, RehearsalWorkerMessage } from './request.ts';

/** rehearsal/worker.ts, or its compiled build (scripts/build-server.mjs): loaded by URL, never imported (the layering). */
const workerUrl = () => pathToFileURL(projectPath(COMPILED ? 'dist/rehearsal/worker.js' : 'rehearsal/worker.ts'));

/**
 * The TypeScript worker (tests, `tsx`): Node 20 does not apply `--import tsx` of a worker's
 * `execArgv` to its entry, so a small module registers tsx's hooks in the thread first, then
 * imports the worker.
 */
function tsxEntry(): URL {
  const code = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register(); await import(${JSON.stringify(workerUrl().href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

export interface RunInWorkerOptions {
  onProgress?: (done: number, total: number) => void;
  /** Aborting terminates the worker; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Runs a rehearsal's samples in a worker thread, so that the gateway keeps answering while
 * the engines run in virtual time. The TypeScript worker (tests, `tsx`) needs tsx's loader.
 * Rejects with the worker's error (a refused rehearsal: `RehearsalRefusedError: …`).
 */
export function runRehearsalInWorker(request: RehearsalRequest, options: RunInWorkerOptions = {}): Promise<RehearsalSample[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(COMPILED ? workerUrl() : tsxEntry(), { workerData: request });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      fn();
      void worker.terminate();
    };
    const onAbort = () => finish(() => reject(options.signal?.reason ?? new Error('rehearsal aborted')));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: RehearsalWorkerMessage) => {
      if (m.type === 'progress') options.onProgress?.(m.done, m.total);
      else if (m.type === 'done') finish(() => resolve(m.samples));
      else finish(() => reject(new Error(m.message)));
    });
    worker.on('error', (e) => finish(() => reject(e)));
    worker.on('exit', (code) => finish(() => reject(new Error(`the rehearsal worker exited (code ${code}) without an answer`))));
  });
}
