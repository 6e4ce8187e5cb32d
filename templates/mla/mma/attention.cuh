// MLA decode / draft-tree verify attention over a paged latent cache, tensor-core path
// (mma.sync m16n8k16, ldmatrix, cp.async; nothing sm_80, sm_90 or sm_120 lacks).
//
// One block serves (sequence b, HEADS_PER_BLOCK heads, KV split): ROWS = Q_LEN * HEADS_PER_BLOCK
// query rows, padded to M_TILES m16 tiles, are the M dimension of both products. A KV tile of
// BLOCK_N positions lands in shared memory once (a cp.async pipeline STAGES deep) and serves
// S = q.K^T (all 576 columns) and O += P.V (its first 512 columns).
//
// Warps form a ROW_GROUPS x COL_GROUPS grid. A row group owns WARP_M m16 tiles of rows. For q.K^T
// the COL_GROUPS warps of a row group split the K dimension (the 576 head dims) and leave partial
// scores in shared memory; each warp then sums the partials of its rows, applies the mask and the
// online softmax in registers (the warps of a row group compute identical row states), packs P
// into A fragments and multiplies it by its own 512 / COL_GROUPS output columns of V. So the
// [rows x 512] fp32 accumulator is split over the warps of a row group, and the running max is
// raised only by more than RESCALE_THRESHOLD (log2 units), keeping p <= 256 and rescales rare.
//
// With SPLIT_SOFTMAX, the warps of a row group split the softmax instead: each sums the partials of
// a slice of the tile's (row, position pair) items, finds each row's tile max with shuffles (a
// row's pairs sit in consecutive lanes of one warp), writes P to shared memory as 16-bit values
// and keeps the row sums of its items; every warp then loads its P fragments with ldmatrix. A row
// whose max rose writes its rescale factor for the warps holding its output columns, which apply
// it after the barrier (rare: only a rise past RESCALE_THRESHOLD moves the max). So no two warps
// compute the same exponentials.
//
// With QK_AHEAD, q.K^T of tile i + 1 is computed in the same straight-line code as P.V of tile i
// (after tile i's softmax): the two are independent, so ptxas interleaves their tensor-core
// instructions and one hides the other's dependency chain, and a tile costs one barrier, not two
// (partial scores double-buffered; tiles i and i + 1 stay resident while later ones load, hence
// STAGES >= 3).
//
// With SPECIALIZE, the block's warps take one of two roles (mla/mma/specialized.cuh): the first
// half copy the KV tiles, compute q.K^T's partial scores and scan the drafts (the q role), the
// other half run the softmax and P.V and hold the output (the v role), a tile behind, so that
// the two phases of different tiles overlap on different warps. Each role is a ROW_GROUPS x
// COL_GROUPS grid of ROLE_WARPS warps of its own; the helpers below take their thread counts and
// barriers from the role.
//
// Tensor cores compute 0 * Inf = NaN, so a masked position whose V holds Inf or NaN would leak
// into rows that must not see it. Prefix positions are seen by every row; the draft positions of
// a tile are scanned, and any such position is folded in exactly with scalar FMAs and zeroed
// before the MMA (a rare, slow path).

