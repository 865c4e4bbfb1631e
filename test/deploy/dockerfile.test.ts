/**
 * Issue 17, point 8: the Dockerfile builds the gateway with package.json's own commands —
 * `npm ci` against the lockfile, `npm run build`, what `npm start` execs — in two stages, on a Node.js
 * that package.json's `engines` accepts, and deploy/deployment.yaml runs the image as built.
 * (Building the image itself needs a Docker daemon and the registry: not part of the suite.)
 */
import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; engines: { node: string } };

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments dropped. */
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

/** The stages, by name, each with its instructions. */
function stages(all: Instruction[]) {
  const out: { from: string; name: string; steps: Instruction[] }[] = [];
  for (const i of all) {
    if (i.op === 'FROM') {
      const [from, as, name] = i.args.split(/\s+/);
      out.push({ from: from!, name: as?.toUpperCase() === 'AS' ? name! : '', steps: [] });
    } else out.at(-1)?.steps.push(i);
  }
  return out;
}

const dockerfile = instructions(read('Dockerfile'));
const [build, runtime, ...more] = stages(dockerfile);
const runs = (stage: { steps: Instruction[] }) => stage.steps.filter((s) => s.op === 'RUN').map((s) => s.args);

describe('Dockerfile', () => {
  it('has two stages: a build and a runtime that copies only the build stage’s result', () => {
    expect(more).toEqual([]);
    expect(build!.name).toBe('build');
    expect(runtime!.name).toBe('runtime');
    expect(runtime!.steps.filter((s) => s.op === 'COPY').map((s) => s.args)).toEqual([expect.stringMatching(/^--from=build\b.* \/app \/app$/)]);
    expect(runs(runtime!).join('\n')).not.toMatch(/npm (ci|install|run)/);
  });

  it('runs package.json’s install, build and start commands', () => {
    const commands = runs(build!);
    // The install is the lockfile's: what `npm ci` installs is what the repository tested.
    expect(commands).toContain('npm ci');
    expect(JSON.parse(read('package-lock.json')).lockfileVersion).toBeGreaterThanOrEqual(2);
    expect(commands).toContain('npm run build');
    for (const c of commands.flatMap((c) => [...c.matchAll(/npm run (\S+)/g)].map((m) => m[1]!))) expect(pkg.scripts, `npm run ${c}`).toHaveProperty(c);
    // The image runs what `npm start` runs, node itself (exec form: node is the container's
    // process and gets SIGTERM), not npm. `npm start` execs scripts/start.mjs, which rebuilds a
    // stale checkout and then imports dist/src/cli.js; the image's build is its own and never
    // stale, so it runs dist/src/cli.js directly with the same flags.
    const cmd = runtime!.steps.filter((s) => s.op === 'CMD');
    expect(pkg.scripts.start).toMatch(/^exec /);
    expect(read('scripts/start.mjs')).toContain("await import('../dist/src/cli.js');");
    expect(cmd.map((c) => JSON.parse(c.args))).toEqual([
      pkg.scripts
        .start!.replace(/^exec /, '')
        .replace('scripts/start.mjs', 'dist/src/cli.js')
        .split(' '),
    ]);
    expect(cmd.map((c) => JSON.parse(c.args))).toEqual([['node', '--optimize-for-size', 'dist/src/cli.js', 'serve']]);
    // What it runs is what `npm run build` makes (scripts/build-server.mjs writes dist/src/cli.js).
    expect(pkg.scripts.build).toContain('scripts/build-server.mjs');
    expect(read('scripts/build-server.mjs')).toMatch(/entryPoints: \[join\(root, 'src', 'cli\.ts'\)[^\n]*\n\s*outdir: out,\n\s*outbase: root,/);
  });

  it('builds on a Node.js that package.json’s engines accept', () => {
    const image = /^ARG NODE_IMAGE=node:(\d+)\.(\d+)/.exec(
      dockerfile
        .map((i) => `${i.op} ${i.args}`)
        .join('\n')
        .match(/^ARG NODE_IMAGE=.*$/m)?.[0] ?? '',
    );
    expect(image).not.toBeNull();
    const [major, minor] = [Number(image![1]), Number(image![2])];
    const engine = /^>=(\d+)\.(\d+)$/.exec(pkg.engines.node)!;
    expect(major > Number(engine[1]) || (major === Number(engine[1]) && minor >= Number(engine[2]))).toBe(true);
    expect(build!.from).toBe('${NODE_IMAGE}');
    expect(runtime!.from).toBe('${NODE_IMAGE}');
  });

  it('runs as a non-root user, listens beyond loopback on the port it exposes, keeps its database on a volume', () => {
    const ops = (op: string) => runtime!.steps.filter((s) => s.op === op).map((s) => s.args);
    expect(ops('USER')).toEqual(['node']);
    expect(ops('EXPOSE')).toEqual(['4000']);
    expect(ops('VOLUME')).toEqual(['/var/lib/lockkeeper']);
    const env = ops('ENV').join(' ');
    expect(env).toContain('LOCKKEEPER_HOST=0.0.0.0');
    expect(env).toContain('LOCKKEEPER_DATABASE_URL=file:/var/lib/lockkeeper/lockkeeper.db');
  });

  it('puts package.json’s `lockkeeper` bin on the PATH, for kubectl exec … lockkeeper token create', () => {
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin.lockkeeper;
    expect(runs(runtime!).join('\n')).toContain(`ln -s /app/${bin} /usr/local/bin/lockkeeper`);
    expect(read('deploy/README.md')).toContain('kubectl -n lockkeeper exec deploy/lockkeeper -- lockkeeper token create');
  });

  it('never copies a checkout’s installed modules, build or demo data into the image', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'data', '.git']));
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
    // The image's USER is a name (node): the pod gives the numeric user that runAsNonRoot needs.
    expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
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
