/**
 * Issue 17 point 8 and issue 32: the Containerfile runs the gateway the way `npm start` does,
 * with steps that all run where there is no container daemon (no RUN: deploy/check-image.sh
 * builds and runs it, test/deploy/image.test.ts); the application is built on the host by
 * deploy/build-image.sh with package.json's own commands; deploy/'s manifests run the image as
 * built, under the name the READMEs tell users to build and push.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; scripts: Record<string, string>; engines: { node: string }; bin: Record<string, string> };

interface Instruction {
  op: string;
  args: string;
}

/** Containerfile instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Instruction[] {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

const containerfile = instructions(read('Containerfile'));
const ops = (op: string) => containerfile.filter((s) => s.op === op).map((s) => s.args);
const buildScript = read('deploy/build-image.sh');

describe('Containerfile', () => {
  it('has one stage, FROM the BASE build argument, and only steps that run without a daemon', () => {
    expect(ops('FROM')).toEqual(['${BASE}']);
    expect([...new Set(containerfile.map((s) => s.op))].sort()).toEqual(['ARG', 'CMD', 'COPY', 'ENV', 'EXPOSE', 'FROM', 'USER', 'WORKDIR']);
    // Every COPY gives numeric ids: the Debian base has no named user.
    for (const copy of ops('COPY')) expect(copy).toMatch(/^--chown=\d+:\d+ /);
  });

  it('defaults to a registry’s Node.js 20 slim image, a major that package.json’s engines accept', () => {
    const base = /^BASE=docker\.io\/library\/node:(\d+)-bookworm-slim$/.exec(ops('ARG')[0] ?? '');
    expect(base, ops('ARG').join()).not.toBeNull();
    expect(Number(base![1])).toBe(Number(/^>=(\d+)\./.exec(pkg.engines.node)![1]));
  });

  it('copies the staged application, CLI link and database directory, and nothing from the checkout', () => {
    expect(ops('COPY')).toEqual(['--chown=0:0 app /app', '--chown=0:0 bin/ /usr/local/bin/', '--chown=10001:10001 data /var/lib/lockkeeper']);
    // deploy/build-image.sh stages them: the app from package.json's commands, then the link.
    expect(buildScript).toContain('npm ci --prefer-offline');
    expect(buildScript).toContain('npm run build --silent');
    expect(buildScript).toContain('npm run generate --silent');
    expect(buildScript).toContain('npm prune --omit=dev --omit=optional');
    for (const c of ['build', 'generate']) expect(pkg.scripts).toHaveProperty(c);
    expect(buildScript).toContain('mv "$stage/build/package.json" "$stage/build/dist" "$stage/build/node_modules" "$ctx/app/"');
    // `kubectl exec deploy/lockkeeper -- lockkeeper token create …`: the compiled CLI on the PATH
    // (package.json's bin, bin/lockkeeper.js, checks the build is fresh first, which needs the sources
    // the image lacks): a two-line script running the compiled CLI.
    expect(pkg.bin.lockkeeper).toBe('bin/lockkeeper.js');
    expect(buildScript).toContain(`printf '#!/bin/sh\\nexec node /app/dist/src/cli.js "$@"\\n' >"$ctx/bin/lockkeeper"`);
    expect(read('deploy/README.md')).toContain('kubectl -n lockkeeper exec deploy/lockkeeper -- lockkeeper token create');
  });

  it('runs package.json’s start command, node itself as the process', () => {
    // `npm start` execs scripts/start.mjs, which rebuilds a stale checkout and then imports
    // dist/src/cli.js; the image's build is its own and never stale, so it runs
    // dist/src/cli.js directly with the same flags (exec form: node gets SIGTERM).
    const cmd = ops('CMD').map((c) => JSON.parse(c));
    expect(pkg.scripts.start).toMatch(/^exec /);
    expect(read('scripts/start.mjs')).toContain("await import('../dist/src/cli.js');");
    expect(cmd).toEqual([
      pkg.scripts
        .start!.replace(/^exec /, '')
        .replace('scripts/start.mjs', 'dist/src/cli.js')
        .split(' '),
    ]);
    expect(cmd).toEqual([['node', '--optimize-for-size', 'dist/src/cli.js', 'serve']]);
    expect(ops('WORKDIR')).toEqual(['/app']);
  });

  it('runs as the numeric non-root user the manifests give, listens beyond loopback on the port it exposes, keeps its database in the volume’s directory', () => {
    expect(ops('USER')).toEqual(['10001:10001']);
    expect(ops('EXPOSE')).toEqual(['4000']);
    const env = ops('ENV').join(' ');
    expect(env).toContain('LOCKKEEPER_HOST=0.0.0.0');
    expect(env).toContain('LOCKKEEPER_DATABASE_URL=file:/var/lib/lockkeeper/lockkeeper.db');
    expect(env).toContain('HOME=/var/lib/lockkeeper');
  });
});

/** Every Deployment in deploy/, with its file. */
const deployments = readdirSync(new URL('../../deploy/', import.meta.url))
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) => (loadAllYaml(read(`deploy/${file}`)) as { kind: string; spec?: any }[]).filter((d) => d?.kind === 'Deployment').map((d) => ({ file, d })));

