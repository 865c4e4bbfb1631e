#!/usr/bin/env bash
# Builds Lockkeeper's image with podman, without a daemon or a registry, and checks it
# (issue 32): run by .ci/run and test/deploy/image.test.ts. It is what the podman build of
# docs/ha-and-deployment.md runs (that block is marked run-by=deploy/check-image.sh).
#
#   deploy/check-image.sh [--base IMAGE] [--fresh] [--keep] [--image TAG]
#                         [--containerfile FILE] [--allow-list FILE] [--lockfile FILE]
#
# 1. The Containerfile may use only FROM, COPY, ENV, USER, WORKDIR, EXPOSE, CMD (and ARG):
#    a RUN step cannot run on these machines, so none may creep in; every COPY gives a
#    numeric --chown and USER is numeric (the Debian base has no named user).
# 2. deploy/build-image.sh builds it under a tag of its own (localhost/lockkeeper-check:
#    <time>-<pid>-<random>: two suites at once share the machine's image store), on the base
#    deploy/debian-base.sh makes (or --base), staging from the checkout's installed
#    node_modules (--fresh: a fresh `npm ci`, minutes longer).
# 3. deploy/image-checks.ts reads the mounted image (`podman image mount`): only the allow-
#    listed production dependencies, no source or test tree; it starts the image's CMD with
#    `chroot --userspec=<USER>` and sees /healthz, a GraphQL query and `lockkeeper --help` answer.
# 4. The image is removed afterwards (--keep: left, for further checks with --image TAG).
# Last line on success: `check-image: ok: TAG SIZE MB, first answer after N ms`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
containerfile=$root/Containerfile
allow=$root/deploy/image-dependencies.txt
lockfile=$root/package-lock.json
base=
fresh=
keep=
image=
while (($#)); do
  case $1 in
    --base) base=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --keep) keep=1; shift ;;
    --image) image=$2; shift 2 ;;
    --containerfile) containerfile=$(realpath "$2"); shift 2 ;;
    --allow-list) allow=$(realpath "$2"); shift 2 ;;
    --lockfile) lockfile=$(realpath "$2"); shift 2 ;;
    *) echo "check-image: unknown argument $1 (see the header of $0)" >&2; exit 64 ;;
  esac
done
say() { echo "check-image: $*"; }
die() { echo "check-image: $*" >&2; exit 1; }

# 1. The Containerfile's instructions (continuation lines joined, comments dropped).
steps=$(sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$containerfile" | grep -vE '^[[:space:]]*(#|$)' || true)
bad=$(awk '{print toupper($1)}' <<<"$steps" | grep -vxE 'ARG|FROM|COPY|ENV|USER|WORKDIR|EXPOSE|CMD' | sort -u | tr '\n' ' ' || true)
[[ -z $bad ]] || die "$containerfile has steps that cannot run without a container daemon here: $bad(only FROM, COPY, ENV, USER, WORKDIR, EXPOSE, CMD, ARG)"
grep -iE '^COPY ' <<<"$steps" | grep -vqE -- '--chown=[0-9]+:[0-9]+ ' && die "$containerfile: every COPY needs --chown=UID:GID (numeric)"
grep -iE '^USER ' <<<"$steps" | grep -vqE '^USER [0-9]+:[0-9]+$' && die "$containerfile: USER must be a numeric UID:GID"
[[ $(grep -ciE '^FROM ' <<<"$steps") == 1 ]] || die "$containerfile: one stage (FROM) only: the build happens on the host"

command -v podman >/dev/null || die "podman is not installed (apt-get install podman)"
# 2. Build, under a tag no other run uses.
if [[ -z $image ]]; then
  image=localhost/lockkeeper-check:$(date +%s)-$$-$RANDOM
  owned=1
  [[ -n $base ]] || base=$("$root/deploy/debian-base.sh")
  started=$SECONDS
  modules=(--checkout-modules)
  [[ -z $fresh ]] || modules=()
  "$root/deploy/build-image.sh" -t "$image" --base "$base" --containerfile "$containerfile" "${modules[@]}" >/dev/null
  say "built $image on $base in $((SECONDS - started)) s"
fi
mounted=
cleanup() {
  [[ -z $mounted ]] || podman image unmount "$image" >/dev/null 2>&1 || true
  [[ -z ${owned:-} || -n $keep ]] || podman rmi -f "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# 3. What the image holds and how its entrypoint answers.
config=$(podman image inspect --format '{{json .Config}}' "$image")
bytes=$(podman image inspect --format '{{.Size}}' "$image")
rootfs=$(podman image mount "$image")
mounted=1
out=$(cd "$root" && npx --no-install tsx deploy/image-checks.ts "$rootfs" "$config" "$allow" "$lockfile" 2>&1) || {
  echo "$out" >&2
  die "$image failed its checks"
}
echo "$out"
say "ok: $image $((bytes / 1000000)) MB, first answer after ${out##*first answer after }"
