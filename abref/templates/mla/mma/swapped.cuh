// Swapped rows (Config.swap_rows): a block of at most 8 query rows (H = 8 decode, say) on the n8
// side of both products, so that no MMA spends half its rows on padding:
//   S^T [positions x rows] = K [positions x 576] . q^T   (A = K from ldmatrix, B = q in registers)
//   O^T [512 x rows]      += V^T [512 x positions] . P^T  (A = V^T from ldmatrix.trans, B = P^T)
// The COL_GROUPS warps (one row group) split the 576 head dims of q.K^T as on the row path and
// leave partial scores in shared memory ([column group][position][8 rows] floats); each warp sums
// them for every position and row, runs the online softmax (a row's positions are spread over the
// lanes' g, so its max takes three shuffles), and turns its S^T fragments into P^T B fragments
// with movmatrix (an 8x8 transpose in registers). A warp owns LATENT_DIM / COL_GROUPS output dims
// (D_TILES m16 tiles): 4 accumulator registers per m16 tile, half the row path's at 16 rows.
// Mask 'none' only (no draft rows), one softmax per warp (no split softmax or split reduce).

namespace mla {

static_assert(!RAGGED, "ragged head groups take the mma row path only");

constexpr int D_TILES = LATENT_DIM / 16 / COL_GROUPS;  // m16 tiles of output dims per warp
constexpr int P_TILES = BLOCK_N / 16;                  // m16 tiles of positions
constexpr int SWAP_SCORE_FLOATS = COL_GROUPS * BLOCK_N * 8;  // one tile's partial scores
static_assert(ROWS <= 8, "swapped rows: at most 8 rows, the n8 side of the MMA");
static_assert(MASK_KIND == MASK_NONE, "swapped rows: mask 'none' only");
static_assert((!SPLIT_SOFTMAX && !SPLIT_REDUCE), "swapped rows: one softmax per warp");
static_assert(NUM_WARPS == COL_GROUPS, "swapped rows: one row group");
static_assert(D_TILES * 16 * COL_GROUPS == LATENT_DIM, "column groups split V in m16 pieces");

using QFragsT = unsigned[WARP_K][2];
using AccumT = float[D_TILES][4];
using PFragsT = unsigned[P_TILES][2];

// An 8x8 transpose of 16-bit values held as mma fragments: in, lane (g, qd) holds (row g, cols
// 2qd, 2qd + 1); out, the same of the transposed matrix.
__device__ __forceinline__ unsigned transpose8x8(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// 1. This warp's partial S^T of a tile (its share of the head dims) into `partials`, issuing the
// pieces of `copy` along the way.
__device__ __forceinline__ void qk_partials_swapped(const T* tile, const QFragsT& qf, float* partials,
                                                    const TileCopy& copy, const Lane& ln) {
  float acc[P_TILES][4];
#pragma unroll
  for (int i = 0; i < P_TILES; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < WARP_K; ++kk) {
    copy.pieces_at(kk, WARP_K);
    const int ks = kk * COL_GROUPS + ln.cg;
    if (K_STEPS % COL_GROUPS == 0 || ks < K_STEPS) {
#pragma unroll
      for (int i = 0; i < P_TILES; ++i) {
        unsigned k[4];  // A: positions 16i.. (rows), head dims 16ks.. (cols)
        kgen::ldmatrix_x4(k, tile + (16 * i + ln.lane % 16) * ROW_ELEMS + k_step_slot<COL_GROUPS>(kk, ln.cg, ln.lane / 16, ln.lane % 8) * 8);
        Mma::mma(acc[i], k, qf[kk][0], qf[kk][1]);
      }
    }
  }
  float* mine = partials + ln.cg * (BLOCK_N * 8);
#pragma unroll
  for (int i = 0; i < P_TILES; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<float2*>(mine + (16 * i + ln.g + 8 * h) * 8 + 2 * ln.qd) =
          make_float2(acc[i][2 * h], acc[i][2 * h + 1]);
}

// Softmax state of this thread's two rows (2qd, 2qd + 1): running max m (log2 units), its share of l.
struct SwappedRows {
  float m[2], l[2];
};

// 2. Whole scores from the partials, masked; online softmax; P^T as B fragments (o rescaled when
// a row's max rose).
__device__ __forceinline__ void softmax_swapped(const Params& p, const float* partials, int count, SwappedRows& st,
                                                AccumT& o, PFragsT& pb, const Lane& ln) {
  float s[P_TILES][4];
#pragma unroll
  for (int i = 0; i < P_TILES; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float* at = partials + (16 * i + ln.g + 8 * h) * 8 + 2 * ln.qd;
      float2 sum = *reinterpret_cast<const float2*>(at);
#pragma unroll
      for (int c = 1; c < COL_GROUPS; ++c) {
        const float2 v = *reinterpret_cast<const float2*>(at + c * (BLOCK_N * 8));
        sum.x += v.x;
        sum.y += v.y;
      }
      const int n = 16 * i + ln.g + 8 * h;  // position within the tile
      s[i][2 * h] = n < count && 2 * ln.qd < ROWS ? sum.x * p.scale_log2 : -CUDART_INF_F;
      s[i][2 * h + 1] = n < count && 2 * ln.qd + 1 < ROWS ? sum.y * p.scale_log2 : -CUDART_INF_F;
    }
  float alpha[2] = {1.f, 1.f}, mx[2];
  bool rise = false, rescale = false;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    mx[e] = -CUDART_INF_F;
#pragma unroll
    for (int i = 0; i < P_TILES; ++i) mx[e] = fmaxf(mx[e], fmaxf(s[i][e], s[i][2 + e]));
    rise |= may_rise(st.m[e], mx[e]);
  }
  if (__any_sync(0xffffffffu, rise)) {  // (see may_rise)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float m = fmaxf(mx[e], __shfl_xor_sync(0xffffffffu, mx[e], 4));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
      rescale |= max_rose(st.m[e], m, alpha[e]);
    }
  }
  const float base[2] = {exp_base(st.m[0]), exp_base(st.m[1])};
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < P_TILES; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned packed = Mma::pack(kgen::fast_exp2(s[i][2 * h] - base[0]), kgen::fast_exp2(s[i][2 * h + 1] - base[1]));
      const float2 rounded = Mma::unpack(packed);  // l sums exactly the p that P.V uses
      sum[0] += rounded.x;
      sum[1] += rounded.y;
      pb[i][h] = transpose8x8(packed);  // (row g, positions 16i + 8h + 2qd, + 1)
    }
#pragma unroll
  for (int e = 0; e < 2; ++e) st.l[e] = st.l[e] * alpha[e] + sum[e];
  if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
    for (int j = 0; j < D_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[j][e] *= alpha[e % 2];
  }
}

