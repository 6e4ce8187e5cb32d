// Sparse top-k MLA decode, tensor-core path (mma.sync m16n8k16, ldmatrix, cp.async; nothing
// sm_80, sm_90 or sm_120 lacks).
//
// One block serves (query token bt, HEADS_PER_BLOCK heads, split of the top-k list): its ROWS
// heads, padded to M_TILES m16 tiles, are the M dimension of both products. A tile of BLOCK_N
// listed cache rows is gathered by slot into shared memory and serves S = q.K^T (all 576 dims)
// and O += P.V (the first 512). fp8 rows become 16-bit values before ldmatrix reads them: in a
// shared-memory pass over a cp.async stage (dequant='shared'), or in registers between the global
// loads and the store of the tile (dequant='registers').
//
// Warps form a ROW_GROUPS x COL_GROUPS grid (as in the dense family's mma path): the COL_GROUPS
// warps of a row group split q.K^T's 576 dims and leave partial scores in shared memory, then each
// sums the partials of its rows, masks entries whose slot is -1, runs the online softmax in
// registers and multiplies P by its 512 / COL_GROUPS output columns of V. The running max is
// raised only by more than RESCALE_THRESHOLD (log2 units), so rescales are rare.
//
// With SPLIT_SOFTMAX the warps of a row group split that softmax instead, as the dense family's
// (mla/mma/slices.cuh): each lane sums the partials of a slice of the tile's (row, position pair)
// items once, writes P to shared memory as 16-bit values and keeps its share of l; every warp
// then loads its P fragments with ldmatrix. A row whose max rose leaves its rescale factor for the
// warps holding its output columns. One barrier more per tile; no two warps compute the same
// exponentials.
//
// q.K's k steps are dealt to a row group's warps in runs: warp cg takes the latent steps
// cg * WARP_LATENT ... (consecutive, so whole scale groups or one part of a group), then the rope
// steps round-robin (k_step). fp8 tiles hold the e4m3 values unscaled (gather.cuh): a warp sums
// each scale group's partial scores in their own accumulators and adds them to the total times
// their rows' scales, once per group (once in all with 4 column groups). For P.V, P is multiplied
// by the scales of the group that a warp's output columns belong to. l sums the unscaled P, which
// the softmax is of. A scaled tile (SCALED_TILE) holds the products: its q.K and P.V are the
// 16-bit cache's.

