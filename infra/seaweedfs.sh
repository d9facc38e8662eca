#!/usr/bin/env bash
# Local SeaweedFS (`weed mini`: master, volume server, filer and S3 gateway in one
# process) without Docker: an S3-compatible server for the S3 blob store
# (HEADWATER_BLOB_STORE=s3). Not part of the default stack: `make run` keeps blobs in
# PostgreSQL; `make test` builds it (its S3 tests start private ones).
# Usage: infra/seaweedfs.sh install|up|down|status|reset
#
# install: build `weed` once from the Go module proxy at the pinned version (needs Go;
#   a few minutes on 2 cores, a ~230 MB binary) into
#   $REPO/.headwater/seaweedfs-build/<version>/weed, shared by every HEADWATER_HOME;
#   HEADWATER_SEAWEEDFS_BIN names another binary instead (then nothing is built).
# up: start it on 127.0.0.1 with its data, log and pid file in $HEADWATER_HOME/seaweedfs,
#   the bucket HEADWATER_S3_BUCKET (headwater) made, and wait until S3 answers.
# Ports: HEADWATER_S3_PORT (18333) is the S3 endpoint; the nine after it are its other
#   listeners, in this order: S3 gRPC, master, master gRPC, volume, volume gRPC, filer,
#   filer gRPC, admin, admin gRPC. All ten must be free (mini would move to other ports
#   silently; this script refuses instead). WebDAV, the admin UI, the Iceberg and Lance
#   catalogs and the telemetry report are off.
# Credentials: HEADWATER_S3_ACCESS_KEY / HEADWATER_S3_SECRET_KEY (headwater /
#   headwater-secret, for a local server only) become mini's one admin identity
#   (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in its environment); S3 requests without
#   them are refused.
set -euo pipefail

INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO="$(dirname "$INFRA")"
HW_HOME="${HEADWATER_HOME:-$REPO/.headwater}"
VERSION=v0.0.0-20261109003541-7506e5f91cd6   # github.com/seaweedfs/seaweedfs, 2026-11-09
MODULE=github.com/seaweedfs/seaweedfs
PORT="${HEADWATER_S3_PORT:-18333}"
BUCKET="${HEADWATER_S3_BUCKET:-headwater}"
ACCESS_KEY="${HEADWATER_S3_ACCESS_KEY:-headwater}"
SECRET_KEY="${HEADWATER_S3_SECRET_KEY:-headwater-secret}"
START_TIMEOUT=120

mkdir -p "$HW_HOME/seaweedfs"
# The default state dir is inside the repo: make git ignore it wholesale.
[[ -n ${HEADWATER_HOME:-} || -f $HW_HOME/.gitignore ]] || echo '*' >"$HW_HOME/.gitignore"
S="$(cd "$HW_HOME/seaweedfs" && pwd -P)"   # absolute, so cwd never matters
DATA="$S/data" LOGS="$S/logs" PIDFILE="$S/weed.pid"
BUILD="$REPO/.headwater/seaweedfs-build/$VERSION"
WEED="${HEADWATER_SEAWEEDFS_BIN:-$BUILD/weed}"

log() { echo "seaweedfs: $*" >&2; }
# shellcheck source=infra/pids.sh
source "$(dirname "${BASH_SOURCE[0]}")/pids.sh"  # alive, port_open, stop_pid

[[ $PORT =~ ^[0-9]+$ ]] && ((PORT > 0 && PORT + 9 < 65536)) \
  || { log "HEADWATER_S3_PORT must be a port number below 65527, got '$PORT'"; exit 1; }
PORTS=()
for i in $(seq 0 9); do PORTS+=("$((PORT + i))"); done

# Pid of *our* server, or nothing: the command line must name our data dir (a stale
# pid file's pid may have been recycled by an unrelated process).
our_pid() {
  local pid
  [[ -f $PIDFILE ]] || return 0
  pid="$(tr -dc 0-9 <"$PIDFILE")"
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "mini -dir=$DATA "; then echo "$pid"; fi
}

