#!/usr/bin/env bash
# The main job: install what is missing, build the program, run the default sweep (GPU if
# usable, else CPU + extrapolation) into hyena_vs_flash_benchmark/, then the report. Extra
# arguments go to `longmix sweep`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh --target longmix
exec ./build/longmix sweep "$@"
