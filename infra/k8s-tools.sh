#!/usr/bin/env bash
# Tools for the deployment tests (tests/unit/infra/), all from the Go module proxy with
# the machine's Go: kustomize, built by `go install`, and the sources of two modules
# read for their schemas: KEDA (config/crd/bases: the ScaledObject CRD; pkg/scalers:
# the Kafka scaler's settings) and compose-go (schema/compose-spec.json: the Compose
# Specification, as Docker Compose validates a file). Idempotent: what is there already
# is not fetched or built again. Exits non-zero, saying why, when something cannot be had.
# Prints on stdout, one per line: KUSTOMIZE=<binary> KEDA_DIR=<dir> COMPOSE_GO_DIR=<dir>.
# Usage: infra/k8s-tools.sh   (HEADWATER_TOOLS: where kustomize goes, default
# <repo>/.headwater/tools)
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2   # v5.8.3 wants Go 1.27
KEDA_VERSION=v2.21.0
COMPOSE_GO_VERSION=v2.16.2 # v2.17.0 wants Go 1.26.11

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TOOLS="${HEADWATER_TOOLS:-$REPO/.headwater/tools}"
log() { echo "k8s-tools: $*" >&2; }

command -v go >/dev/null 2>&1 || { log "go is not installed: the Go toolchain builds kustomize"; exit 1; }
# This machine's Go, never one fetched for a module that asks for a newer one.
export GOTOOLCHAIN=local
mkdir -p "$TOOLS"
TOOLS="$(cd "$TOOLS" && pwd -P)"
cd "$TOOLS"   # outside any Go module: the go commands below act on the tools alone
# Two test processes may ask at once: one installs, the other waits for it.
exec 9>"$TOOLS/.lock"
flock 9

bin_dir="$TOOLS/kustomize-$KUSTOMIZE_VERSION"
kustomize="$bin_dir/kustomize"
installed() { [[ -x $kustomize && "$("$kustomize" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]]; }
if ! installed; then
  log "building kustomize $KUSTOMIZE_VERSION with go install (first run only)..."
  start=$SECONDS
  rm -f "$kustomize"
  GOBIN="$bin_dir" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" \
    || { log "go install sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION failed"; exit 1; }
  log "kustomize built in $((SECONDS - start)) s"
fi
installed || { log "$kustomize does not say it is $KUSTOMIZE_VERSION"; exit 1; }

# The module's directory in the Go module cache (downloaded once, then read from there).
module_dir() {
  local json dir
  json="$(go mod download -json "$1@$2")" || { log "could not download $1@$2: $json"; return 1; }
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")"
  [[ -n $dir && -d $dir ]] || { log "no module directory for $1@$2: $json"; return 1; }
  echo "$dir"
}
keda="$(module_dir github.com/kedacore/keda/v2 "$KEDA_VERSION")"
compose_go="$(module_dir github.com/compose-spec/compose-go/v2 "$COMPOSE_GO_VERSION")"

echo "KUSTOMIZE=$kustomize"
echo "KEDA_DIR=$keda"
echo "COMPOSE_GO_DIR=$compose_go"
