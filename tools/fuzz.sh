#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a short time on its
# seed corpus in fuzz/corpus/ (new inputs go to a scratch copy, the repo's corpus is kept).
# Usage: tools/fuzz.sh [seconds per target, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLONGMIX_FUZZ=ON \
  -DLONGMIX_CUDA=OFF -DLONGMIX_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz --target fuzz_npy fuzz_safetensors fuzz_csv
status=0
for t in npy safetensors csv; do
  scratch=$(mktemp -d)
  cp fuzz/corpus/$t/* "$scratch/"
  rc=0
  ./build-fuzz/fuzz_$t -max_total_time="$secs" -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$scratch/" "$scratch" > "$scratch.log" 2>&1 || rc=$?
  echo "fuzz_$t: ${secs}s, $(grep -o 'number_of_executed_units: [0-9]*' "$scratch.log" | tail -1), exit $rc"
  if [ $rc -ne 0 ]; then
    grep -E -A20 "ERROR|runtime error" "$scratch.log" | head -40
    ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* 2>/dev/null | while read -r f; do echo "input: $(xxd -l 256 "$f" | head -8)"; done
    status=1
  fi
  rm -rf "$scratch" "$scratch.log"
done
exit $status
