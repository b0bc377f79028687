#!/usr/bin/env bash
# The otelcol-red image, built from the repository's Dockerfile without a registry.
#   scripts/image.sh build          stage .cache/image/, build otelcol-red:latest (and :<version>)
#   scripts/image.sh tool           print the container tool in use (docker, podman or buildah)
#   scripts/image.sh size           print the image's size in bytes
#   scripts/image.sh run ARGS...    `podman run` (or docker run) with the flags this host needs
#   scripts/image.sh logs NAME      a container's log, its stdout and stderr both on stdout
#   scripts/image.sh CMD ARGS...    any other podman/docker command with the same global flags
# `make image` calls `build` after `make build` (the binary is the one the image holds).
#
# The tool: docker when its engine answers, else podman, else buildah (build only); when none is
# there, podman, buildah and runc are installed from Debian. podman and buildah run with the
# vfs storage driver and the runc runtime unless CONTAINERS_STORAGE_DRIVER / OCI_RUNTIME say
# otherwise: overlay and crun fail on some kernels (crun on this project's CI hosts' cgroups).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

IMAGE=${OTELCOL_RED_IMAGE:-otelcol-red}
STAGE=.cache/image

pick_tool() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then echo docker; return; fi
  command -v podman >/dev/null 2>&1 && { echo podman; return; }
  command -v buildah >/dev/null 2>&1 && { echo buildah; return; }
  apt_install podman podman buildah runc >/dev/null
  echo podman
}
TOOL=$(pick_tool)

# tool_cmd runs the tool with the global flags this host needs.
tool_cmd() {
  case $TOOL in
    docker) docker "$@" ;;
    podman) podman --storage-driver "${CONTAINERS_STORAGE_DRIVER:-vfs}" --runtime "${OCI_RUNTIME:-runc}" \
      --cgroup-manager cgroupfs "$@" ;;
    buildah) buildah --storage-driver "${CONTAINERS_STORAGE_DRIVER:-vfs}" "$@" ;;
  esac
}

stage() {
  [ -x bin/otelcol-red ] || die "bin/otelcol-red is missing: run make build (make image does)"
  rm -rf "$STAGE"
  # /var/lib (root's) and the data directory's tree (10001's, by the Dockerfile's --chown).
  mkdir -p "$STAGE/var/lib" "$STAGE/data/storage"
  # The CA bundle of the building host, as a Debian-based build stage would install it.
  local ca=/etc/ssl/certs/ca-certificates.crt
  if [ ! -s "$ca" ]; then
    log "installing ca-certificates with apt-get"
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends ca-certificates >&2
  fi
  [ -s "$ca" ] || die "no CA bundle at $ca"
  cp "$ca" "$STAGE/ca-certificates.crt"
}

build() {
  stage
  local version; version=$(bin/otelcol-red --version | awk '{print $NF}')
  log "building $IMAGE:latest and $IMAGE:$version with $TOOL"
  case $TOOL in
    docker|podman) tool_cmd build -f Dockerfile -t "$IMAGE:latest" -t "$IMAGE:$version" . >&2 ;;
    buildah) tool_cmd bud -f Dockerfile -t "$IMAGE:latest" -t "$IMAGE:$version" . >&2 ;;
  esac
  log "$IMAGE:latest is $(size) bytes"
}

size() {
  case $TOOL in
    docker|podman) tool_cmd image inspect --format '{{.Size}}' "$IMAGE:latest" ;;
    buildah) tool_cmd inspect --type image --format '{{.ImageSize}}' "$IMAGE:latest" 2>/dev/null ||
      tool_cmd images --format '{{.Size}}' "$IMAGE:latest" ;;
  esac
}

case "${1:-}" in
  build) build ;;
  tool) echo "$TOOL" ;;
  size) size ;;
  run)
    shift
    [ "$TOOL" = buildah ] && die "buildah builds but does not run images; install podman"
    tool_cmd run --network host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 "$@" ;;
  logs) tool_cmd logs "$2" 2>&1 ;;
  "") die "usage: $0 build | tool | size | run ARGS... | logs NAME | CMD ARGS..." ;;
  *) tool_cmd "$@" ;;
esac