namespace mla {

using Mma = kgen::MmaType<T>;
// Whether q (and out) differ from the MMAs' type: bfloat16 q over float16 MMAs, on an fp8 cache
// that widens to float16 in one conversion a pair (kgen.mla.program.tile_dtype).
constexpr bool Q_CONVERTED = Mma::EXPONENT != kgen::MmaType<QT>::EXPONENT;

constexpr int NUM_THREADS = NUM_WARPS * 32;
constexpr int ROLE_WARPS = SPECIALIZE ? NUM_WARPS / 2 : NUM_WARPS;  // the warps of one role
constexpr int ROLE_THREADS = ROLE_WARPS * 32;
constexpr int CHUNKS = HEAD_DIM / 8;                            // 16-byte chunks of a cached row
constexpr int LATENT_CHUNKS = LATENT_DIM / 8;
constexpr int ROW_CHUNKS = (CHUNKS + 7) / 8 * 8;               // whole 128-byte groups (see tile_at)
constexpr int ROW_ELEMS = ROW_CHUNKS * 8;
constexpr int M_TILES = (ROWS + 15) / 16;
constexpr int ROW_GROUPS = ROLE_WARPS / COL_GROUPS;
constexpr int WARP_M = M_TILES / ROW_GROUPS;                   // m16 tiles per warp
constexpr int N_TILES = BLOCK_N / 8;                            // n8 tiles of scores
constexpr int K_STEPS = HEAD_DIM / 16;
constexpr int WARP_K = (K_STEPS + COL_GROUPS - 1) / COL_GROUPS;  // k16 steps per warp (at most)
constexpr int O_TILES = LATENT_DIM / 8 / COL_GROUPS;            // n8 tiles of output per warp
constexpr int PV_STEPS = BLOCK_N / 16;
constexpr int S_STRIDE = BLOCK_N + (24 - BLOCK_N % 16) % 16;    // = 8 mod 16: conflict-free float2

// q: a warp's first Q_REG_STEPS k steps (kk) in registers; the columns of the later ones, from
// Q_SMEM_COL on, in shared memory (rows of Q_ROW_ELEMS, an odd number of chunks: written once with
// plain stores, so padding keeps ldmatrix's rows on distinct banks without a swizzle).
constexpr int Q_SMEM_COL = Q_REG_STEPS * COL_GROUPS * 16 < HEAD_DIM ? Q_REG_STEPS * COL_GROUPS * 16 : HEAD_DIM;
constexpr int Q_SMEM_CHUNKS = (HEAD_DIM - Q_SMEM_COL) / 8;
constexpr int Q_ROW_ELEMS = (Q_SMEM_CHUNKS % 2 || Q_SMEM_CHUNKS == 0 ? Q_SMEM_CHUNKS : Q_SMEM_CHUNKS + 1) * 8;
constexpr int Q_BYTES = M_TILES * 16 * Q_ROW_ELEMS * 2;
{% if kv_fp8 == "true" %}constexpr int TILE_ELEMS = BLOCK_N * KV_ROW_BYTES / 2;  // a raw stage, in T's
{% else %}constexpr int TILE_ELEMS = BLOCK_N * ROW_ELEMS;
{% endif %}constexpr int STAGE_ROW_BYTES = TILE_ELEMS * 2 / BLOCK_N;  // a position's bytes in a stage
constexpr int TILES_OFFSET = Q_BYTES;
constexpr int SCORE_FLOATS = COL_GROUPS * M_TILES * 16 * S_STRIDE;  // one tile's partial scores
constexpr int SCORE_BUFFERS = QK_AHEAD || SPECIALIZE ? 2 : 1;
{% if kv_fp8 == "true" %}// An fp8 cache (mla/mma/fp8_tiles.cuh): STAGES raw stages of TILE_ELEMS T's, then the one 16-bit
// tile (none where the MMAs read the raw stages as fragments).
constexpr int WIDE_OFFSET = TILES_OFFSET + STAGES * TILE_ELEMS * 2;
constexpr int SCORES_OFFSET = WIDE_OFFSET + (FRAGMENTS ? 0 : BLOCK_N * ROW_ELEMS * 2);
{% else %}constexpr int SCORES_OFFSET = TILES_OFFSET + STAGES * TILE_ELEMS * 2;
{% endif %}constexpr int BAD_OFFSET = SCORES_OFFSET + SCORE_BUFFERS * SCORE_FLOATS * 4;
constexpr int P_STRIDE = BLOCK_N + 8;  // 16-bit P rows: ldmatrix rows on distinct banks
constexpr int P_OFFSET = BAD_OFFSET + 16;  // after two 64-bit masks of non-finite draft V rows
constexpr int P_BYTES = SPLIT_SOFTMAX ? M_TILES * 16 * P_STRIDE * 2 : 0;
constexpr int ROW_STATE_OFFSET = P_OFFSET + P_BYTES;  // per row: rescale factor (then m), l
constexpr int RING_OFFSET = ROW_STATE_OFFSET + (SPLIT_SOFTMAX ? 2 * M_TILES * 16 * 4 : 0);
constexpr int RING_BYTES = RING_SLACK ? (2 * STAGES * 8 + 15) / 16 * 16 : 0;  // RING_SLACK: full[], empty[]
constexpr int MAIN_SMEM = RING_OFFSET + RING_BYTES;
// How many tiles ahead of the one computed a tile's copy is issued: all but one stage, less the
// RING_SLACK tiles a row group may run ahead by.
constexpr int COPY_LEAD = STAGES - 1 - RING_SLACK;

static_assert(ROW_GROUPS <= 15, "a named barrier (1 + row group) per row group");

static_assert(sizeof(T) == 2, "the mma path takes 16-bit q and KV");
static_assert(HEAD_DIM % 16 == 0 && LATENT_DIM % 16 == 0, "head dims must be multiples of 16");
static_assert(ROLE_WARPS % COL_GROUPS == 0 && M_TILES % ROW_GROUPS == 0, "warp grid must tile the rows");
static_assert(!SPECIALIZE || (ROW_GROUPS == 1 && SPLIT_SOFTMAX && !QK_AHEAD),
              "specialized roles: one row group, the split softmax, no q.K ahead");
static_assert(O_TILES % 2 == 0 && O_TILES * 8 * COL_GROUPS == LATENT_DIM, "column groups must split V in n16 pieces");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 64, "BLOCK_N: a multiple of 16, at most 64");
static_assert(STAGES >= 2, "the mma path pipelines KV tiles with cp.async");
static_assert(!QK_AHEAD || STAGES >= 3, "q.K ahead keeps two tiles resident while the next loads");
static_assert(MAIN_SMEM == SMEM_BYTES, "shared-memory layout differs from kgen.mla.mma_layout");
static_assert(COPY_LEAD >= 1, "RING_SLACK: at most smem_stages - 2");
static_assert(!RING_SLACK || (!QK_AHEAD && !SPECIALIZE && SPLIT_SOFTMAX),
              "RING_SLACK: the row path's loop with the split softmax, without q.K ahead");
static_assert(!RING_SLACK || (COMBINE_SCRATCH + 4 * NUM_THREADS + 4) * 4 <= RING_OFFSET,
              "the fused merge's scratch reuses shared memory below the ring's barriers only");

// Where chunk c (16 bytes) of row r of a KV tile sits, in elements from the tile: slot c ^ (r % 8)
// of the row (an XOR swizzle within each 128-byte group). The 8 row addresses of an ldmatrix
// (8 consecutive rows, one chunk) then hit distinct banks, and each cp.async quarter-warp (8
// chunks of a row) writes one aligned 128-byte group. Rows of an odd number of chunks avoid the
// first too, but their copies straddle two groups: measured with ncu on the H200, 2.6x the ideal
// shared-memory wavefronts per LDGSTS, a quarter of all the loop's shared wavefronts.
// chunk_slot: the slot of chunk hi + lo in a row with r % 8 == x, for hi a multiple of 8 (the loops
// pass their unrolled, compile-time share of the chunk as hi, so the rest is a per-thread constant).
__device__ __forceinline__ int chunk_slot(int hi, int lo, int x) { return hi + (lo ^ x); }
__device__ __forceinline__ int tile_at(int r, int c) { return r * ROW_ELEMS + chunk_slot(0, c, r % 8) * 8; }