namespace mla {

constexpr int M_TILES = (ROWS + 15) / 16;
constexpr int ROW_GROUPS = NUM_WARPS / COL_GROUPS;
constexpr int WARP_M = M_TILES / ROW_GROUPS;
constexpr int N_TILES = BLOCK_N / 8;
constexpr int K_STEPS = HEAD_DIM / 16;
constexpr int LATENT_STEPS = RUN_DIMS / 16;  // the k steps dealt in runs (the e4m3 ones of an fp8 row)
constexpr int WARP_LATENT = LATENT_STEPS / COL_GROUPS;  // a warp's run of latent k steps
constexpr int WARP_K = WARP_LATENT + (K_STEPS - LATENT_STEPS + COL_GROUPS - 1) / COL_GROUPS;
constexpr int O_TILES = LATENT_DIM / 8 / COL_GROUPS;
constexpr int PV_STEPS = BLOCK_N / 16;
constexpr int S_STRIDE = BLOCK_N + (24 - BLOCK_N % 16) % 16;  // = 8 mod 16: conflict-free float2

// Shared memory: q (when not in registers), the gather stages, the dequantized tiles, the partial
// scores, and the slot of every row of every stage (-1: masked).
constexpr bool FP8_REGISTERS = KV_FP8 && DEQUANT == DEQUANT_REGISTERS;
constexpr int TILE_BUFFERS = FP8_REGISTERS ? 2 : (KV_FP8 ? 1 : 0);
constexpr int SLOT_BUFFERS = FP8_REGISTERS ? 2 : STAGES;
constexpr int Q_BYTES = Q_IN_REGISTERS ? 0 : M_TILES * 16 * ROW_ELEMS * 2;
constexpr int STAGES_OFFSET = Q_BYTES;
constexpr int TILES_OFFSET = STAGES_OFFSET + (FP8_REGISTERS ? 0 : STAGES * STAGE_BYTES);
constexpr int SCORES_OFFSET = TILES_OFFSET + TILE_BUFFERS * TILE_ELEMS * 2;
constexpr int SCORE_FLOATS = COL_GROUPS * M_TILES * 16 * S_STRIDE;
constexpr int SLOTS_OFFSET = SCORES_OFFSET + SCORE_FLOATS * 4;
constexpr int SCALES_OFFSET = SLOTS_OFFSET + SLOT_BUFFERS * BLOCK_N * 4;  // fp8: each tile row's scales
constexpr int SCALE_FLOATS = BLOCK_N * SCALE_COLUMNS;
constexpr int P_STRIDE = BLOCK_N + 8;  // SPLIT_SOFTMAX: 16-bit P rows, ldmatrix rows on distinct banks
constexpr int P_OFFSET = SCALES_OFFSET + TILE_BUFFERS * SCALE_FLOATS * 4;
constexpr int P_BYTES = SPLIT_SOFTMAX ? M_TILES * 16 * P_STRIDE * 2 : 0;
constexpr int ROW_STATE_OFFSET = P_OFFSET + P_BYTES;  // per row: rescale factor (then m), l
constexpr int MAIN_SMEM = ROW_STATE_OFFSET + (SPLIT_SOFTMAX ? 2 * M_TILES * 16 * 4 : 0);
constexpr bool SCALED = KV_FP8 && !SCALED_TILE;  // the tile's values need their rows' scales
// n8 tiles of output columns a warp takes per scale of P (a new scale group, or a warp's first)
constexpr int GROUP_TILES = SCALED && SCALE_GROUP / 8 < O_TILES ? SCALE_GROUP / 8 : O_TILES;
// Whether every warp's run of k steps starts a scale group (else its group boundaries depend on
// the warp)
// Whether some of V's columns are bf16 values (unscaled): the V4 op's rope dims
constexpr bool BF16_COLUMNS = SCALED && E4M3_DIMS < LATENT_DIM;
constexpr bool RUNS_ALIGNED = !SCALED || WARP_LATENT * 16 % SCALE_GROUP == 0;

static_assert(NUM_WARPS % COL_GROUPS == 0 && M_TILES % ROW_GROUPS == 0, "warp grid must tile the rows");
static_assert(O_TILES % 2 == 0 && O_TILES * 8 * COL_GROUPS == LATENT_DIM, "column groups must split V in n16 pieces");
static_assert(FP8_REGISTERS ? STAGES == 2 : STAGES >= 2, "gather stages");
static_assert(KV_FP8 || DEQUANT == DEQUANT_SHARED, "a 16-bit cache needs no dequantization");
static_assert(GROUP_TILES % 2 == 0, "scale groups hold whole n16 pieces of V");
static_assert(MAIN_SMEM == SMEM_BYTES, "shared-memory layout differs from kgen.mla.sparse.layout");
static_assert(LATENT_STEPS % COL_GROUPS == 0, "column groups split the latent k steps evenly");

__device__ __forceinline__ int frag_row(int rg, int i, int h, int g) { return (rg * WARP_M + i) * 16 + g + 8 * h; }

struct Lane {
  int rg, cg, lane, g, qd;
  __device__ __forceinline__ Lane() {
    const int warp = threadIdx.x / 32;
    lane = threadIdx.x % 32;
    g = lane / 4;
    qd = lane % 4;
    rg = warp / COL_GROUPS;
    cg = warp % COL_GROUPS;
  }
};

using QFrags = unsigned[Q_IN_REGISTERS ? WARP_M : 1][Q_IN_REGISTERS ? WARP_K : 1][4];
using Accum = float[WARP_M][O_TILES][4];
using PFrags = unsigned[WARP_M][PV_STEPS][4];

// Measured on the H200: skipping the softmax max's shuffles when a warp vote says no row's max
// can move saves 3-4% with 4-warp blocks (h16-b128, h16-verify, h128-b128) and costs 1-2% with
// 8-warp ones (h64-b32, h64-b128, h128-b32).
constexpr bool MAX_VOTE = NUM_WARPS < 8;

}  // namespace mla

