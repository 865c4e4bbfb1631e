/**
 * The container image (issue 32 point 3): its size, and its start-up from launch to the first
 * answered GraphQL query with the image's own CMD, ENV and USER, run from its root filesystem
 * (deploy/image-run.ts: `podman image mount`, `chroot --userspec`). The image is built as
 * deploy/check-image.sh builds it (the Debian base, the checkout's node_modules), under a tag
 * of its own, and removed afterwards. Needs root and podman.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ImageRunner, type ImageConfig } from '../deploy/image-run.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { launch, median, PROJECT_DIR, timeOnce } from './launch.ts';

const RUNS = 5;
const QUERY = '{ nodes { totalCount } }';
const TOKEN = 'bench-image-admin-token-0123456789';

const run = (command: string, args: string[]) =>
  execFileSync(command, args, { cwd: PROJECT_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
const podman = (...args: string[]) => run('podman', args);
const mb = (bytes: number) => (bytes / 1e6).toFixed(0);

export const image: Benchmark = {
  name: 'image',
  title: `The container image: its size, and its CMD launched from its root filesystem (as its USER, with its ENV) to the first answered GraphQL query, first start and then on an existing database (median of ${RUNS})`,
  async run(_options, progress): Promise<BenchReport> {
    const base = run(join(PROJECT_DIR, 'deploy/debian-base.sh'), []);
    run(process.execPath, ['scripts/build-server.mjs', '--if-stale']);
    const tag = `localhost/lockkeeper-bench:${Date.now()}-${process.pid}`;
    const built = performance.now();
    run(join(PROJECT_DIR, 'deploy/build-image.sh'), ['-t', tag, '--base', base, '--checkout-modules']);
    const buildS = (performance.now() - built) / 1000;
    let volume: string | undefined;
    try {
      const size = Number(podman('image', 'inspect', '--format', '{{.Size}}', tag));
      const baseSize = Number(podman('image', 'inspect', '--format', '{{.Size}}', base));
      const config = JSON.parse(podman('image', 'inspect', '--format', '{{json .Config}}', tag)) as ImageConfig;
      const runner = new ImageRunner(podman('image', 'mount', tag), config);
      volume = runner.newVolume();
      const imageNode = execFileSync('/usr/bin/unshare', runner.args(volume, ['node', '--version']), { env: runner.env, encoding: 'utf8' }).trim();
      const env = { LOCKKEEPER_LOG_LEVEL: 'warn', LOCKKEEPER_ADMIN_TOKEN: TOKEN };
      const headers = { authorization: `Bearer ${TOKEN}` };
      const inImage = () => runner.launch(volume!, QUERY, env, headers);
      // The same command on the checkout's build and host node, for comparison within the run.
      const onHost = () =>
        launch({
          command: process.execPath,
          inheritEnv: false,
          args: config.Cmd!.slice(1),
          env: { ...runner.env, ...env, LOCKKEEPER_DATABASE_URL: `file:${join(volume!, 'host.db')}` },
          headers,
          query: QUERY,
        });
      const load = loadavg()[0]!.toFixed(1);
      const first = await timeOnce(inImage);
      progress(`  first start (creates and migrates the database): ${first.toFixed(0)} ms`);
      await timeOnce(onHost);
      const ours: number[] = [];
      const host: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        ours.push(await timeOnce(inImage));
        host.push(await timeOnce(onHost));
        progress(`  run ${i + 1}: image ${ours[i]!.toFixed(0)} ms, checkout ${host[i]!.toFixed(0)} ms`);
      }
      return {
        summary: `image: ${mb(size)} MB (base ${mb(baseSize)} MB), first answer ${median(ours).toFixed(0)} ms (first start ${first.toFixed(0)} ms; the checkout's build ${median(host).toFixed(0)} ms)`,
        markdown: [
          `Built by \`deploy/build-image.sh --base ${base} --checkout-modules\` (the Containerfile on the Debian base of \`deploy/debian-base.sh\`) in ${buildS.toFixed(0)} s (staging and podman build; the base existed).`,
          `Each launch runs the image's CMD \`${config.Cmd!.join(' ')}\` in its WORKDIR as USER ${config.User} with its ENV (listening on 0.0.0.0, so with the admin token) by \`chroot --userspec\` on its read-only root filesystem (\`podman image mount\`), the database directory a bound folder (deploy/image-run.ts); polled with a POST of \`${QUERY}\` every 10 ms from the launch (\`bench/launch.ts\`). The demo cluster, SQLite, log level warn. Load average when the launches began: ${load}. For comparison, the same command on the checkout's build and the host's node (${process.version}), alternating.`,
          '',
          `Sizes as \`podman image inspect --format '{{.Size}}'\` gives them (MB = 10⁶ bytes); the image's Node.js is ${imageNode} (Debian's package).`,
          '',
          `| image size MB | base MB | application MB |`,
          '|---:|---:|---:|',
          `| ${mb(size)} | ${mb(baseSize)} | ${mb(size - baseSize)} |`,
          '',
          `First start (creates and migrates the database, makes the demo cluster's state): ${first.toFixed(0)} ms.`,
          '',
          '| run | image ms | checkout ms |',
          '|---:|---:|---:|',
          ...ours.map((o, i) => `| ${i + 1} | ${o.toFixed(0)} | ${host[i]!.toFixed(0)} |`),
          '',
          `**Image: ${mb(size)} MB; launch to first answer ${median(ours).toFixed(0)} ms (median; first start ${first.toFixed(0)} ms); the checkout's build ${median(host).toFixed(0)} ms.**`,
        ].join('\n'),
      };
    } finally {
      if (volume) rmSync(volume, { recursive: true, force: true });
      podman('image', 'unmount', tag);
      podman('rmi', '-f', tag);
    }
  },
};