// ldmatrix's row r % 8 is lane % 8 in every use below. Chunk c = 2 * ks + b of a k step's ldmatrix
// (ks = kk * cols + cg, b a lane bit), split as chunk_slot takes it.
template <int COLS>
__device__ __forceinline__ int k_step_slot(int kk, int cg, int b, int x) {
  constexpr int STEP = 2 * COLS;  // chunks from one kk to the next
  return chunk_slot(kk * STEP / 8 * 8, kk * STEP % 8 + 2 * cg + b, x);
}

// A lane's ldmatrix row addresses in a tile for the chunks hi + 2q + b (q = 0..3; hi a multiple of
// 8, b a lane bit) of row `row` (row % 8 == x): the XOR swizzle makes them four per-thread
// addresses, one per q, to which later chunk groups and rows add constants (immediate offsets).
struct SwizzledRows {
  const T* at[4];
  __device__ __forceinline__ SwizzledRows(const T* tile, int row, int hi, int b, int x) {
#pragma unroll
    for (int q = 0; q < 4; ++q) at[q] = tile + row * ROW_ELEMS + chunk_slot(hi, 2 * q + b, x) * 8;
  }
  // rows r on (a multiple of 8), chunks c on (even) from the constructor's
  __device__ __forceinline__ const T* operator()(int r, int c) const { return at[c % 8 / 2] + r * ROW_ELEMS + c / 8 * 64; }
};

// This thread's share of every KV tile: position LOAD_POS (one row, so one block-table entry) and
// its 16-byte chunks LOAD_CHUNK + j * LOAD_THREADS_PER_ROW, at immediate offsets from one address.
// (With SPECIALIZE the q role's threads, 0 .. ROLE_THREADS - 1, copy.)
constexpr int LOAD_THREADS_PER_ROW = ROLE_THREADS / BLOCK_N;
constexpr int LOAD_ITEMS = (CHUNKS + LOAD_THREADS_PER_ROW - 1) / LOAD_THREADS_PER_ROW;
static_assert(ROLE_THREADS % BLOCK_N == 0, "every position of a tile is copied by the same number of threads");

__device__ __forceinline__ int load_pos() { return threadIdx.x / LOAD_THREADS_PER_ROW; }

// The page holding this thread's position of the tile at `start` (0 past `end`). Read a tile ahead
// of the copy that uses it, so no copy waits on the block table.
__device__ __forceinline__ int fetch_page(const Params& p, int b, int start, int end) {
  const int n = start + load_pos();
  return n < end ? __ldg(p.block_table + b * p.bt_sb + n / PAGE_SIZE) : 0;
}

// Measured on the H200: dealing a tile's copies over the k steps of q.K^T saves 4-6% where one
// block of 8 or 16 warps fills an SM (every warp waited behind the burst of copies after the
// barrier), and costs up to 75% with 4-warp blocks, several per SM (decode-batch cases, which
// need the copies in flight early).
// (With QK_AHEAD the next q.K^T comes at the end of the iteration: too late for the copies.)
constexpr bool SPREAD_COPIES = NUM_WARPS >= 8 && !QK_AHEAD;

// The copy of KV tile [start, start + BLOCK_N) into shared memory, addressed once and issued in
// pieces (piece j: this thread's j-th 16-byte chunk), with SPREAD_COPIES over the next q.K^T's k
// steps, so that the copies do not fill the memory pipe at once after the barrier and stall every
// warp behind them. Positions past `end` read zeros (their source address, in page `page`, is
// never read); an idle copy (no tile left) issues nothing. Offsets inside a page are 32-bit
// (kgen.mla.inputs checks the row stride). Each piece asks L2 for its whole 128-byte line
// (measured on the H200: 1-2% faster on the decode cases than no hint; 256 B neutral; .ca, L1
// too, 4-10% slower).
{% if kv_fp8 == "true" %}{% include "mla/mma/fp8_tiles.cuh" %}{% else %}struct TileCopy {
  // With a multiple of 8 threads per row, a thread's chunks share their place in a 128-byte group
  // (dst: the first one's slot, the others at fixed offsets); else dst is the row, `swizzle` its r % 8
  static constexpr bool WHOLE_GROUPS = LOAD_THREADS_PER_ROW % 8 == 0;
  const T* src = nullptr;
  T* dst = nullptr;
  int bytes = -1;  // 16, 0 (a position past the end: zeros) or -1 (idle)
  int swizzle = 0;

  TileCopy() = default;
  __device__ __forceinline__ TileCopy(const Params& p, int start, int end, int page, T* tile) {
    const int pos = load_pos(), chunk = threadIdx.x % LOAD_THREADS_PER_ROW;
    const int row_in_page = (start + pos) % PAGE_SIZE;
    src = p.kv + page * p.kv_sp + (row_in_page * static_cast<int>(p.kv_sr) + chunk * 8);
    dst = tile + (WHOLE_GROUPS ? tile_at(pos, chunk) : pos * ROW_ELEMS);
    bytes = start + pos < end ? 16 : 0;
    swizzle = pos % 8;
  }

  __device__ __forceinline__ void piece(int j) const {
    const int chunk = threadIdx.x % LOAD_THREADS_PER_ROW, c = chunk + j * LOAD_THREADS_PER_ROW;
    T* to = WHOLE_GROUPS ? dst + j * LOAD_THREADS_PER_ROW * 8 : dst + (c ^ swizzle) * 8;
    if (bytes >= 0 && (CHUNKS % LOAD_THREADS_PER_ROW == 0 || c < CHUNKS))
      kgen::cp_async_or_zeros<16, true>(to, src + j * LOAD_THREADS_PER_ROW * 8, bytes == 0);
  }

  // With SPREAD_COPIES, the pieces dealt to k step kk of a loop of `steps` (all of them over
  // kk = 0 .. steps - 1); without, none (all() issued them).
  __device__ __forceinline__ void pieces_at(int kk, int steps) const {
    if constexpr (SPREAD_COPIES) {
#pragma unroll
      for (int j = kk; j < LOAD_ITEMS; j += steps) piece(j);
    }
  }

  __device__ __forceinline__ void all() const {
#pragma unroll
    for (int j = 0; j < LOAD_ITEMS; ++j) piece(j);
  }
};
{% endif %}
// RING_SLACK: the KV tile ring synchronised by a barrier a stage instead of a block barrier a tile.
// full[s] completes when every thread's copies of stage s's tile have landed (each thread arrives
// as its copies land), empty[s] when every warp is done with the tile (after its P.V the warp's
// lanes meet at __syncwarp, which orders their reads before lane 0's arrival; one arrival a thread
// instead cost sm_120's 168-register blocks spills in two of three defaults). A row group waits for
// its tile and, before it copies into a stage, for the stage's last tile to drain, so row groups
// drift up to RING_SLACK tiles apart where a block barrier keeps them in step (three 4-warp blocks
// an SM drift apart too, but copy every tile three times). Needs SPLIT_SOFTMAX: its row-group
// barrier after the softmax keeps a row group's next partial scores off those its slower warps
// still read.
struct Ring {
  unsigned long long* bar;  // full[STAGES], then empty[STAGES]

