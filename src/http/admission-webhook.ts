import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { admitStrategyLabel, type StrategyAdmissionRequest } from '../domain/vm/admission.ts';
import type { Logger } from '../logger.ts';

/** k8s:A3: where the API server posts AdmissionReviews for VirtualMachines. */
export const ADMISSION_PATH = '/admission/v1/vm-maintenance-strategy';
const ADMISSION_API = 'admission.k8s.io/v1';
/** An AdmissionReview of a VM is small; the API server's own limit for a request body is 3 MiB. */
const MAX_BODY = 3 * 1024 * 1024;

export interface AdmissionWebhookSettings {
  host: string;
  port: number;
  certFile: string;
  keyFile: string;
}

class BadReview extends Error {}

function readPem(what: string, file: string, dir: string): Buffer {
  const path = isAbsolute(file) ? file : resolve(dir, file);
  try {
    return readFileSync(path);
  } catch (e) {
    throw new Error(`admission webhook: cannot read its TLS ${what} ${path}: ${(e as Error).message}`);
  }
}

/** k8s:A3/A4: the request part a webhook may read; a review that is not v1 or has no uid is refused with the reason. */
function parseReview(body: string): { uid: string; request: StrategyAdmissionRequest & { dryRun: boolean } } {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch (e) {
    throw new BadReview(`the body is not JSON: ${(e as Error).message}`);
  }
  const r = review as { apiVersion?: unknown; kind?: unknown; request?: Record<string, unknown> } | null;
  if (!r || typeof r !== 'object') throw new BadReview('the body is not an AdmissionReview object');
  if (r.kind !== 'AdmissionReview') throw new BadReview(`kind must be AdmissionReview, not ${JSON.stringify(r.kind)}`);
  if (r.apiVersion !== ADMISSION_API)
    throw new BadReview(`apiVersion must be ${ADMISSION_API} (admissionReviewVersions: [v1]), not ${JSON.stringify(r.apiVersion)}`);
  const req = r.request;
  if (!req || typeof req !== 'object') throw new BadReview('request is missing');
  if (typeof req['uid'] !== 'string' || !req['uid']) throw new BadReview('request.uid is missing');
  if (typeof req['operation'] !== 'string') throw new BadReview('request.operation is missing');
  return {
    uid: req['uid'],
    request: {
      operation: req['operation'],
      object: (req['object'] as StrategyAdmissionRequest['object']) ?? null,
      oldObject: (req['oldObject'] as StrategyAdmissionRequest['oldObject']) ?? null,
      dryRun: req['dryRun'] === true,
    },
  };
}

async function bodyOf(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * k8s:A3–A5: the validating webhook for the maintenance-strategy label, on its own HTTPS
 * listener (the API server only calls webhooks over TLS). Answers AdmissionReview v1 with
 * the request's uid; denials carry Harvester's 422 status; never a patch. Bad reviews get
 * 400 with the reason, never 500. The cert and key are read at start: a file missing or
 * unreadable fails start-up naming its path.
 */
export class AdmissionWebhook {
  private readonly server: Server;

  constructor(
    settings: AdmissionWebhookSettings,
    configDir: string,
    private readonly log: Logger,
  ) {
    const cert = readPem('certFile', settings.certFile, configDir);
    const key = readPem('keyFile', settings.keyFile, configDir);
    this.server = createServer({ cert, key }, (req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        this.log.error({ err: e }, 'admission webhook: unexpected failure');
        if (!res.headersSent) send(res, 500, { error: 'internal error' });
      });
    });
  }

  async listen(port: number, host: string): Promise<{ port: number; url: string }> {
    await new Promise<void>((ok, fail) => {
      this.server.once('error', fail);
      this.server.listen(port, host, () => {
        this.server.off('error', fail);
        ok();
      });
    });
    const address = this.server.address() as AddressInfo;
    const url = `https://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}${ADMISSION_PATH}`;
    this.log.info({ url }, `admission webhook listening at ${url}`);
    return { port: address.port, url };
  }

  close(): Promise<void> {
    return new Promise((ok) => {
      this.server.close(() => ok());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'https://webhook').pathname;
    if (path !== ADMISSION_PATH) return send(res, 404, { error: `not found: only POST ${ADMISSION_PATH}` });
    if (req.method !== 'POST') return send(res, 405, { error: 'only POST' });
    const body = await bodyOf(req);
    if (body === null) return send(res, 413, { error: `the body is larger than ${MAX_BODY} bytes` });
    let review: ReturnType<typeof parseReview>;
    try {
      review = parseReview(body);
    } catch (e) {
      if (e instanceof BadReview) return send(res, 400, { error: e.message });
      throw e;
    }
    const decision = admitStrategyLabel(review.request);
    if (!decision.allowed) this.log.info({ uid: review.uid, dryRun: review.request.dryRun }, `admission: denied: ${decision.status.message}`);
    else if (decision.warning) this.log.info({ uid: review.uid }, `admission: allowed: ${decision.warning}`);
    send(res, 200, {
      apiVersion: ADMISSION_API,
      kind: 'AdmissionReview',
      response: {
        uid: review.uid,
        allowed: decision.allowed,
        ...(!decision.allowed && { status: decision.status }),
        ...(decision.allowed && decision.warning && { warnings: [decision.warning] }),
      },
    });
  }
}
