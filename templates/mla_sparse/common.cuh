// Sparse MLA: the kernel parameters, where a block's rows live, the slice of the top-k list one
// split reads (the V4 op: of its lists joined) (a row's result: mla/finish.cuh, included last). Block (head group, split, query
// token bt = b * Q_LEN + t); its ROWS rows are HEADS_PER_BLOCK heads of that token. The combine
// (mla/combine.cuh) is the dense family's, with bt in the place of the sequence.

namespace mla {

constexpr int HEAD_DIM = LATENT_DIM + ROPE_DIM;
constexpr int HEAD_GROUPS = (HEADS + HEADS_PER_BLOCK - 1) / HEADS_PER_BLOCK;
constexpr bool RAGGED = HEADS % HEADS_PER_BLOCK != 0;  // the last head group holds fewer heads
// Partial loads in flight per thread of the split-KV merge: measured on the H200, 8 takes 0.3-0.6
// us off the B = 1 cases against 4 (h16-b1 15.5 -> 15.0).
constexpr int MERGE_LOADS = 8;  // (mla/combine.cuh)

static_assert(ROWS == HEADS_PER_BLOCK, "one query token per block");
static_assert(V4_OP || EXTRA_PAGE_SIZE == 0, "a second cache is the V4 op's");

{{ params_struct }}

// The grid as the dense family's (mla/common.cuh): x the head group, y the split, z the token.
__device__ __forceinline__ int head_group() { return blockIdx.x; }
constexpr int BLOCK_GROUPS = HEAD_GROUPS;  // (mla/combine.cuh's groups: one per head group)
__device__ __forceinline__ int block_group() { return blockIdx.x; }
__device__ __forceinline__ int row_head(int r) { return head_group() * HEADS_PER_BLOCK + r; }
// A row of the block that is a head (padding rows past ROWS, and in a ragged last group rows
// past HEADS, are not).
__device__ __forceinline__ bool row_real(int r) { return r < ROWS && (!RAGGED || row_head(r) < HEADS); }
__device__ __forceinline__ const QT* q_row(const Params& p, int bt, int r) {
  return p.q + (bt / Q_LEN) * p.q_sb + (bt % Q_LEN) * p.q_st + row_head(r) * p.q_sh;
}
__device__ __forceinline__ QT* out_row(const Params& p, int bt, int r) {
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

// The V4 op's lists of one query token: the first n_main entries of its main list, then the
// first total - n_main of its second cache's, one list of `total` entries to the kernel. An entry
// of the second list names slot s of that cache as slot main_slots + s (-1 stays -1), so a slot
// alone tells the cache (row_at).
struct Lists {
  const int* main;
  const int* extra;
  int n_main, total;
  long long main_slots;
};

// A list's length: its entries (or the first `len` of them where lengths are given).
__device__ __forceinline__ int list_length(const int* len, long long sb, long long st, int bt, int entries) {
  if (len == nullptr) return entries;
  return min(max(__ldg(len + (bt / Q_LEN) * sb + (bt % Q_LEN) * st), 0), entries);
}

template <typename P>
__device__ __forceinline__ Lists block_lists(const P& p, int bt) {
  Lists l;
  l.main = index_row(p, bt);
  l.n_main = list_length(p.topk_len, p.len_sb, p.len_st, bt, p.topk);
  l.total = l.n_main;
  l.main_slots = p.num_slots;
  l.extra = nullptr;
  if constexpr (EXTRA_PAGE_SIZE > 0) {
    l.extra = p.extra_indices + (bt / Q_LEN) * p.extra_idx_sb + (bt % Q_LEN) * p.extra_idx_st;
    l.total += list_length(p.extra_len, p.extra_len_sb, p.extra_len_st, bt, p.extra_topk);
  }
  return l;
}

// Entry i of the joined list, as a slot (-1: skip); `bad` where it is out of its cache's range.
template <typename P>
__device__ __forceinline__ int list_slot(const P& p, const Lists& l, int i, bool& bad) {
  if (i < l.n_main) {
    const int s = __ldg(l.main + i);
    bad |= s < -1 || s >= l.main_slots;
    return s;
  }
  if constexpr (EXTRA_PAGE_SIZE > 0) {
    const int s = __ldg(l.extra + (i - l.n_main));
    bad |= s < -1 || s >= p.extra_num_slots;
    return s < 0 ? s : static_cast<int>(s + l.main_slots);
  }
  return -1;
}

template <int THREADS, int TILE, typename P>
__device__ Range split_range(const P& p, const Lists& l, int split, int num_splits) {
  const int tiles = (l.total + TILE - 1) / TILE;
  const int per_split = (tiles + num_splits - 1) / num_splits;
  const int begin = min(split * per_split * TILE, l.total);
  const int end = min(begin + per_split * TILE, l.total);
  bool bad = false;
  for (int i = begin + threadIdx.x; i < end; i += THREADS) list_slot(p, l, i, bad);
  const bool poisoned = __syncthreads_or(bad);
  return {poisoned ? 0 : begin, poisoned ? 0 : end, poisoned};
}

// The sink's factor on a row's output, 1 / (1 + exp(sink - lse)) (lse natural, without the sink):
// 0 for a sink of +inf, 1 for -inf or no sink. A row that saw nothing (lse -inf) keeps out = 0:
// its factor is 1, not exp(-inf - -inf)'s NaN.
template <typename P>
__device__ __forceinline__ float sink_factor(const P& p, int r, float lse) {
  if (p.sink == nullptr || !row_real(r) || lse == -CUDART_INF_F) return 1.f;
  return 1.f / (1.f + expf(__ldg(p.sink + row_head(r)) - lse));
}

}  // namespace mla

{% include "mla/finish.cuh" %}