  // Thread 0, before a block barrier.
  __device__ __forceinline__ void init() const {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      kgen::mbarrier_init(bar + s, NUM_THREADS);
      kgen::mbarrier_init(bar + STAGES + s, NUM_WARPS);
    }
  }
  // This thread issued its copies of `tile`.
  __device__ __forceinline__ void copied(int tile) const { kgen::mbarrier_arrive_on_copies(bar + tile % STAGES); }
  __device__ __forceinline__ void wait_landed(int tile) const {
    kgen::mbarrier_wait(bar + tile % STAGES, (tile / STAGES) % 2);
  }
  // Before copying `tile` into its stage: the stage's previous tile (if any) drained.
  __device__ __forceinline__ void wait_drained(int tile) const {
    if (tile >= STAGES) kgen::mbarrier_wait(bar + STAGES + tile % STAGES, (tile / STAGES - 1) % 2);
  }
  // This warp is done with `tile`.
  __device__ __forceinline__ void consumed(int tile, int lane) const {
    __syncwarp();
    if (lane == 0) kgen::mbarrier_arrive(bar + STAGES + tile % STAGES);
  }
};

// A split's last step, once its partial (or out/lse) is written: let mla_combine launch
// (PDL_COMBINE), or merge the row's splits here (the last split to finish does).
__device__ __forceinline__ void end_split(const Params& p, int b, int num_splits, unsigned char* smem) {
  if constexpr (PDL_COMBINE) {
    // mla_combine may launch once every block is here; it waits for the whole grid anyway.
    // Measured on the H200: 1-4 us faster than letting it launch at the start (its blocks then
    // sit on the SMs beside this kernel's for the whole loop).
    kgen::launch_dependents();
  } else if (num_splits > 1) {
    __syncthreads();  // the tiles and scores are no longer read: the combine reuses them
    finish_split<NUM_THREADS>(p, b, num_splits, reinterpret_cast<float*>(smem));
  }
}

// A compile-time flag as a value (a generic lambda's template argument).
template <bool B>
struct Flag {
  static constexpr bool value = B;
};

// A draft token's visibility bits as a row keeps them: bit j for draft position j < Q_LEN, so a
// 32-bit word where the drafts fit one (a register fewer a row; sm_120's 12-warp blocks of three
// row groups, at 168 registers, spilled with the 64-bit word under a draft mask).
template <bool NARROW>
struct DraftWord {
  using type = unsigned long long;
};
template <>
struct DraftWord<true> {
  using type = unsigned;
};
using Drafts = DraftWord<(Q_LEN <= 32)>::type;

// Row r's draft bits in the word a row keeps them in.
__device__ __forceinline__ Drafts row_drafts(const Params& p, int b, int r) {
  return static_cast<Drafts>(draft_bits(p, b, row_token(r)));
}

// The rows of this thread's fragments: (tile i, half h) -> row (rg * WARP_M + i) * 16 + g + 8h.
struct FragRows {
  Drafts drafts[WARP_M][2];  // read before the first tile that holds drafts (tiles_loop)
  bool valid[WARP_M][2];
};

__device__ __forceinline__ int frag_row(int rg, int i, int h, int g) { return (rg * WARP_M + i) * 16 + g + 8 * h; }

// This thread's index within its role (with SPECIALIZE; else within the block). Unsigned, as
// threadIdx.x: a signed index would cost the divisions below their fix-ups for negative values.
__device__ __forceinline__ unsigned role_thread() { return SPECIALIZE ? threadIdx.x % ROLE_THREADS : threadIdx.x; }

