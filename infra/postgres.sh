#!/usr/bin/env bash
# Local PostgreSQL for Headwater's projection (no Docker).
# Usage: infra/postgres.sh start|stop|status|reset
set -euo pipefail

INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO="$(dirname "$INFRA")"
HW_HOME="${HEADWATER_HOME:-$REPO/.headwater}"
mkdir -p "$HW_HOME"
# The default state dir is inside the repo: make git ignore it wholesale.
[[ -n ${HEADWATER_HOME:-} || -f $HW_HOME/.gitignore ]] || echo '*' >"$HW_HOME/.gitignore"
HW_HOME="$(cd "$HW_HOME" && pwd -P)"
PORT="${HEADWATER_PG_PORT:-55432}"
DB=headwater

# The server runs as the unprivileged `postgres` OS user (initdb refuses root),
# and that user needs search permission on every parent of its data dir. A repo
# under /root or a 0700 home would not allow that, so the cluster lives outside
# the repo, in /var/tmp (world-traversable, survives reboots unlike /tmp). The
# hash of HEADWATER_HOME keeps several checkouts apart; $HEADWATER_HOME/pg is a
# symlink to it so it is easy to find. Keep HEADWATER_PG_DIR short: the Unix
# socket path must fit in ~100 bytes.
PG_DIR="${HEADWATER_PG_DIR:-/var/tmp/headwater-pg-$(printf %s "$HW_HOME" | sha256sum | cut -c1-12)}"
DATA="$PG_DIR/data" SOCK="$PG_DIR/run" LOGFILE="$PG_DIR/postgres.log"
DSN="postgresql://postgres@127.0.0.1:$PORT/$DB"
cd /   # runuser'd tools warn if they cannot chdir back into the caller's cwd

log() { echo "postgres: $*" >&2; }
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
# As root, run server-side tools as `postgres`; as a normal user, run them directly.
as_pg() { if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }

# Bin dir: the version that created the data dir if there is one (a newer
# server cannot open an older cluster), else the newest installed version.
find_bin() {
  BIN=""
  if [[ -n ${HEADWATER_PG_BIN:-} ]]; then BIN="$HEADWATER_PG_BIN"; return 0; fi
  if [[ -f $DATA/PG_VERSION && -x /usr/lib/postgresql/$(cat "$DATA/PG_VERSION")/bin/postgres ]]; then
    BIN="/usr/lib/postgresql/$(cat "$DATA/PG_VERSION")/bin"; return 0
  fi
  local d
  BIN="$(for d in /usr/lib/postgresql/*/bin; do if [[ -x $d/postgres ]]; then echo "$d"; fi; done | sort -V | tail -n1)"
}

ensure_installed() {
  find_bin
  [[ -n $BIN ]] && return 0
  ((EUID == 0)) || { log "PostgreSQL is not installed; run as root or install the postgresql package"; exit 1; }
  log "installing PostgreSQL from apt (first run only)..."
  # Debian's postinst may create and start its own 'main' cluster on 5432.
  # We neither use nor touch it.
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  find_bin
  [[ -n $BIN ]] || { log "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found"; exit 1; }
}

running() { [[ -n $BIN && -f $DATA/PG_VERSION ]] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
server_pid() { head -n1 "$DATA/postmaster.pid" 2>/dev/null || true; }
psql_() { "$BIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres "$@"; }

start() {
  ensure_installed
  mkdir -p "$PG_DIR"
  if ((EUID == 0)); then chown postgres: "$PG_DIR"; fi
  chmod 700 "$PG_DIR"
  if [[ -L $HW_HOME/pg || ! -e $HW_HOME/pg ]]; then ln -sfn "$PG_DIR" "$HW_HOME/pg"; fi
  if [[ ! -f $DATA/PG_VERSION ]]; then
    log "initdb $DATA"
    # --no-locale: C collation, identical on every machine, no locale packages needed.
    as_pg "$BIN/initdb" -D "$DATA" --auth=trust -U postgres -E UTF8 --no-locale >"$PG_DIR/initdb.log" \
      || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
  fi
  as_pg mkdir -p "$SOCK"
  if running; then
    echo "postgres already running (pid $(server_pid), port $PORT)"
  else
    port_open "$PORT" && { log "port $PORT is in use by another process; set HEADWATER_PG_PORT"; exit 1; }
    # fsync and full_page_writes off: much faster, and a crash of the machine
    # may lose or corrupt data. Acceptable here: Postgres only holds a
    # projection that Headwater can rebuild from Kafka (or `reset` and replay).
    # synchronous_commit stays on: a commit returns once its WAL is written to
    # the OS, so a crash of PostgreSQL alone (SIGQUIT, as the fault suite's
    # postgres_stop does) loses no acknowledged commit. The projector commits
    # its Kafka offsets only after PostgreSQL acknowledged the batch; with
    # synchronous_commit off, the batches committed in the last few hundred ms
    # before such a crash were lost for good (seen: a node left `cancelled`).
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOGFILE" -t 60 -w start -o "-p $PORT -k $SOCK \
-c listen_addresses=127.0.0.1 -c fsync=off \
-c full_page_writes=off -c max_connections=200" >/dev/null \
      || { log "start failed; last log lines:"; tail -n 40 "$LOGFILE" >&2; exit 1; }
    echo "postgres started (pid $(server_pid), port $PORT)"
  fi
  if [[ "$(psql_ -d postgres -tAc "select 1 from pg_database where datname='$DB'")" != 1 ]]; then
    "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB"
    log "created database $DB"
  fi
  echo "postgres DSN: $DSN"
}

stop() {
  find_bin
  if running; then
    local pid; pid="$(server_pid)"
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null   # by postmaster.pid
    echo "postgres stopped (pid $pid)"
  else
    echo "postgres not running"
  fi
}

status() {
  find_bin
  if running; then echo "running pid $(server_pid) port $PORT ($DSN)"; else echo "postgres not running"; return 1; fi
}

# Drop the whole cluster (the projection); the next start runs initdb again.
reset() { stop; rm -rf -- "${PG_DIR:?}"; echo "postgres data wiped ($PG_DIR)"; }

case "${1:-}" in
  start|stop|status|reset) "$1" ;;
  *) echo "usage: $0 start|stop|status|reset" >&2; exit 2 ;;
esac
