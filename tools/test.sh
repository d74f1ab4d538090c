#!/usr/bin/env bash
# Builds and runs every test. GPU tests (ctest label gpu) report "skipped: no GPU" without one.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