// Where this thread sits: row group, column group (within its role), and its place in the mma
// fragments.
struct Lane {
  int rg, cg, lane, g, qd;
  __device__ __forceinline__ Lane() {
    const int warp = role_thread() / 32;
    lane = threadIdx.x % 32;
    g = lane / 4;
    qd = lane % 4;
    rg = warp / COL_GROUPS;
    cg = warp % COL_GROUPS;
  }
};

// The output dim of this lane's accumulator o[.][j][2h + e]: 8 j + 2 qd + e, or with FRAGMENTS
// (mla/mma/fp8_tiles.cuh) dim 16 c + 4 qd + 2 e + j % 2 of the warp's chunk c = j / 2.
__device__ __forceinline__ int o_dim(int j, int e, const Lane& ln) {
  return FRAGMENTS ? ln.cg * O_TILES * 8 + j / 2 * 16 + 4 * ln.qd + 2 * e + j % 2 : (ln.cg * O_TILES + j) * 8 + 2 * ln.qd + e;
}

// A barrier of this thread's row group alone (named barrier 1 + rg; barrier 0 is __syncthreads),
// with the memory ordering of __syncthreads among its warps. Returns whether any of them passed true.
// (With SPECIALIZE only the v role's warps take it: barrier 1.)
__device__ __forceinline__ bool row_group_sync_or(bool pred, const Lane& ln) {
  if constexpr (ROW_GROUPS == 1 && !SPECIALIZE) {
    return __syncthreads_or(pred);
  } else {
    int any;
    asm volatile(
        "{\n .reg .pred p, q;\n setp.ne.s32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n selp.s32 %0, 1, 0, q;\n}"
        : "=r"(any)
        : "r"(static_cast<int>(pred)), "r"(1 + ln.rg), "n"(COL_GROUPS * 32)
        : "memory");
    return any != 0;
  }
}

using QFrags = unsigned[WARP_M][Q_REG_STEPS > 0 ? Q_REG_STEPS : 1][4];
using Accum = float[WARP_M][O_TILES][4];
using PFrags = unsigned[WARP_M][PV_STEPS][4];

// Measured on the H200: skipping the softmax max's shuffles when a warp vote says no row's max
// can move saves up to 4% (kimi-tp8-decode-long, the verify cases) and costs no dense case.
constexpr bool MAX_VOTE = true;

// A barrier of this thread's role (the whole block without SPECIALIZE).
__device__ __forceinline__ void role_sync() {
  if constexpr (SPECIALIZE) {
    asm volatile("bar.sync %0, %1;" : : "n"(1), "n"(ROLE_THREADS) : "memory");  // the v role: barrier 1
  } else {
    __syncthreads();
  }
}

// Draft positions of this tile whose V holds Inf or NaN (bit per position), found by all threads
// (of the q role, with SPECIALIZE).
__device__ __forceinline__ bool scan_drafts(const T* tile, int lo, int count, unsigned long long* bad) {
  bool found = false;
  // FRAGMENTS: a raw row's first LATENT_DIM bytes (any order), e4m3 values (NaN: 0x7f or 0xff; no Inf)
  constexpr int V_CHUNKS = FRAGMENTS ? LATENT_DIM / 16 : LATENT_CHUNKS;
  for (int idx = role_thread(); idx < (count - lo) * V_CHUNKS; idx += ROLE_THREADS) {
    const int pos = lo + idx / V_CHUNKS, c = idx % V_CHUNKS;
    bool nonfinite;
    if constexpr (FRAGMENTS) {
      nonfinite = kgen::any_e4m3_nan(*reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned char*>(tile) +
                                                                      pos * STAGE_ROW_BYTES + c * 16));
    } else {
      nonfinite = kgen::any_nonfinite<T>(*reinterpret_cast<const uint4*>(tile + tile_at(pos, c)));
    }
    if (nonfinite) {
      atomicOr(bad, 1ull << pos);
      found = true;
    }
  }
  return found;
}

// The draft scan of the tile at `start`, when the mask has drafts and the tile holds some.
__device__ __forceinline__ bool scan_tile(const T* tile, int start, int end, int prefix, unsigned long long* bad) {
  if constexpr (MASK_KIND == MASK_NONE) return false;
  const int lo = max(start, prefix) - start, count = min(BLOCK_N, end - start);
  return lo < count && scan_drafts(tile, lo, count, bad);
}

// 1. This warp's partial scores of a tile (its share of the head dims) into `partials`, issuing
// the pieces of `copy` along the way.
__device__ __forceinline__ void qk_partials(const T* tile, const QFrags& qf, const T* q_s, float* partials,
                                            const TileCopy& copy, const Lane& ln) {
  float acc[WARP_M][N_TILES][4];
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < WARP_K; ++kk) {
    copy.pieces_at(kk, WARP_K);
    const int ks = kk * COL_GROUPS + ln.cg;
    if (K_STEPS % COL_GROUPS == 0 || ks < K_STEPS) {
      unsigned a[WARP_M][4];
#pragma unroll
      for (int i = 0; i < WARP_M; ++i) {
        if (kk < Q_REG_STEPS) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[i][e] = qf[i][kk < Q_REG_STEPS ? kk : 0][e];
        } else {
          kgen::ldmatrix_x4(a[i], q_s + ((ln.rg * WARP_M + i) * 16 + ln.lane % 16) * Q_ROW_ELEMS +
                                      (2 * ks + ln.lane / 16) * 8 - Q_SMEM_COL);
        }
      }
{% if fragments == "true" %}      qk_fragments(acc, a, tile, ks, ln.lane);
{% else %}#pragma unroll
      for (int j = 0; j < N_TILES; j += 2) {
        unsigned k[4];
        kgen::ldmatrix_x4(k, tile + (8 * j + ln.lane % 8 + (ln.lane / 16) * 8) * ROW_ELEMS +
                                 k_step_slot<COL_GROUPS>(kk, ln.cg, (ln.lane / 8) % 2, ln.lane % 8) * 8);
#pragma unroll
        for (int i = 0; i < WARP_M; ++i) {
          Mma::mma(acc[i][j], a[i], k[0], k[1]);
          Mma::mma(acc[i][j + 1], a[i], k[2], k[3]);
        }
      }
{% endif %}    }
  }
  float* mine = partials + ln.cg * (M_TILES * 16 * S_STRIDE);
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(mine + frag_row(ln.rg, i, h, ln.g) * S_STRIDE + 8 * j + 2 * ln.qd) =
            make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
}

