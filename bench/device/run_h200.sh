#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .carry/bundle.tar.xz
# carried (bench/device/bundle.sh). Stages, given as arguments:
#   tests    every GPU test (8 shards in parallel; the driver-memory test alone), memcheck and
#            racecheck on small hyena-fused runs
#   fusedtests  the Hyena GPU tests only
#   hyena    D = 256 Hyena sweep (hyena-fused, hyena-cuda) 4k..1M + the PyTorch reference Hyena
#   profile  ncu kernel times of one hyena-fused forward at 4k and 128k (D = 256)
#   detail   ncu sections (occupancy, warp stalls, memory) of the hyena-fused kernels at 128k
#   sanitize compute-sanitizer memcheck and racecheck on two small hyena-fused tests
#   fusedunit  the hyena-fused unit tests and the driver-memory cross-check
#   full256, full1024  the full sweep of one width (every op) with the same-run PyTorch peers
#   flashown the attention GPU tests (every flash-own variant, flash-cudnn, attention-cuda),
#            memcheck/racecheck on flash-own, the variant benchmark against cuDNN
#   torch    longmix run against the PyTorch modules (bench/peers/check_torch.py), every GPU impl
#   isolate  a GPU sweep with --isolate and an injected fault in one row
#   hyenacuda  the Hyena GPU tests (hyena-cuda and hyena-fused), memcheck/racecheck on two
#            hyena-cuda cases, a D = 256 Hyena sweep 4k..1M with the reference Hyena in the same
#            call, ncu kernel times of one hyena-cuda forward at 128k
#   sanitizehc  memcheck/racecheck on two hyena-cuda cases (order 2 and 3, L = 77)
#   flashquick  the flash-own tests and the d = 64 variant benchmark
#   hyenatests  the Hyena GPU tests only (8 shards)
#   targets  the issues' target lengths at D = 256 (Hyena 4k, 16k, 128k, 1M; flash 4k, 16k, 128k)
#            with the reference Hyena and PyTorch's SDPA in the same call: a short sweep
#   fusedsmem  ncu shared-memory/L1 tables, warp stalls and source counters of the FFT passes (128k)
#   hyena1024  hyena-fused, hyena-cuda and the reference Hyena at D = 1024, $HYENA1024_L (1M)
#   fusedbench  bench_hyena_fused (hyena-fused, its cached filter, hyena-cuda; $FUSED_BENCH_L,
#            $FUSED_BENCH_D), ncu kernel times at 128k and the sections of the FFT-pass kernels
#   fusedquick  hyena-fused and hyena-cuda at 4k, 128k, 1M (D = 256), no peers
#   fusedab  bench_hyena_fused (also with LONGMIX_GEMM_TUNE=0) and every earlier build packed
#            beside it (bundle.sh $AB_BENCH),
#            alternating, at $FUSED_BENCH_L (D = 256) and $FUSED_AB_L1024 (128k, 1M) at D = 1024; ncu kernel times
#            of one forward at 128k for each build
#   fusedsplit  bench_hyena_fused with LONGMIX_FUSED_SPLIT=wide and =tall alternating (two rounds),
#            D = 256 and 1024 at $FUSED_SPLIT_L; the Hyena GPU tests with the split forced tall
#   fusedsass  ncu's full set with per-instruction source counters (SASS) of the four FFT-pass
#            kernels at 128k (D = 256): report, details and the SASS page as text
#   rowtc    pass B's row FFTs on tensor cores against cuFFTDx's (LONGMIX_FUSED_ROW=auto|direct|cufftdx),
#            same binary, same call: the GpuHyenaFused tests, bench_hyena_fused at $ROWTC_L
#            (D = 256 and 1024, two rounds), ncu kernel times at 128k, memcheck/racecheck of the
#            tensor-core kernel alone (the sanitizers' kernel filter)
#   coltc    passes A and A⁻¹ on tensor cores against cuFFTDx (LONGMIX_FUSED_COL=tensor|cufftdx), same
#            binary, same call, and every bench_hyena_fused_* packed beside it: the GpuHyenaFused
#            tests, bench_hyena_fused at $COLTC_L (D = 256 and 1024, two rounds), ncu kernel times
#            at 128k, memcheck/racecheck of the column kernels alone
#   sanitizeflash  memcheck/racecheck on two flash-own shapes (every variant)
#   overlap  the GpuHyenaFused and Hyena GPU tests, bench_hyena_fused with LONGMIX_FUSED_OVERLAP=off
#            and =on alternating (two rounds, D = 256 and 1024 at $OVERLAP_L), memcheck of the
#            overlap test
#   access   the column passes' 8-row accesses (LONGMIX_FUSED_ACCESS=vec8) against the scalar ones
#            (the default), same binary, same call, with the tensor-core columns and every
#            bench_hyena_fused_* packed beside it: the GpuHyenaFused tests (and the flash-own
#            tuner's), the Hyena GPU tests and memcheck/racecheck on two L = 1000 cases with vec8,
#            bench_hyena_fused at $ACCESS_L (D = 256) and $ACCESS_L1024 (D = 1024), two rounds,
#            ncu kernel times at 128k of both accesses
#   access2  v15: the signal's pass A on its own access (LONGMIX_FUSED_SIGNAL_ACCESS), the 8-row
#            kernels' per-N1 bound and the 8-row cut below B·D·L = 2^24, same binary, same call,
#            two rounds ($ACCESS2_L* lengths); the GpuHyenaFused and Hyena GPU tests at the
#            defaults, memcheck and a racecheck without cuBLAS's nvjet kernels on two L = 1000
#            cases, ncu kernel times at 128k of the default and of the signal's pass A scalar, and
#            the FFT passes' sections (stalls, occupancy, memory) with the signal's pass A either way
#   taps     v16: the 8-row path's short-conv taps shuffled from the neighbouring lanes, against
#            the v15 build packed beside it ($B/bench_hyena_fused_v15) and any other packed
#            variant, the signal's pass A on either access, same call, two rounds; the GpuHyenaFused
#            tests, the Hyena GPU tests with the 8-row path forced, memcheck and a racecheck of the
#            8-row kernels alone; ncu kernel times at 128k; with TAPS_FULL=1 also the 8-row cut
#            below 2^24 and the FFT passes' ncu sections; logs in taps.tgz
#   v17      the signal's 8-row pass A against the scalar pass (and the builds named in $V17_BINS),
#            same call, two rounds (v17's own 4-blocks-an-SM kernel for it was measured and
#            reverted: the 8-row pass is now the shared kernel again); the
#            GpuHyenaFused tests (the 8-row path at N1 = 1024) and the tuner's; a racecheck of the
#            8-row kernels without a kernel filter; the -persist flash kernels beside the launched
#            ones at $V17_FLASH_L (32k-128k), two rounds; logs in v17.tgz
#   rowpairs v18: pass B's cuFFTDx row kernels with 1, 2 and 4 row pairs a block
#            (LONGMIX_FUSED_ROW_PAIRS), same binary, same call, two rounds at $ROWPAIRS_L (4k-32k,
#            D = 256 and 1024); the GpuHyenaFused tests, the Hyena GPU tests and memcheck/racecheck
#            with 2 and 4 forced; ncu kernel times at 4k for each; logs in rowpairs.tgz
#   persist  the flash-own tests and sanitizers, then bench_flash_own of the -persist variants
#            beside the launched grids ($PERSIST_IMPLS) at $FLASH_BENCH_L, two rounds
#   flashbench  the flash-own variant benchmark, every shape ($FLASH_BENCH_L lengths)
#   flashinter  the variant benchmark interleaved call by call (order=interleaved), D = 256 and 1024
#            (d64), $FLASH_INTER_L (32k-128k), two rounds, beside one round in each fixed order
#   tunecheck  tuner v4e: the tuner's GPU tests, two flash sweeps at D = 1024 ($TUNE_L, 32k-128k) and
#            the shuffled variant benchmark at H = 16 in the same call
#   tunelayout  tuner v4f: the tuner's GPU tests, the shuffled variant benchmark (d = 64, H = 4 and
#            16, 32k-128k) with q, k, v separate and packed as in the layer's qkv, and two flash
#            sweeps at D = 1024 (layer scope) in the same call
#   flashpairs  flash-own's kernels one at a time (LONGMIX_FLASH_VARIANT) in the sweep's turns with
#            cuDNN (D = 1024, 64k and 128k, two rounds), then the tuner's pick: the pairs' ratios
#   lptgroup v4d: the flash-own tests and sanitizers, ncu (time, L2 hits, DRAM bytes) of -persist-lpt at
#            16k-64k, H = 16 with all heads at once (the default) and with groups of heads that fit
#            half the L2 (LONGMIX_FLASH_LPT_GROUP=l2), and the variant benchmark interleaved, both
#            ways, two rounds (run on the H100 2026-12-07 as "auto" = l2 against "all")
#   flashpersistncu  ncu (time, SM activity spread, L2 hit rate, DRAM bytes) of the persistent kernels'
#            12-16% outliers at H = 16 beside the fast cases, and the variant benchmark at 64k, 128k
#   flashncu  ncu sections (warp stalls, scheduler, pipes, source counters) of $FLASH_NCU_IMPLS
#            (flash-own's ws-128x128-pp-e4 and cuDNN's kernel) at $FLASH_NCU_L (32k),
#            $FLASH_NCU_SHAPE (d64h4; d64h16 for D = 1024), causal, one launch each
#   gemmenum  v20: the projections' GEMM tuning with cuBLASLt's enumerated configurations
#            (LONGMIX_GEMM_TUNE=enumerate) against the heuristic's candidates (=1), same binary, same
#            call, two rounds, D = 256 and 1024, the choices logged; GpuGemmTune; ncu at 128k
#   stage    v21: time rows staged in shared memory (LONGMIX_FUSED_STAGE=off|signal|on) A/B,
#            tests, sanitizers, ncu at 128k
#   glue     flash-cudnn layer scope at D = 1024 (H = 16) 4k..128k with PyTorch's cuDNN and FA2
#            layers in the same call; flash-cudnn core scope at 128k, D = 256 (the memory row)
# Logs and results go under $OUT (8 files at most come back: results are tarred).
set -uo pipefail
B=/tmp/lm
mkdir -p $B && tar -C $B -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$B/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
PY=${PY:-python3}
LOG=$OUT/run.log
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a $LOG
# ncu kernel times (and DRAM bytes) of one hyena-fused forward at L (default 128k), D = 256: BIN
# (a bench_hyena_fused build) → FILE. It skips past the plan's GEMM tuning (gemm_tune_cuda: up
# to 2 × 8 candidates × 4 calls) into the warm-up forwards, which are all alike. That tuning runs
# under ncu too (every launch serialised, clocks locked), so it may choose other GEMM kernels than
# an unprofiled run: on an H100 it took a 64 × 64 out_proj tile under ncu where the same build's
# bench took 128 × 128 (results/h100/hyena-fused/gemmenum_v20.txt). The choice made is logged into
# FILE (LONGMIX_LOG_GEMM_TUNE) so that a profile is read against it.
ncu_fused_forward() {
  LONGMIX_LOG_GEMM_TUNE=1 timeout 200 ncu --graph-profiling node --launch-skip ${NCU_SKIP:-150} --launch-count 24 \
    --metrics gpu__time_duration.sum,dram__bytes.sum $1 ${3:-131072} 256 fused > $2 2>&1
  echo "ncu $(basename $1) ${3:-131072} rc=$?" | tee -a $LOG
}
# ncu SECTIONS... of the four FFT-pass kernels of one forward at 128k, D = 256 → FILE.
ncu_fused_passes() {
  local file=$1
  shift
  timeout 300 ncu --graph-profiling node --kernel-name-base demangled -k regex:'col_|row_' --launch-count 4 \
    "$@" $B/bench_hyena_fused 131072 256 fused > $file 2>&1
  echo "ncu $(basename $file) rc=$?" | tee -a $LOG
}

