// Split-KV combine, fused into the attention kernel: no second launch, and no one block merging
// alone (one SM reads L2 at a few tens of GB/s: a merge of S partials of a row group on one SM is
// S x rows x 2 KB at that rate, 10-40 us measured).
//
// With S > 1 splits, every block writes its rows' normalised partial (o, lse) to its workspace
// slot and arrives at its group's counter (a group: the S splits of one sequence and block group).
// The merge is cut into PIECES (row range x column chunk) which the group's helpers take from a
// counter: the last block to arrive, and every earlier one that found all S blocks of its group
// started when it arrived. A helper waits for the last arrival before it reads any partial; it
// waits only for blocks that have started (they are resident, and reach their arrival without
// waiting for anyone), so waiting cannot deadlock whatever the grid's size. The last arrival,
// out of pieces, waits for the other helpers to leave and then zeroes the group's counters: zero
// before and after every launch, so one buffer serves every launch (CUDA-graph safe).
//
// Workspace of one (sequence, block group): S slots of ROWS rows, ws_o [.., S, ROWS, LATENT_DIM],
// ws_lse [.., S, ROWS]. Empty splits carry lse = -inf and weigh nothing; a NaN partial makes its
// row NaN.

namespace mla {

constexpr int COMBINE_SCRATCH = 1024;  // floats of weights (reused shared memory)
constexpr int MAX_CHUNKS = 16;         // column chunks of a row, at most: LATENT_DIM / 16 columns
constexpr int QUADS = LATENT_DIM / 4;  // float4 columns of a row
static_assert(QUADS % MAX_CHUNKS == 0, "the combine's column chunks are float4 quads");

// A group's counters: arrivals (low 16 bits) and registered helpers (high 16), blocks started,
// pieces taken, helpers left.
enum { ARRIVALS = 0, STARTED = 1, TAKEN = 2, LEFT = 3, GROUP_COUNTERS = 4 };
constexpr int HELPER = 1 << 16;

__device__ __forceinline__ int* group_counters(const Params& p, int b) {
  return p.counters + (static_cast<long long>(b) * BLOCK_GROUPS + block_group()) * GROUP_COUNTERS;
}
__device__ __forceinline__ long long slot_row(const Params& p, int b, int slot, int num_splits) {
  return ((static_cast<long long>(b) * BLOCK_GROUPS + block_group()) * num_splits + slot) * ROWS;
}

// At the kernel's start, by every block of a launch with several splits: this block has started.
__device__ __forceinline__ void note_started(const Params& p, int b) {
  if (threadIdx.x == 0) atomicAdd(group_counters(p, b) + STARTED, 1);
}

// How the merge is cut into about as many pieces as there are splits (helpers): with fewer splits
// than rows, row ranges of whole rows; else single rows cut into up to MAX_CHUNKS column chunks
// (a power of two). A piece reads S x rows x chunk columns of partials.
struct Pieces {
  int rows, chunks, count;
  __device__ __forceinline__ explicit Pieces(int num_splits) {
    const int ranges = min(ROWS, num_splits);
    rows = (ROWS + ranges - 1) / ranges;
    chunks = 1;
    while (chunks < MAX_CHUNKS && 2 * chunks * ROWS <= num_splits) chunks *= 2;
    count = (ROWS + rows - 1) / rows * chunks;
  }
};

// Merge rows [r0, r0 + nr) x column chunk `chunk` of `chunks` over all S slots into out (and lse,
// by chunk 0).
// Threads split the (row, quad) items and, where there are fewer items than threads, the slots,
// with CHUNK = MERGE_LOADS L2 reads in flight per thread (a latency chain of num_splits / (CHUNK
// x slices) rounds); the slices are summed through shared memory.
template <int THREADS>
__device__ void merge_piece(const Params& p, int b, int num_splits, int r0, int nr, int chunk, int chunks,
                            float* scratch) {
  constexpr int CHUNK = MERGE_LOADS;
  const long long base = slot_row(p, b, 0, num_splits);
  float* w = scratch;                                              // [nr][S] weights
  float4* red = reinterpret_cast<float4*>(scratch + COMBINE_SCRATCH);  // [THREADS] slice sums
  const int rows_per_pass = max(1, COMBINE_SCRATCH / num_splits);
  for (int q0 = r0; q0 < r0 + nr; q0 += rows_per_pass) {
    const int rows = min(rows_per_pass, r0 + nr - q0);
    for (int i = threadIdx.x; i < rows * num_splits; i += THREADS) {
      const int r = i / num_splits, s = i % num_splits;
      w[i] = __ldcg(p.ws_lse + base + static_cast<long long>(s) * ROWS + q0 + r);
    }
    __syncthreads();
    // lse values -> weights, one warp per row
    for (int r = threadIdx.x / 32; r < rows; r += THREADS / 32) {
      float* wr = w + r * num_splits;
      float m = -CUDART_INF_F;
      bool nan = false;
      for (int s = threadIdx.x % 32; s < num_splits; s += 32) {
        nan |= wr[s] != wr[s];
        m = fmaxf(m, wr[s]);
      }
#pragma unroll
      for (int k = 16; k > 0; k /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, k));
      if (__any_sync(0xffffffffu, nan)) m = CUDART_NAN_F;
      const bool seen = m != -CUDART_INF_F;  // NaN counts as seen, and poisons what follows
      float total = 0.f;
      if (seen)
        for (int s = threadIdx.x % 32; s < num_splits; s += 32) total += exp2f((wr[s] - m) * LOG2E);
#pragma unroll
      for (int k = 16; k > 0; k /= 2) total += __shfl_xor_sync(0xffffffffu, total, k);
{% if sink is defined and sink == "true" %}
      // the sparse V4 op's sink, on the merged row (its lse is without it)
      const float inv = seen ? sink_factor(p, q0 + r, m + logf(total)) / total : 0.f;
{% else %}
      const float inv = seen ? 1.f / total : 0.f;
{% endif %}
      for (int s = threadIdx.x % 32; s < num_splits; s += 32) wr[s] = seen ? exp2f((wr[s] - m) * LOG2E) * inv : 0.f;
      if (chunk == 0 && threadIdx.x % 32 == 0 && (!RAGGED || row_real(q0 + r))) *lse_at(p, b, q0 + r) = seen ? m + logf(total) : -CUDART_INF_F;
    }
    __syncthreads();
    const int quads = QUADS / chunks, items = rows * quads;
    const int slices = max(1, min(num_splits, THREADS / items)), lanes = THREADS / slices;
    const int slice = threadIdx.x / lanes;
    const long long step = static_cast<long long>(slices) * ROWS * LATENT_DIM;  // slot s -> s + slices
    for (int i0 = 0; i0 < items; i0 += lanes) {
      const int item = i0 + threadIdx.x % lanes;
      const bool active = slice < slices && item < items;
      const int r = item / quads, d = (chunk * quads + item % quads) * 4;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      if (active) {
        const float* src = p.ws_o + (base + static_cast<long long>(slice) * ROWS + q0 + r) * LATENT_DIM + d;
        const float* wr = w + r * num_splits;
        for (int s0 = slice; s0 < num_splits; s0 += CHUNK * slices, src += CHUNK * step) {
          float4 v[CHUNK];
#pragma unroll
          for (int c = 0; c < CHUNK; ++c)
            v[c] = s0 + c * slices < num_splits ? __ldcg(reinterpret_cast<const float4*>(src + c * step))
                                                : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
          for (int c = 0; c < CHUNK; ++c) {
            const float wt = s0 + c * slices < num_splits ? wr[s0 + c * slices] : 0.f;
            acc.x = fmaf(wt, v[c].x, acc.x);
            acc.y = fmaf(wt, v[c].y, acc.y);
            acc.z = fmaf(wt, v[c].z, acc.z);
            acc.w = fmaf(wt, v[c].w, acc.w);
          }
        }
      }
      if (slices > 1) {
        red[threadIdx.x] = acc;
        __syncthreads();
        if (active && slice == 0) {
          for (int k = 1; k < slices; ++k) {
            const float4 o = red[threadIdx.x + k * lanes];
            acc.x += o.x;
            acc.y += o.y;
            acc.z += o.z;
            acc.w += o.w;
          }
        }
        __syncthreads();
      }
      if (active && slice == 0 && (!RAGGED || row_real(q0 + r))) {
        QT* o = out_row(p, b, q0 + r) + d;
        o[0] = kgen::from_float<QT>(acc.x);
        o[1] = kgen::from_float<QT>(acc.y);
        o[2] = kgen::from_float<QT>(acc.z);
        o[3] = kgen::from_float<QT>(acc.w);
      }
    }
    __syncthreads();
  }
}

