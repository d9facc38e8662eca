#!/usr/bin/env bash
# The whole local stack (Kafka + PostgreSQL) without Docker.
# Usage: infra/stack.sh up|down|status|reset   (settings: see kafka.sh, postgres.sh)
set -euo pipefail
INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"

case "${1:-}" in
  up)
    bash "$INFRA/kafka.sh" start
    bash "$INFRA/postgres.sh" start
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