{% include "mla/mma/online_softmax.cuh" %}
{% include "mla/mma/slices.cuh" %}
{% include "mla/mma/rows.cuh" %}

namespace mla {

// The k step (of K_STEPS; past them: none) that is warp cg's kk-th.
__device__ __forceinline__ int k_step(int kk, int cg) {
  return kk < WARP_LATENT ? cg * WARP_LATENT + kk : LATENT_STEPS + (kk - WARP_LATENT) * COL_GROUPS + cg;
}

// Whether warp cg's kk-th k step starts a scale group its earlier steps are not in (the bf16
// values, or the next group of a run that spans several).
__device__ __forceinline__ bool starts_group(int kk, int cg) {
  if (kk == 0 || kk > WARP_LATENT) return false;
  if (kk == WARP_LATENT) return true;
  return (RUNS_ALIGNED ? kk : k_step(kk, cg)) * 16 % SCALE_GROUP == 0;
}

// fp8: total += acc x (the scale of group g of each of this thread's columns), then acc = 0.
using Scores = float[WARP_M][N_TILES][4];
__device__ __forceinline__ void fold_group(Scores& total, Scores& acc, const float* row_scales, int g, const Lane& ln) {
#pragma unroll
  for (int j = 0; j < N_TILES; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const float s = g < SCALE_GROUPS ? row_scales[(8 * j + 2 * ln.qd + c) * SCALE_GROUPS + g] : 1.f;
#pragma unroll
      for (int i = 0; i < WARP_M; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          total[i][j][2 * h + c] = fmaf(acc[i][j][2 * h + c], s, total[i][j][2 * h + c]);
          acc[i][j][2 * h + c] = 0.f;
        }
    }
}

// 1. This warp's partial scores of a tile (its share of the head dims) into `partials`.
__device__ __forceinline__ void qk_partials(const T* tile, const float* row_scales, const QFrags& qf, const T* q_s,
                                            float* partials, const Lane& ln) {
  Scores acc, total;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = total[i][j][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < WARP_K; ++kk) {
    if (SCALED && starts_group(kk, ln.cg)) fold_group(total, acc, row_scales, k_step(kk - 1, ln.cg) * 16 / SCALE_GROUP, ln);
    const int ks = k_step(kk, ln.cg);
    if (kk < WARP_LATENT || ks < K_STEPS) {  // (a run's steps are all there: known at compile time)
      unsigned a[WARP_M][4];
#pragma unroll
      for (int i = 0; i < WARP_M; ++i) {
        if constexpr (Q_IN_REGISTERS) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[i][e] = qf[i][kk][e];
        } else {
          kgen::ldmatrix_x4(a[i], q_s + ((ln.rg * WARP_M + i) * 16 + ln.lane % 16) * ROW_ELEMS + (2 * ks + ln.lane / 16) * 8);
        }
      }
#pragma unroll
      for (int j = 0; j < N_TILES; j += 2) {
        unsigned k[4];
        kgen::ldmatrix_x4(k, tile + (8 * j + ln.lane % 8 + (ln.lane / 16) * 8) * ROW_ELEMS + (2 * ks + (ln.lane / 8) % 2) * 8);
#pragma unroll
        for (int i = 0; i < WARP_M; ++i) {
          Mma::mma(acc[i][j], a[i], k[0], k[1]);
          Mma::mma(acc[i][j + 1], a[i], k[2], k[3]);
        }
      }
    }
  }
  if constexpr (SCALED) fold_group(total, acc, row_scales, WARP_K > WARP_LATENT ? SCALE_GROUPS : k_step(WARP_K - 1, ln.cg) * 16 / SCALE_GROUP, ln);
  const Scores& sums = SCALED ? total : acc;
  float* mine = partials + ln.cg * (M_TILES * 16 * S_STRIDE);
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(mine + frag_row(ln.rg, i, h, ln.g) * S_STRIDE + 8 * j + 2 * ln.qd) =
            make_float2(sums[i][j][2 * h], sums[i][j][2 * h + 1]);
}