// Whether a row (valid: not padding; drafts: its draft bits) sees position n of a split ending at
// `end`. DRAFTS = false: n is known to be a prefix position (the draft bits are not read).
template <bool DRAFTS = true>
__device__ __forceinline__ bool visible(int n, int end, int prefix, bool valid, Drafts drafts) {
  bool seen = valid && n < end;
  if (DRAFTS && MASK_KIND != MASK_NONE && n >= prefix) seen = seen && ((drafts >> (n - prefix)) & 1u);
  return seen;
}

}  // namespace mla

{% include "mla/mma/online_softmax.cuh" %}
{% include "mla/mma/slices.cuh" %}
{% include "mla/mma/rows.cuh" %}

namespace mla {

// 2. Whole scores of this warp's rows from the partials, masked; online softmax; P as A fragments
// (o rescaled when a row's max rose). DRAFTS = false: the tile holds no draft position.
template <bool DRAFTS>
__device__ __forceinline__ void softmax_tile(const Params& p, const float* partials, int start, int count, int prefix,
                                             const FragRows& rows, RowState& st, Accum& o, PFrags& pa, const Lane& ln) {
  float s[WARP_M][N_TILES][4];
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int j = 0; j < N_TILES; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float* partial = partials + frag_row(ln.rg, i, h, ln.g) * S_STRIDE + 8 * j + 2 * ln.qd;
        const float2 sum = partial_sum(partial);
        s[i][j][2 * h] = sum.x * p.scale_log2;
        s[i][j][2 * h + 1] = sum.y * p.scale_log2;
      }
  // Positions past the split, rows past ROWS and draft positions a row does not see: -inf.
  const bool whole = start + BLOCK_N <= prefix && count == BLOCK_N;
  if (!whole) {
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int j = 0; j < N_TILES; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, n = start + 8 * j + 2 * ln.qd + e % 2;
          if (!visible<DRAFTS>(n, start + count, prefix, rows.valid[i][h], rows.drafts[i][h])) s[i][j][e] = -CUDART_INF_F;
        }
  }
  online_softmax(s, st, o, pa);
}

// SPLIT_SOFTMAX: this lane's Items (fixed for the whole split) and their softmax state: the row's
// running max m (log2 units, the same in every lane of the row) and the item's share of l.
struct Slice : Items {
  float m[ITEMS], l[ITEMS];
  Drafts drafts[ITEMS];  // read before the first tile that holds drafts
};

// 2'. This lane's slice of the tile's softmax: P into p_s, each row's rescale factor (1 when its
// max held) into alpha_s. Returns whether any of its rows' max rose. DRAFTS as softmax_tile's.
template <bool DRAFTS>
__device__ __forceinline__ bool softmax_slice(const Params& p, const float* partials, int start, int count, int prefix,
                                              Slice& sl, T* p_s, float* alpha_s, const Lane& ln) {
  const bool whole = start + BLOCK_N <= prefix && count == BLOCK_N;
  bool rose = false;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    if (!Slice::live(k, ln)) continue;
    const int r = Slice::row(k, ln), c = Slice::col(k, ln);
    float2 s = partial_sum(partials + r * S_STRIDE + c);
    s.x *= p.scale_log2;
    s.y *= p.scale_log2;
    if (!whole) {
      if (!visible<DRAFTS>(start + c, start + count, prefix, row_real(r), sl.drafts[k])) s.x = -CUDART_INF_F;
      if (!visible<DRAFTS>(start + c + 1, start + count, prefix, row_real(r), sl.drafts[k])) s.y = -CUDART_INF_F;
    }
    softmax_item(s, r, c, sl.m[k], sl.l[k], p_s, alpha_s, rose);
  }
  return rose;
}

