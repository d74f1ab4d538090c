// hyena-fused pass B on tensor cores, N2 = 512 (the rows of N = 2^17 and 2^18: 32k < L ≤ 128k).
//
// The same pass as row_kernel (hyena_fused_fft.cuh): per row pair (k1, N1 − k1) of a channel
// pair, the 512-point FFTs of the filter and signal rows, Y = H_a·A + i·H_b·B with the skip term
// and 1/N, the inverse FFTs, written back in place. Each 512-point DFT runs as FlashFFTConv's
// Monarch form, 512 = 16 × 32, on mma.sync m16n8k16 (fp16 operands, fp32 accumulation):
//
//   n = 32a + b, k = k1 + 16·k2:  X[k] = Σ_b W32^{b·k2} · W512^{b·k1} · Σ_a W16^{a·k1} x[32a + b]
//
//   step 1  C[k1][b] = F16[k1][a] · x[a][b]   F16 the A operand (registers), x the B operand
//           loaded from global memory straight into fragments (a warp's loads are 32-byte runs)
//   twiddle C[k1][b] · W512^{b·k1} in fp32 on the accumulator fragments (registers)
//   step 2  X[k1][k2] = C[k1][b] · F32[b][k2]  the accumulator fragments of step 1, packed to
//           fp16 pairs, are exactly the A fragments of step 2 (as P in FlashAttention-2's P·V)
//
// The inverse runs the two steps the other way round (k2 first, with conjugate matrices); its
// second step needs the twiddled C as a B operand, which one movmatrix.trans per 8 × 8 block
// gives. A complex product is four real ones (the sign of an imaginary part flips as a fp16
// sign bit). No shared memory is touched by the transforms: only the spectra, for the mirrored
// partners Z[N − k], H[N − k] of the spectral product, go through it.
//
// Precision: fp16 operands round the step-1 output (and the twiddled inverse input) to 11 bits,
// and the DFT matrices too; the GPU tests bound the layer's error against float64.
//
// One warp computes one row pair (four forward transforms into shared memory, then per row the
// product and the inverse), warps loop over row pairs (a persistent grid: the DFT matrices and
// twiddles, 76 registers a thread, are built once per warp).
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <type_traits>

#include "common/cuda_check.h"
#include "common/error.h"
#include "ops/hyena/hyena_fused_params.h"
#include "ops/hyena/mma_sm80.cuh"
#include "ops/hyena/monarch512.cuh"
#include "ops/hyena/real_pair.cuh"

