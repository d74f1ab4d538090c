#!/usr/bin/env bash
# Packs the built binaries and the Debian runtime libraries they need (the GPU machine has the
# CUDA libraries but not FFTW/OpenBLAS) into .carry/bundle.tar.xz for the device tool's `carry`.
# Binaries are built here for sm_90a + PTX, never with -march=native.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! git diff --quiet HEAD -- src bench tools CMakeLists.txt 2>/dev/null; then
  # The binaries record the commit they were built from and that the tree was dirty; results
  # from them then name a commit that is not the code that ran (commit first, then build).
  echo "bundle.sh: warning: uncommitted changes under src/bench/tools: results will read $(git rev-parse --short HEAD) with uncommitted changes" >&2
fi
rm -rf .carry/stage && mkdir -p .carry/stage/lib
cp build/longmix build/gpu_test build/bench_flash_own build/bench_hyena_fused .carry/stage/
# Earlier builds of bench_hyena_fused to compare in the same call (run_h200.sh fusedab): each
# FILE of $AB_BENCH (space-separated) is packed as bench_hyena_fused_<its name's last _part>.
ab=()
for f in ${AB_BENCH:-}; do
  n=bench_hyena_fused_${f##*_}
  cp "$f" .carry/stage/$n && ab+=($n)
done
(cd .carry/stage && strip longmix gpu_test bench_flash_own bench_hyena_fused "${ab[@]}")
for lib in $(ldd build/longmix build/gpu_test build/bench_flash_own build/bench_hyena_fused | awk '/=>/ {print $3}' | sort -u); do
  case "$lib" in
    /usr/local/cuda*|*/libc.so*|*/libm.so*|*/libdl.so*|*/libpthread.so*|*/librt.so*|*/libstdc++*|*/libgcc_s*) ;;
    *) cp -L "$lib" .carry/stage/lib/ ;;
  esac
done
XZ_OPT="-9 -T1" tar -C .carry/stage -cJf .carry/bundle.tar.xz longmix gpu_test bench_hyena_fused "${ab[@]}" \
  bench_flash_own lib
rm -rf .carry/stage
ls -la .carry/bundle.tar.xz
