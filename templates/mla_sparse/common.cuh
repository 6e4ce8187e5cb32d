// Sparse MLA: the kernel parameters, where a block's rows live, the slice of the top-k list one
// split reads (a row's result: mla/finish.cuh, included last). Block (head group, split, query
// token bt = b * Q_LEN + t); its ROWS rows are HEADS_PER_BLOCK heads of that token. The combine
// (mla/combine.cuh) is the dense family's, with bt in the place of the sequence.

namespace mla {

constexpr int HEAD_DIM = LATENT_DIM + ROPE_DIM;
constexpr int HEAD_GROUPS = HEADS / HEADS_PER_BLOCK;
// Partial loads in flight per thread of the split-KV merge: measured on the H200, 8 takes 0.3-0.6
// us off the B = 1 cases against 4 (h16-b1 15.5 -> 15.0).
constexpr int MERGE_LOADS = 8;  // (mla/combine.cuh)

static_assert(HEADS % HEADS_PER_BLOCK == 0, "HEADS_PER_BLOCK must divide HEADS");
static_assert(ROWS == HEADS_PER_BLOCK, "one query token per block");
static_assert(KV_FORMAT == KV_BF16 || KV_FORMAT == KV_FP8, "kv format");

{{ params_struct }}

// The grid as the dense family's (mla/common.cuh): x the head group, y the split, z the token.
__device__ __forceinline__ int head_group() { return blockIdx.x; }
constexpr int BLOCK_GROUPS = HEAD_GROUPS;  // (mla/combine.cuh's groups: one per head group)
__device__ __forceinline__ int block_group() { return blockIdx.x; }
__device__ __forceinline__ int row_head(int r) { return head_group() * HEADS_PER_BLOCK + r; }
constexpr bool RAGGED = false;  // head groups divide HEADS (mla/combine.cuh asks)
__device__ __forceinline__ bool row_real(int r) { return r < ROWS; }
__device__ __forceinline__ const T* q_row(const Params& p, int bt, int r) {
  return p.q + (bt / Q_LEN) * p.q_sb + (bt % Q_LEN) * p.q_st + row_head(r) * p.q_sh;
}
__device__ __forceinline__ T* out_row(const Params& p, int bt, int r) {
  return p.out + (bt / Q_LEN) * p.o_sb + (bt % Q_LEN) * p.o_st + row_head(r) * p.o_sh;
}
__device__ __forceinline__ float* lse_at(const Params& p, int bt, int r) {
  return p.lse + static_cast<long long>(bt) * HEADS + row_head(r);
}
__device__ __forceinline__ const int* index_row(const Params& p, int bt) {
  return p.indices + (bt / Q_LEN) * p.idx_sb + (bt % Q_LEN) * p.idx_st;
}

// The entries [begin, end) of the top-k list one split reads: whole tiles of TILE entries, the
// last cut at topk. A slot outside [-1, num_slots) in them `poisons` the split: it reads nothing
// and its rows become NaN (so do the merged rows).
struct Range {
  int begin, end;
  bool poisoned;
};

template <int THREADS, int TILE>
__device__ Range split_range(const Params& p, const int* slots, int split, int num_splits) {
  const int tiles = (p.topk + TILE - 1) / TILE;
  const int per_split = (tiles + num_splits - 1) / num_splits;
  const int begin = min(split * per_split * TILE, p.topk);
  const int end = min(begin + per_split * TILE, p.topk);
  bool bad = false;
  for (int i = begin + threadIdx.x; i < end; i += THREADS) {
    const int s = __ldg(slots + i);
    bad |= s < -1 || s >= p.num_slots;
  }
  const bool poisoned = __syncthreads_or(bad);
  return {poisoned ? 0 : begin, poisoned ? 0 : end, poisoned};
}

}  // namespace mla

{% include "mla/finish.cuh" %}