namespace longmix::fused {
namespace {

using namespace m512;

constexpr int kN2 = 512;
constexpr int kWarps = 4;  // warps a block
// The spectra of one row in shared memory, index k at (k & 15) + 18·(k >> 4): a half-warp's
// stores of one fragment element (k1 = g + 8h, k2 = 8j + 2q + e) and the loads of its mirrors
// (15 − k1, 31 − k2) fall in 16 different 8-byte slots.
constexpr int kRowSlots = 15 + 18 * 31 + 1;  // 574
constexpr int kLastSlot = kRowSlots - 1;     // slot(511)
__device__ __forceinline__ int slot(int k) { return (k & 15) + 18 * (k >> 4); }
// A fragment element's k = g + 8·(c >> 1) + 16·(8j + 2q + (c & 1)) has its low part below 16, so
// slot(k) = lane_slot(lane) + frag_slot(j, c): one register a lane, the rest immediate offsets.
// The mirror 511 − k sits at kLastSlot − slot(k).
__device__ __forceinline__ int lane_slot(int lane) { return (lane >> 2) + 36 * (lane & 3); }
__host__ __device__ constexpr int frag_slot(int j, int c) { return 8 * (c >> 1) + 18 * (8 * j + (c & 1)); }

__device__ __forceinline__ unsigned ld_h2(const __half2* p, int i) {
  const __half2 v = p[i];
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ unsigned ld_h2(const float2* p, int i) {
  const float2 v = p[i];
  return pack_half2(v.x, v.y);
}

// The x B fragments of one row: n-tile j, element n = 32a + b at a = 2q + {0, 1} (+8 for the
// second register), b = 8j + g; the (re, im) pairs regrouped into real and imaginary pairs.
template <typename S>
__device__ __forceinline__ void load_row(const S* row, int lane, unsigned (&xr)[4][2], unsigned (&xi)[4][2]) {
  const int g = lane >> 2, q = lane & 3;
  unsigned v[4][2][2];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e) v[j][r][e] = ld_h2(row, 32 * (2 * q + e + 8 * r) + 8 * j + g);
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      xr[j][r] = __byte_perm(v[j][r][0], v[j][r][1], 0x5410);  // low halves: real parts
      xi[j][r] = __byte_perm(v[j][r][0], v[j][r][1], 0x7632);  // high halves: imaginary parts
    }
}

// The forward 512-point DFT of one row, given as its B fragments, into shared memory (slot
// order).
__device__ __forceinline__ void fwd_to_smem(const Dft& d, const unsigned (&xr)[4][2], const unsigned (&xi)[4][2],
                                            int lane, float2* out) {
  float Xr[4][4], Xi[4][4];
  fwd_dft(d, xr, xi, Xr, Xi);
  out += lane_slot(lane);
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) out[frag_slot(j, c)] = make_float2(Xr[j][c], Xi[j][c]);
}

// The four rows item it reads, in the order its transforms take them (rho): the filter's and the
// signal's first row, then their second row ((k1, N1 − k1), or (0, N1/2) for k1 = 0).
struct Item {
  int r, p;  // row pair r of signal pair p
};
__device__ __forceinline__ Item item_of(const PassParams& P, int it) {
  const int half_rows = int(P.N1 / 2);
  return {it % half_rows, it / half_rows};
}
template <typename S>
__device__ __forceinline__ const S* item_row(const PassParams& P, Item t, int rho) {
  const long long N1 = P.N1;
  const long long row = rho < 2 ? t.r : (t.r == 0 ? N1 / 2 : N1 - t.r);
  if (rho & 1) return static_cast<const S*>(P.T) + (t.p * N1 + row) * kN2;
  return static_cast<const S*>(P.Tf) + ((P.o * P.half_D + t.p % P.half_D) * N1 + row) * kN2;
}

// fp16 rows are staged in shared memory by cp.async, one item ahead: the copy of the next item's
// row rho is issued as soon as this item's row rho is in registers, so the global-load latency
// runs under the rest of the item (v10a loaded each row into registers just before its
// transform: 293 µs at 128k for 381 MB, 1.3 TB/s). A staged row: 16 runs of 32 half2 (a = n / 32)
// with 4 words of padding after each, so the fragment loads (a = 2q + …, b = 8j + g) hit 32
// different banks.
constexpr int kRunWords = 36;
constexpr int kStageWords = 16 * kRunWords;
__device__ __forceinline__ void stage_row(const __half2* src, unsigned* dst, int lane) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = lane + 32 * i;  // 16-byte chunk c of the row: run c / 8
    __pipeline_memcpy_async(dst + (c >> 3) * kRunWords + (c & 7) * 4, reinterpret_cast<const uint4*>(src) + c, 16);
  }
}
__device__ __forceinline__ void stage_frags(const unsigned* st, int lane, unsigned (&xr)[4][2], unsigned (&xi)[4][2]) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const unsigned v0 = st[(2 * q + 8 * r) * kRunWords + 8 * j + g];
      const unsigned v1 = st[(2 * q + 1 + 8 * r) * kRunWords + 8 * j + g];
      xr[j][r] = __byte_perm(v0, v1, 0x5410);
      xi[j][r] = __byte_perm(v0, v1, 0x7632);
    }
}

