// Split-KV combine, fused into the attention kernel: no second launch.
//
// With S > 1 splits, every block writes its rows' normalised partial (o, lse) to a workspace slot
// and arrives at a counter; the last of a group of `combine_fanin` splits merges the group by
// log-sum-exp weighting. With one group that merge is the result; otherwise it goes to a group
// slot, and the last group to finish merges the group slots into out/lse. So no block reads more
// than max(fanin, groups) ~ sqrt(S) partials. The last arrival resets its counter to 0: the
// counters are zero before and after every launch (CUDA-graph safe).
//
// Workspace of one (sequence, head group): slots [0, S) per split, [S, S + groups) per group,
// ROWS rows each: ws_o [.., slot, ROWS, LATENT_DIM], ws_lse [.., slot, ROWS].
// Empty splits carry lse = -inf and weigh nothing; a NaN partial makes its row NaN.

namespace mla {

constexpr int COMBINE_SCRATCH = 1024;  // floats of shared memory the merge uses (reused smem)

__device__ __forceinline__ int combine_groups(int num_splits, int fanin) { return (num_splits + fanin - 1) / fanin; }
__device__ __forceinline__ int workspace_slots(int num_splits, int fanin) {
  const int groups = combine_groups(num_splits, fanin);
  return groups > 1 ? num_splits + groups : num_splits;
}
__device__ __forceinline__ long long slot_row(const Params& p, int b, int slot, int num_splits) {
  const long long first = (static_cast<long long>(b) * HEAD_GROUPS + blockIdx.y) * workspace_slots(num_splits, p.combine_fanin);
  return (first + slot) * ROWS;
}

// The weighted sum over slots [first, first + count) of rows [r0, r0 + nr), weights w[r * count + s],
// into slot `dst` (or out when dst < 0). A thread takes BATCH float4 columns and issues the loads
// of CHUNK slots for all of them before it adds any: BATCH x CHUNK L2 reads in flight per thread,
// so a merge costs ~count / CHUNK L2 round trips per pass over its columns, not count. Empty
// splits carry o = 0 and weight 0; NaN weights poison their row.
template <int THREADS, int BATCH, int CHUNK>
__device__ __forceinline__ void merge_columns(const Params& p, int b, long long base, int first, int count, int dst,
                                              int r0, int nr, const float* w) {
  constexpr int QUADS = LATENT_DIM / 4;
  const int items = nr * QUADS;
  for (int i0 = threadIdx.x; i0 < items; i0 += THREADS * BATCH) {
    float4 acc[BATCH];
#pragma unroll
    for (int k = 0; k < BATCH; ++k) acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < count; s0 += CHUNK) {
      float4 v[BATCH][CHUNK];
#pragma unroll
      for (int k = 0; k < BATCH; ++k)
#pragma unroll
        for (int c = 0; c < CHUNK; ++c) {
          const int i = i0 + k * THREADS, s = s0 + c;
          v[k][c] = make_float4(0.f, 0.f, 0.f, 0.f);
          if (i < items && s < count)
            v[k][c] = __ldcg(reinterpret_cast<const float4*>(
                p.ws_o + (base + static_cast<long long>(first + s) * ROWS + r0 + i / QUADS) * LATENT_DIM + (i % QUADS) * 4));
        }
#pragma unroll
      for (int k = 0; k < BATCH; ++k)
#pragma unroll
        for (int c = 0; c < CHUNK; ++c) {
          const int i = i0 + k * THREADS, s = s0 + c;
          if (i < items && s < count) {
            const float wt = w[(i / QUADS) * count + s];
            acc[k].x = fmaf(wt, v[k][c].x, acc[k].x);
            acc[k].y = fmaf(wt, v[k][c].y, acc[k].y);
            acc[k].z = fmaf(wt, v[k][c].z, acc[k].z);
            acc[k].w = fmaf(wt, v[k][c].w, acc[k].w);
          }
        }
    }
#pragma unroll
    for (int k = 0; k < BATCH; ++k) {
      const int i = i0 + k * THREADS;
      if (i >= items) continue;
      const int r = i / QUADS, d = (i % QUADS) * 4;
      if (dst >= 0) {
        *reinterpret_cast<float4*>(p.ws_o + (base + static_cast<long long>(dst) * ROWS + r0 + r) * LATENT_DIM + d) = acc[k];
      } else {
        T* o = out_row(p, b, r0 + r) + d;
        o[0] = kgen::from_float<T>(acc[k].x);
        o[1] = kgen::from_float<T>(acc[k].y);
        o[2] = kgen::from_float<T>(acc[k].z);
        o[3] = kgen::from_float<T>(acc[k].w);
      }
    }
  }
}

