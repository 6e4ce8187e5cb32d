// What both compute paths share: the kernel parameters, paging, draft masks and the KV range of
// one split. The generated .cu binds the op's and the design point's constants before this.

namespace mla {

constexpr int HEAD_DIM = LATENT_DIM + ROPE_DIM;
constexpr int TOTAL_ROWS = Q_LEN * HEADS;      // query rows of one sequence
constexpr int HEAD_GROUPS = (HEADS + HEADS_PER_BLOCK - 1) / HEADS_PER_BLOCK;
// A block serves BLOCK_TOKENS of the Q_LEN query tokens (all of them unless the draft rows are cut
// into TOKEN_GROUPS, on the mma path: rows that would not fit one block's registers unspilled).
constexpr int BLOCK_TOKENS = (Q_LEN + TOKEN_GROUPS - 1) / TOKEN_GROUPS;
constexpr int BLOCK_GROUPS = HEAD_GROUPS * TOKEN_GROUPS;  // blocks of one sequence's KV split
// The last head group holds HEADS % HEADS_PER_BLOCK heads where that is not 0, and the last token
// group Q_LEN % BLOCK_TOKENS tokens (the mma row path only: kgen.mla.rules): its block's rows of
// the missing heads or tokens read no q and write nothing.
constexpr bool HEAD_RAGGED = HEADS % HEADS_PER_BLOCK != 0, TOKEN_RAGGED = Q_LEN % BLOCK_TOKENS != 0;
constexpr bool RAGGED = HEAD_RAGGED || TOKEN_RAGGED;
// Partial loads in flight per thread of the split-KV merge. 8 was 1-3% faster on the H200's
// split-heavy dense cases but spills on sm_120 in two shipped configs (168 and 96 registers).
constexpr int MERGE_LOADS = 4;  // (mla/combine.cuh)

static_assert(HEADS_PER_BLOCK <= HEADS, "HEADS_PER_BLOCK at most HEADS");
static_assert(ROWS == BLOCK_TOKENS * HEADS_PER_BLOCK, "ROWS");
static_assert(Q_LEN <= 64, "draft-tree rows are 64-bit words");
static_assert(MASK_KIND == MASK_NONE || MASK_KIND == MASK_CAUSAL || MASK_KIND == MASK_TREE, "mask kind");

{{ params_struct }}

// The grid: blockIdx.x the block group (head group, then token group), blockIdx.y the KV split
// (or, in mla_combine, the row and column chunk), blockIdx.z the sequence. So a split's head groups
// are neighbours in dispatch order and read each KV tile at about the same time: on the H200 the
// B = 1 decode cases ran 2.5-3.5% faster than with the split as x, the others level
// (docs/decisions.md: grid order).
__device__ __forceinline__ int block_group() { return blockIdx.x; }
__device__ __forceinline__ int head_group() { return TOKEN_GROUPS == 1 ? blockIdx.x : blockIdx.x % HEAD_GROUPS; }
__device__ __forceinline__ int token_group() { return TOKEN_GROUPS == 1 ? 0 : blockIdx.x / HEAD_GROUPS; }

// Row r of a block (r = local token * HEADS_PER_BLOCK + local head) in q, out and lse.
__device__ __forceinline__ int row_token(int r) { return token_group() * BLOCK_TOKENS + r / HEADS_PER_BLOCK; }
__device__ __forceinline__ int row_head(int r) { return head_group() * HEADS_PER_BLOCK + r % HEADS_PER_BLOCK; }
// Whether row r of this block is a query row (not padding, not a head past HEADS, not a token
// past Q_LEN).
__device__ __forceinline__ bool row_real(int r) {
  return r < ROWS && (!HEAD_RAGGED || row_head(r) < HEADS) && (!TOKEN_RAGGED || row_token(r) < Q_LEN);
}
__device__ __forceinline__ const QT* q_row(const Params& p, int b, int r) {
  return p.q + b * p.q_sb + row_token(r) * p.q_st + row_head(r) * p.q_sh;
}
__device__ __forceinline__ QT* out_row(const Params& p, int b, int r) {
  return p.out + b * p.o_sb + row_token(r) * p.o_st + row_head(r) * p.o_sh;
}
__device__ __forceinline__ float* lse_at(const Params& p, int b, int r) {
  return p.lse + (static_cast<long long>(b) * Q_LEN + row_token(r)) * HEADS + row_head(r);
}

{% if kv_fp8 != "true" %}__device__ __forceinline__ const T* kv_row(const Params& p, int b, int n) {
  const int page = p.block_table[b * p.bt_sb + n / PAGE_SIZE];
  return p.kv + page * p.kv_sp + (n % PAGE_SIZE) * p.kv_sr;
}
{% endif %}
// Draft-visibility bits of draft token t: bit j says whether it sees draft position j.
__device__ __forceinline__ unsigned long long draft_bits(const Params& p, int b, int t) {
  if constexpr (MASK_KIND == MASK_NONE) {
    return 1ull;  // Q_LEN == 1: the token sees itself
  } else if constexpr (MASK_KIND == MASK_CAUSAL) {
    // As data, like a tree's loaded bits: NVVM otherwise specialises the draft pass on their form,
    // and the tensor-core kernels took 225 registers where the same kernel for a tree takes 168
    // (sm_90, NVRTC 13.5: two blocks per SM instead of three; causal 1.5x slower than tree).
    return kgen::opaque(~0ull >> (63 - t));
  } else {
    return p.mask[b * p.mask_sb + t];
  }
}

// The positions [begin, end) one split reads: whole tiles of TILE positions, the last cut at
// seq_len. An invalid sequence (seq_len < Q_LEN, beyond the block table, or a page id out of
// range in this split) is `poisoned`: it reads nothing and its rows become NaN.
struct Range {
  int prefix, begin, end;
  bool poisoned;
};

template <int THREADS, int TILE>
__device__ Range split_range(const Params& p, int b, int split, int num_splits) {
  const int seq_len = p.seq_lens[b];
  bool poisoned = seq_len < Q_LEN ||
                  static_cast<long long>(seq_len) > static_cast<long long>(p.max_pages) * PAGE_SIZE;
  int begin = 0, end = 0;
  if (!poisoned) {
    const int tiles = (seq_len + TILE - 1) / TILE;
    const int per_split = (tiles + num_splits - 1) / num_splits;
    begin = min(split * per_split * TILE, seq_len);
    end = min(begin + per_split * TILE, seq_len);
  }
  bool bad_page = false;
  if (begin < end) {
    for (int i = begin / PAGE_SIZE + threadIdx.x; i <= (end - 1) / PAGE_SIZE; i += THREADS) {
      const int page = p.block_table[b * p.bt_sb + i];
      bad_page |= page < 0 || page >= p.num_pages;
    }
  }
  poisoned = __syncthreads_or(poisoned || bad_page);
  if (poisoned) begin = end = 0;
  return {seq_len - Q_LEN, begin, end, poisoned};
}

}  // namespace mla

{% include "mla/finish.cuh" %}