// 2. Whole scores of this warp's rows from the partials; entries with slot -1 and padding rows
// masked; online softmax; P as A fragments (o rescaled when a row's max rose).
__device__ __forceinline__ void softmax_tile(const Params& p, const float* partials, const int* slots_s, RowState& st,
                                             Accum& o, PFrags& pa, const Lane& ln) {
  float s[WARP_M][N_TILES][4];
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = frag_row(ln.rg, i, h, ln.g);
        const float2 sum = partial_sum(partials + r * S_STRIDE + 8 * j + 2 * ln.qd);
        const int2 slot = *reinterpret_cast<const int2*>(slots_s + 8 * j + 2 * ln.qd);
        const bool row = r < ROWS;
        s[i][j][2 * h] = row && slot.x >= 0 ? sum.x * p.scale_log2 : -CUDART_INF_F;
        s[i][j][2 * h + 1] = row && slot.y >= 0 ? sum.y * p.scale_log2 : -CUDART_INF_F;
      }
  online_softmax(s, st, o, pa);
}

// SPLIT_SOFTMAX: this lane's Items (fixed for the whole split) and their softmax state: the row's
// running max m (log2 units, the same in every lane of the row) and the item's share of l.
struct Slice : Items {
  float m[ITEMS], l[ITEMS];
};

// 2'. This lane's slice of the tile's softmax (entries with slot -1 and padding rows masked): P
// into p_s, each row's rescale factor (1 when its max held) into alpha_s. Returns whether any of
// its rows' max rose.
__device__ __forceinline__ bool softmax_slice(const Params& p, const float* partials, const int* slots_s, Slice& sl,
                                              T* p_s, float* alpha_s, const Lane& ln) {
  bool rose = false;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    if (!Slice::live(k, ln)) continue;
    const int r = Slice::row(k, ln), c = Slice::col(k, ln);
    const float2 sum = partial_sum(partials + r * S_STRIDE + c);
    const int2 slot = *reinterpret_cast<const int2*>(slots_s + c);
    const bool row = r < ROWS;
    const float sx = row && slot.x >= 0 ? sum.x * p.scale_log2 : -CUDART_INF_F;
    const float sy = row && slot.y >= 0 ? sum.y * p.scale_log2 : -CUDART_INF_F;
    softmax_item(make_float2(sx, sy), r, c, sl.m[k], sl.l[k], p_s, alpha_s, rose);
  }
  return rose;
}

// fp8: P's A fragment of k step kk times the group-g scales of its positions (16 kk + 2 qd + {0,
// 1, 8, 9}).
__device__ __forceinline__ void scale_p(const unsigned (&p)[4], unsigned (&scaled)[4], const float* row_scales, int kk,
                                        int g, const Lane& ln) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // positions 16 kk + 2 qd (+ 8)
    const int n = 16 * kk + 2 * ln.qd + 8 * half;
    const float s0 = row_scales[n * SCALE_GROUPS + g], s1 = row_scales[(n + 1) * SCALE_GROUPS + g];
#pragma unroll
    for (int r = 0; r < 2; ++r) {  // rows g and g + 8
      const float2 x = Mma::unpack(p[2 * half + r]);
      scaled[2 * half + r] = Mma::pack(x.x * s0, x.y * s1);
    }
  }
}

