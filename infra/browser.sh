#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian, for the tests that drive a real
# browser (tests/e2e/test_cors_browser.py, the UI's), and Node.js, which runs the web UI's
# pure modules in the unit tests (test_ui_run_logic.py). Idempotent: does nothing when
# all three are there.
# Usage: infra/browser.sh
set -euo pipefail

log() { echo "browser: $*" >&2; }
have() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
  && command -v node >/dev/null 2>&1; }

if have; then
  exit 0
fi
((EUID == 0)) || { log "chromium is not installed; run as root or install chromium and chromium-driver"; exit 1; }
log "installing chromium, chromium-driver and nodejs from apt (first run only)..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver nodejs >/dev/null
have || { log "installed, but chromium, chromedriver or node is not on PATH"; exit 1; }
log "installed $(chromium --version 2>/dev/null || echo chromium)"