// 3. O^T += V^T . P^T over this warp's output dims.
__device__ __forceinline__ void pv_swapped(const T* tile, const PFragsT& pb, AccumT& o, const Lane& ln) {
  const int row = ln.lane % 8 + (ln.lane / 16) * 8;  // + 16 kk; chunk 2 (cg * D_TILES + j) + (lane / 8) % 2
  const SwizzledRows rows(tile, row, 2 * ln.cg * D_TILES, (ln.lane / 8) % 2, ln.lane % 8);
#pragma unroll
  for (int kk = 0; kk < P_TILES; ++kk)
#pragma unroll
    for (int j = 0; j < D_TILES; ++j) {
      unsigned v[4];  // A: output dims (rows) x positions 16kk.. (cols), transposed from the tile
      kgen::ldmatrix_x4_trans(v, D_TILES % 4 ? tile + tile_at(16 * kk + row, 2 * (ln.cg * D_TILES + j) + (ln.lane / 8) % 2)
                                             : rows(16 * kk, 2 * j));
      Mma::mma(o[j], v, pb[kk][0], pb[kk][1]);
    }
}

}  // namespace mla

// The kernel entry of swapped-rows blocks: the row path's pipeline, copies and split bookkeeping
// (mla/mma/kernel.cuh) around the three steps above.
extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, MIN_BLOCKS) mla_attention(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  T* tiles = reinterpret_cast<T*>(smem + TILES_OFFSET);
  float* scores = reinterpret_cast<float*>(smem + SCORES_OFFSET);
  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;
  const Lane ln;
  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);

  // q^T: B fragments of this warp's k steps, (k 2qd.., row g) and (k 2qd + 8.., row g)
  QFragsT qf;
#pragma unroll
  for (int kk = 0; kk < WARP_K; ++kk) {
    const int ks = kk * COL_GROUPS + ln.cg;
    const bool inside = ln.g < ROWS && (K_STEPS % COL_GROUPS == 0 || ks < K_STEPS);
#pragma unroll
    for (int e = 0; e < 2; ++e)
      qf[kk][e] = inside ? __ldg(reinterpret_cast<const unsigned*>(q_row(p, b, ln.g) + 16 * ks + 2 * ln.qd + 8 * e)) : 0u;
  }

  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, b, split, num_splits);  // syncs
  SwappedRows st;
  AccumT o;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    st.m[e] = -CUDART_INF_F;
    st.l[e] = 0.f;
  }