// 3. O += P.V over this warp's output columns, one k16 step of positions (P's A fragments a[i];
// fp8: P scaled per scale group of the columns).
__device__ __forceinline__ void pv_step(const T* tile, const float* row_scales, int kk, const unsigned (&a)[WARP_M][4],
                                        Accum& o, const Lane& ln) {
  unsigned ps[WARP_M][4];
#pragma unroll
  for (int j = 0; j < O_TILES; j += 2) {
    if (j % GROUP_TILES == 0) {  // (a warp's first column and every group's first after it)
      const int g = SCALED ? (ln.cg * O_TILES + j) * 8 / SCALE_GROUP : 0;
#pragma unroll
      for (int i = 0; i < WARP_M; ++i) {
        if (SCALED && (!BF16_COLUMNS || g < SCALE_GROUPS)) {  // (past them: V's bf16 columns)
          scale_p(a[i], ps[i], row_scales, kk, g, ln);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) ps[i][e] = a[i][e];
        }
      }
    }
    unsigned v[4];
    kgen::ldmatrix_x4_trans(v, tile + (16 * kk + ln.lane % 8 + ((ln.lane / 8) % 2) * 8) * ROW_ELEMS +
                                   ((ln.cg * O_TILES + j) + ln.lane / 16) * 8);
#pragma unroll
    for (int i = 0; i < WARP_M; ++i) {
      Mma::mma(o[i][j], ps[i], v[0], v[1]);
      Mma::mma(o[i][j + 1], ps[i], v[2], v[3]);
    }
  }
}

// P from this warp's fragments.
__device__ __forceinline__ void pv_tile(const T* tile, const float* row_scales, const PFrags& pa, Accum& o, const Lane& ln) {
#pragma unroll
  for (int kk = 0; kk < PV_STEPS; ++kk) {
    unsigned a[WARP_M][4];
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) a[i][e] = pa[i][kk][e];
    pv_step(tile, row_scales, kk, a, o, ln);
  }
}

// P from shared memory (SPLIT_SOFTMAX).
__device__ __forceinline__ void pv_tile(const T* tile, const float* row_scales, const T* p_s, Accum& o, const Lane& ln) {
#pragma unroll
  for (int kk = 0; kk < PV_STEPS; ++kk) {
    unsigned a[WARP_M][4];
    load_p(a, p_s, kk, ln);
    pv_step(tile, row_scales, kk, a, o, ln);
  }
}

// The softmax state of a split: per thread's rows (RowState), or with SPLIT_SOFTMAX per lane's
// items (Slice) and, in shared memory, the block's P (p_s) and rows' rescale factors (alpha_s).
struct SoftmaxState {
  RowState st;
  Slice sl;
  T* p_s;
  float* alpha_s;
};

// One gathered 16-bit tile through q.K, softmax and P.V (one barrier between the partial scores
// and their sums, with SPLIT_SOFTMAX one more that makes P whole; the caller's barrier before it
// makes the tile and its slots visible, and the next tile's keeps P and the rescale factors until
// every warp has read them).
__device__ __forceinline__ void attend_tile(const Params& p, const T* tile, const float* row_scales, const int* slots_s,
                                            const QFrags& qf, const T* q_s, float* scores, SoftmaxState& sm, Accum& o,
                                            const Lane& ln) {
  qk_partials(tile, row_scales, qf, q_s, scores, ln);
  __syncthreads();
  if constexpr (SPLIT_SOFTMAX) {
    if (__syncthreads_or(softmax_slice(p, scores, slots_s, sm.sl, sm.p_s, sm.alpha_s, ln))) {
      rescale_rows(sm.alpha_s, o, ln);
    }
    pv_tile(tile, row_scales, sm.p_s, o, ln);
  } else {
    PFrags pa;
    softmax_tile(p, scores, slots_s, sm.st, o, pa, ln);
    pv_tile(tile, row_scales, pa, o, ln);
  }
}

}  // namespace mla

extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, MIN_BLOCKS) mla_sparse_attention(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  unsigned char* stages = smem + STAGES_OFFSET;
  T* tiles = reinterpret_cast<T*>(smem + TILES_OFFSET);
  float* scores = reinterpret_cast<float*>(smem + SCORES_OFFSET);
  int* slots_s = reinterpret_cast<int*>(smem + SLOTS_OFFSET);
  float* scales_s = reinterpret_cast<float*>(smem + SCALES_OFFSET);  // fp8: per dequantized tile
  T* p_h = reinterpret_cast<T*>(smem + P_OFFSET);                      // SPLIT_SOFTMAX: P
  float* alpha_s = reinterpret_cast<float*>(smem + ROW_STATE_OFFSET);  // its rescale factors, then m
  float* l_s = alpha_s + M_TILES * 16;

  const int split = blockIdx.y, num_splits = gridDim.y, bt = blockIdx.z;
  const Lane ln;
  if (!PDL_COMBINE && num_splits > 1) note_started(p, bt);  // first: the combine counts the started blocks
{% if v4_op == "true" %}
  const Lists slots = block_lists(p, bt);  // its lists joined
{% else %}
  const int* slots = index_row(p, bt);
{% endif %}

  // q: this warp's A fragments of its k steps in registers, or the block's rows in shared memory
  // (padding rows are zeros).
  QFrags qf;
  if constexpr (Q_IN_REGISTERS) {
    // Two addresses a row, the warp's latent run and its rope steps, the k steps at immediate
    // offsets from them (an address computed a load cost the B = 1 kernels ~100 SASS
    // instructions a warp on sm_90). (A padding row's address is formed, never read.)
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = (ln.rg * WARP_M + i) * 16 + ln.g + 8 * h;
        const T* row = q_row(p, bt, r) + 2 * ln.qd;
        const unsigned* latent = reinterpret_cast<const unsigned*>(row + 16 * ln.cg * WARP_LATENT);
        const unsigned* rope = reinterpret_cast<const unsigned*>(row + 16 * (LATENT_STEPS + ln.cg));
#pragma unroll
        for (int kk = 0; kk < WARP_K; ++kk)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const bool inside = row_real(r) && (kk < WARP_LATENT || k_step(kk, ln.cg) < K_STEPS);
            const unsigned* at = kk < WARP_LATENT ? latent + 8 * kk : rope + 8 * COL_GROUPS * (kk - WARP_LATENT);
            qf[i][kk][h + 2 * half] = inside ? __ldg(at + 4 * half) : 0u;
          }
      }
  } else {
    for (int idx = threadIdx.x; idx < M_TILES * 16 * CHUNKS; idx += NUM_THREADS) {
      const int r = idx / CHUNKS, c = idx % CHUNKS;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (row_real(r)) v = __ldg(reinterpret_cast<const uint4*>(q_row(p, bt, r) + c * 8));
      *reinterpret_cast<uint4*>(q_s + r * ROW_ELEMS + c * 8) = v;
    }
  }

  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, slots, split, num_splits);  // syncs

  SoftmaxState sm;
  sm.p_s = p_h;
  sm.alpha_s = alpha_s;
  RowState& st = sm.st;
  Accum o;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    sm.sl.m[k] = -CUDART_INF_F;
    sm.sl.l[k] = 0.f;
  }