// Rare: draft positions holding Inf/NaN in V. Fold them in with scalar FMAs, only into the rows
// that see them, then zero them so the MMA adds nothing for them. Role-wide (barriers: the whole
// block, or with SPECIALIZE the v role, whose own tile the q role no longer reads). P comes
// from p_h (SPLIT_SOFTMAX), else from the fragments, through the tile's partial scores (p_f), which
// every warp has read by the first barrier.
__device__ void fold_bad_drafts(const Params& p, int b, T* tile, int start, int prefix, unsigned long long* bad_s,
                                float* p_f, const T* p_h, const PFrags& pa, Accum& o, const Lane& ln) {
  const unsigned long long bad = *bad_s;
  if constexpr (!SPLIT_SOFTMAX) {
    role_sync();
    if (ln.cg == 0) {
#pragma unroll
      for (int i = 0; i < WARP_M; ++i)
#pragma unroll
        for (int j = 0; j < N_TILES; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float2 v = Mma::unpack(pa[i][j / 2][(j % 2) * 2 + h]);
            *reinterpret_cast<float2*>(p_f + frag_row(ln.rg, i, h, ln.g) * S_STRIDE + 8 * j + 2 * ln.qd) = v;
          }
    }
    role_sync();
  }
  for (int n = 0; n < BLOCK_N; ++n) {
    if (!((bad >> n) & 1ull)) continue;
    const int pos = start + n;  // a draft position: pos >= prefix
{% if fragments == "true" %}    const RawRow v{tile, n};  // its V from the raw stage
{% elif kv_fp8 == "true" %}    const WideRow v{tile, n};  // its V from the 16-bit tile: the cache row is e4m3 bytes
{% else %}    // Its V from the cache, not the tile: the tile's swizzle would cost every read below an
    // address of its own (registers), the cache row is contiguous (and in L2: just copied)
    const T* v = kv_row(p, b, pos);
{% endif %}#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = frag_row(ln.rg, i, h, ln.g);
        if (!row_real(r) || !visible(pos, pos + 1, prefix, true, row_drafts(p, b, r))) continue;
        const float pr = SPLIT_SOFTMAX ? kgen::to_float(p_h[r * P_STRIDE + n]) : p_f[r * S_STRIDE + n];
#pragma unroll
        for (int j = 0; j < O_TILES; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int d = o_dim(j, e, ln);
            o[i][j][2 * h + e] = fmaf(pr, kgen::to_float(v[d]), o[i][j][2 * h + e]);
          }
      }
  }
  role_sync();
  constexpr int V_CHUNKS = FRAGMENTS ? LATENT_DIM / 16 : LATENT_CHUNKS;  // a raw row's V: its first chunks
  for (int idx = role_thread(); idx < BLOCK_N * V_CHUNKS; idx += ROLE_THREADS) {
    const int n = idx / V_CHUNKS, c = idx % V_CHUNKS;
    if constexpr (FRAGMENTS) {
      uint4* const at = reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(tile) + n * STAGE_ROW_BYTES + c * 16);
      if ((bad >> n) & 1ull) *at = make_uint4(0u, 0u, 0u, 0u);
    } else {
      if ((bad >> n) & 1ull) *reinterpret_cast<uint4*>(tile + tile_at(n, c)) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  if (role_thread() == 0) *bad_s = 0ull;
  role_sync();
}

// 3. O += P.V over this warp's output columns, one k16 step of positions (A fragments a[i]).
__device__ __forceinline__ void pv_step(const T* tile, int kk, const unsigned (&a)[WARP_M][4], Accum& o, const Lane& ln) {
{% if fragments == "true" %}  pv_fragments(tile, kk, a, o, ln.lane, ln.cg);
{% else %}  const int row = ln.lane % 8 + ((ln.lane / 8) % 2) * 8;  // + 16 kk; chunk cg * O_TILES + j + lane / 16
  const SwizzledRows rows(tile, row, ln.cg * O_TILES, ln.lane / 16, ln.lane % 8);
#pragma unroll
  for (int j = 0; j < O_TILES; j += 2) {
    unsigned v[4];
    kgen::ldmatrix_x4_trans(v, O_TILES % 8 ? tile + tile_at(16 * kk + row, ln.cg * O_TILES + j + ln.lane / 16)
                                           : rows(16 * kk, j));
#pragma unroll
    for (int i = 0; i < WARP_M; ++i) {
      Mma::mma(o[i][j], a[i], v[0], v[1]);
      Mma::mma(o[i][j + 1], a[i], v[2], v[3]);
    }
  }
{% endif %}}

// P from this warp's fragments.
__device__ __forceinline__ void pv_tile(const T* tile, const PFrags& pa, Accum& o, const Lane& ln) {
#pragma unroll
  for (int kk = 0; kk < PV_STEPS; ++kk) {
    unsigned a[WARP_M][4];
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) a[i][e] = pa[i][kk][e];
    pv_step(tile, kk, a, o, ln);
  }
}

