#!/usr/bin/env bash
# Builds and runs every test: the normal build (GPU tests, ctest label gpu, report "skipped:
# no GPU" without one), the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer,
# and a short run of each libFuzzer target on its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLONGMIX_SANITIZE=ON -DLONGMIX_CUDA=OFF >/dev/null
cmake --build build-asan
ctest --test-dir build-asan -L cpu --output-on-failure -j "$(nproc)"
tools/fuzz.sh 20
