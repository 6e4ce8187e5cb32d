// The online softmax of a tile's scores in registers, as both tensor-core families (dense and
// sparse) run it on the row path: the running max moves only on a rise past RESCALE_THRESHOLD
// (log2 units), p = 2^(s - max) is packed into P.V's A fragments, and l sums the p that P.V
// uses. Included after the family's WARP_M, N_TILES, O_TILES, Accum, PFrags and MAX_VOTE
// (whether a warp vote skips the max's shuffles when no row's max can move: see may_rise).

namespace mla {

constexpr float RESCALE_THRESHOLD = 8.0f;

// Whether a row's running max m (log2 units) moves to the tile's max mx: only a rise past
// RESCALE_THRESHOLD moves it (so p <= 2^threshold), or the first finite max. Then `alpha` is the
// rescale factor of what was summed before (0 when nothing was).
__device__ __forceinline__ bool max_rose(float& m, float mx, float& alpha) {
  alpha = 1.f;
  if (mx > m + RESCALE_THRESHOLD || (m == -CUDART_INF_F && mx != -CUDART_INF_F)) {
    alpha = kgen::fast_exp2(m - mx);
    m = mx;
    return true;
  }
  return false;
}

// Whether a row's running max m could move for a score x of it (max_rose for a max of one score).
// When no lane of a warp holds such a score, no row of the warp moves: the max's shuffles are
// skipped (every tile but the first few, as the max settles).
__device__ __forceinline__ bool may_rise(float m, float x) {
  return x > m + RESCALE_THRESHOLD || (m == -CUDART_INF_F && x != -CUDART_INF_F);
}

// The base exponent of a row's p = 2^(s - base): its max, or 0 while the row has seen nothing.
__device__ __forceinline__ float exp_base(float m) { return m == -CUDART_INF_F ? 0.f : m; }

// Softmax state of this thread's rows: running max m (log2 units) and its share of the sum l.
struct RowState {
  float m[WARP_M][2], l[WARP_M][2];
};

// A tile's masked scores s (log2 units) of this thread's rows -> P as A fragments; the row states
// updated, o rescaled where a row's max rose.
__device__ __forceinline__ void online_softmax(float (&s)[WARP_M][N_TILES][4], RowState& st, Accum& o, PFrags& pa) {
  float alpha[WARP_M][2], mx[WARP_M][2];
  bool rise = false, rescale = false;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[i][h] = -CUDART_INF_F;
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) mx[i][h] = fmaxf(mx[i][h], fmaxf(s[i][j][2 * h], s[i][j][2 * h + 1]));
      rise |= may_rise(st.m[i][h], mx[i][h]);
      alpha[i][h] = 1.f;
    }
  if (!MAX_VOTE || __any_sync(0xffffffffu, rise)) {
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float m = fmaxf(mx[i][h], __shfl_xor_sync(0xffffffffu, mx[i][h], 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        rescale |= max_rose(st.m[i][h], m, alpha[i][h]);
      }
  }
#pragma unroll
  for (int i = 0; i < WARP_M; ++i) {
    const float base[2] = {exp_base(st.m[i][0]), exp_base(st.m[i][1])};
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned packed = Mma::pack(kgen::fast_exp2(s[i][j][2 * h] - base[h]),
                                          kgen::fast_exp2(s[i][j][2 * h + 1] - base[h]));
        const float2 rounded = Mma::unpack(packed);  // l sums exactly the p that P.V uses
        sum[h] += rounded.x + rounded.y;
        pa[i][j / 2][(j % 2) * 2 + h] = packed;
      }
#pragma unroll
    for (int h = 0; h < 2; ++h) st.l[i][h] = st.l[i][h] * alpha[i][h] + sum[h];
  }
  if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int j = 0; j < O_TILES; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][j][e] *= alpha[i][e / 2];
  }
}

}  // namespace mla
