#!/usr/bin/env bash
# On the GPU machine (device tool): does this machine's cuFFT accept an LTO callback at all?
# Builds the probe and a trivial load callback (x -> 2x) there and plans R2C transforms with it.
# Found on the H200 machine (2026-12-03, cuFFT 12.0.0.61, nvJitLink 13.0.88, driver 580.159):
# cufftXtSetJITCallback succeeds, every cufftMakePlan* after it returns 5 (CUFFT_INTERNAL_ERROR),
# whether the callback is built with -dc or -rdc, for compute_90 or compute_90a, with the
# toolkit's or PyTorch's copy of libcufft/libnvJitLink — so hyena-cuda does not use callbacks.
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -o /tmp/probe cufft_lto_probe.cu -lcufft 2>&1 | tail -3
nvcc -gencode arch=compute_90,code=lto_90 -dc -fatbin trivial_cb.cu -o /tmp/trivial_dc.fatbin 2>&1 | tail -3
nvcc -gencode arch=compute_90,code=lto_90 -rdc=true -fatbin trivial_cb.cu -o /tmp/trivial_rdc.fatbin 2>&1 | tail -3
for fb in /tmp/trivial_dc.fatbin /tmp/trivial_rdc.fatbin; do
  /tmp/probe $fb trivial_load ldr 1024 1
  /tmp/probe $fb trivial_load ldr 262144 256 many64
done
