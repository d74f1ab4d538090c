#!/usr/bin/env bash
# Configures and builds longmix into build/ (CUDA backend too when nvcc is found).
# Arguments go to `cmake --build` (e.g. --target longmix).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build "$@"
