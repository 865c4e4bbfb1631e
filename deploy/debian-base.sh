#!/usr/bin/env bash
# Prints the name of a local base image for the Containerfile (BASE build argument) made from
# Debian's packages with mmdebstrap, making it first when this machine's image store lacks it.
# For machines with no registry to pull node:20 from (DESIGN.md §5): trixie's nodejs is 20.19,
# what package.json's engines ask for. It takes about 3 minutes, once: the tag names the
# recipe (suite, variant, packages), so a machine reuses the image while the recipe is the
# same; `podman rmi` it to take newer Debian packages. Two runs at once wait on one lock
# instead of both making it.
set -euo pipefail
suite=trixie
variant=minbase
packages=nodejs,ca-certificates
recipe="mmdebstrap --variant=$variant --include=$packages $suite"
image="localhost/lockkeeper-base:$suite-$(printf '%s' "$recipe" | sha256sum | cut -c1-12)"

have() { podman image exists "$image"; }
if ! have; then
  lockdir=/run/lock
  [[ -d $lockdir ]] || lockdir=/tmp
  exec 9>"$lockdir/lockkeeper-debian-base.lock"
  flock 9
  if ! have; then
    work=$(mktemp -d /var/tmp/lockkeeper-base.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    echo "debian-base: making $image ($recipe), about 3 minutes" >&2
    mmdebstrap --quiet --variant="$variant" --include="$packages" "$suite" "$work/base.tar" >&2
    podman import --quiet "$work/base.tar" "$image" >/dev/null
  fi
fi
echo "$image"