// Called by every block after it wrote its partial (num_splits > 1). `scratch`: shared memory of
// COMBINE_SMEM bytes (kgen.mla.layout), free to reuse.
template <int THREADS>
__device__ void finish_split(const Params& p, int b, int num_splits, float* scratch) {
  int* counters = group_counters(p, b);
  volatile int* shared = reinterpret_cast<volatile int*>(scratch + COMBINE_SCRATCH + 4 * THREADS);
  __threadfence();  // this block's partial is visible before its arrival
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool all_started = atomicAdd(counters + STARTED, 0) == num_splits;
    const int before = atomicAdd(counters + ARRIVALS, all_started ? 1 + HELPER : 1);
    const bool last = (before & (HELPER - 1)) == num_splits - 1;
    shared[0] = last ? 2 : all_started ? 1 : 0;
    shared[1] = before / HELPER;  // helpers registered before this arrival
    if (!last && all_started) {
      while ((atomicAdd(counters + ARRIVALS, 0) & (HELPER - 1)) != num_splits) __nanosleep(100);
    }
    __threadfence();  // the others' partials are visible from here
  }
  __syncthreads();
  const int role = shared[0], earlier_helpers = shared[1];
  if (role == 0) return;
  const Pieces pieces(num_splits);
  for (;;) {
    if (threadIdx.x == 0) shared[2] = atomicAdd(counters + TAKEN, 1);
    __syncthreads();
    const int piece = shared[2];
    __syncthreads();
    if (piece >= pieces.count) break;
    const int r0 = piece / pieces.chunks * pieces.rows;
    merge_piece<THREADS>(p, b, num_splits, r0, min(pieces.rows, ROWS - r0), piece % pieces.chunks, pieces.chunks,
                         scratch);
  }
  if (threadIdx.x != 0) return;
  if (role == 1) {
    atomicAdd(counters + LEFT, 1);  // this helper touches the counters no more
  } else {  // the last arrival: every helper gone, reset for the next launch
    while (atomicAdd(counters + LEFT, 0) != earlier_helpers) __nanosleep(100);
    counters[ARRIVALS] = counters[STARTED] = counters[TAKEN] = counters[LEFT] = 0;
  }
}

}  // namespace mla
