#!/usr/bin/env bash
# Packs the built binaries and the Debian runtime libraries they need (the GPU machine has the
# CUDA libraries but not FFTW/OpenBLAS) into .carry/bundle.tar.xz for the device tool's `carry`.
# Binaries are built here for sm_90a + PTX, never with -march=native.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .carry/stage && mkdir -p .carry/stage/lib
cp build/longmix build/gpu_test build/bench_flash_own build/bench_hyena_fused .carry/stage/
strip .carry/stage/longmix .carry/stage/gpu_test .carry/stage/bench_flash_own .carry/stage/bench_hyena_fused
for lib in $(ldd build/longmix build/gpu_test build/bench_flash_own build/bench_hyena_fused | awk '/=>/ {print $3}' | sort -u); do
  case "$lib" in
    /usr/local/cuda*|*/libc.so*|*/libm.so*|*/libdl.so*|*/libpthread.so*|*/librt.so*|*/libstdc++*|*/libgcc_s*) ;;
    *) cp -L "$lib" .carry/stage/lib/ ;;
  esac
done
XZ_OPT="-9 -T1" tar -C .carry/stage -cJf .carry/bundle.tar.xz longmix gpu_test bench_hyena_fused bench_flash_own lib
rm -rf .carry/stage
ls -la .carry/bundle.tar.xz
