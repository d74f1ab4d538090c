// hyena-fused: SPEC §3 computed with the long convolution as a four-step FFT whose passes carry
// the short conv, the gates, the skip term and the filter's modulation (hyena_fused_fft.cuh),
// channel-major activations in the position layout (time t = n1·N2 + n2 at n2·R + n1, so a
// column pass reads and writes contiguous runs; the GEMMs produce and consume it through strided
// batches over n2, each shape's algorithm timed at plan time), the filter MLP's hidden layers
// in one tensor-core kernel, fp16 spectra between passes (fp32 arithmetic), one workspace arena whose
// regions are reused by lifetime, and the whole forward replayed as one CUDA graph.
//
// Forward (B, L, D) → (B, L, D), order 2, per call:
//   in_proj (cuBLASLt, N2 strided batches: channel-major zT (B, C, Lp), position layout) ·
//   filter hidden layers (one kernel, mma.sync, rows in position order) · filter last layer
//   (cuBLAS fp16, h (Dh, Lp)) · pass A on the filter · pass A on the signal · pass B · pass A⁻¹ (× x0) ·
//   out_proj (cuBLASLt, N2 strided batches from the position layout, its bias in the epilogue).
//
// Versions (H200, D = 256, fp16, B = 1, 128k; bench/NOTES.md has the floors and the profiles;
// the PyTorch reference takes 4.31 ms, the byte floor of this design is 0.42 ms)
//   v1: the design above, 1024-thread column blocks, one thread per time point in the filter
//       MLP: 2.62 ms (column passes at 0.5 TB/s: one block per SM, phases never overlap).
//   v2: 256-thread column blocks, loads before stores, hoisted conv constants, parallel filter
//       MLP: 1.99 ms (column passes instruction-bound: ~250 instructions per element).
//   v3: 32-bit indices, K = 3 short-conv path, twiddles by recurrence: 1.74 ms.
//   v3b: 16 elements per thread for column FFTs of 1024/2048: 1M 28.0 → 15.2 ms. Landed.
//   v3c: both projections through cuBLASLt (gemm_cuda; out_proj's bias in the epilogue instead
//       of an extra K row of ones and a kernel writing it).
//   v3d: filter hidden layers on a 4 × 4 register tile from L = 32k: 1.69 ms.
//   v4 (rejected): 16 columns a column-pass block (32 elements a thread): 3.37 ms (162
//       registers, one block per SM; the DRAM bytes were the same as with 4 columns).
//   v4b: two neighbouring time points a thread in the column passes' global accesses (vector
//       loads for the short convs, the spectra, the output): 1.557 ms; every FFT pass now at
//       85–93% of the L1/shared-memory throughput.
//   v5: the position layout for every time row the column passes touch (a warp reads 32
//       consecutive n1 of one column instead of 16 rows N2 apart), 16 elements a thread at
//       N1 = 512 (8 columns a block); the odd-L scalar paths are gone (no vector pairs along
//       time): 1.29 ms (16 elements a thread in pass B too, v5a: 1.31, pass B slower).
//   v6: pass B keeps each thread's own H and Z in registers (only the mirrored partners go
//       through shared memory): 1.283 ms; 12.1 ms at 1M; D = 1024, 1M: 54.1 ms. The short
//       projections' batches (R < 128 rows a column: L ≤ 16k) are short: D = 1024, 4k 0.248 ms
//       (v4b 0.210).
//   v7 (rejected): for R < 128, one product in the time layout and a permute kernel instead of
//       the batches: slower at every L ≤ 16k (0.082 ms against 0.065 at 4k, D = 256).
//   v8: the filter's hidden layers on tensor cores (m16n8k16, activations in registers between
//       layers, __sinf), act and h in fp16 (the last layer a fp16 GEMM), cuBLASLt's candidates
//       for the projections timed at plan time: 1.155 ms at 128k (hidden layers 155 → 38 µs,
//       last layer 57 → 25); 11.1 ms at 1M; D = 1024, 1M: 52.3 ms (4.05× the reference).
//   v9: the FFT split by width: tall N1 = 2·N2 from D = 512 on where N ≤ 32768 is an odd power
//       of two (taller projection batches): D = 1024, 4k 0.214 ms (wide 0.238), 16k 0.699 (0.730).
//       v9a (six column blocks an SM, swizzled unpadded tile) was 15% slower and is not kept.
//   v10: pass B on tensor cores at N2 = 512 (FlashFFTConv's 16 × 32 Monarch form on mma.sync,
//       fp16 operands; hyena_fused_row_tc.cu): 1.086–1.090 ms at 128k (cuFFTDx rows 1.150).
//   v11: the tensor-core row kernel with immediate fragment offsets and a mirror fast path, the
//       regrouped spectral product: 1.051–1.053 ms at 128k (pass B 299 → 239 µs).
//   v12: the column passes on tensor cores at N1 = 512 (hyena_fused_col_tc.cu): 1.57 ms at 128k
//       against 1.04 with cuFFTDx columns, so not the default (ColFft::kTensor only).
//   v13: the filter's path on a second stream beside in_proj and the signal's pass A up to
//       L = 32k (Overlap): 4k 0.060 → 0.057 ms, 16k 0.172 → 0.164; 1.7% at 128k, not taken there
//       (+80 MB of arena).
//   v14-v16: the column passes' 8-row accesses (ColAccess), their taps by warp shuffles, the
//       signal's pass A on its own access; v17 (its own 64-register kernel) measured and reverted.
//   v18: pass B's cuFFTDx rows with 4 row pairs a block where N2 ≤ 256 (RowPairs, L ≤ 32k): on
//       an H100, layer 0.5–3% faster at 4k–32k, D = 256 and 1024 (pass B at 4k 18.4–18.9 → 17.1–
//       17.4 µs).
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "common/cuda_context.h"
#include "ops/hyena/hyena.h"

