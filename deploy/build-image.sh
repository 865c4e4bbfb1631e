#!/usr/bin/env bash
# Builds Lockkeeper's image from this checkout without a container daemon or a RUN step.
#
#   deploy/build-image.sh -t TAG [--base IMAGE | --debian-base] [--engine podman|docker]
#                         [--containerfile FILE] [--stage DIR] [--checkout-modules]
#
# 1. stages the application on this host: the checkout's files (tracked and new, not ignored)
#    are copied to a fresh directory where `npm ci`, `npm run build` and the production prune
#    run as they would in a checkout; what the image runs is moved into the build context
#    (see Containerfile) and the rest is left behind. --checkout-modules takes the checkout's
#    installed node_modules (hard links, after `npm ls` finds them complete) instead of a
#    fresh `npm ci`, and regenerates the Prisma client as npm ci's postinstall would: for
#    checks right after the checkout's own `npm ci` (.ci/run), where a second one would only
#    cost minutes;
# 2. builds the Containerfile on that context, FROM --base (default: node:20's bookworm slim
#    image from Docker Hub; --debian-base: the image deploy/debian-base.sh makes, for machines
#    with no registry).
# The staging directory is removed afterwards unless --stage names one to keep.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tag=
base=docker.io/library/node:20-bookworm-slim
engine=
containerfile=$root/Containerfile
keep=
reuse=
while (($#)); do
  case $1 in
    -t | --tag) tag=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --debian-base) base=$("$root/deploy/debian-base.sh"); shift ;;
    --engine) engine=$2; shift 2 ;;
    --containerfile) containerfile=$(realpath "$2"); shift 2 ;;
    --stage) keep=$2; shift 2 ;;
    --checkout-modules) reuse=1; shift ;;
    *) echo "build-image: unknown argument $1 (see the header of $0)" >&2; exit 64 ;;
  esac
done
[[ -n $tag ]] || { echo "build-image: -t TAG is required" >&2; exit 64; }
if [[ -z $engine ]]; then engine=podman; command -v podman >/dev/null || engine=docker; fi

if [[ -n $keep ]]; then
  stage=$keep
  rm -rf "$stage" && mkdir -p "$stage"
else
  stage=$(mktemp -d /var/tmp/lockkeeper-stage.XXXXXX)
  trap 'rm -rf "$stage"' EXIT
fi
log() { echo "build-image: [$SECONDS s] $*" >&2; }

# 1. The checkout, as git sees it (no node_modules, dist, demo data or .git).
mkdir "$stage/build"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$stage/build"
else
  tar -C "$root" --exclude=./node_modules --exclude=./dist --exclude=./data --exclude=./.git -cf - . | tar -xf - -C "$stage/build"
fi
(
  cd "$stage/build"
  if [[ -n $reuse ]]; then
    log "staging in $stage: the checkout's node_modules, npm run generate, npm run build, the production prune"
    (cd "$root" && npm ls --all --silent >/dev/null) || { log "the checkout's node_modules do not match package-lock.json: run npm ci"; exit 1; }
    cp -al "$root/node_modules" node_modules 2>/dev/null || { rm -rf node_modules && cp -a "$root/node_modules" node_modules; }
    # npm rewrites its hidden lockfile in place: a copy, so the checkout's stays as it is.
    cp --remove-destination "$root/node_modules/.package-lock.json" node_modules/.package-lock.json
    npm run generate --silent
  else
    log "staging in $stage: npm ci, npm run build, the production prune"
    # --prefer-offline: the checkout's own install has filled npm's cache.
    npm ci --prefer-offline --no-audit --no-fund --loglevel=error
  fi
  npm run build --silent
  log "npm run build done"
  # --omit=optional as well: npm keeps a devDependency that is also an optional peer of a
  # production package (prisma, and typescript below it, for @prisma/client) unless both are
  # omitted. The only optional production packages are pg-cloudflare (Cloudflare Workers only)
  # and graphql-armor's types, which the gateway never loads.
  npm prune --omit=dev --omit=optional --no-audit --no-fund --loglevel=error
) >&2

# 2. The build context: only what the image runs.
ctx=$stage/context
mkdir -p "$ctx/app/prisma" "$ctx/bin" "$ctx/data"
mv "$stage/build/package.json" "$stage/build/dist" "$stage/build/node_modules" "$ctx/app/"
mv "$stage/build/prisma/migrations" "$stage/build/prisma/migrations-postgresql" "$ctx/app/prisma/"
# Source maps carry the TypeScript sources and node reads them only with --enable-source-maps:
# stack traces keep their names without them (the build does not mangle identifiers).
find "$ctx/app/dist" -name '*.map' -delete
# The compiled CLI on PATH (dist/src/cli.js has no shebang: esbuild's banner comes first).
printf '#!/bin/sh\nexec node /app/dist/src/cli.js "$@"\n' >"$ctx/bin/lockkeeper"
chmod 0755 "$ctx/bin/lockkeeper"
rm -rf "$stage/build"

log "$engine build -t $tag (FROM $base)"
"$engine" build --quiet -f "$containerfile" --build-arg "BASE=$base" -t "$tag" "$ctx" >&2
log "built $tag"
echo "$tag"
