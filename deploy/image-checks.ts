/**
 * deploy/check-image.sh's checks of a built image, from its root filesystem (`podman image
 * mount`) and its configuration (`podman image inspect`):
 *
 * - contents: /app holds only what the gateway runs (package.json, dist/ without source maps,
 *   node_modules, prisma's migration folders): no source, test, bench or script tree; the
 *   image's package.json depends on exactly the allow-list (deploy/image-dependencies.txt);
 *   every package in its node_modules is a production package of package-lock.json (not
 *   dev, not optional);
 * - the entrypoint: the image's CMD, in its WORKDIR, with its ENV, started by
 *   `chroot --userspec=<USER>` on the read-only root filesystem (its database directory a
 *   fresh writable folder, as the Deployment's volume is), runs as that user, answers
 *   /healthz and a GraphQL query beyond loopback with the admin token, and stops on SIGTERM;
 * - the compiled CLI on the image's PATH answers `lockkeeper --help`, and every compiled plugin
 *   loads with the image's packages.
 *
 *   tsx deploy/image-checks.ts ROOT CONFIG_JSON ALLOW_LIST LOCKFILE
 *
 * Prints `image-checks: first answer after N ms` and exits 0, or lists every failure and exits 1.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ImageRunner, type ImageConfig } from './image-run.ts';

const [root, configJson, allowListFile, lockfile] = process.argv.slice(2);
if (!root || !configJson || !allowListFile || !lockfile) {
  console.error('usage: tsx deploy/image-checks.ts ROOT CONFIG_JSON ALLOW_LIST LOCKFILE');
  process.exit(64);
}
const config = JSON.parse(configJson) as ImageConfig;
const image = new ImageRunner(root, config);
const failures: string[] = [];
const fail = (what: string) => failures.push(what);
const app = join(root, 'app');

// What the gateway runs, and nothing else of the repository.
const sorted = (names: string[]) => [...names].sort();
const expectEntries = (dir: string, wanted: string[]) => {
  const found = sorted(readdirSync(join(app, dir)));
  if (JSON.stringify(found) !== JSON.stringify(sorted(wanted))) fail(`/app/${dir} holds ${found.join(', ')}; expected only ${wanted.join(', ')}`);
};
expectEntries('.', ['dist', 'node_modules', 'package.json', 'prisma']);
expectEntries('prisma', ['migrations', 'migrations-postgresql']);
const walk = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
for (const file of walk(join(app, 'dist'))) if (/\.(ts|tsx|map)$/.test(file)) fail(`source in the image: ${file.slice(root.length)}`);

// The production dependencies: the allow-list, and nothing the lockfile marks dev or optional.
const allowed = readFileSync(allowListFile, 'utf8')
  .split('\n')
  .map((l) => l.replace(/#.*/, '').trim())
  .filter(Boolean);