// Merge slots [first, first + count) into slot `dst`, or into out/lse when dst < 0.
template <int THREADS>
__device__ void merge_slots(const Params& p, int b, int num_splits, int first, int count, int dst, float* scratch) {
  const long long base = slot_row(p, b, 0, num_splits);
  const int rows_per_pass = max(1, COMBINE_SCRATCH / count);
  for (int r0 = 0; r0 < ROWS; r0 += rows_per_pass) {
    const int nr = min(rows_per_pass, ROWS - r0);
    for (int i = threadIdx.x; i < nr * count; i += THREADS) {
      const int r = i / count, s = i % count;
      scratch[i] = __ldcg(p.ws_lse + base + static_cast<long long>(first + s) * ROWS + r0 + r);
    }
    __syncthreads();
    for (int r = threadIdx.x; r < nr; r += THREADS) {  // lse values -> weights, in place
      float* w = scratch + r * count;
      float m = -CUDART_INF_F;
      bool nan = false;
      for (int s = 0; s < count; ++s) {
        nan |= w[s] != w[s];
        m = fmaxf(m, w[s]);
      }
      if (nan) m = CUDART_NAN_F;
      const bool seen = m != -CUDART_INF_F;  // NaN counts as seen, and poisons what follows
      float total = 0.f;
      if (seen)
        for (int s = 0; s < count; ++s) total += exp2f((w[s] - m) * LOG2E);
      const float inv = seen ? 1.f / total : 0.f;
      for (int s = 0; s < count; ++s) w[s] = seen ? exp2f((w[s] - m) * LOG2E) * inv : 0.f;
      const float lse = seen ? m + logf(total) : -CUDART_INF_F;
      if (dst >= 0) p.ws_lse[base + static_cast<long long>(dst) * ROWS + r0 + r] = lse;
      else *lse_at(p, b, r0 + r) = lse;
    }
    __syncthreads();
    if (count <= 4) merge_columns<THREADS, 4, 4>(p, b, base, first, count, dst, r0, nr, scratch);
    else if (count <= 8) merge_columns<THREADS, 2, 8>(p, b, base, first, count, dst, r0, nr, scratch);
    else merge_columns<THREADS, 1, 16>(p, b, base, first, count, dst, r0, nr, scratch);
    __syncthreads();
  }
}

// Arrive at a counter after this block's writes; true for the `expected`-th (last) arrival.
template <int THREADS>
__device__ bool arrive_last(int* counter, int expected, int* flag) {
  __threadfence();  // this block's partials are visible before the counter moves
  __syncthreads();
  if (threadIdx.x == 0) {
    const int ticket = atomicAdd(counter, 1);
    const bool last = ticket == expected - 1;
    if (last) atomicExch(counter, 0);  // every arrival is in: reset for the next launch
    *flag = last;
  }
  __syncthreads();
  const bool last = *flag;
  if (last) __threadfence();  // see the other blocks' partials
  return last;
}

// Called by every block after it wrote its partial (num_splits > 1). `scratch` is shared memory
// of COMBINE_SCRATCH floats plus one int, free to reuse.
template <int THREADS>
__device__ void finish_split(const Params& p, int b, int split, int num_splits, float* scratch) {
  const int fanin = p.combine_fanin, groups = combine_groups(num_splits, fanin);
  int* counters = p.counters + (static_cast<long long>(b) * HEAD_GROUPS + blockIdx.y) * (groups + 1);
  int* flag = reinterpret_cast<int*>(scratch + COMBINE_SCRATCH);
  const int group = split / fanin, first = group * fanin, count = min(fanin, num_splits - first);
  if (!arrive_last<THREADS>(counters + group, count, flag)) return;
  if (groups == 1) {
    merge_slots<THREADS>(p, b, num_splits, first, count, -1, scratch);
    return;
  }
  merge_slots<THREADS>(p, b, num_splits, first, count, num_splits + group, scratch);
  if (!arrive_last<THREADS>(counters + groups, groups, flag)) return;
  merge_slots<THREADS>(p, b, num_splits, num_splits, groups, -1, scratch);
}

}  // namespace mla
