import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration';
import { Service } from 'kubernetes-models/v1/Service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSION_PATH, AdmissionWebhook } from '../../src/http/admission-webhook.ts';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper } from '../../src/start.ts';
import { makeSelfSignedCert } from '../support/self-signed-cert.ts';
import { Writable } from 'node:stream';
import { pino } from 'pino';

/** k8s:scenario-7 and k8s:A1–A5 (k8s:A2 the denial, k8s:A3 the listener, k8s:A4 the answer) over real HTTPS, with a certificate made for the test. */
const dir = mkdtempSync(join(tmpdir(), 'lk-webhook-'));
let webhook: AdmissionWebhook;
let port = 0;
let ca: Buffer;

beforeAll(async () => {
  makeSelfSignedCert(dir, {
    commonName: 'lockkeeper-webhook.lockkeeper.svc',
    subjectAltName: 'IP:127.0.0.1,DNS:lockkeeper-webhook.lockkeeper.svc',
    keyFile: 'tls.key',
    certFile: 'tls.crt',
  });
  ca = readFileSync(join(dir, 'tls.crt'));
  webhook = new AdmissionWebhook({ host: '127.0.0.1', port: 0, certFile: 'tls.crt', keyFile: 'tls.key' }, dir, createLogger('silent'));
  port = (await webhook.listen(0, '127.0.0.1')).port;
});
afterAll(async () => {
  await webhook?.close();
});

/** POST over TLS, verifying the server against the test CA, as the API server does with caBundle. */
function post(body: string, path = ADMISSION_PATH, method = 'POST'): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, ca, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const LABEL = 'harvesterhci.io/maintain-mode-strategy';
const vm = (label?: string) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'vm', namespace: 'default', labels: label === undefined ? {} : { [LABEL]: label } },
});
let uid = 0;
function review(operation: 'CREATE' | 'UPDATE', object: object, oldObject: object | null = null) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${++uid}`,
      kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachine' },
      resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachines' },
      operation,
      object,
      oldObject,
      dryRun: false,
    },
  };
}
async function admit(r: ReturnType<typeof review>) {
  const res = await post(JSON.stringify(r));
  expect(res.status).toBe(200);
  // k8s:A4: what the API server verifies, on every answer; a validating webhook sends no patch.
  expect(res.body).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.request.uid } });
  expect(res.body.response).not.toHaveProperty('patch');
  expect(res.body.response).not.toHaveProperty('patchType');
  return res.body.response;
}

const DENIAL = (value: string) => ({
  status: 'Failure',
  code: 422,
  reason: 'Invalid',
  message: `invalid maintenance mode strategy: ${value}`,
  details: { causes: [{ type: 'FieldValueInvalid', field: `metadata.labels[${LABEL}]`, message: `invalid maintenance mode strategy: ${value}` }] },
});

describe('k8s:scenario-7: admission of the maintenance-strategy label', () => {
  it('CREATE with `migrate` → denied 422 with the message and field; the four exact values and no label → allowed', async () => {
    expect(await admit(review('CREATE', vm('migrate')))).toEqual({ uid: `uid-${uid}`, allowed: false, status: DENIAL('migrate') });
    for (const ok of ['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown'])
      expect((await admit(review('CREATE', vm(ok)))).allowed).toBe(true);
    const unlabelled = await admit(review('CREATE', vm()));
    expect(unlabelled).toEqual({ uid: `uid-${uid}`, allowed: true });
  });

  it('UPDATE keeping the same invalid value → allowed (grandfathered, with a warning); to another invalid value → denied; label removed → allowed', async () => {
    const kept = await admit(review('UPDATE', vm('migrate'), vm('migrate')));
    expect(kept.allowed).toBe(true);
    expect(kept.warnings).toEqual([`metadata.labels[${LABEL}] keeps the invalid value "migrate" it already had; it is treated as Migrate (vm:V2)`]);
    expect(await admit(review('UPDATE', vm('shutdown'), vm('migrate')))).toMatchObject({ allowed: false, status: DENIAL('shutdown') });
    expect(await admit(review('UPDATE', vm(), vm('migrate')))).toEqual({ uid: `uid-${uid}`, allowed: true });
    expect((await admit(review('UPDATE', vm('Shutdown'), vm('migrate')))).allowed).toBe(true);
  });

  it('bad input: malformed JSON, not v1, no uid → 400 with the reason (never 500); other paths and methods are refused', async () => {
    expect(await post('{not json')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^the body is not JSON/) } });
    const v1beta1 = { ...review('CREATE', vm('x')), apiVersion: 'admission.k8s.io/v1beta1' };
    expect(await post(JSON.stringify(v1beta1))).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('apiVersion must be admission.k8s.io/v1') },
    });
    const noUid = review('CREATE', vm('x'));
    delete (noUid.request as { uid?: string }).uid;
    expect(await post(JSON.stringify(noUid))).toEqual({ status: 400, body: { error: 'request.uid is missing' } });
    expect(await post(JSON.stringify({ kind: 'Pod' }))).toMatchObject({ status: 400 });
    expect((await post('{}', '/other')).status).toBe(404);
    expect((await post('', ADMISSION_PATH, 'GET')).status).toBe(405);
  });

  it('a TLS file missing fails start-up naming the path', () => {
    expect(() => new AdmissionWebhook({ host: '127.0.0.1', port: 0, certFile: 'missing.crt', keyFile: 'tls.key' }, dir, createLogger('silent'))).toThrow(
      `admission webhook: cannot read its TLS certFile ${join(dir, 'missing.crt')}`,
    );
  });
});

describe('k8s:A3: the webhook in start-up (config admissionWebhook)', () => {
  const config = (certFile: string) => {
    const cwd = mkdtempSync(join(tmpdir(), 'lk-webhook-start-'));
    writeFileSync(
      join(cwd, 'lockkeeper.config.json'),
      JSON.stringify({ admissionWebhook: { host: '127.0.0.1', port: 0, certFile, keyFile: join(dir, 'tls.key') } }),
    );
    return cwd;
  };

  it('a TLS file that cannot be read (a directory) fails start-up naming its path, before anything listens', async () => {
    const notAFile = join(dir, 'a-directory');
    mkdirSync(notAFile, { recursive: true });
    await expect(startLockkeeper({ log: createLogger('silent'), env: {}, cwd: config(notAFile), port: 0 })).rejects.toThrow(
      `admission webhook: cannot read its TLS certFile ${notAFile}`,
    );
  });

  it('with its files, start-up listens over HTTPS beside the API and answers reviews', async () => {
    const lines: string[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const started = await startLockkeeper({ log, env: {}, cwd: config(join(dir, 'tls.crt')), port: 0 });
    try {
      const url = /admission webhook listening at (https:\/\/[^"\s]+)/.exec(lines.join(''))?.[1];
      expect(url).toMatch(new RegExp(`^https://127\\.0\\.0\\.1:\\d+${ADMISSION_PATH}$`));
      const saved = port;
      port = Number(new URL(url!).port);
      try {
        expect((await admit(review('CREATE', vm('migrate')))).status).toEqual(DENIAL('migrate'));
      } finally {
        port = saved;
      }
    } finally {
      await started.app.stop();
    }
  });
});