// bfloat16 q over float16 MMAs (Q_CONVERTED): the block's q as load_q left it (its words in qf,
// this thread's chunks of q_s) times the power of two that puts its largest finite |q| in
// [2^14, 2^15), in place; returns that power. Every bfloat16 value (8 significant bits) from 2^-14
// of the scaled range up is then exact in float16 (11), and q.K (|e4m3| <= 448, 576 products)
// stays far inside float32. One factor a block, not a row: a row 2^28 below the block's largest
// keeps every bit, and what a weaker row loses is below 2^-39 of the largest. Inf and NaN stay
// out of the max (they stay themselves and poison their own rows). Block-wide (a barrier), after
// the first tiles' copies are issued: it waits on load_q's reads, which the 16-bit kernel first
// waits on at the first q.K (a B = 1 decode ran 1.5 us slower with it before split_range).
// `scratch`: a word a warp, free until the next barrier. Returns 1 where q is in T.
__device__ float q_into_t(QFrags& qf, T* q_s, unsigned* scratch) {
  if constexpr (!Q_CONVERTED) return 1.f;
  static_assert(!Q_CONVERTED || (Mma::EXPONENT == 0x7c00 && kgen::MmaType<QT>::EXPONENT == 0x7f80),
                "bfloat16 q over float16 MMAs");
  unsigned top = 0;  // the largest finite |q| as bfloat16 bits (ordered as the magnitudes)
  const auto take = [&top](unsigned w) {
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const unsigned a = (w >> (16 * k)) & 0x7fffu;
      if (a < 0x7f80u) top = max(top, a);
    }
  };
  unsigned* const words = reinterpret_cast<unsigned*>(qf);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(QFrags) / 4); ++k) take(words[k]);
  for (int idx = threadIdx.x; idx < M_TILES * 16 * Q_SMEM_CHUNKS; idx += NUM_THREADS) {
    const uint4 v = *reinterpret_cast<const uint4*>(q_s + idx / Q_SMEM_CHUNKS * Q_ROW_ELEMS + idx % Q_SMEM_CHUNKS * 8);
    take(v.x), take(v.y), take(v.z), take(v.w);
  }
  top = __reduce_max_sync(~0u, top);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = top;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < NUM_WARPS; ++w) top = max(top, scratch[w]);
  // top is 2^(e - 127) x 1.m, e its exponent field: 2^(141 - e) takes it into [2^14, 2^15). At
  // most 2^100 (a block whose q is all below 2^-86), and 1 for all zeros.
  const int shift = top == 0 ? 0 : min(141 - static_cast<int>(top >> 7), 100);
  const float q_mul = __int_as_float((127 + shift) << 23);
  const auto to_t = [q_mul](unsigned w) {
    const float2 f = kgen::MmaType<QT>::unpack(w);
    return Mma::pack(f.x * q_mul, f.y * q_mul);
  };
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(QFrags) / 4); ++k) words[k] = to_t(words[k]);
  for (int idx = threadIdx.x; idx < M_TILES * 16 * Q_SMEM_CHUNKS; idx += NUM_THREADS) {
    uint4* const at = reinterpret_cast<uint4*>(q_s + idx / Q_SMEM_CHUNKS * Q_ROW_ELEMS + idx % Q_SMEM_CHUNKS * 8);
    const uint4 v = *at;
    *at = make_uint4(to_t(v.x), to_t(v.y), to_t(v.z), to_t(v.w));
  }
  return q_mul;
}

// q: this warp's A fragments of its first Q_REG_STEPS k steps in registers (zeros where
// `fragments` is false: a warp that computes no q.K^T), the block's rows' columns from Q_SMEM_COL
// on in shared memory (padding rows are zeros), as QT's (q_into_t makes them T's where those
// differ).
__device__ __forceinline__ void load_q(const Params& p, int b, QFrags& qf, T* q_s, const Lane& ln, bool fragments = true) {
  // One address a row pair, the k steps at immediate offsets (an address computed a load cost
  // the B = 1 kernels ~110 SASS instructions a warp on sm_90); the row 8 below from it where
  // the heads per block make that one stride. (A padding row's address is formed, never read.)
  constexpr bool HEAD_STEP = HEADS_PER_BLOCK % 16 == 0, TOKEN_STEP = 8 % HEADS_PER_BLOCK == 0;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i) {
    const int r0 = (ln.rg * WARP_M + i) * 16 + ln.g;
    // A lane's pairs of a k step: dims 2qd.., 2qd + 8.. (FRAGMENTS: 4qd.., 4qd + 2.., the k order
    // fp8_tiles.cuh reads K in)
    constexpr int LANE_DIMS = FRAGMENTS ? 4 : 2, HALF_WORDS = FRAGMENTS ? 1 : 4;
    const QT* top = q_row(p, b, r0) + 16 * ln.cg + LANE_DIMS * ln.qd;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
      const bool real = fragments && row_real(r);
      const QT* at = h == 0 ? top
                     : HEAD_STEP  ? top + 8 * p.q_sh
                     : TOKEN_STEP ? top + (8 / HEADS_PER_BLOCK) * p.q_st
                                  : q_row(p, b, r) + 16 * ln.cg + LANE_DIMS * ln.qd;
      const unsigned* row = reinterpret_cast<const unsigned*>(at);
#pragma unroll
      for (int kk = 0; kk < Q_REG_STEPS; ++kk)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const bool inside = real && (K_STEPS % COL_GROUPS == 0 || kk * COL_GROUPS + ln.cg < K_STEPS);
          qf[i][kk][h + 2 * half] = inside ? __ldg(row + 8 * COL_GROUPS * kk + HALF_WORDS * half) : 0u;
        }
    }
  }
  for (int idx = threadIdx.x; idx < M_TILES * 16 * Q_SMEM_CHUNKS; idx += NUM_THREADS) {
    const int r = idx / Q_SMEM_CHUNKS, c = idx % Q_SMEM_CHUNKS;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row_real(r)) {
      if constexpr (FRAGMENTS) {  // chunk c in the k order: the even pairs of its 16 dims, or the odd
        const uint4* k16 = reinterpret_cast<const uint4*>(q_row(p, b, r) + Q_SMEM_COL + c / 2 * 16);
        const uint4 x = __ldg(k16), y = __ldg(k16 + 1);
        v = c % 2 ? make_uint4(x.y, x.w, y.y, y.w) : make_uint4(x.x, x.z, y.x, y.z);
      } else {
        v = __ldg(reinterpret_cast<const uint4*>(q_row(p, b, r) + Q_SMEM_COL + c * 8));
      }
    }
    *reinterpret_cast<uint4*>(q_s + r * Q_ROW_ELEMS + c * 8) = v;
  }
}

// P from shared memory (SPLIT_SOFTMAX).
__device__ __forceinline__ void pv_tile(const T* tile, const T* p_s, Accum& o, const Lane& ln) {
#pragma unroll
  for (int kk = 0; kk < PV_STEPS; ++kk) {
    unsigned a[WARP_M][4];
    load_p(a, p_s, kk, ln);
    pv_step(tile, kk, a, o, ln);
  }
}

}  // namespace mla
