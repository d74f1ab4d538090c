#!/usr/bin/env bash
# Builds bench_hyena_fused once more with extra CUDA flags, into build-NAME/, and copies it to
# .carry/variants/bench_hyena_fused_NAME, for the same-call A/B stages of run_h200.sh:
#   bash bench/device/build_variant.sh vec8nb -DLONGMIX_FUSED_VEC8_MIN_BLOCKS=1
#   AB_BENCH=".carry/variants/bench_hyena_fused_vec8nb" bash bench/device/bundle.sh
# NAME: letters and digits only (bundle.sh names the copy after the part past its last '_').
set -euo pipefail
cd "$(dirname "$0")/../.."
name=${1:?usage: build_variant.sh NAME [CUDA flags...]}
shift
[[ $name =~ ^[A-Za-z0-9]+$ ]] || { echo "build_variant.sh: NAME must be letters and digits, not '$name'" >&2; exit 2; }
cmake -S . -B build-$name -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_FLAGS=$*" >/dev/null
cmake --build build-$name --target bench_hyena_fused
mkdir -p .carry/variants
cp build-$name/bench_hyena_fused .carry/variants/bench_hyena_fused_$name
ls -la .carry/variants/bench_hyena_fused_$name