describe('k8s:A5: the shipped ValidatingWebhookConfiguration', () => {
  const docs = loadAllYaml(readFileSync(new URL('../../deploy/admission-webhook.yaml', import.meta.url), 'utf8')) as any[];
  const config = docs.find((d) => d.kind === 'ValidatingWebhookConfiguration');
  const service = docs.find((d) => d.kind === 'Service');

  it("passes kubernetes-models' schemas", () => {
    expect(() => new ValidatingWebhookConfiguration(config).validate()).not.toThrow();
    expect(() => new Service(service).validate()).not.toThrow();
  });

  it('one rule for kubevirt.io/v1 virtualmachines CREATE/UPDATE, the label key required, no side effects, v1 reviews, 10 s, Ignore', () => {
    expect(config.webhooks).toHaveLength(1);
    const [w] = config.webhooks;
    expect(w.rules).toEqual([
      { apiGroups: ['kubevirt.io'], apiVersions: ['v1'], resources: ['virtualmachines'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
    ]);
    expect(w.objectSelector).toEqual({ matchExpressions: [{ key: LABEL, operator: 'Exists' }] });
    expect(w).toMatchObject({ sideEffects: 'None', admissionReviewVersions: ['v1'], timeoutSeconds: 10, failurePolicy: 'Ignore' });
    expect(w.timeoutSeconds).toBeGreaterThanOrEqual(1);
    expect(w.timeoutSeconds).toBeLessThanOrEqual(30);
    expect(w.clientConfig.service).toEqual({ namespace: 'lockkeeper', name: service.metadata.name, path: ADMISSION_PATH, port: 443 });
    expect(w.clientConfig).toHaveProperty('caBundle');
  });
});
