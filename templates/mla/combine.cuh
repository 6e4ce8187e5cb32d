// Split-KV combine: merge the per-split normalised partials (o_s, lse_s) of each query row by
// log-sum-exp weighting. One block per (row, sequence); threads stride over the latent dims.
// Empty splits carry lse = -inf and weigh nothing; a row no split saw gets out = 0, lse = -inf.

namespace mla {
constexpr int COMBINE_THREADS = COMBINE_WARPS * 32;
}

extern "C" __global__ void __launch_bounds__(mla::COMBINE_THREADS)
mla_combine(const float* __restrict__ ws_o, const float* __restrict__ ws_lse, T* __restrict__ out,
            long long o_sb, long long o_st, long long o_sh, float* __restrict__ lse, int num_splits) {
  using namespace mla;
  const int row = blockIdx.x, b = blockIdx.y;  // row = t * HEADS + h
  const int t = row / HEADS, h = row % HEADS;
  const long long first = static_cast<long long>(b) * num_splits * TOTAL_ROWS + row;

  float m = -CUDART_INF_F;
  bool nan = false;  // a NaN partial (NaN input, invalid sequence) makes the row NaN
  for (int s = 0; s < num_splits; ++s) {
    const float x = ws_lse[first + s * TOTAL_ROWS];
    nan |= x != x;
    m = fmaxf(m, x);
  }
  if (nan) m = CUDART_NAN_F;
  float total = 0.f;
  if (m != -CUDART_INF_F)
    for (int s = 0; s < num_splits; ++s) total += exp2f((ws_lse[first + s * TOTAL_ROWS] - m) * 1.4426950408889634f);
  const bool seen = m != -CUDART_INF_F;  // NaN counts as seen, and poisons what follows
  const float inv = seen ? 1.f / total : 0.f;

  T* dst = out + b * o_sb + t * o_st + h * o_sh;
  for (int d = threadIdx.x; d < LATENT_DIM; d += COMBINE_THREADS) {
    float acc = 0.f;
    if (seen) {
      for (int s = 0; s < num_splits; ++s) {
        const long long slot = first + s * TOTAL_ROWS;
        const float w = exp2f((ws_lse[slot] - m) * 1.4426950408889634f);
        if (w != 0.f || w != w) acc = fmaf(w, ws_o[slot * LATENT_DIM + d], acc);
      }
    }
    dst[d] = kgen::from_float<T>(acc * inv);
  }
  if (threadIdx.x == 0)
    lse[(static_cast<long long>(b) * Q_LEN + t) * HEADS + h] = seen ? m + logf(total) : -CUDART_INF_F;
}