template <typename S>
__device__ __forceinline__ void st_pair(S* p, int i, float ar, float ai, float br, float bi);
template <>
__device__ __forceinline__ void st_pair<__half2>(__half2* p, int i, float ar, float ai, float br, float bi) {
  *reinterpret_cast<uint2*>(p + i) = make_uint2(pack_half2(ar, ai), pack_half2(br, bi));
}
template <>
__device__ __forceinline__ void st_pair<float2>(float2* p, int i, float ar, float ai, float br, float bi) {
  *reinterpret_cast<float4*>(p + i) = make_float4(ar, ai, br, bi);
}

// Grid-stride over (row pair r, signal pair p) items, one a warp. T: (pairs, N1, 512) in place,
// Tf: (Dh/2, N1, 512). kStaged (fp16 rows only): rows staged one item ahead by cp.async, two
// blocks an SM; otherwise loaded straight into fragments, three blocks an SM (the shared memory
// of the spectra alone, 73 KB a block).
template <typename S, bool kStaged>
__global__ void __launch_bounds__(32 * kWarps, kStaged ? 2 : 3) row_tc_kernel(PassParams P, int items) {
  static_assert(!kStaged || std::is_same_v<S, __half2>, "only fp16 rows are staged");
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float2* Hs = reinterpret_cast<float2*>(smem) + warp * 4 * kRowSlots;  // [2][kRowSlots]
  float2* Zs = Hs + 2 * kRowSlots;                                     // [2][kRowSlots]
  unsigned* stage = reinterpret_cast<unsigned*>(smem + kWarps * 4 * kRowSlots * 8) + warp * 4 * kStageWords;
  const Dft d = make_dft(lane);
  const long long N1 = P.N1;
  const int stride = int(gridDim.x) * kWarps, ls = lane_slot(lane);
  const int g = lane >> 2, q = lane & 3;
  int it = int(blockIdx.x) * kWarps + warp;
  if constexpr (kStaged) {
    // One cp.async group a row: before row rho of an item is read, exactly three newer groups
    // (this item's later rows, the next item's earlier ones; empty past the last item) exist.
    if (it < items) {
      const Item t = item_of(P, it);
      for (int rho = 0; rho < 4; ++rho) {
        stage_row(item_row<S>(P, t, rho), stage + rho * kStageWords, lane);
        __pipeline_commit();
      }
    }
  }
  for (; it < items; it += stride) {
    const Item t = item_of(P, it);
    const int r = t.r;
    const bool more = it + stride < items;
    const Item next = item_of(P, more ? it + stride : it);
    const long long cp = t.p % P.half_D;
    const long long row1 = r == 0 ? N1 / 2 : N1 - r;  // the pair's second row
    S* T = static_cast<S*>(P.T) + t.p * N1 * kN2;
#pragma unroll 1
    for (int rho = 0; rho < 4; ++rho) {
      unsigned xr[4][2], xi[4][2];
      if constexpr (kStaged) {
        __pipeline_wait_prior(3);
        __syncwarp();
        stage_frags(stage + rho * kStageWords, lane, xr, xi);
        __syncwarp();
        if (more) stage_row(item_row<S>(P, next, rho), stage + rho * kStageWords, lane);
        __pipeline_commit();
      } else {
        load_row(item_row<S>(P, t, rho), lane, xr, xi);
      }
      fwd_to_smem(d, xr, xi, lane, (rho & 1 ? Zs : Hs) + (rho >> 1) * kRowSlots);
    }
    __syncwarp();
    const long long fc = P.o * P.D + 2 * cp;
    const pair::PairSkip sk = pair::pair_skip(P.skip[fc], P.skip[fc + 1], P.inv_n);
#pragma unroll 1
    for (int s = 0; s < 2; ++s) {
      float yr[4][4], yi[4][4];
      const float2* zs = Zs + s * kRowSlots + ls;
      const float2* hs = Hs + s * kRowSlots + ls;
      if (r == 0 && s == 0) {
        // Row 0 mirrors into itself at (512 − k2) mod 512 (pair::mirror_of): the general form.
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int k2 = slot_k(g, q, j, c);
            const pair::Mirror m = pair::mirror_of(0, 0, k2, kN2);
            const int o = frag_slot(j, c), po = m.ps * kRowSlots + slot(m.pk);
            const float2 w = pair::pair_filter(hs[o], Hs[po], sk).at_k(zs[o], Zs[po]);
            yr[j][c] = w.x;
            yi[j][c] = w.y;
          }
      } else {
        // Every other slot's mirror is column 511 − k2 of slot ps (pair::mirror_of): at
        // kLastSlot − slot(k2), a second lane base and the negated immediate offsets.
        const int ps = r == 0 ? s : 1 - s;
        const float2* zm = Zs + ps * kRowSlots + kLastSlot - ls;
        const float2* hm = Hs + ps * kRowSlots + kLastSlot - ls;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int o = frag_slot(j, c);
            const float2 w = pair::pair_filter(hs[o], hm[-o], sk).at_k(zs[o], zm[-o]);
            yr[j][c] = w.x;
            yi[j][c] = w.y;
          }
      }
      float xr[4][4], xi[4][4];
      inv_dft(d, yr, yi, xr, xi);
      // x[32a + b] at a = g + 8h, b = 8j + 2q + {0, 1}: two neighbouring elements a store.
      S* out = T + (s == 0 ? r : row1) * kN2 + 32 * g + 2 * q;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          st_pair(out, 256 * h + 8 * j, xr[j][2 * h], xi[j][2 * h], xr[j][2 * h + 1], xi[j][2 * h + 1]);
    }
    __syncwarp();  // the next item's spectra overwrite this one's
  }
}