#pragma unroll
  for (int i = 0; i < WARP_M; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      st.m[i][h] = -CUDART_INF_F;
      st.l[i][h] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < O_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[i][j][e] = 0.f;
  }

  const int begin = range.begin, end = range.end;
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;
  const bool slot_writer = load_lane() == 0;
  if constexpr (FP8_REGISTERS) {
    // Tile it + 1 is loaded into registers while tile it is computed; tile it is stored
    // (dequantized) into buffer it % 2, which tile it - 2 was read from.
    HeldRow held;
    int slot = fetch_slot(slots, begin, end);
    if (num_tiles > 0) held.load(p, slot);
    int next_slot = fetch_slot(slots, begin + BLOCK_N, end);
    for (int it = 0; it < num_tiles; ++it) {
      T* tile = tiles + (it % 2) * TILE_ELEMS;
      int* tile_slots = slots_s + (it % 2) * BLOCK_N;
      float* tile_scales = scales_s + (it % 2) * SCALE_FLOATS;
      held.store(tile, tile_scales);
      if (slot_writer) tile_slots[load_row()] = slot;
      __syncthreads();  // tile it stored for all; scores free
      slot = next_slot;
      if (it + 1 < num_tiles) held.load(p, slot);
      next_slot = fetch_slot(slots, begin + (it + 2) * BLOCK_N, end);
      attend_tile(p, tile, tile_scales, tile_slots, qf, q_s, scores, sm, o, ln);
    }
  } else {
    {
      int first[STAGES - 1];  // the prologue's index reads all in flight at once
#pragma unroll
      for (int s = 0; s < STAGES - 1; ++s) first[s] = fetch_slot(slots, begin + s * BLOCK_N, end);
#pragma unroll
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < num_tiles) {
          gather_row(p, first[s], stages + s * STAGE_BYTES);
          if (slot_writer) slots_s[s * BLOCK_N + load_row()] = first[s];
        }
        kgen::cp_async_commit();
      }
    }
    int slot = fetch_slot(slots, begin + (STAGES - 1) * BLOCK_N, end);  // of the next tile to gather
    for (int it = 0; it < num_tiles; ++it) {
      const int stage = it % STAGES, next = it + STAGES - 1;
      kgen::cp_async_wait<STAGES - 2>();
      __syncthreads();  // tile it landed for all; tile it - 1's stage, tile and scores are free
      if (next < num_tiles) {
        gather_row(p, slot, stages + (next % STAGES) * STAGE_BYTES);
        if (slot_writer) slots_s[(next % STAGES) * BLOCK_N + load_row()] = slot;
      }
      kgen::cp_async_commit();
      slot = fetch_slot(slots, begin + (next + 1) * BLOCK_N, end);  // used an iteration from now
      const T* tile;
      if constexpr (KV_FP8) {
        dequantize_stage(stages + stage * STAGE_BYTES, tiles, scales_s);
        __syncthreads();  // the 16-bit tile is whole
        tile = tiles;
      } else {
        tile = reinterpret_cast<const T*>(stages + stage * STAGE_BYTES);
      }
      attend_tile(p, tile, scales_s, slots_s + stage * BLOCK_N, qf, q_s, scores, sm, o, ln);
    }
    kgen::cp_async_wait<0>();
  }
  if constexpr (SPLIT_SOFTMAX) {
    __syncthreads();  // every rescale factor read
    publish_rows(sm.sl, alpha_s, l_s, ln);
    __syncthreads();
  }

  // Results: out/lse with one split, else this split's slot of the workspace, then the combine.
  const long long slot_base = num_splits > 1 ? slot_row(p, bt, split, num_splits) : 0;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = st.l[i][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int r = frag_row(ln.rg, i, h, ln.g);
      if (!row_real(r)) continue;
      Finish fin(SPLIT_SOFTMAX ? alpha_s[r] : st.m[i][h], SPLIT_SOFTMAX ? l_s[r] : sum, range.poisoned);
{% if v4_op == "true" %}
      if (num_splits == 1) fin.scale *= sink_factor(p, r, fin.lse());  // else the merge applies it
{% endif %}
      write_row(p, bt, r, slot_base, num_splits, fin, o[i], h, ln);
    }
  if constexpr (PDL_COMBINE) {
    kgen::launch_dependents();  // mla_combine may launch once every block is here (see mla/mma/kernel.cuh)
  } else if (num_splits > 1) {
    __syncthreads();  // the tiles and scores are no longer read: the combine reuses them
    finish_split<NUM_THREADS>(p, bt, num_splits, reinterpret_cast<float*>(smem));
  }
}
