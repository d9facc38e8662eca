#!/usr/bin/env bash
# The whole local stack (Kafka + PostgreSQL) without Docker.
# Usage: infra/stack.sh up|down|status|reset   (settings: see kafka.sh, postgres.sh)
set -euo pipefail
INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"

# faketime (Debian's package: /usr/bin/faketime and libfaketime) runs a process with a
# shifted wall clock: the end-to-end suite starts workers under it (tests/e2e/
# test_clock_skew.py). Installed from apt on the first `up`, only when missing. The
# services do not need it, so without root, or when apt fails, it is only reported
# (and those tests fail on CI, skip elsewhere).
ensure_faketime() {
  command -v faketime >/dev/null 2>&1 && return 0
  if ((EUID != 0)); then
    echo "stack: faketime is not installed (the clock-skew tests need it); run as root or install the faketime package" >&2
    return 0
  fi
  echo "stack: installing faketime from apt (first run only)..." >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null; }; then
    echo "stack: could not install faketime (the clock-skew tests need it)" >&2
  fi
}

case "${1:-}" in
  up)
    bash "$INFRA/kafka.sh" start
    bash "$INFRA/postgres.sh" start
    ensure_faketime
    ;;
  down)
    # Reverse order of `up`. Try both even if the first one fails.
    rc=0
    bash "$INFRA/postgres.sh" stop || rc=$?
    bash "$INFRA/kafka.sh" stop || rc=$?
    exit "$rc"
    ;;
  status)
    # Report both; exit non-zero unless both are running.
    rc=0
    bash "$INFRA/kafka.sh" status || rc=1
    bash "$INFRA/postgres.sh" status || rc=1
    exit "$rc"
    ;;
  reset)
    bash "$INFRA/postgres.sh" reset
    bash "$INFRA/kafka.sh" reset
    ;;
  *) echo "usage: $0 up|down|status|reset" >&2; exit 2 ;;
esac
