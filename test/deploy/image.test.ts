/**
 * Issue 32: deploy/check-image.sh builds the image with podman — no daemon, no registry, no
 * RUN step — from the Containerfile, on the Debian base deploy/debian-base.sh makes (made
 * once, about 3 minutes, then reused), starts its entrypoint from its root filesystem as its
 * USER, and checks what it holds. And it fails when a RUN step, or a dependency the allow-list
 * does not state, or a dev dependency slips into the image.
 *
 * Skipped, with a notice, only where podman is not installed at all; .ci/run installs it.
 * One image is built (under a tag of its own, removed in afterAll); the failing cases check it
 * again with a bad allow-list or lockfile rather than building more images.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';

const havePodman = spawnSync('podman', ['--version']).status === 0;
if (!havePodman) console.warn('test/deploy/image.test.ts: SKIPPED: podman is not installed (apt-get install podman mmdebstrap; .ci/run installs them)');

const CHECK = join(PROJECT_ROOT, 'deploy/check-image.sh');
/** The build and the base (when missing) take minutes on a loaded two-core machine. */
const BUILD_TIMEOUT = 20 * 60_000;

function checkImage(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(CHECK, args, { cwd: PROJECT_ROOT, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-image-test-'));
let built: string | undefined;
afterAll(() => {
  if (built) spawnSync('podman', ['rmi', '-f', built]);
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!havePodman)('deploy/check-image.sh', () => {
  it(
    'refuses a Containerfile with a RUN step (it cannot run here) before building anything',
    async () => {
      const containerfile = readFileSync(join(PROJECT_ROOT, 'Containerfile'), 'utf8');
      const bad = join(dir, 'Containerfile.run');
      writeFileSync(bad, containerfile.replace(/^USER /m, 'RUN mkdir -p /var/lib/lockkeeper\nUSER '));
      const run = await checkImage(['--containerfile', bad]);
      expect(run.code, run.out).not.toBe(0);
      expect(run.out).toContain('cannot run without a container daemon here: RUN');
      expect(run.out).not.toContain('built localhost/lockkeeper-check:');
      // (Without the check, the staging and then podman's RUN would fail minutes later.)
    },
    BUILD_TIMEOUT,
  );

  it(
    'builds the image under a tag of its own, and its entrypoint answers /healthz, GraphQL and lockkeeper --help as its USER',
    async () => {
      const run = await checkImage(['--keep']);
      expect(run.code, run.out).toBe(0);
      const ok = /^check-image: ok: (localhost\/lockkeeper-check:\d+-\d+-\d+) (\d+) MB, first answer after (\d+) ms$/m.exec(run.out);
      expect(ok, run.out).not.toBeNull();
      built = ok![1]!;
      expect(spawnSync('podman', ['image', 'exists', built]).status).toBe(0);
      const config = JSON.parse(spawnSync('podman', ['image', 'inspect', '--format', '{{json .Config}}', built], { encoding: 'utf8' }).stdout);
      expect(config.User).toBe('10001:10001');
      expect(config.Cmd).toEqual(['node', '--optimize-for-size', 'dist/src/cli.js', 'serve']);
      // The checks ran to the end: the image was unmounted afterwards.
      expect(spawnSync('podman', ['image', 'mount'], { encoding: 'utf8' }).stdout).not.toContain(built);
    },
    BUILD_TIMEOUT,
  );

  it('fails when the image holds a dependency the allow-list does not state, and leaves an image it did not build', async () => {
    expect(built, 'the image of the test above').toBeDefined();
    const allowList = join(dir, 'allow-list.txt');
    writeFileSync(allowList, readFileSync(join(PROJECT_ROOT, 'deploy/image-dependencies.txt'), 'utf8').replace(/^pino\n/m, ''));
    const run = await checkImage(['--image', built!, '--allow-list', allowList]);
    expect(run.code, run.out).not.toBe(0);
    expect(run.out).toContain('dependency not on the allow-list');
    expect(run.out).toMatch(/allow-list \([^)]*\): pino$/m);
    expect(spawnSync('podman', ['image', 'exists', built!]).status).toBe(0);
  }, 120_000);

  it('fails when a package of the image is a dev dependency of the lockfile', async () => {
    expect(built, 'the image of the test above').toBeDefined();
    const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8'));
    lock.packages['node_modules/pino'].dev = true;
    const lockfile = join(dir, 'package-lock.json');
    writeFileSync(lockfile, JSON.stringify(lock));
    const run = await checkImage(['--image', built!, '--lockfile', lockfile]);
    expect(run.code, run.out).not.toBe(0);
    expect(run.out).toContain('dev dependency in the image: node_modules/pino');
  }, 120_000);
});
