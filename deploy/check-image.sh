#!/usr/bin/env bash
# Builds the image from the repository's root, runs it, and waits for /healthz to answer 200.
# Needs a container runtime with a running engine (docker, or podman with its docker-compatible
# CLI: CONTAINER=podman) and access to the registry that serves the Node.js base image.
# Not run by the test suite; it could not be run where it was written (deploy/README.md, Build).
set -euo pipefail
cd "$(dirname "$0")/.."
runtime=${CONTAINER:-docker}
tag=${IMAGE:-lockkeeper:check}
port=${PORT:-14000}
if ! "$runtime" info >/dev/null 2>&1; then
  echo "check-image: blocked: no container runtime on this machine ($runtime info fails)" >&2
  exit 2
fi
"$runtime" build -t "$tag" .
# The demo cluster and a throw-away volume; the bootstrap token because the image listens beyond loopback.
id=$("$runtime" run -d --rm -p "127.0.0.1:$port:4000" -e LOCKKEEPER_ADMIN_TOKEN=check-image-token-0123456789abcdef "$tag")
trap '"$runtime" stop "$id" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 60); do
  if body=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null); then
    echo "check-image: /healthz answered: $body"
    exit 0
  fi
  sleep 1
done
echo "check-image: /healthz did not answer within 60 s; the container's log:" >&2
"$runtime" logs "$id" >&2 || true
exit 1
