/**
 * Running an image's own entrypoint from its root filesystem, without a container runtime
 * that could start it here (DESIGN.md §5): `podman image mount` gives the read-only root
 * filesystem; a private mount namespace (`unshare -m`) binds a writable folder over the
 * database directory (as the Deployment's volume is) and mounts /proc; `chroot --userspec`
 * runs the command as the image's USER, in its WORKDIR, with its ENV.
 * Used by deploy/image-checks.ts (deploy/check-image.sh) and the image benchmark.
 */
import { chownSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, type Launched } from '../bench/launch.ts';

/** The part of `podman image inspect`'s Config that says how the image runs. */
export interface ImageConfig {
  User?: string;
  Cmd?: string[];
  WorkingDir?: string;
  Env?: string[];
}

export class ImageRunner {
  readonly env: Record<string, string>;
  /** The directory of LOCKKEEPER_DATABASE_URL's file, where the volume goes. */
  readonly dataDir: string | undefined;
  readonly uid: number;
  readonly gid: number;

  constructor(
    readonly root: string,
    readonly config: ImageConfig,
  ) {
    this.env = Object.fromEntries((config.Env ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    this.dataDir = /^file:(\/.*)\/[^/]+$/.exec(this.env.LOCKKEEPER_DATABASE_URL ?? '')?.[1];
    [this.uid, this.gid] = (config.User ?? '').split(':').map(Number) as [number, number];
  }

  /** A fresh folder owned by the image's user, to bind over the database directory. */
  newVolume(): string {
    const volume = mkdtempSync(join(tmpdir(), 'lockkeeper-image-volume-'));
    chownSync(volume, this.uid, this.gid);
    return volume;
  }

  /** `/usr/bin/unshare`'s arguments that run `command` in the image with `volume` as its database directory. */
  args(volume: string, command: string[]): string[] {
    return [
      '-m',
      '--',
      '/bin/sh',
      '-c',
      'mount --bind "$1" "$2$3" && mount -t proc proc "$2/proc" && root=$2 userspec=$4 workdir=$5 && shift 5 && exec chroot --userspec="$userspec" "$root" /usr/bin/env -C "$workdir" "$@"',
      'sh',
      volume,
      this.root,
      this.dataDir!,
      this.config.User!,
      this.config.WorkingDir || '/',
      ...command,
    ];
  }

  /** The image's CMD with its ENV (and `env` over it, a free port always), to its first answer to `query`. */
  launch(volume: string, query: string, env: Record<string, string>, headers?: Record<string, string>): Promise<Launched> {
    return launch({
      command: '/usr/bin/unshare',
      args: this.args(volume, this.config.Cmd!),
      inheritEnv: false,
      env: { ...this.env, LOCKKEEPER_HOST: this.env.LOCKKEEPER_HOST ?? '127.0.0.1', ...env },
      ...(headers && { headers }),
      query,
    });
  }
}