#pragma unroll
  for (int j = 0; j < D_TILES; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[j][e] = 0.f;

  const int begin = range.begin, end = range.end;
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;
  {
    int first[STAGES - 1];  // the prologue's block-table reads all in flight at once
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) first[s] = fetch_page(p, b, begin + s * BLOCK_N, end);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < num_tiles) TileCopy(p, begin + s * BLOCK_N, end, first[s], tiles + s * TILE_ELEMS).all();
      kgen::cp_async_commit();
    }
  }
  int page = fetch_page(p, b, begin + (STAGES - 1) * BLOCK_N, end);  // of the next tile to copy
  if constexpr (QK_AHEAD) {
    kgen::cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile 0 landed
    if (num_tiles > 0) qk_partials_swapped(tiles, qf, scores, TileCopy(), ln);
  }
  for (int it = 0; it < num_tiles; ++it) {
    const T* tile = tiles + (it % STAGES) * TILE_ELEMS;
    float* partials = scores + (QK_AHEAD ? (it % 2) * SWAP_SCORE_FLOATS : 0);
    const int start = begin + it * BLOCK_N, count = min(BLOCK_N, end - start), next = it + STAGES - 1;
    if constexpr (QK_AHEAD) {
      kgen::cp_async_wait<STAGES - 3>();
      __syncthreads();  // tile it + 1 landed, tile it's partials are whole, tile it - 1's buffer is free
    } else {
      kgen::cp_async_wait<STAGES - 2>();
      __syncthreads();  // tile `it` landed for all; tile it - 1's buffer and the scores are free
    }
    const TileCopy copy =
        next < num_tiles ? TileCopy(p, begin + next * BLOCK_N, end, page, tiles + (next % STAGES) * TILE_ELEMS) : TileCopy();
    if constexpr (!SPREAD_COPIES) {
      copy.all();
      kgen::cp_async_commit();
    }
    page = fetch_page(p, b, begin + (next + 1) * BLOCK_N, end);  // used an iteration from now
    if constexpr (!QK_AHEAD) {
      qk_partials_swapped(tile, qf, partials, copy, ln);
      if constexpr (SPREAD_COPIES) kgen::cp_async_commit();
      __syncthreads();  // the partials are whole
    }
    PFragsT pb;
    softmax_swapped(p, partials, count, st, o, pb, ln);
    pv_swapped(tile, pb, o, ln);
    if constexpr (QK_AHEAD) {
      // Tile it + 1's partial scores beside the P.V above (past the last tile: a consumed buffer
      // into a buffer nobody reads)
      qk_partials_swapped(tiles + ((it + 1) % STAGES) * TILE_ELEMS, qf, scores + ((it + 1) % 2) * SWAP_SCORE_FLOATS,
                          TileCopy(), ln);
    }
  }
  kgen::cp_async_wait<0>();

  // Results: out/lse with one split, else this split's slot of the workspace, then the combine
  // (here, or with PDL_COMBINE in mla_combine, a kernel of its own).
  const long long slot = num_splits > 1 ? slot_row(p, b, split, num_splits) : 0;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    float l = st.l[e];
    l += __shfl_xor_sync(0xffffffffu, l, 4);
    l += __shfl_xor_sync(0xffffffffu, l, 8);
    l += __shfl_xor_sync(0xffffffffu, l, 16);
    const int r = 2 * ln.qd + e;
    if (r >= ROWS) continue;
    const Finish fin(st.m[e], l, range.poisoned);
#pragma unroll
    for (int j = 0; j < D_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int d = (ln.cg * D_TILES + j) * 16 + ln.g + 8 * h;
        const float x = fin.apply(o[j][2 * h + e]);
        if (num_splits == 1) {
          out_row(p, b, r)[d] = kgen::from_float<T>(x);
        } else {
          p.ws_o[(slot + r) * LATENT_DIM + d] = x;
        }
      }
    if (ln.cg == 0 && ln.g == 0) {
      if (num_splits == 1) *lse_at(p, b, r) = fin.lse();
      else p.ws_lse[slot + r] = fin.lse();
    }
  }
  end_split(p, b, num_splits, smem);
}