template <bool kStaged>
constexpr int kSmem = kWarps * 4 * (kRowSlots * 8 + (kStaged ? kStageWords * 4 : 0));  // spectra (+ staged rows)

// The persistent grid's size (blocks an SM at each kernel's registers and shared memory), set
// once at plan time, outside any graph capture.
int g_row_tc_blocks[3] = {};  // fp16 staged, fp16 direct, fp32 direct

template <typename S, bool kStaged>
void prepare_one(int sms, int* blocks) {
  CUDA_CHECK(cudaFuncSetAttribute(row_tc_kernel<S, kStaged>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  kSmem<kStaged>));
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, row_tc_kernel<S, kStaged>, 32 * kWarps,
                                                           kSmem<kStaged>));
  *blocks = sms * (per_sm < 1 ? 1 : per_sm);
}

template <typename S, bool kStaged>
void launch_one(int blocks, const PassParams& P, int items, cudaStream_t s) {
  const int want = (items + kWarps - 1) / kWarps;
  row_tc_kernel<S, kStaged><<<unsigned(want < blocks ? want : blocks), 32 * kWarps, kSmem<kStaged>, s>>>(P, items);
}

}  // namespace

void prepare_row_tc() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  prepare_one<__half2, true>(sms, &g_row_tc_blocks[0]);
  prepare_one<__half2, false>(sms, &g_row_tc_blocks[1]);
  prepare_one<float2, false>(sms, &g_row_tc_blocks[2]);
}

void launch_row_tc(bool half, bool staged, const PassParams& P, long long pairs, cudaStream_t s) {
  const long long items = pairs * (P.N1 / 2);
  LONGMIX_REQUIRE(items < (1LL << 31), "hyena-fused: too many row pairs for the tensor-core row pass: ", items);
  if (half && staged) launch_one<__half2, true>(g_row_tc_blocks[0], P, int(items), s);
  else if (half) launch_one<__half2, false>(g_row_tc_blocks[1], P, int(items), s);
  else launch_one<float2, false>(g_row_tc_blocks[2], P, int(items), s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace longmix::fused