namespace longmix {

struct HyenaFusedOptions {
  bool fp16_spectra = true;  // intermediates between FFT passes as __half2 (else float2)
  bool graph = true;         // replay the forward as one CUDA graph
  bool tune_gemm = true;     // time cuBLASLt's candidates for the projections' shapes at plan time
  bool gemm_enumerate = false;  // and the configurations cuBLASLt enumerates (gemm_tune_cuda)
  // The FFT split where N is an odd power of two up to 32768 (L ≤ 16k): wide N2 = 2·N1, or tall
  // N1 = 2·N2 (R = L/N2 doubles: the projections' strided batches twice as tall). Auto: tall from
  // D = 512 on (measured on the H200, D = 1024: 0.214 against 0.238 ms at 4k; D = 256: 0.061
  // against 0.060).
  enum class Split { kAuto, kWide, kTall };
  Split split = Split::kAuto;
  // pass B's row FFTs: cuFFTDx block FFTs, or (N2 = 512 only, 32k < L ≤ 128k) 16 × 32 DFTs on
  // tensor cores with fp16 operands (hyena_fused_row_tc.cu). Auto: tensor cores where they apply.
  // kTensor stages fp16 rows in shared memory by cp.async (two blocks an SM), kTensorDirect
  // loads them straight into fragments (three blocks an SM); fp32 spectra always load directly.
  enum class RowFft { kAuto, kCufftdx, kTensor, kTensorDirect };
  RowFft row_fft = RowFft::kAuto;
  // passes A and A⁻¹'s column FFTs: cuFFTDx block FFTs, or (N1 = 512 only, 64k < L ≤ 256k)
  // 16 × 32 DFTs on tensor cores with fp16 operands (hyena_fused_col_tc.cu). Auto: cuFFTDx
  // everywhere (measured on the H200 at 128k, D = 256: 1.04 ms against 1.57 with tensor-core
  // columns, which one warp a column holds to 16 warps an SM where the prologue's short-conv
  // gathers need more in flight; bench/NOTES.md v12).
  enum class ColFft { kAuto, kCufftdx, kTensor };
  ColFft col_fft = ColFft::kAuto;
  // filter=recompute: the filter's path (hidden layers, last layer, its pass A) on a second
  // stream forked in the graph, concurrent with in_proj and the signal's pass A, joined before
  // pass B. It costs memory: the filter's activations and h can no longer share the arena with
  // zT and the signal's spectra (at 128k, D = 256: +80 MB). Auto: on up to L = kOverlapMaxL,
  // where the kernels are too short to fill the GPU alone.
  enum class Overlap { kAuto, kOff, kOn };
  Overlap overlap = Overlap::kAuto;
  static constexpr std::int64_t kOverlapMaxL = 32768;
  // How the column passes read and write their time rows (pass A's source, pass A⁻¹'s output):
  // kScalar, one element a thread per access (v13); or kVec8, 8 consecutive rows of a column a
  // thread, one 16-byte access per stored run, where every column's run starts on a multiple of
  // 8 (R % 8 == 0: every power-of-two L from 8·N2 on), the scalar path elsewhere (and for short
  // filters other than K = 3). kAuto: kVec8 from B·D·L = kVec8MinWork elements on, where it
  // was measured faster, scalar below (H100, fp16, same call, bench/NOTES.md v14, v15: 4k,
  // D = 256 0.067 ms against 0.057–0.060 scalar; 32k 0.291–0.293 against 0.300–0.305 with the
  // signal's pass A scalar; 1M 9.92 against 11.5).
  enum class ColAccess { kAuto, kScalar, kVec8 };
  ColAccess col_access = ColAccess::kAuto;
  static constexpr std::int64_t kVec8MinWork = std::int64_t{1} << 23;
  // The signal's pass A alone (its source gathers two streams a channel, x0 and v through the
  // short convs): kAuto takes the 8-row path where the other column passes do and N1 ≥
  // kSignalVec8MinN1, where the 8-row kernels may hold 64 registers (4 blocks an SM), the scalar
  // path below it (48 registers: the 8-row signal pass ran at 88% of the L1 throughput). Measured
  // (bench/NOTES.md v15, v16; H200, same call): 128k, D = 256 1.012 ms scalar against 1.028 8-row;
  // 1M 10.14 against 9.72; D = 1024 128k 5.00 against 5.05, 1M 8-row. kScalar or kVec8 force it
  // for that pass only.
  ColAccess signal_access = ColAccess::kAuto;
  static constexpr std::int64_t kSignalVec8MinN1 = 1024;
  // pass B's cuFFTDx row kernels: row pairs a block (v18). One pair is two N2-point FFTs, 16-64
  // threads where N2 ≤ 256 (L ≤ 32k), so an SM's 32-block limit holds it at 25-100% of its
  // threads; kTwo and kFour put 2 or 4 pairs in a block there (N2 > 256 keeps one: its blocks
  // are 128 threads and up). kAuto: four pairs there (measured on an H100, same binary, same call,
  // two rounds, results/h100/hyena-fused/rowpairs_v18.txt: 4 pairs against 1, layer, D = 256
  // 4k 0.0555–0.0556 / 0.0569–0.0572 ms, 8k 0.0999–0.1003 / 0.1028–0.1032, 16k 0.1657–0.1666 /
  // 0.1666–0.1675, 32k 0.2828–0.2859 / 0.2899–0.2906; D = 1024 4k 0.2058–0.2060 / 0.2109–0.2123,
  // 16k 0.6604–0.6617 / 0.6810–0.6813, 32k 1.241–1.252 / 1.265–1.274; 2 pairs in between).
  enum class RowPairs { kAuto, kOne, kTwo, kFour };
  RowPairs row_pairs = RowPairs::kAuto;
  static constexpr int kRowPairsMaxN2 = 256;  // the longest rows with the 2- and 4-pair kernels
  // v21: a column block's time rows staged in shared memory by cp.async (every 16-byte copy of
  // the block in flight at once) instead of each thread's dependent 2-byte (or 16-byte) global
  // loads: the short convs' rows before the signal's pass A reads its taps (scalar path; 8-row
  // path from N1 = 1024) and
  // before pass A⁻¹'s epilogue reads the x0 gate's (either path); and the filter's h rows and
  // time grid before the filter's pass A reads them (either path). Where R % 8 == 0 and the
  // columns run on cuFFTDx, the short convs' rows only for K = 3 (hyena_fused_stages); the
  // block of columns 0 … W − 1, whose taps wrap to the row before, reads global memory as
  // before. The same loads of the same values, so the outputs are bit-identical. kSignal: the
  // short convs' rows only; kOn: both. kAuto (the default): off — written on 2026-12-08 when no
  // GPU could be lent after it was built, so neither its tests nor its A/B
  // (`run_h200.sh stage`) have run on a GPU yet.
  enum class Stage { kAuto, kOff, kSignal, kOn };
  Stage stage = Stage::kAuto;
};

// Whether the column passes stage the short convs' rows (HyenaFusedOptions::stage): R rows a
// column, short filter length K, the columns on tensor cores or not (the staged kernels exist
// for fp16 spectra only).
inline bool hyena_fused_stages(const HyenaFusedOptions& o, std::int64_t R, int K, bool col_tc) {
  using S = HyenaFusedOptions::Stage;
  return (o.stage == S::kSignal || o.stage == S::kOn) && o.fp16_spectra && R % 8 == 0 && K == 3 && !col_tc;
}
// The same for the filter's h rows and time grid (no short conv).
inline bool hyena_fused_stages_filter(const HyenaFusedOptions& o, std::int64_t R, bool col_tc) {
  using S = HyenaFusedOptions::Stage;
  return o.stage == S::kOn && o.fp16_spectra && R % 8 == 0 && !col_tc;
}

// Row pairs a block of pass B's cuFFTDx kernels for row size N2 (1, 2 or 4).
inline int hyena_fused_row_pairs(const HyenaFusedOptions& o, std::int64_t N2) {
  using P = HyenaFusedOptions::RowPairs;
  if (N2 > HyenaFusedOptions::kRowPairsMaxN2) return 1;
  return o.row_pairs == P::kOne ? 1 : o.row_pairs == P::kTwo ? 2 : 4;
}

// The FFT size of a plan of length L: the smallest power of two ≥ 2L, at least 4096.
inline std::int64_t hyena_fused_fft_size(std::int64_t L) {
  std::int64_t n = 4096;
  while (n < 2 * L) n *= 2;
  return n;
}
// N = N1·N2: wide N1 ≤ N2 ≤ 2·N1; tall (N ≤ 32768 only) N2 ≤ N1 ≤ 2·N2, where R = ⌈L/N2⌉
// doubles and with it the m of the projections' strided batches (m = R = 32 at 4k ran in_proj at
// ~390 TFLOP/s against ~550 at m = 64, D = 1024). HyenaFusedOptions::Split says which.
inline void hyena_fused_split(std::int64_t N, std::int64_t D, HyenaFusedOptions::Split choice, int* n1, int* n2) {
  using Split = HyenaFusedOptions::Split;
  const bool tall = choice == Split::kTall || (choice == Split::kAuto && D >= 512);
  int lg = 0;
  while ((std::int64_t{1} << lg) < N) ++lg;
  *n1 = 1 << (lg / 2);
  *n2 = static_cast<int>(N / *n1);
  if (tall && N <= 32768 && *n2 == 2 * *n1) std::swap(*n1, *n2);
}

// Whether the column passes take the 8-row accesses: R rows a column (R % 8 == 0 needed),
// B·D·L elements of signal (kAuto's threshold).
inline bool hyena_fused_uses_vec8(const HyenaFusedOptions& o, std::int64_t B, std::int64_t D, std::int64_t L,
                                  std::int64_t R) {
  using A = HyenaFusedOptions::ColAccess;
  return R % 8 == 0 && (o.col_access == A::kVec8 ||
                        (o.col_access == A::kAuto && B * D * L >= HyenaFusedOptions::kVec8MinWork));
}
// The same for the signal's pass A of a plan with column FFTs of N1 points (signal_access).
inline bool hyena_fused_signal_uses_vec8(const HyenaFusedOptions& o, std::int64_t B, std::int64_t D, std::int64_t L,
                                         std::int64_t R, std::int64_t N1) {
  using A = HyenaFusedOptions::ColAccess;
  if (o.signal_access == A::kAuto)
    return N1 >= HyenaFusedOptions::kSignalVec8MinN1 && hyena_fused_uses_vec8(o, B, D, L, R);
  return R % 8 == 0 && o.signal_access == A::kVec8;
}

// opt with the environment's A/B switches for benchmarks applied, read once where a plan's
// options are built: LONGMIX_FUSED_SPLIT=wide|tall, LONGMIX_FUSED_ROW=cufftdx|auto|direct,
// LONGMIX_FUSED_COL=cufftdx|auto|tensor, LONGMIX_FUSED_OVERLAP=off|auto|on,
// LONGMIX_FUSED_ACCESS=auto|scalar|vec8, LONGMIX_FUSED_SIGNAL_ACCESS=auto|scalar|vec8,
// LONGMIX_FUSED_ROW_PAIRS=auto|1|2|4, LONGMIX_FUSED_STAGE=auto|off|signal|on,
// LONGMIX_GEMM_TUNE=0 (the heuristic's first choices) | 1 (its candidates timed, the default) |
// enumerate (also every configuration cuBLASLt enumerates). A value it does not know is an error.
HyenaFusedOptions hyena_fused_options_from_env(HyenaFusedOptions opt = {});
// The names of those switches (for logs that say what ran, and tests that clear them).
inline constexpr const char* kHyenaFusedEnvSwitches[] = {
    "LONGMIX_FUSED_SPLIT",  "LONGMIX_FUSED_ROW",           "LONGMIX_FUSED_COL", "LONGMIX_FUSED_OVERLAP",
    "LONGMIX_FUSED_ACCESS", "LONGMIX_FUSED_SIGNAL_ACCESS", "LONGMIX_FUSED_ROW_PAIRS", "LONGMIX_GEMM_TUNE",
    "LONGMIX_FUSED_STAGE"};

// Whether a plan of length L with these options runs the filter's path on the second stream:
// never with the filter cached (there is none per call), else as opt.overlap says (auto: L up to
// kOverlapMaxL).
inline bool hyena_fused_overlaps(const HyenaFusedOptions& opt, std::int64_t L, bool cache_filter) {
  using Overlap = HyenaFusedOptions::Overlap;
  if (cache_filter) return false;
  return opt.overlap == Overlap::kOn || (opt.overlap == Overlap::kAuto && L <= HyenaFusedOptions::kOverlapMaxL);
}

class HyenaFusedPlan {
 public:
  HyenaFusedPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                 CudaContext& ctx, HyenaFusedOptions opt = {});
  ~HyenaFusedPlan();
  HyenaFusedPlan(const HyenaFusedPlan&) = delete;
  HyenaFusedPlan& operator=(const HyenaFusedPlan&) = delete;

  // u, y: (B, L, D) in dtype t. Pointers must stay valid while the graph for them is kept.
  void forward(const void* u, void* y);
  // z: (B, L, C) in_proj output (bias included); yg: (B, L, D) = v ⊙ x0.
  void core(const void* z, void* yg);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Empty when hyena-fused can run this configuration, else the reason.
std::string hyena_fused_unsupported(const HyenaConfig& cfg, std::int64_t L, DType t);

}  // namespace longmix
