#!/usr/bin/env bash
# Build the Docker image, by hand or for the image test (tests/system/image/test_image.py):
#   scripts/build-image.sh [TAG [CONTEXT]]      (default TAG: headforms; CONTEXT: this checkout)
# Base image: BASE_IMAGE if set, else python:3.11-slim (pulled when missing); when it cannot be
# pulled (no Docker Hub), an equivalent base is built once with debootstrap and kept under the
# tag headforms-base:bookworm-py3.11 (Debian bookworm + its Python 3.11 + venv + the host's extra
# CA certificates, which this host's HTTPS needs), and used instead.
# torch: when pip finds the pinned torch as a local file (its find-links), the wheel is put in
# CONTEXT/wheels/ and the build takes torch from it alone (LOCAL_TORCH=0: never); otherwise from
# the CPU index alone (TORCH_INDEX_URL, if set, names another one).
# Builder: BuildKit, through `docker buildx` or else a docker CLI that has it built in (before
# Docker 23, e.g. Debian 12's docker.io, with DOCKER_BUILDKIT=1). BUILD_NETWORK, if set, is the
# network of the build's RUN steps (`--network`, e.g. host: the image test's, so that no step adds
# an interface to the host while browsers run beside it).
# Engine: the running Docker daemon; with none, and as root, dockerd is started for the build
# and stopped by its PID at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-headforms}
CONTEXT=${2:-.}
SLIM=python:3.11-slim
LOCAL_BASE=headforms-base:bookworm-py3.11
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { echo "build-image: $*" >&2; }

stop_engine() {
  log "stopping dockerd (pid $DOCKERD_PID)"
  kill "$DOCKERD_PID"
  wait "$DOCKERD_PID" || true
}

start_engine() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null; then
    log "no Docker engine answers, and dockerd cannot be started here (needs root and docker.io)"
    exit 1
  fi
  local out
  out=$(mktemp /tmp/headforms-dockerd.XXXXXX)
  dockerd >"$out" 2>&1 &
  DOCKERD_PID=$!
  trap stop_engine EXIT
  for _ in $(seq 150); do
    docker info >/dev/null 2>&1 && { log "started dockerd (pid $DOCKERD_PID, log $out)"; return; }
    kill -0 "$DOCKERD_PID" 2>/dev/null || break
    sleep 0.2
  done
  log "dockerd did not start:"
  tail -n 20 "$out" >&2
  exit 1
}

# Debian bookworm minbase with Debian's python3 (3.11) and venv: what python:3.11-slim gives
# the Dockerfile. The host's extra CA certificates go into its trust store (pip reads PIP_CERT).
build_local_base() {
  local root began
  began=$(date +%s)
  root=$(mktemp -d /var/tmp/headforms-base.XXXXXX)
  log "building the base $LOCAL_BASE with debootstrap from $MIRROR"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,passwd \
    bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -n 20 "$root.log" >&2; exit 1; }
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["python3"]' - "$LOCAL_BASE" >/dev/null
  rm -rf "$root" "$root.log"
  log "built the base $LOCAL_BASE in $(($(date +%s) - began)) s"
}

choose_base() {
  if [ -n "${BASE_IMAGE:-}" ]; then
    echo "$BASE_IMAGE"
  elif docker image inspect "$SLIM" >/dev/null 2>&1 \
    || timeout 300 docker pull -q "$SLIM" >/dev/null 2>&1; then
    echo "$SLIM"
  else
    log "cannot pull $SLIM: using the local base $LOCAL_BASE"
    if ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
      build_local_base
    fi
    echo "$LOCAL_BASE"
  fi
}

# The pinned torch for CPython 3.11 on x86_64, only if pip finds it as a local file (--no-index
# keeps the find-links of pip's configuration and drops every index).
hand_local_torch() {
  local pin python wheels="$CONTEXT/wheels"
  pin=$(grep -E '^torch==' "$CONTEXT/requirements.txt")
  if [ "${LOCAL_TORCH:-1}" = 0 ]; then
    log "LOCAL_TORCH=0: the build takes torch from the CPU index"
    return
  fi
  if compgen -G "$wheels/torch-${pin#torch==}[+-]*.whl" >/dev/null; then
    return
  fi
  python=$(command -v python3)
  [ -x .venv/bin/python ] && python=.venv/bin/python
  if "$python" -m pip download --quiet --no-deps --no-index --dest "$wheels" --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 "$pin" 2>/dev/null; then
    log "handing the local wheel $(basename "$wheels"/torch-*.whl) to the build"
  else
    log "no local $pin wheel: the build takes torch from the CPU index"
  fi
}

# `docker buildx build --load`, or a docker CLI with BuildKit built in (before Docker 23).
buildkit_build() {
  local cli major
  if docker buildx version >/dev/null 2>&1; then
    docker buildx build --load "$@"
    return
  fi
  for cli in $(type -ap docker); do
    major=$("$cli" version -f '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)
    if [ -n "$major" ] && [ "$major" -lt 23 ]; then
      DOCKER_BUILDKIT=1 "$cli" build "$@"
      return
    fi
  done
  log "no BuildKit: install docker-buildx (or Debian's docker.io, whose CLI has it built in)"
  return 1
}

start_engine
base=$(choose_base)
hand_local_torch
log "building $TAG from $base"
began=$(date +%s)
args=(--progress=plain --build-arg BASE_IMAGE="$base" -t "$TAG")
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  args+=(--build-arg TORCH_INDEX_URL="$TORCH_INDEX_URL")
fi
if [ -n "${BUILD_NETWORK:-}" ]; then
  args+=(--network "$BUILD_NETWORK")
fi
buildkit_build "${args[@]}" "$CONTEXT"
size=$(docker image inspect -f '{{.Size}}' "$TAG")
log "built $TAG in $(($(date +%s) - began)) s; image size $((size / 1000000)) MB"
