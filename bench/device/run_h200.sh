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
# Logs and results go under $OUT (8 files at most come back: results are tarred).
set -uo pipefail
B=/tmp/lm
mkdir -p $B && tar -C $B -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$B/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
PY=${PY:-python3}
LOG=$OUT/run.log
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a $LOG
sanitize() {  # memcheck and racecheck on two small hyena-fused tests (orders 3, L 77 and 2500)
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/gpu_test \
      --gtest_filter='Ragged/GpuHyena.MatchesFloat64Reference/100:Ragged/GpuHyena.MatchesFloat64Reference/150' \
      > $OUT/sanitizer_$tool.log 2>&1
    echo "compute-sanitizer $tool rc=$? $(tail -1 $OUT/sanitizer_$tool.log)" | tee -a $LOG
  done
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
      cut -d, -f1-3,9 $d/results_hyena.csv | tee -a $LOG
      tar -C $OUT -czf $OUT/$stage.tgz $(basename $d) && rm -rf $d
      ;;
  esac
done
echo "=== done $(date -u +%T)" | tee -a $LOG
