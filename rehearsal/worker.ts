/**
 * The rehearsal's worker thread (issue 33): src/rehearsal/run-in-worker.ts starts it by URL
 * with the RehearsalRequest as `workerData`, so that the engines run in virtual time off the
 * gateway's event loop. It posts progress, then the samples or the error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { RehearsalRequest, RehearsalWorkerMessage } from '../src/rehearsal/request.ts';
import { runSamples } from './run-samples.ts';

const port = parentPort;
if (!port) throw new Error('rehearsal/worker.ts runs in a worker thread (runRehearsalInWorker)');
const post = (message: RehearsalWorkerMessage) => port.postMessage(message);

try {
  const samples = await runSamples(workerData as RehearsalRequest, (done, total) => post({ type: 'progress', done, total }));
  post({ type: 'done', samples });
} catch (error) {
  post({ type: 'error', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
}
