#!/usr/bin/env bash
# Runs a command with no network, for the unit tests (`make test-unit`): in a network
# namespace of its own (`unshare -rn`) where only the loopback interface is up, so that
# neither the command nor any process it starts reaches a broker, a database or another
# host, not even one listening on this machine; servers a test starts on 127.0.0.1 still
# answer it. Where the kernel or container allows no such namespace (or `ip` is missing),
# runs the command as it is and says so on stderr: the caller's settings pointed at a
# closed port are then the only guard.
# Usage: infra/no-network.sh COMMAND [ARG...]
set -euo pipefail

log() { echo "no-network: $*" >&2; }

if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 \
    && unshare -rn ip link set lo up 2>/dev/null; then
  exec unshare -rn bash -c 'ip link set lo up && exec "$@"' no-network "$@"
fi
log "cannot make a network namespace here (unshare -rn); running with the network"
exec "$@"