describe('deploy/ manifests run the image as the READMEs build it', () => {
  it('name the image the READMEs build and push, at package.json’s version, and never override its command', () => {
    const image = `registry.example.invalid/lockkeeper:${pkg.version}`;
    expect(deployments.map((x) => x.file).sort()).toEqual(['deployment.yaml', 'replicas.yaml']);
    for (const { file, d } of deployments) {
      const [container] = d.spec.template.spec.containers;
      expect(container.image, file).toBe(image);
      expect(container.command, file).toBeUndefined();
      expect(container.args, file).toBeUndefined();
      // The image's USER: runAsNonRoot can check it because it is numeric.
      expect(d.spec.template.spec.securityContext, file).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    }
    for (const readme of ['docs/ha-and-deployment.md', 'deploy/README.md']) {
      const text = read(readme);
      expect(text, readme).toContain(`deploy/build-image.sh -t ${image}`);
      expect(text, readme).toMatch(new RegExp(`(podman|docker) push ${image.replace(/\./g, '\\.')}(\\s|$)`));
    }
    expect(read('deploy/README.md')).toContain('deploy/build-image.sh -t localhost/lockkeeper:');
  });
});

describe('deploy/deployment.yaml runs the image as built', () => {
  const docs = loadAllYaml(read('deploy/deployment.yaml')) as { kind: string; spec?: any }[];
  const deployment = docs.find((d) => d.kind === 'Deployment')!;
  const container = deployment.spec.template.spec.containers[0];

  it('does not override the image’s command (node dist/src/cli.js serve), and tells the gateway its node', () => {
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(env.LOCKKEEPER_NODE_NAME.valueFrom.fieldRef.fieldPath).toBe('spec.nodeName');
    expect(env.LOCKKEEPER_ADMIN_TOKEN.valueFrom.secretKeyRef).toEqual({ name: 'lockkeeper-admin', key: 'token' });
  });

  it('has a Service for the API', () => {
    const service = docs.find((d) => d.kind === 'Service' && (d as any).metadata.name === 'lockkeeper')!;
    expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'http', port: 4000, targetPort: 'http' })]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });
});

describe('deploy/pageserver-upcall.yaml', () => {
  const docs = loadAllYaml(read('deploy/pageserver-upcall.yaml')) as any[];

  it('binds the upcall listener beyond loopback on a fixed port, with a config Lockkeeper and the plugin accept, behind a Service', async () => {
    const { configSchema } = await import('../../src/config/schema.ts');
    const { pageserverOptionsSchema } = await import('../../plugins/pageserver/options.ts');
    const config = configSchema.parse(JSON.parse(docs.find((d) => d.kind === 'ConfigMap').data['lockkeeper.json']));
    const options = pageserverOptionsSchema.parse(config.plugins[0]!.options);
    expect(options.upcall).toMatchObject({ host: '0.0.0.0', port: 4001 });
    const service = docs.find((d) => d.kind === 'Service');
    expect(service.metadata.name).toBe('lockkeeper-upcall');
    expect(service.spec.ports).toEqual([{ name: 'upcall', port: 4001, targetPort: options.upcall.port }]);
    const deployment = (loadAllYaml(read('deploy/deployment.yaml')) as any[]).find((d) => d.kind === 'Deployment');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });
});