# Build once: `go install module@version` refuses a module whose go.mod has replace
# directives (SeaweedFS's has), so the module is downloaded from the proxy, copied
# (the module cache is read-only) and built as the main module. A lock keeps two
# callers (two checkouts' `make test`) from building at once.
install() {
  if [[ -n ${HEADWATER_SEAWEEDFS_BIN:-} ]]; then
    [[ -x $WEED ]] || { log "HEADWATER_SEAWEEDFS_BIN=$WEED is not an executable"; exit 1; }
    return 0
  fi
  [[ -x $WEED ]] && return 0
  mkdir -p "$BUILD"
  exec 9>"$BUILD/.lock"
  flock 9
  [[ -x $WEED ]] && return 0   # built by whoever held the lock
  command -v go >/dev/null 2>&1 \
    || { log "Go is not installed (needs go 1.26 or later, https://go.dev/dl): cannot build SeaweedFS"; exit 1; }
  log "building SeaweedFS $VERSION from the Go module proxy (first run only, a few minutes)..."
  local t0=$SECONDS dir
  dir="$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" \
    || { log "go mod download $MODULE@$VERSION failed"; exit 1; }
  [[ -n $dir && -d $dir ]] || { log "go mod download gave no module directory"; exit 1; }
  rm -rf "$BUILD/src"
  cp -r "$dir" "$BUILD/src"
  chmod -R u+w "$BUILD/src"
  if ! (cd "$BUILD/src" && GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local \
        go build -o "$BUILD/weed.tmp" ./weed) >"$BUILD/build.log" 2>&1; then
    tail -n 30 "$BUILD/build.log" >&2
    log "build failed (log: $BUILD/build.log)"; exit 1
  fi
  mv -f "$BUILD/weed.tmp" "$WEED"
  rm -rf "$BUILD/src"
  log "built $WEED in $((SECONDS - t0))s"
}

# Ready = our process alive, the S3 port accepts TCP and mini printed its banner, which
# it does once every component runs and the bucket exists.
wait_ready() {
  local pid="$1" deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! alive "$pid"; then log "weed process $pid exited during startup"; break; fi
    if port_open "$PORT" && grep -qs "All enabled components are running" "$LOGS/weed.log"; then
      return 0
    fi
    sleep 0.5
  done
  log "not ready after ${START_TIMEOUT}s; last log lines:"
  tail -n 40 "$LOGS/weed.log" >&2 2>/dev/null || true
  return 1
}

up() {
  local pid; pid="$(our_pid)"
  if [[ -n $pid ]]; then
    if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-s3.port=$PORT "; then
      log "already running (pid $pid) on other ports; stop it first"; exit 1
    fi
    wait_ready "$pid" || exit 1
    echo "seaweedfs already running (pid $pid, S3 on 127.0.0.1:$PORT)"; return 0
  fi
  rm -f "$PIDFILE"
  for p in "${PORTS[@]}"; do
    port_open "$p" && { log "port $p is in use by another process (HEADWATER_S3_PORT and the nine after it)"; exit 1; }
  done
  install
  mkdir -p "$DATA" "$LOGS"
  [[ -f $LOGS/weed.log ]] && mv -f "$LOGS/weed.log" "$LOGS/weed.log.prev"
  local p=("${PORTS[@]}")
  # setsid: own session, so Ctrl-C on the caller doesn't reach the server; nohup:
  # survives the terminal closing. The keys reach mini by its environment only.
  AWS_ACCESS_KEY_ID="$ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$SECRET_KEY" \
  setsid nohup "$WEED" mini -dir="$DATA" \
    -ip=127.0.0.1 -ip.bind=127.0.0.1 -bucket="$BUCKET" \
    -s3.port="${p[0]}" -s3.port.grpc="${p[1]}" \
    -master.port="${p[2]}" -master.port.grpc="${p[3]}" \
    -volume.port="${p[4]}" -volume.port.grpc="${p[5]}" \
    -filer.port="${p[6]}" -filer.port.grpc="${p[7]}" \
    -admin.port="${p[8]}" -admin.port.grpc="${p[9]}" -admin.port.legacy=0 -admin.ui=false \
    -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false \
    </dev/null >>"$LOGS/weed.log" 2>&1 &
  pid=$!
  echo "$pid" >"$PIDFILE"
  local t0=$SECONDS
  wait_ready "$pid" || exit 1
  [[ "$(our_pid)" == "$pid" ]] || { log "pid $pid is not the server (setsid forked?)"; exit 1; }
  echo "seaweedfs started (pid $pid, S3 on http://127.0.0.1:$PORT, bucket $BUCKET, $((SECONDS - t0))s)"
}

down() {
  local pid; pid="$(our_pid)"
  if [[ -z $pid ]]; then rm -f "$PIDFILE"; echo "seaweedfs not running"; return 0; fi
  stop_pid "$pid"
  rm -f "$PIDFILE"
  echo "seaweedfs stopped (pid $pid)"
}

status() {
  local pid; pid="$(our_pid)"
  if [[ -z $pid ]]; then echo "seaweedfs not running"; return 1; fi
  if ! port_open "$PORT"; then echo "seaweedfs pid $pid alive but port $PORT not answering"; return 1; fi
  echo "running pid $pid S3 http://127.0.0.1:$PORT"
}

# Wipe data and logs (buckets, objects); keep the built binary.
reset() { down; rm -rf "$DATA" "$LOGS"; echo "seaweedfs data wiped ($S)"; }

case "${1:-}" in
  install|up|down|status|reset) "$1" ;;
  *) echo "usage: $0 install|up|down|status|reset" >&2; exit 2 ;;
esac