const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
const declared = Object.keys(pkg.dependencies ?? {});
for (const name of declared) if (!allowed.includes(name)) fail(`dependency not on the allow-list (${allowListFile}): ${name}`);
for (const name of allowed) if (!declared.includes(name)) fail(`allow-listed dependency missing from the image's package.json: ${name}`);
const lock = JSON.parse(readFileSync(lockfile, 'utf8')) as {
  packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean }>;
};
/** Installed package folders, as package-lock.json names them (node_modules/a/node_modules/@s/b). */
const installed = (dir: string, prefix: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
        .flatMap((e) => (e.name.startsWith('@') ? readdirSync(join(dir, e.name)).map((n) => `${e.name}/${n}`) : [e.name]))
        .flatMap((name) => [`${prefix}${name}`, ...installed(join(dir, name, 'node_modules'), `${prefix}${name}/node_modules/`)])
    : [];
const packages = installed(join(app, 'node_modules'), 'node_modules/');
for (const name of allowed) if (!packages.includes(`node_modules/${name}`)) fail(`allow-listed dependency not installed: ${name}`);
for (const path of packages) {
  const entry = lock.packages[path];
  if (!entry) fail(`package not in package-lock.json: ${path}`);
  else if (entry.dev || entry.devOptional) fail(`dev dependency in the image: ${path}`);
  else if (entry.optional) fail(`optional dependency in the image: ${path}`);
}

// The configuration the entrypoint runs with.
const user = config.User ?? '';
if (!/^[1-9]\d*:\d+$/.test(user)) fail(`USER is ${JSON.stringify(user)}: expected numeric, non-root UID:GID`);
if (config.Cmd?.[0] !== 'node') fail(`CMD ${JSON.stringify(config.Cmd)} does not run node`);
const { dataDir, uid, gid } = image;
if (!dataDir || !statSync(join(root, dataDir), { throwIfNoEntry: false })?.isDirectory())
  fail(`the image's database directory (${image.env.LOCKKEEPER_DATABASE_URL}) is not in the image`);

if (failures.length === 0) {
  const volume = image.newVolume();
  const token = 'check-image-admin-token-0123456789';
  try {
    // The image's ENV as it is (LOCKKEEPER_HOST 0.0.0.0: authentication on) but a free port.
    const server = await image.launch(
      volume,
      '{ nodes { totalCount } }',
      { LOCKKEEPER_LOG_LEVEL: 'info', LOCKKEEPER_ADMIN_TOKEN: token },
      { authorization: `Bearer ${token}` },
    );
    const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
    const ids = (field: string) =>
      /^(\S+):\s*(.*)$/m
        .exec(status.split('\n').find((l) => l.startsWith(`${field}:`)) ?? '')?.[2]
        ?.trim()
        .split(/\s+/);
    if (ids('Uid')?.some((id) => id !== String(uid)) || ids('Gid')?.some((id) => id !== String(gid)))
      fail(`the gateway runs as uid ${ids('Uid')?.join(' ')} gid ${ids('Gid')?.join(' ')}, not the image's USER ${user}`);
    if ((ids('Groups') ?? []).filter(Boolean).some((g) => g !== String(gid))) fail(`the gateway keeps supplementary groups ${ids('Groups')!.join(' ')}`);
    if ((server.data as { nodes?: { totalCount?: number } }).nodes?.totalCount !== 4) fail(`GraphQL answered ${JSON.stringify(server.data)}`);
    const health = await fetch(server.url.replace(/\/graphql$/, '/healthz'));
    const healthBody = await health.text();
    if (health.status !== 200 || !/"status":"ok"/.test(healthBody)) fail(`/healthz answered ${health.status} ${healthBody}`);
    const anonymous = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ nodes { totalCount } }' }),
    });
    if (anonymous.status !== 401) fail(`GraphQL without the token answered ${anonymous.status}: the gateway does not listen beyond loopback as the image says`);
    const exit = await server.stop('SIGTERM');
    if (exit.code !== 0 || !/"msg":"shutting down"/.test(server.output())) fail(`SIGTERM: exit ${exit.code ?? exit.signal}\n${server.output()}`);
    if (!existsSync(join(volume, 'lockkeeper.db'))) fail(`no database written to the volume at ${dataDir}`);
    if (failures.length === 0) console.log(`image-checks: first answer after ${server.msToFirstAnswer.toFixed(0)} ms`);

    const help = spawnSync('/usr/bin/unshare', image.args(volume, ['lockkeeper', '--help']), { env: image.env, encoding: 'utf8' });
    // Every plugin loads with the image's packages (the demo above needs none of them).
    const plugins = readdirSync(join(app, 'dist/plugins')).map((name) => `/app/dist/plugins/${name}/index.js`);
    const load = spawnSync(
      '/usr/bin/unshare',
      image.args(volume, ['node', '--input-type=module', '-e', `for (const p of ${JSON.stringify(plugins)}) await import(p);`]),
      {
        env: image.env,
        encoding: 'utf8',
      },
    );
    if (load.status !== 0 || plugins.length === 0) fail(`the plugins (${plugins.join(', ')}) do not load in the image: ${load.stderr}`);
    if (help.status !== 0 || !help.stdout.startsWith('usage: lockkeeper')) fail(`lockkeeper --help exited ${help.status}: ${help.stdout}${help.stderr}`);
  } catch (e) {
    fail(`the entrypoint did not answer: ${(e as Error).message}`);
  } finally {
    rmSync(volume, { recursive: true, force: true });
  }
}

if (failures.length) {
  for (const f of failures) console.error(`image-checks: ${f}`);
  process.exit(1);
}