# memcheck and racecheck on the gpu_test cases of FILTER, logs $OUT/sanitizer_NAME_TOOL.log.
# Default: two small hyena-fused tests (order 3, L 77 and 2500).
sanitize() {
  local filter=${1:-'Ragged/GpuHyena.MatchesFloat64Reference/100:Ragged/GpuHyena.MatchesFloat64Reference/150'}
  local name=${2:-hyena}
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/gpu_test --gtest_filter="$filter" \
      > $OUT/sanitizer_${name}_$tool.log 2>&1
    echo "compute-sanitizer $tool ($name) rc=$? $(tail -1 $OUT/sanitizer_${name}_$tool.log)" | tee -a $LOG
  done
}
# bench_hyena_fused (hyena-fused alone) with VAR set to each of VALUES in turn, at D = 256 and
# 1024, two rounds, every run appended to $OUT/FILE under "--- LABEL value D d round r", then the
# summary lines to the log: env_ab LABEL VAR "VALUES" LENGTHS FILE TIMEOUT_S.
env_ab() {
  local label=$1 var=$2 values=$3 lens=$4 file=$OUT/$5 limit=$6 round v D
  for round in 1 2; do
    for v in $values; do
      for D in 256 1024; do
        echo "--- $label $v D $D round $round" | tee -a $file
        env $var=$v timeout $limit $B/bench_hyena_fused $lens $D fused 2>&1 | tee -a $file
      done
    done
  done
  grep -E "^---|fused " $file | tee -a $LOG
}
# The Hyena GPU tests (both impls) in 8 shards, log $OUT/gpu_test_hyena.log.
hyena_tests() {
  for i in $(seq 0 7); do
    GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 $B/gpu_test --gtest_filter='Ragged/GpuHyena.*' \
      > $OUT/shard$i.txt 2>&1 &
  done
  wait
  cat $OUT/shard*.txt > $OUT/gpu_test_hyena.log && rm -f $OUT/shard*.txt
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" $OUT/gpu_test_hyena.log | sort | uniq -c | tee -a $LOG
}
for stage in "$@"; do
  echo "=== stage $stage $(date -u +%T)" | tee -a $LOG
  case $stage in
    tests|fusedtests)
      filter=-GpuMemory.DriverSees*
      [ $stage = fusedtests ] && filter='Ragged/GpuHyena.*:GpuHyenaFused.*'
      for i in $(seq 0 7); do
        GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i $B/gpu_test --gtest_filter=$filter \
          > $OUT/shard$i.txt 2>&1 &
      done
      wait
      cat $OUT/shard*.txt > $OUT/gpu_test.log && rm -f $OUT/shard*.txt
      [ $stage = tests ] && $B/gpu_test --gtest_filter=GpuMemory.DriverSees* >> $OUT/gpu_test.log 2>&1
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |^hyena-fused|FAILED  \]" $OUT/gpu_test.log | sort | uniq -c | tee -a $LOG
      [ $stage = tests ] && sanitize
      ;;
    hyena)
      $B/longmix sweep --ops hyena --impls hyena-fused,hyena-cuda --lengths 4k..1M --out $OUT/hyena256 \
        --quiet 2>&1 | tail -5 | tee -a $LOG
      $B/longmix sweep --ops hyena --impls hyena-fused --filter cached --lengths 4k..1M --out $OUT/hyena256c \
        --quiet 2>&1 | tail -3 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 240 $PY bench/peers/peers.py --lengths 4k,8k,16k,32k,64k,128k,256k,512k,1M \
        --impls torch-hyena --scopes layer --l-max 1M --out $OUT/hyena256/peers.json 2>&1 | tail -3 | tee -a $LOG
      for f in $OUT/hyena256/results_hyena.csv $OUT/hyena256c/results_hyena.csv; do cut -d, -f1-3,9 $f | tee -a $LOG; done
      tar -C $OUT -czf $OUT/hyena256.tgz hyena256 hyena256c && rm -rf $OUT/hyena256 $OUT/hyena256c
      ;;
    profile)
      for L in 4k 128k; do
        timeout 200 ncu --graph-profiling node --metrics gpu__time_duration.sum,dram__bytes.sum \
          $B/longmix sweep --ops hyena --impls hyena-fused --lengths $L --warmup 1 --min-reps 1 --min-seconds 0 \
          --out /tmp/prof$L --quiet > $OUT/ncu_$L.txt 2>&1
        echo "ncu $L rc=$?" | tee -a $LOG
      done
      ;;
    detail)
      timeout 300 ncu --graph-profiling node --kernel-name-base demangled -k regex:'kernel<.*512' --launch-count 4 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
        --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis \
        $B/longmix sweep --ops hyena --impls hyena-fused --lengths ${DETAIL_L:-128k} --warmup 1 --min-reps 1 \
        --min-seconds 0 --out /tmp/detail --quiet > $OUT/ncu_detail.txt 2>&1
      echo "ncu detail rc=$?" | tee -a $LOG
      ;;
    sanitize)
      sanitize
      ;;
    fusedunit)
      $B/gpu_test --gtest_filter='GpuHyenaFused.*:GpuMemory.DriverSees*' > $OUT/gpu_test_fused.log 2>&1
      grep -E "^\[  (PASSED|FAILED) |^hyena-fused|FAILED  \]|OK \]" $OUT/gpu_test_fused.log | tee -a $LOG
      ;;
    flashown)
      $B/gpu_test --gtest_filter='Variants/GpuFlashOwn.*:Ragged/GpuAttention.*:GpuBadInput.*' > $OUT/gpu_test_flash.log 2>&1
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" $OUT/gpu_test_flash.log | sort | uniq -c | tee -a $LOG
      grep -B3 -A3 "Failure" $OUT/gpu_test_flash.log | head -40 | tee -a $LOG
      sanitize 'Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/0:Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/7' flash
      $B/bench_flash_own ${FLASH_L:-4096,16384,32768,131072} fp16 2>&1 | tee $OUT/bench_flash_own.txt | tee -a $LOG
      $B/bench_flash_own 16384,131072 bf16 2>&1 | tee -a $OUT/bench_flash_own.txt | tee -a $LOG
      for H in 4 16; do  # PyTorch's FlashAttention-2 and cuDNN backends, same call, core scope
        PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths 4k,16k,32k,128k --heads $H \
          --impls torch-sdpa-flash,torch-sdpa-cudnn --scopes core --out $OUT/peers_core_h$H.json 2>&1 | tail -12 | tee -a $LOG
      done
      ;;
    hyenacuda)
      hyena_tests
      grep -E "^hyena-cuda " $OUT/gpu_test_hyena.log | head -20 | tee -a $LOG
      grep -B3 -A3 "Failure" $OUT/gpu_test_hyena.log | head -30 | tee -a $LOG
      sanitize 'Ragged/GpuHyena.MatchesFloat64Reference/16:Ragged/GpuHyena.MatchesFloat64Reference/28' hyenacuda
      d=$OUT/hc256
      timeout 200 $B/longmix sweep --ops hyena --impls hyena-cuda,hyena-fused --lengths 4k..1M --out $d --quiet 2>&1 | tail -2 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths 4k,16k,32k,128k,1M --impls torch-hyena \
        --scopes layer --l-max 1M --out $d/peers.json 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-3,9,22,23 $d/results_hyena.csv | tee -a $LOG
      timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum \
        $B/longmix sweep --ops hyena --impls hyena-cuda --lengths 128k --warmup 1 --min-reps 1 --min-seconds 0 \
        --no-check --out /tmp/profhc --quiet > $OUT/ncu_hyena_cuda_128k.txt 2>&1
      echo "ncu hyena-cuda rc=$?" | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
    sanitizehc)
      sanitize 'Ragged/GpuHyena.MatchesFloat64Reference/16:Ragged/GpuHyena.MatchesFloat64Reference/28' hyenacuda
      ;;
    glue)
      d=$OUT/glue
      timeout 200 $B/longmix sweep --ops flash --impls flash-cudnn --lengths 4k..128k --heads 16 --out $d/d1024 --quiet 2>&1 | tail -1 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths 4k,8k,16k,32k,64k,128k --heads 16 \
        --impls torch-sdpa-flash,torch-sdpa-cudnn --scopes layer --out $d/d1024/peers.json 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-3,9 $d/d1024/results_flash.csv | tee -a $LOG
      timeout 100 $B/longmix sweep --ops flash --impls flash-cudnn,flash-own --scope core --lengths 16k,128k --out $d/core256 --quiet 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-4,9,10,21,22 $d/core256/results_flash.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
    flashquick)  # the flash-own tests and the d = 64 variant benchmark only
      timeout 300 $B/gpu_test --gtest_filter='Variants/GpuFlashOwn.*' > $OUT/gpu_test_flash.log 2>&1
      echo "flash-own tests rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" $OUT/gpu_test_flash.log | sort | uniq -c | tee -a $LOG
      grep -B3 -A3 "Failure" $OUT/gpu_test_flash.log | head -40 | tee -a $LOG
      timeout 200 $B/bench_flash_own ${FLASH_BENCH_L:-4096,16384,32768,131072} fp16 d64 2>&1 | tee $OUT/bench_flash_own.txt | tee -a $LOG
      ;;
    overlap)  # the filter's path on a second stream against the serial order (LONGMIX_FUSED_OVERLAP), same binary, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFusedOptionsFromEnv.*' > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |overlap|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      hyena_tests
      for round in 1 2; do
        for ov in off on; do
          for D in 256 1024; do
            echo "--- overlap $ov D $D round $round" | tee -a $OUT/overlap.txt
            LONGMIX_FUSED_OVERLAP=$ov timeout 120 $B/bench_hyena_fused ${OVERLAP_L:-4096,8192,16384,32768,65536,131072} $D fused \
              2>&1 | tee -a $OUT/overlap.txt
          done
        done
      done
      grep -E "^---|fused " $OUT/overlap.txt | tee -a $LOG
      timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gpu_test \
        --gtest_filter='GpuHyenaFused.OverlappedFilterPathMatchesTheSerialOne' > $OUT/sanitizer_overlap_memcheck.log 2>&1
      echo "compute-sanitizer memcheck (overlap) rc=$? $(tail -1 $OUT/sanitizer_overlap_memcheck.log)" | tee -a $LOG
      ;;
    access)  # the column passes' 8-row accesses against the scalar ones, same binary, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFusedOptionsFromEnv.*:GpuFillUniform.*:*FlashOwnTune*' \
        > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |8-row|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      # the Hyena GPU tests with the 8-row accesses (R % 8 == 0 at L = 1000 and its 40 cases)
      LONGMIX_FUSED_ACCESS=vec8 hyena_tests
      # hyena-fused, L = 1000 (R = 16: the 8-row path), D = 256: order 2 bf16 and order 3 fp16
      LONGMIX_FUSED_ACCESS=vec8 sanitize \
        'Ragged/GpuHyena.MatchesFloat64Reference/137:Ragged/GpuHyena.MatchesFloat64Reference/140' access
      for round in 1 2; do
        # the packed variants are vec8 builds with other register bounds: run them with vec8
        runs=("env LONGMIX_FUSED_ACCESS=vec8 $B/bench_hyena_fused" "$B/bench_hyena_fused")
        for v in $B/bench_hyena_fused_*; do [ -x "$v" ] && runs+=("env LONGMIX_FUSED_ACCESS=vec8 $v"); done
        for run in "${runs[@]}"; do
          echo "--- ${run//$B\//} round $round" | tee -a $OUT/access.txt
          timeout 150 $run ${ACCESS_L:-4096,32768,131072,1048576} 256 fused 2>&1 | tee -a $OUT/access.txt
          timeout 100 $run ${ACCESS_L1024:-16384,131072} 1024 fused 2>&1 | tee -a $OUT/access.txt
        done
        for acc in vec8 scalar; do  # the tensor-core columns (N1 = 512 only)
          echo "--- tensor columns, access $acc, round $round" | tee -a $OUT/access.txt
          LONGMIX_FUSED_COL=tensor LONGMIX_FUSED_ACCESS=$acc timeout 60 $B/bench_hyena_fused 131072 256 fused 2>&1 | tee -a $OUT/access.txt
        done
      done
      grep -E "^---|fused " $OUT/access.txt | tee -a $LOG
      LONGMIX_FUSED_ACCESS=vec8 ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_access_vec8.txt
      ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_access_scalar.txt
      tar -C $OUT -czf $OUT/ncu_access.tgz ncu_access_vec8.txt ncu_access_scalar.txt && rm -f $OUT/ncu_access_*.txt
      ;;
    access2)  # v15 (signal pass access, the N1 = 1024 bound, the 8-row cut), same binary, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFusedOptionsFromEnv.*:HyenaFusedVec8Choice.*' \
        > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |vs scalar|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      hyena_tests
      f='Ragged/GpuHyena.MatchesFloat64Reference/137:Ragged/GpuHyena.MatchesFloat64Reference/140'
      LONGMIX_FUSED_ACCESS=vec8 LONGMIX_FUSED_SIGNAL_ACCESS=scalar timeout 300 compute-sanitizer --tool memcheck \
        --error-exitcode 9 $B/gpu_test --gtest_filter="$f" > $OUT/sanitizer_mixed_memcheck.log 2>&1
      echo "memcheck (mixed) rc=$? $(tail -1 $OUT/sanitizer_mixed_memcheck.log)" | tee -a $LOG
      LONGMIX_FUSED_ACCESS=vec8 timeout 300 compute-sanitizer --tool racecheck --kernel-name-exclude kns=nvjet \
        --error-exitcode 9 $B/gpu_test --gtest_filter="$f" > $OUT/sanitizer_vec8_racecheck.log 2>&1
      echo "racecheck (vec8, no nvjet) rc=$? $(tail -1 $OUT/sanitizer_vec8_racecheck.log)" | tee -a $LOG
      big256=${ACCESS2_L_BIG:-131072,524288,1048576} big1024=${ACCESS2_L1024_BIG:-16384,131072,1048576}
      small256=${ACCESS2_L_SMALL:-4096,8192,16384,32768} small1024=${ACCESS2_L1024_SMALL:-4096,8192}
      ab() {  # LABEL LENGTHS D ENV... : one bench_hyena_fused run
        local label=$1 lens=$2 D=$3; shift 3
        echo "--- $label D $D round $round" | tee -a $OUT/access2.txt
        timeout 150 env "$@" $BIN $lens $D fused 2>&1 | tee -a $OUT/access2.txt
      }
      for round in 1 2; do
        BIN=$B/bench_hyena_fused
        ab default $big256 256 X=1; ab default $big1024 1024 X=1
        ab signal-scalar $big256 256 LONGMIX_FUSED_SIGNAL_ACCESS=scalar
        ab signal-scalar $big1024 1024 LONGMIX_FUSED_SIGNAL_ACCESS=scalar
        ab scalar $big256 256 LONGMIX_FUSED_ACCESS=scalar; ab scalar $big1024 1024 LONGMIX_FUSED_ACCESS=scalar
        ab default $small256 256 X=1; ab default $small1024 1024 X=1
        ab vec8 $small256 256 LONGMIX_FUSED_ACCESS=vec8; ab vec8 $small1024 1024 LONGMIX_FUSED_ACCESS=vec8
        ab vec8-signal-scalar $small256 256 LONGMIX_FUSED_ACCESS=vec8 LONGMIX_FUSED_SIGNAL_ACCESS=scalar
        ab vec8-signal-scalar $small1024 1024 LONGMIX_FUSED_ACCESS=vec8 LONGMIX_FUSED_SIGNAL_ACCESS=scalar
        for v in $B/bench_hyena_fused_*; do  # the packed variants (other bounds), 8-row forced
          [ -x "$v" ] || continue
          BIN=$v
          ab "$(basename $v)" 524288,1048576 256 LONGMIX_FUSED_ACCESS=vec8
          ab "$(basename $v)" 1048576 1024 LONGMIX_FUSED_ACCESS=vec8
        done
      done
      grep -E "^---|fused " $OUT/access2.txt > $OUT/access2_short.txt
      ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_v15_default.txt
      LONGMIX_FUSED_SIGNAL_ACCESS=scalar ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_v15_signal_scalar.txt
      for acc in vec8 scalar; do  # the four FFT passes' stall reasons, the signal's pass A either way
        LONGMIX_FUSED_SIGNAL_ACCESS=$acc ncu_fused_passes $OUT/ncu_v15_passes_signal_$acc.txt --section SpeedOfLight \
          --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis
      done
      tar -C $OUT -czf $OUT/ncu_access2.tgz ncu_v15_*.txt && rm -f $OUT/ncu_v15_*.txt
      ;;
    taps)  # v16 (shuffled taps) against v15 and the packed variants, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFusedOptionsFromEnv.*:HyenaFusedVec8Choice.*' \
        > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |vs scalar|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      export LONGMIX_FUSED_ACCESS=vec8 && hyena_tests; unset LONGMIX_FUSED_ACCESS
      f='Ragged/GpuHyena.MatchesFloat64Reference/137:Ragged/GpuHyena.MatchesFloat64Reference/140'
      LONGMIX_FUSED_ACCESS=vec8 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gpu_test \
        --gtest_filter="$f" > $OUT/sanitizer_taps_memcheck.log 2>&1
      echo "memcheck (vec8) rc=$? $(tail -1 $OUT/sanitizer_taps_memcheck.log)" | tee -a $LOG
      LONGMIX_FUSED_ACCESS=vec8 timeout 300 compute-sanitizer --tool racecheck --kernel-name kns=vec8 --error-exitcode 9 \
        $B/gpu_test --gtest_filter="$f" > $OUT/sanitizer_taps_racecheck.log 2>&1
      echo "racecheck (vec8 kernels) rc=$? $(tail -1 $OUT/sanitizer_taps_racecheck.log)" | tee -a $LOG
      ab() {  # LABEL LENGTHS D ENV... : one bench_hyena_fused run of $BIN
        local label=$1 lens=$2 D=$3; shift 3
        echo "--- $label D $D round $round" | tee -a $OUT/taps.txt
        timeout 150 env "$@" $BIN $lens $D fused 2>&1 | tee -a $OUT/taps.txt
      }
      for round in 1 2; do
        for BIN in $B/bench_hyena_fused $B/bench_hyena_fused_*; do
          [ -x "$BIN" ] || continue
          n=$(basename $BIN)
          for sig in auto scalar; do
            ab "$n signal $sig" ${TAPS_L:-32768,131072,524288,1048576} 256 LONGMIX_FUSED_ACCESS=vec8 LONGMIX_FUSED_SIGNAL_ACCESS=$sig
            ab "$n signal $sig" ${TAPS_L1024:-16384,131072} 1024 LONGMIX_FUSED_ACCESS=vec8 LONGMIX_FUSED_SIGNAL_ACCESS=$sig
          done
        done
        BIN=$B/bench_hyena_fused
        if [ -n "${TAPS_FULL:-}" ]; then  # the 8-row cut below 2^24 again
          ab "v16 default" 4096,8192,16384 256 X=1; ab "v16 default" 4096,8192 1024 X=1
          ab "v16 vec8" 4096,8192,16384 256 LONGMIX_FUSED_ACCESS=vec8; ab "v16 vec8" 4096,8192 1024 LONGMIX_FUSED_ACCESS=vec8
        fi
        for BIN in $B/bench_hyena_fused $B/bench_hyena_fused_v15; do ab "$(basename $BIN) default" 1048576 1024 X=1; done
      done
      grep -E "^---|fused " $OUT/taps.txt > $OUT/taps_short.txt
      ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_v16_default.txt
      [ -n "${TAPS_FULL:-}" ] && LONGMIX_FUSED_SIGNAL_ACCESS=vec8 ncu_fused_passes $OUT/ncu_v16_passes.txt \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis
      (cd $OUT && tar -czf taps.tgz taps.txt gpu_test_fused.log gpu_test_hyena.log sanitizer_taps_*.log ncu_v16_*.txt \
        && rm -f taps.txt gpu_test_fused.log gpu_test_hyena.log sanitizer_taps_*.log ncu_v16_*.txt)
      ;;
    v17)  # the signal's 8-row pass A (v17's own 64-register kernel at N1 = 512, since reverted: now
          # the shared 8-row kernel) against the scalar one, same call, two rounds; the 8-row tests at N1 = 1024; an unfiltered
          # racecheck of the 8-row kernels; the persistent flash kernels beside the launched ones at
          # 32k-128k (the tuner's v4c question), two rounds; logs in v17.tgz
      (command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage $B/bench_hyena_fused 2>&1 | \
        grep -A1 -E 'Function .*col_fwd.*Li512E' | grep -oE 'Function [^ :]*|REG:[0-9]+|STACK:[0-9]+' | paste - - - \
        > $OUT/regs_col_fwd_512.txt; cat $OUT/regs_col_fwd_512.txt | tee -a $LOG)
      timeout 360 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFused*:FlashOwnTuneFinalists.*:GpuFlashOwnTune.*' \
        > $OUT/gpu_test_v17.log 2>&1
      echo "GpuHyenaFused and tuner tests rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |L=(516000|1031000).*vs scalar|FAILED  \]|Failure|Expected" $OUT/gpu_test_v17.log | tee -a $LOG
      f='Ragged/GpuHyena.MatchesFloat64Reference/137:Ragged/GpuHyena.MatchesFloat64Reference/140'
      LONGMIX_FUSED_ACCESS=vec8 timeout ${V17_RACECHECK_S:-150} compute-sanitizer --tool racecheck --error-exitcode 9 $B/gpu_test \
        --gtest_filter="$f" > $OUT/sanitizer_v17_racecheck.log 2>&1
      echo "racecheck (vec8, unfiltered) rc=$? $(grep -c 'Race reported' $OUT/sanitizer_v17_racecheck.log) races; $(tail -1 $OUT/sanitizer_v17_racecheck.log)" | tee -a $LOG
      grep -oE 'in function [^ ]+|Race reported between [^$]*' $OUT/sanitizer_v17_racecheck.log | sort | uniq -c | head -20 | tee -a $LOG
      ab() {  # LABEL LENGTHS D ENV... : one bench_hyena_fused run of $BIN
        local label=$1 lens=$2 D=$3; shift 3
        echo "--- $label D $D round $round" | tee -a $OUT/v17.txt
        timeout 150 env "$@" $BIN $lens $D fused 2>&1 | tee -a $OUT/v17.txt
      }
      for round in 1 2; do
        for BIN in $B/bench_hyena_fused ${V17_BINS:-}; do
          [ -x "$BIN" ] || continue
          for sig in scalar vec8; do
            ab "$(basename $BIN) signal $sig" ${V17_L:-131072,262144} 256 LONGMIX_FUSED_SIGNAL_ACCESS=$sig
            ab "$(basename $BIN) signal $sig" ${V17_L1024:-131072} 1024 LONGMIX_FUSED_SIGNAL_ACCESS=$sig
          done
        done
        timeout 200 $B/bench_flash_own ${V17_FLASH_L:-32768,65536,131072} fp16 d64 \
          flash-cudnn,ws-128x128,ws-128x128-pp,ws-128x128-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist,ws-128x128-pp-persist-lpt \
          2>&1 | sed "s/^/round $round /" | tee -a $OUT/v17_flash.txt | tee -a $LOG
      done
      grep -E "^---|fused " $OUT/v17.txt | tee $OUT/v17_short.txt | tee -a $LOG
      LONGMIX_FUSED_SIGNAL_ACCESS=vec8 ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_v17_signal_vec8.txt
      (cd $OUT && tar -czf v17.tgz v17.txt v17_flash.txt gpu_test_v17.log sanitizer_v17_*.log ncu_v17_*.txt \
        && rm -f v17.txt gpu_test_v17.log sanitizer_v17_*.log ncu_v17_*.txt)
      ;;
    rowpairs)  # v18: pass B's cuFFTDx rows with 1, 2 and 4 row pairs a block (LONGMIX_FUSED_ROW_PAIRS), same
               # binary, same call, two rounds; the tests with each forced; sanitizers on two small cases
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFused*' > $OUT/gpu_test_rowpairs.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |vs one pair|FAILED  \]|Failure" $OUT/gpu_test_rowpairs.log | tee -a $LOG
      for n in 2 4; do
        export LONGMIX_FUSED_ROW_PAIRS=$n && hyena_tests && mv $OUT/gpu_test_hyena.log $OUT/gpu_test_hyena_rowpairs$n.log
        f='Ragged/GpuHyena.MatchesFloat64Reference/100:Ragged/GpuHyena.MatchesFloat64Reference/150'
        for tool in memcheck racecheck; do
          timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $B/gpu_test --gtest_filter="$f" \
            > $OUT/sanitizer_rowpairs${n}_$tool.log 2>&1
          echo "$tool (row pairs $n) rc=$? $(tail -1 $OUT/sanitizer_rowpairs${n}_$tool.log)" | tee -a $LOG
        done
        unset LONGMIX_FUSED_ROW_PAIRS
      done
      env_ab "row pairs" LONGMIX_FUSED_ROW_PAIRS "1 2 4" ${ROWPAIRS_L:-4096,8192,16384,32768} rowpairs.txt 150
      for n in 1 2 4; do
        LONGMIX_FUSED_ROW_PAIRS=$n ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_4k_rowpairs$n.txt 4096
      done
      (cd $OUT && tar -czf rowpairs.tgz rowpairs.txt gpu_test_rowpairs.log gpu_test_hyena_rowpairs*.log \
        sanitizer_rowpairs*.log ncu_4k_rowpairs*.txt && rm -f rowpairs.txt gpu_test_rowpairs.log \
        gpu_test_hyena_rowpairs*.log sanitizer_rowpairs*.log ncu_4k_rowpairs*.txt)
      ;;
    persist)  # the flash-own tests, sanitizers, and the persistent grid against the launched one (two rounds)
      timeout 240 $B/gpu_test --gtest_filter='Variants/GpuFlashOwn.*' > $OUT/gpu_test_flash.log 2>&1
      echo "flash-own tests rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" $OUT/gpu_test_flash.log | sort | uniq -c | tee -a $LOG
      grep -B3 -A3 "Failure" $OUT/gpu_test_flash.log | head -40 | tee -a $LOG
      sanitize 'Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/0:Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/7' flash
      for round in 1 2; do
        order=forward; [ $round = 2 ] && order=reverse  # the second round in the other order
        timeout 200 $B/bench_flash_own ${FLASH_BENCH_L:-4096,8192,16384,32768,131072} fp16 all \
          ${PERSIST_IMPLS:-flash-cudnn,ws-128x128,ws-128x128-pp,ws-128x128-pp-split,ws-128x128-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist,ws-128x128-pp-persist-lpt} \
          $order 2>&1 | sed "s/^/round $round ($order) /" | tee -a $OUT/bench_flash_persist.txt | tee -a $LOG
      done
      ;;
    flashbench)  # every shape; the SM clock and power sampled every 100 ms alongside
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 > $OUT/clocks.csv &
      smi=$!
      timeout 300 $B/bench_flash_own ${FLASH_BENCH_L:-4096,8192,16384,32768,131072} fp16 ${FLASH_BENCH_SHAPES:-all} 2>&1 | \
        while IFS= read -r line; do echo "$(date -u +%T.%N | cut -c1-12) $line"; done | tee $OUT/bench_flash_own_all.txt | tee -a $LOG
      kill $smi
      ;;
    flashinter)  # the variant benchmark interleaved call by call against the fixed orders (NOTES Next 6a)
      for order in interleaved forward reverse interleaved; do
        timeout 200 $B/bench_flash_own ${FLASH_INTER_L:-32768,65536,131072} fp16 d64 all $order 2>&1 | \
          sed "s/^/$order /" | tee -a $OUT/bench_flash_interleaved.txt | tee -a $LOG
      done
      ;;
    tunecheck)  # tuner v4e (finalists in shuffled turns): its GPU tests, two flash sweeps at D = 1024, the
      # shuffled variant benchmark in the same call (bench/NOTES.md flash-own Next 8)
      timeout 120 $B/gpu_test --gtest_filter='*Tune*:*FlashOwnPersist*' 2>&1 | tail -3 | tee -a $LOG
      for r in 1 2; do
        timeout 150 $B/longmix sweep --ops flash --heads 16 --lengths ${TUNE_L:-32k,64k,128k} --out $OUT/tune$r \
          --quiet --no-report 2>&1 | tail -1 | tee -a $LOG
        cut -d, -f1,2,9,23 $OUT/tune$r/results_flash.csv | sed "s/^/sweep $r /" | tee -a $LOG
      done
      timeout 200 $B/bench_flash_own 32768,65536,131072 fp16 d64h16 \
        flash-cudnn,ws-128x128,ws-128x128-pp,ws-128x128-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist,ws-128x128-pp-persist-lpt \
        interleaved 2>&1 | tee -a $OUT/bench_flash_tunecheck.txt | tee -a $LOG
      (cd $OUT && tar -czf tunecheck.tgz tune1 tune2 && rm -rf tune1 tune2)
      ;;
    tunelayout)  # tuner v4f (tuned on the calls' q, k, v layout): the tuner's GPU tests, the shuffled
      # variant benchmark with q, k, v separate (core scope) and packed (the layer's qkv), and two
      # layer-scope flash sweeps at D = 1024 ($TUNE_L, 32k-128k), in one call
      timeout 120 $B/gpu_test --gtest_filter='*Tune*' 2>&1 | tail -3 | tee -a $LOG
      for layout in separate packed; do
        timeout 200 $B/bench_flash_own ${TUNE_BENCH_L:-32768,65536,131072} fp16 ${TUNE_SHAPES:-d64} \
          flash-cudnn,ws-128x128,ws-128x128-pp,ws-128x128-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist,ws-128x128-pp-persist-lpt \
          interleaved $layout 2>&1 | tee -a $OUT/bench_flash_layout.txt | tee -a $LOG
      done
      for r in 1 2; do
        timeout 150 $B/longmix sweep --ops flash --heads 16 --lengths ${TUNE_L:-32k,64k,128k} --out $OUT/tune$r \
          --quiet --no-report 2>&1 | tail -1 | tee -a $LOG
        cut -d, -f1,2,9,23 $OUT/tune$r/results_flash.csv | sed "s/^/sweep $r /" | tee -a $LOG
      done
      (cd $OUT && tar -czf tunelayout.tgz tune1 tune2 && rm -rf tune1 tune2)
      ;;
    flashpairs)  # each of $PAIRS_VARIANTS forced (LONGMIX_FLASH_VARIANT) in the sweep's turns with cuDNN, D = 1024
      # (layer), $PAIRS_L (64k, 128k), two rounds; then the tuner's own pick twice (v4g's screening)
      for r in 1 2; do
        for v in ${PAIRS_VARIANTS:-ws-128x128 ws-128x128-persist ws-128x128-persist-lpt} tuner; do
          env $( [ $v = tuner ] || echo LONGMIX_FLASH_VARIANT=$v ) timeout 150 $B/longmix sweep --ops flash --heads 16 \
            --lengths ${PAIRS_L:-64k,128k} --out $OUT/pairs_${v}_$r --quiet --no-report 2>&1 | tail -1 | tee -a $LOG
          cut -d, -f1,2,9,23 $OUT/pairs_${v}_$r/results_flash.csv | sed "s/^/$v round $r /" | tee -a $OUT/flashpairs.txt | tee -a $LOG
        done
      done
      (cd $OUT && tar -czf flashpairs.tgz pairs_* && rm -rf pairs_*)
      ;;
    lptgroup)  # v4d: -lpt longest-first within groups of heads that fit half the L2, against all heads at once
      timeout 200 $B/gpu_test --gtest_filter='*FlashOwn*' 2>&1 | tail -3 | tee -a $LOG
      sanitize 'Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/0:Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/7' flash
      for L in 16384 32768 65536; do
        for g in all l2; do
          env_g="LONGMIX_FLASH_LPT_GROUP=$g"
          env $env_g timeout 100 ncu --launch-skip 3 --launch-count 1 \
            --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes.sum \
            $B/bench_flash_own $L fp16 d64h16 ws-128x128-persist-lpt > $OUT/ncu_lpt_${L}_$g.txt 2>&1
          echo "ncu lpt $L group=$g rc=$? $(grep -E 'gpu__time_duration.sum|lts__t_sector_hit_rate|dram__bytes.sum' $OUT/ncu_lpt_${L}_$g.txt | tr -s ' ' | tr '\n' ';')" | tee -a $LOG
        done
      done
      for round in 1 2; do
        for g in all l2; do
          env_g="LONGMIX_FLASH_LPT_GROUP=$g"
          env $env_g timeout 150 $B/bench_flash_own ${LPT_L:-4096,16384,32768,65536} fp16 d64 \
            flash-cudnn,ws-128x128-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist-lpt interleaved 2>&1 | \
            sed "s/^/round $round group=$g /" | tee -a $OUT/bench_flash_lpt.txt | tee -a $LOG
        done
      done
      (cd $OUT && tar -czf lptgroup.tgz ncu_lpt_*.txt sanitizer_flash_*.log && rm -f ncu_lpt_*.txt sanitizer_flash_*.log)
      ;;
    flashpersistncu)  # the persistent kernels' outliers (bench/NOTES.md flash-own Next 4): one launch each of
      # the slow and the fast case at H = 16 (-persist at 64k and 128k, ws-128x128 at 64k, cuDNN at 64k):
      # time, SM activity spread, L2 hit rate, DRAM bytes; the variant benchmark alongside, two rounds
      for run in "65536 ws-128x128-persist" "131072 ws-128x128-persist" "65536 ws-128x128" "65536 flash-cudnn" \
                 "65536 ws-128x128-pp-persist-lpt"; do
        set -- $run
        timeout 200 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section LaunchStats \
          --section Occupancy --section MemoryWorkloadAnalysis --section WorkloadDistribution \
          --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes.sum,sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg \
          $B/bench_flash_own $1 fp16 d64h16 $2 > $OUT/ncu_persist_$1_$2.txt 2>&1
        echo "ncu $1 $2 rc=$? $(grep -m1 'gpu__time_duration.sum' $OUT/ncu_persist_$1_$2.txt)" | tee -a $LOG
      done
      for round in 1 2; do
        order=forward; [ $round = 2 ] && order=reverse  # the second round in the other order
        timeout 200 $B/bench_flash_own 65536,131072 fp16 d64 \
          flash-cudnn,ws-128x128,ws-128x128-pp,ws-128x128-pp-split,ws-128x128-persist,ws-128x128-pp-persist,ws-128x128-persist-lpt,ws-128x128-pp-persist-lpt \
          $order 2>&1 | sed "s/^/round $round ($order) /" | tee -a $OUT/bench_flash_persist.txt | tee -a $LOG
      done
      tar -C $OUT -czf $OUT/ncu_persist.tgz $(cd $OUT && ls ncu_persist_*.txt) && rm -f $OUT/ncu_persist_*.txt
      ;;
    flashncu)
      for impl in ${FLASH_NCU_IMPLS:-ws-128x128-pp-e4 flash-cudnn}; do
        timeout 200 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section LaunchStats \
          --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
          --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active' \
          $B/bench_flash_own ${FLASH_NCU_L:-32768} fp16 ${FLASH_NCU_SHAPE:-d64h4} $impl > $OUT/ncu_flash_$impl.txt 2>&1
        echo "ncu $impl rc=$?" | tee -a $LOG
      done
      ;;
    fusedbench)  # bench_hyena_fused (hyena-fused recompute/cached, hyena-cuda), ncu kernel times of one
                 # forward at 128k (D = 256) and the sections of its FFT-pass kernels
      timeout 300 $B/bench_hyena_fused ${FUSED_BENCH_L:-4096,131072,1048576} ${FUSED_BENCH_D:-256} 2>&1 | \
        tee $OUT/bench_hyena_fused.txt | tee -a $LOG
      ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_fused.txt
      ncu_fused_passes $OUT/ncu_fused_detail.txt --section SpeedOfLight --section Occupancy --section WarpStateStats \
        --section LaunchStats --section MemoryWorkloadAnalysis --section SchedulerStats --section InstructionStats
      ;;
    fusedsmem)  # the FFT-pass kernels at 128k (D = 256): shared-memory and L1 tables (bank conflicts,
                # wavefronts), warp stalls and source counters (top stall locations)
      ncu_fused_passes $OUT/ncu_fused_smem.txt --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
        --section SourceCounters
      ;;
    fusedab)  # this build's bench_hyena_fused against the earlier ones packed beside it, in one call
      for round in 1 2; do
        # this build also with LONGMIX_GEMM_TUNE=0 (the heuristic's first GEMM choices)
        for run in "$B/bench_hyena_fused" "env LONGMIX_GEMM_TUNE=0 $B/bench_hyena_fused" $B/bench_hyena_fused_*; do
          echo "--- ${run//$B\//} round $round" | tee -a $OUT/fusedab.txt
          timeout 200 $run ${FUSED_BENCH_L:-4096,131072,1048576} 256 fused 2>&1 | tee -a $OUT/fusedab.txt
          timeout 200 $run ${FUSED_AB_L1024:-131072,1048576} 1024 fused 2>&1 | tee -a $OUT/fusedab.txt
        done
      done
      grep -E "^---|fused " $OUT/fusedab.txt | tee -a $LOG
      for bin in $B/bench_hyena_fused $B/bench_hyena_fused_*; do
        ncu_fused_forward $bin $OUT/ncu_ab_$(basename $bin).txt
        ncu_fused_forward $bin $OUT/ncu_ab_4k_$(basename $bin).txt 4096
      done
      tar -C $OUT -czf $OUT/ncu_ab.tgz $(cd $OUT && ls ncu_ab_*.txt) && rm -f $OUT/ncu_ab_*.txt
      ;;
    stage)  # v21: time rows staged by cp.async (LONGMIX_FUSED_STAGE=off|signal|on; off is the
            # default until this has run), same binary, same call, two rounds; the GpuHyenaFused tests (staged against
            # global bit for bit), the Hyena GPU tests staged; memcheck and racecheck on
            # the short staged test; ncu kernel times at 128k of both; the column kernels' registers
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*:HyenaFused*' > $OUT/gpu_test_stage.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |staged vs|FAILED  \]|Failure" $OUT/gpu_test_stage.log | tee -a $LOG
      LONGMIX_FUSED_STAGE=on hyena_tests
      sanitize 'GpuHyenaFused.StagedShortConvRowsMatchTheGlobalOnesShort' staged
      env_ab stage LONGMIX_FUSED_STAGE "off signal on" ${STAGE_L:-4096,65536,131072,1048576} stage.txt 200
      for v in off on; do
        LONGMIX_FUSED_STAGE=$v ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_128k_stage_$v.txt
      done
      (command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage $B/bench_hyena_fused 2>&1 | \
        grep -A1 -E "col_(fwd|inv)" > $OUT/regs_col_v21.txt)
      (cd $OUT && tar -czf stage_v21.tgz stage.txt gpu_test_stage.log gpu_test_hyena.log sanitizer_staged_*.log \
        ncu_128k_stage_*.txt regs_col_v21.txt 2>/dev/null && rm -f stage.txt gpu_test_stage.log gpu_test_hyena.log \
        sanitizer_staged_*.log ncu_128k_stage_*.txt regs_col_v21.txt)
      ;;
    gemmenum)  # v20: the projections' GEMM tuning over the heuristic's candidates (LONGMIX_GEMM_TUNE=1,
               # the default) and also over every configuration cuBLASLt enumerates (=enumerate),
               # same binary, same call, two rounds, the choices logged; its GPU test; ncu at 128k
      timeout 120 $B/gpu_test --gtest_filter='GpuGemmTune.*:HyenaFusedOptionsFromEnv.*' 2>&1 | \
        tee $OUT/gpu_test_gemm.log | grep -E "gemm_tune_cuda|PASSED|FAILED|Failure" | tee -a $LOG
      for round in 1 2; do
        for m in 1 enumerate; do
          echo "--- LONGMIX_GEMM_TUNE=$m round $round" | tee -a $OUT/gemmenum.txt
          LONGMIX_GEMM_TUNE=$m LONGMIX_LOG_GEMM_TUNE=1 timeout 200 $B/bench_hyena_fused \
            ${GEMMENUM_L:-4096,16384,131072,1048576} 256 fused 2>&1 | tee -a $OUT/gemmenum.txt
          LONGMIX_GEMM_TUNE=$m LONGMIX_LOG_GEMM_TUNE=1 timeout 200 $B/bench_hyena_fused \
            ${GEMMENUM_L1024:-4096,16384,131072,1048576} 1024 fused 2>&1 | tee -a $OUT/gemmenum.txt
        done
      done
      grep -E "^---|fused |candidate" $OUT/gemmenum.txt | tee -a $LOG
      ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_gemmenum_1.txt
      LONGMIX_GEMM_TUNE=enumerate NCU_SKIP=2500 ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_gemmenum_enumerate.txt
      ;;
    fusedquick)  # hyena-fused and hyena-cuda at 4k, 128k, 1M (D = 256), no peers
      timeout 300 $B/longmix sweep --ops hyena --impls hyena-fused,hyena-cuda --lengths ${FUSED_L:-4k,128k,1M} \
        --out /tmp/fq --quiet 2>&1 | tail -2 | tee -a $LOG
      cut -d, -f1-3,9,22 /tmp/fq/results_hyena.csv | tee -a $LOG
      cp /tmp/fq/results_hyena.csv $OUT/fusedquick_results_hyena.csv
      ;;
    targets)  # the issues' target lengths only, D = 256, peers in the same call (~2–3 min): Hyena
      # (both impls, l_max 1M) at 4k, 16k, 128k, 1M with the reference Hyena; flash (every impl) at
      # 4k, 16k, 128k with PyTorch's flash and cuDNN SDPA; one folder each in targets.tgz
      timeout 200 $B/longmix sweep --ops hyena --lengths 4k,16k,128k,1M --out $OUT/t_hyena --quiet 2>&1 | tail -2 | tee -a $LOG
      timeout 150 $B/longmix sweep --ops flash --lengths 4k,16k,128k --out $OUT/t_flash --quiet 2>&1 | tail -2 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 120 $PY bench/peers/peers.py --lengths 4k,16k,128k,1M --impls torch-hyena \
        --scopes layer --l-max 1M --out $OUT/t_hyena/peers.json 2>&1 | tail -1 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 90 $PY bench/peers/peers.py --lengths 4k,16k,128k --impls torch-sdpa-flash,torch-sdpa-cudnn \
        --scopes layer --out $OUT/t_flash/peers.json 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-3,9,22 $OUT/t_hyena/results_hyena.csv $OUT/t_flash/results_flash.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz t_hyena t_flash && rm -rf $OUT/t_hyena $OUT/t_flash
      ;;
    hyenatests)  # the Hyena GPU tests alone (both impls), 8 shards
      hyena_tests
      ;;
    fusedsplit)  # the FFT split forced wide (N2 = 2·N1) or tall (N1 = 2·N2), same binary, same call
      env_ab split LONGMIX_FUSED_SPLIT "wide tall" ${FUSED_SPLIT_L:-4096,8192,16384,32768} fusedsplit.txt 120
      export LONGMIX_FUSED_SPLIT=tall && hyena_tests; unset LONGMIX_FUSED_SPLIT
      mv $OUT/gpu_test_hyena.log $OUT/gpu_test_hyena_tall.log
      ;;
    rowtc)  # pass B's row FFTs: tensor cores against cuFFTDx, same binary, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*' > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |^hyena-fused|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      for round in 1 2; do
        for row in cufftdx auto direct; do
          for D in 256 1024; do
            echo "--- rows $row D $D round $round" | tee -a $OUT/rowtc.txt
            LONGMIX_FUSED_ROW=$row timeout 120 $B/bench_hyena_fused ${ROWTC_L:-65536,131072} $D fused \
              2>&1 | tee -a $OUT/rowtc.txt
          done
        done
      done
      grep -E "^---|fused " $OUT/rowtc.txt | tee -a $LOG
      for row in cufftdx auto direct; do
        LONGMIX_FUSED_ROW=$row ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_rowtc_$row.txt
      done
      for row in auto direct; do  # staged (cp.async) and direct rows
        for tool in memcheck racecheck; do
          # bench_hyena_fused runs hyena-fused alone (racecheck fails inside hyena-cuda's cuFFT kernels:
          # "failed to handle a hardware exception"); L = 40000 and 100000 are ragged and full N2 = 512 rows
          LONGMIX_FUSED_ROW=$row timeout 240 compute-sanitizer --tool $tool --kernel-name kns=row_tc --error-exitcode 9 \
            $B/bench_hyena_fused 40000,100000 64 fused > $OUT/sanitizer_rowtc_${row}_$tool.log 2>&1
          echo "compute-sanitizer $tool (row_tc, rows $row) rc=$? $(tail -1 $OUT/sanitizer_rowtc_${row}_$tool.log)" | tee -a $LOG
        done
        grep -m 20 -B2 -A12 "Error\|Warning\|hazard" $OUT/sanitizer_rowtc_${row}_racecheck.log | head -40 >> $LOG
      done
      tar -C $OUT -czf $OUT/rowtc_logs.tgz $(cd $OUT && ls sanitizer_rowtc_*.log ncu_rowtc_*.txt) && \
        rm -f $OUT/sanitizer_rowtc_*.log $OUT/ncu_rowtc_*.txt
      ;;
    coltc)  # passes A and A⁻¹ on tensor cores against cuFFTDx's, same binary, same call
      timeout 300 $B/gpu_test --gtest_filter='GpuHyenaFused.*' > $OUT/gpu_test_fused.log 2>&1
      echo "GpuHyenaFused rc=$?" | tee -a $LOG
      grep -E "^\[  (PASSED|FAILED) |cols=|FAILED  \]|Failure|Expected" $OUT/gpu_test_fused.log | tee -a $LOG
      for round in 1 2; do
        for run in "env LONGMIX_FUSED_COL=cufftdx $B/bench_hyena_fused" "env LONGMIX_FUSED_COL=tensor $B/bench_hyena_fused" \
                   $B/bench_hyena_fused_*; do
          for D in 256 1024; do
            echo "--- ${run//$B\//} D $D round $round" | tee -a $OUT/coltc.txt
            timeout 120 $run ${COLTC_L:-131072,262144} $D fused 2>&1 | tee -a $OUT/coltc.txt
          done
        done
      done
      grep -E "^---|fused " $OUT/coltc.txt | tee -a $LOG
      for col in cufftdx tensor; do
        LONGMIX_FUSED_COL=$col ncu_fused_forward $B/bench_hyena_fused $OUT/ncu_coltc_$col.txt
      done
      for bin in $B/bench_hyena_fused_*; do ncu_fused_forward $bin $OUT/ncu_coltc_$(basename $bin).txt; done
      for tool in memcheck racecheck; do
        # L = 100000 and 200000: N1 = 512 with N2 = 512 and 1024, ragged
        LONGMIX_FUSED_COL=tensor timeout 240 compute-sanitizer --tool $tool --kernel-name kns=col_tc --error-exitcode 9 \
          $B/bench_hyena_fused 100000,200000 64 fused > $OUT/sanitizer_coltc_$tool.log 2>&1
        echo "compute-sanitizer $tool (col_tc) rc=$? $(tail -1 $OUT/sanitizer_coltc_$tool.log)" | tee -a $LOG
      done
      grep -m 20 -B2 -A12 "Error\|Warning\|hazard" $OUT/sanitizer_coltc_racecheck.log | head -40 >> $LOG
      tar -C $OUT -czf $OUT/coltc_logs.tgz $(cd $OUT && ls sanitizer_coltc_*.log ncu_coltc_*.txt) && \
        rm -f $OUT/sanitizer_coltc_*.log $OUT/ncu_coltc_*.txt
      ;;
    rowtcncu)  # ncu's full set with per-instruction source counters of the tensor-core pass B at 128k
      timeout 300 ncu --graph-profiling node -k regex:row_tc --launch-count 1 --set full --import-source yes \
        -o /tmp/rowtc -f $B/bench_hyena_fused 131072 256 fused > $OUT/ncu_rowtc_full.txt 2>&1
      timeout 200 ncu -i /tmp/rowtc.ncu-rep --page details --print-details all > $OUT/ncu_rowtc_details.txt 2>&1
      timeout 200 ncu -i /tmp/rowtc.ncu-rep --page source --csv --print-source sass > $OUT/ncu_rowtc_sass.csv 2>&1
      echo "ncu row_tc rc=$? $(wc -l < $OUT/ncu_rowtc_sass.csv) lines" | tee -a $LOG
      tar -C $OUT -czf $OUT/ncu_rowtc_sass.tgz ncu_rowtc_sass.csv ncu_rowtc_details.txt && rm -f $OUT/ncu_rowtc_sass.csv
      ;;
    fusedsass)  # per-instruction counters of the FFT passes at 128k, D = 256
      ncu_fused_passes $OUT/ncu_full.txt --set full --import-source yes --print-details all -o /tmp/passes -f
      timeout 200 ncu -i /tmp/passes.ncu-rep --page details --print-details all > $OUT/ncu_full_details.txt 2>&1
      timeout 200 ncu -i /tmp/passes.ncu-rep --page source --csv --print-source sass > $OUT/ncu_sass.csv 2>&1
      echo "ncu sass rc=$? $(wc -l < $OUT/ncu_sass.csv) lines" | tee -a $LOG
      tar -C $OUT -czf $OUT/ncu_sass.tgz ncu_sass.csv ncu_full_details.txt && rm -f $OUT/ncu_sass.csv
      ;;
    sanitizeflash)
      sanitize 'Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/0:Variants/GpuFlashOwn.EveryVariantMatchesFloat64Reference/7' flash
      ;;
    torch)
      PYTHONUNBUFFERED=1 timeout 300 $PY bench/peers/check_torch.py $B/longmix /tmp/check_torch 2>&1 | tee -a $LOG
      cp /tmp/check_torch/check_torch.json $OUT/ 2>/dev/null
      ;;
    isolate)
      # An illegal address in flash-own's 8k row, a kernel that never ends in hyena-fused's 8k row
      # (killed by --row-timeout); every other row must be measured.
      for f in flash-own:8192:illegal-address hyena-fused:8192:hang; do
        LONGMIX_INJECT_FAULT=$f timeout 200 $B/longmix sweep --ops flash,hyena --lengths 4k,8k,16k --isolate \
          --row-timeout 20 --out /tmp/iso_${f%%:*} --quiet 2>&1 | tail -2 | tee -a $LOG
        cut -d, -f1-3,8,9,22 /tmp/iso_${f%%:*}/results_flash.csv /tmp/iso_${f%%:*}/results_hyena.csv | tee -a $LOG
      done
      ;;
    flash1024)  # flash-own and flash-cudnn at D = 1024 (H = 16), 4k..1M (or $FLASH1024_L), with the attention peers
      d=$OUT/d1024f
      timeout 420 $B/longmix sweep --ops flash --lengths ${FLASH1024_L:-4k..1M} --heads 16 --out $d --quiet 2>&1 | tail -2 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 120 $PY bench/peers/peers.py --lengths 4k,8k,16k,32k,64k,128k --heads 16 \
        --impls torch-sdpa-flash,torch-sdpa-cudnn --scopes layer --out $d/peers.json 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-3,9,22 $d/results_flash.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
    hyena1024)  # hyena-fused and hyena-cuda at D = 1024 ($HYENA1024_L, default 1M), the reference Hyena in the same call
      d=$OUT/d1024h
      timeout 300 $B/longmix sweep --ops hyena --impls hyena-fused,hyena-cuda --lengths ${HYENA1024_L:-1M} --heads 16 \
        --out $d --quiet 2>&1 | tail -2 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths ${HYENA1024_L:-1M} --heads 16 --impls torch-hyena \
        --scopes layer --l-max 1M --out $d/peers.json 2>&1 | tail -1 | tee -a $LOG
      cut -d, -f1-3,9,22 $d/results_hyena.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
    full256|full1024)
      # The full sweep of one width (every op, 4k..1M), then the peers in the same call:
      # attention peers to 128k (layer scope), the reference Hyena to 1M.
      H=4; [ $stage = full1024 ] && H=16
      d=$OUT/d$((H*64))
      timeout 400 $B/longmix sweep --lengths 4k..1M --heads $H --out $d --quiet 2>&1 | tail -2 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths 4k,8k,16k,32k,64k,128k --heads $H \
        --impls torch-sdpa-flash,torch-sdpa-cudnn,torch-naive --scopes layer --naive-max 32k \
        --out /tmp/peers_attn.json 2>&1 | tail -1 | tee -a $LOG
      PYTHONUNBUFFERED=1 timeout 150 $PY bench/peers/peers.py --lengths 4k,8k,16k,32k,64k,128k,256k,512k,1M \
        --heads $H --impls torch-hyena --scopes layer --l-max 1M --out /tmp/peers_hyena.json 2>&1 | tail -1 | tee -a $LOG
      $PY -c "
import json, sys
a, h = (json.load(open(f)) for f in ('/tmp/peers_attn.json', '/tmp/peers_hyena.json'))
a['rows'] += h['rows']
json.dump(a, open(sys.argv[1], 'w'), indent=1)" $d/peers.json
      cut -d, -f1-3,9,22 $d/results_hyena.csv $d/results_flash.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
  esac
done
echo "=== done $(date -u +%T)" | tee -a $LOG
