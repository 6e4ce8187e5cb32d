// The split-KV merge as a kernel of its own (Config.pdl_combine), launched right after the
// attention kernel with programmatic dependent launch: the attention kernel writes each split's
// normalised partial (o, lse) to its workspace slot and leaves (templates/mla/combine.cuh's slot
// layout), and this kernel, once that grid is complete, merges the S slots of every row.
//
// Block (head group, y, sequence) merges row y / CHUNKS of the group, column chunk y % CHUNKS
// (QUADS float4 columns). Its threads are QUADS x SLICES: slice k reads slots k, k + SLICES, ...,
// COMBINE_LOADS at a time in flight, keeping a running max, sum of weights and weighted sum (log2
// units); the slices then merge through shared memory in a fixed order, so a plan gives the same
// bits on every launch. The launch shape alone sets CHUNKS = gridDim.y / ROWS and SLICES =
// blockDim.x / QUADS (kgen.mla.workspace.combine_shape picks it). Empty splits (lse = -inf) weigh
// nothing; a row no split saw gets out = 0, lse = -inf; a NaN partial makes its row NaN.

namespace mla {

constexpr int COMBINE_LOADS = 8;     // slots a thread reads at a time
constexpr int COMBINE_THREADS = 512;  // at most, per block
constexpr int ROW_QUADS = LATENT_DIM / 4;  // float4 columns of a row
// Blocks an SM the register allocation must allow (0: ptxas decides). Left to itself ptxas gives
// the 512-thread merge 64 registers, which with ragged head groups (the row check) spilled 8 B on
// sm_120 (NVRTC 13.5); one block an SM lets it take what it needs (72-80).
constexpr int COMBINE_MIN_BLOCKS = RAGGED ? 1 : 0;

struct Merged {
  float m, l;  // running max (log2 units) and the sum of weights relative to it
  float4 acc;  // the weighted sum of the partials

  // Take in partial v of log-sum-exp y (log2 units; -inf: an empty split).
  __device__ __forceinline__ void add(float y, const float4& v) {
    if (y == -CUDART_INF_F) return;
    if (y > m) {  // the max rises: rescale what is there (exp2(-inf) = 0 the first time)
      const float a = exp2f(m - y);
      acc = make_float4(acc.x * a, acc.y * a, acc.z * a, acc.w * a);
      l *= a;
      m = y;
    }
    const float w = exp2f(y - m);  // NaN for a NaN partial: it poisons the row
    acc = make_float4(fmaf(w, v.x, acc.x), fmaf(w, v.y, acc.y), fmaf(w, v.z, acc.z), fmaf(w, v.w, acc.w));
    l += w;
  }
};

}  // namespace mla

extern "C" __global__ void __launch_bounds__(mla::COMBINE_THREADS, mla::COMBINE_MIN_BLOCKS) mla_combine(const mla::Params p, int num_splits) {
  using namespace mla;
  __shared__ float4 acc_s[COMBINE_THREADS];
  __shared__ float2 ml_s[COMBINE_THREADS];
  const int b = blockIdx.z, chunks = gridDim.y / ROWS, quads = ROW_QUADS / chunks;
  const int slices = blockDim.x / quads, quad = threadIdx.x % quads, slice = threadIdx.x / quads;
  const int r = blockIdx.y / chunks, d = (blockIdx.y % chunks * quads + quad) * 4;
  const long long first = slot_row(p, b, 0, num_splits) + r;  // slot s of row r: first + s * ROWS
  if (RAGGED && !row_real(r)) return;  // a head past HEADS in the last, ragged head group
  kgen::wait_for_prerequisites();

  Merged mg{-CUDART_INF_F, 0.f, make_float4(0.f, 0.f, 0.f, 0.f)};
  for (int s0 = slice; s0 < num_splits; s0 += COMBINE_LOADS * slices) {
    float y[COMBINE_LOADS];
    float4 v[COMBINE_LOADS];
#pragma unroll
    for (int c = 0; c < COMBINE_LOADS; ++c) {
      const int s = s0 + c * slices;
      const long long slot = first + static_cast<long long>(s) * ROWS;
      y[c] = s < num_splits ? __ldcg(p.ws_lse + slot) * LOG2E : -CUDART_INF_F;
      v[c] = s < num_splits ? __ldcg(reinterpret_cast<const float4*>(p.ws_o + slot * LATENT_DIM + d))
                            : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int c = 0; c < COMBINE_LOADS; ++c) mg.add(y[c], v[c]);
  }
  acc_s[threadIdx.x] = mg.acc;
  ml_s[threadIdx.x] = make_float2(mg.m, mg.l);
  __syncthreads();
  if (slice != 0) return;
  Merged all{-CUDART_INF_F, 0.f, make_float4(0.f, 0.f, 0.f, 0.f)};
  for (int k = 0; k < slices; ++k) all.m = fmaxf(all.m, ml_s[quad + k * quads].x);
  for (int k = 0; k < slices; ++k) {
    const float2 ml = ml_s[quad + k * quads];
    const float4 a = acc_s[quad + k * quads];
    // 0 for a slice that saw nothing, whose sums are 0, or only NaN partials (its max never
    // rose: the NaN sums still reach the row, 0 x NaN = NaN)
    const float w = ml.x == -CUDART_INF_F ? 0.f : exp2f(ml.x - all.m);
    all.acc = make_float4(fmaf(w, a.x, all.acc.x), fmaf(w, a.y, all.acc.y), fmaf(w, a.z, all.acc.z),
                          fmaf(w, a.w, all.acc.w));
    all.l = fmaf(w, ml.y, all.l);
  }
  const bool seen = all.l > 0.f || all.l != all.l;  // NaN counts as seen, and poisons the row
{% if sink is defined and sink == "true" %}
  // the sparse V4 op's sink, on the merged row (its lse is without it)
  const float inv = seen ? sink_factor(p, r, (all.m + log2f(all.l)) * LN2) / all.l : 0.f;
{% else %}
  const float inv = seen ? 1.f / all.l : 0.f;
{% endif %}
  QT* o = out_row(p, b, r) + d;
  o[0] = kgen::from_float<QT>(seen ? all.acc.x * inv : 0.f);
  o[1] = kgen::from_float<QT>(seen ? all.acc.y * inv : 0.f);
  o[2] = kgen::from_float<QT>(seen ? all.acc.z * inv : 0.f);
  o[3] = kgen::from_float<QT>(seen ? all.acc.w * inv : 0.f);
  if (d == 0) *lse_at(p, b, r) = seen ? (all.m + log2f(all.l)) * LN2 : -CUDART_INF_F;
}
