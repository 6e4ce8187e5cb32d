// An fp8 cache on the tensor-core path (docs/design-space.md, "fp8 caches"). TileCopy copies a
// tile's cached rows as they are (KV_ROW_BYTES a position: half a 16-bit row's bytes for
// "fp8_tensor", the point of the format where decode is memory-bound) into a raw stage of the
// cp.async pipeline. Rows that are all e4m3 (FRAGMENTS) are then read by ldmatrix as they landed
// and widened to float16 in registers, fragment by fragment (qk_fragments, pv_fragments below);
// other rows are turned by widen_tile into the one 16-bit tile (swizzled as tile_at places it)
// that the unchanged ldmatrix / mma.sync loop reads. e4m3 widens to float16 and bfloat16
// exactly and a tensor's scale multiplies no value: with_scales folds it into scale_log2 for
// q.K, and the kernel applies it to the output once, for V. Scales a group of a row
// (DeepSeek-V3.2's 656-byte rows) differ from row to row, so widen_tile multiplies them in,
// rounding e4m3 x scale to T once (the error of a 16-bit cache holding those values).
// One 16-bit tile serves a loop that reads one tile at a time between two block barriers: q.K
// ahead keeps two tiles resident and the ring's row groups drift apart, so those are refused for
// widened rows (kgen.mla.rules); fragments read the raw stages as the 16-bit kernel reads its
// tiles. The specialized roles' kernel reads no fp8 cache.

static_assert(!SPECIALIZE, "the specialized roles read no fp8 cache");
static_assert(FRAGMENTS || (!QK_AHEAD && !RING_SLACK), "a widened fp8 cache: one 16-bit tile, read one tile at a time");
static_assert(KV_ROW_BYTES % 16 == 0 && ROPE_OFFSET % 16 == 0, "16-byte copies of a cached row");
static_assert(E4M3_DIMS % 8 == 0 && E4M3_DIMS + BF16_DIMS == HEAD_DIM, "an fp8 row holds every dim");
static_assert(TENSOR_SCALE || (SCALE_GROUP % 8 == 0 && E4M3_DIMS % SCALE_GROUP == 0), "whole groups a chunk");

{% include "mla/fp8_values.cuh" %}

constexpr int RAW_CHUNKS = KV_ROW_BYTES / 16;  // 16-byte chunks of a cached row
constexpr int RAW_ITEMS = (RAW_CHUNKS + LOAD_THREADS_PER_ROW - 1) / LOAD_THREADS_PER_ROW;

// FRAGMENTS: where chunk c (16 bytes) of position n sits in its raw row: slot c ^ (n / 2 % 4), an
// XOR within each group of four chunks. A row is 64 bytes past a multiple of 128, so the eight rows
// of an ldmatrix (8 consecutive positions, one chunk) then fall on distinct banks. Otherwise rows
// are in order (widen_tile reads them so).
static_assert(!FRAGMENTS || (KV_ROW_BYTES % 128 == 64 && RAW_CHUNKS % 4 == 0), "the raw rows' swizzle");
__device__ __forceinline__ int raw_slot(int n, int c) { return FRAGMENTS ? c ^ ((n >> 1) & 3) : c; }

// The copy of KV tile [start, start + BLOCK_N) into a raw stage (rows of KV_ROW_BYTES, chunks at
// raw_slot), as the 16-bit TileCopy: addressed once, issued in pieces (with SPREAD_COPIES over the
// next q.K^T's k steps), zeros past `end`, nothing when idle.
struct TileCopy {
  // Where a thread's chunks keep their place in a group of four (FRAGMENTS), its later chunks sit
  // at fixed offsets from its first
  static constexpr bool FIXED_STEPS = !FRAGMENTS || LOAD_THREADS_PER_ROW % 4 == 0;
  const unsigned char* src = nullptr;
  unsigned char* dst = nullptr;  // the row (the first chunk's slot with FIXED_STEPS)
  int bytes = -1;  // 16, 0 (a position past the end: zeros) or -1 (idle)
  int pos = 0;

  TileCopy() = default;
  __device__ __forceinline__ TileCopy(const Params& p, int start, int end, int page, T* stage) {
    const int chunk = threadIdx.x % LOAD_THREADS_PER_ROW;
    pos = load_pos();
    const int row_in_page = (start + pos) % PAGE_SIZE;
    src = p.kv + page * p.kv_sp + (row_in_page * static_cast<int>(p.kv_sr) + chunk * 16);
    dst = reinterpret_cast<unsigned char*>(stage) + pos * KV_ROW_BYTES + (FIXED_STEPS ? raw_slot(pos, chunk) * 16 : 0);
    bytes = start + pos < end ? 16 : 0;
  }

  __device__ __forceinline__ void piece(int j) const {
    const int c = threadIdx.x % LOAD_THREADS_PER_ROW + j * LOAD_THREADS_PER_ROW;
    unsigned char* to = FIXED_STEPS ? dst + j * LOAD_THREADS_PER_ROW * 16 : dst + raw_slot(pos, c) * 16;
    if (bytes >= 0 && (RAW_CHUNKS % LOAD_THREADS_PER_ROW == 0 || c < RAW_CHUNKS))
      kgen::cp_async_or_zeros<16, true>(to, src + j * LOAD_THREADS_PER_ROW * 16, bytes == 0);
  }

  __device__ __forceinline__ void pieces_at(int kk, int steps) const {
    if constexpr (SPREAD_COPIES) {
#pragma unroll
      for (int j = kk; j < RAW_ITEMS; j += steps) piece(j);
    }
  }

  __device__ __forceinline__ void all() const {
#pragma unroll
    for (int j = 0; j < RAW_ITEMS; ++j) piece(j);
  }
};

constexpr int E4M3_CHUNKS = E4M3_DIMS / 8;  // 8 e4m3 values (8 bytes) -> one 16-byte chunk

// Chunk c of a position of the landed raw stage as read: its e4m3 bytes (w.x, w.y) and, where the
// format keeps one a group, their scale; or 8 rope values (w).
struct RawChunk {
  uint4 w;
  float scale = 1.0f;
};

__device__ __forceinline__ RawChunk read_chunk(const unsigned char* row, int c) {
  RawChunk r;
  if (E4M3_CHUNKS == CHUNKS || c < E4M3_CHUNKS) {
    const uint2 w = *reinterpret_cast<const uint2*>(row + c * 8);
    r.w = make_uint4(w.x, w.y, 0u, 0u);
    if constexpr (!TENSOR_SCALE) r.scale = *reinterpret_cast<const float*>(row + SCALES_OFFSET + c * 8 / SCALE_GROUP * 4);
  } else {
    r.w = *reinterpret_cast<const uint4*>(row + ROPE_OFFSET + (c - E4M3_CHUNKS) * 16);
  }
  return r;
}

// Chunk c widened to a 16-byte chunk of the tile (its scale multiplied in where the format keeps
// one a group).
__device__ __forceinline__ uint4 widen_chunk(const RawChunk& r, int c) {
  if (E4M3_CHUNKS == CHUNKS || c < E4M3_CHUNKS) {
    const uint2 lo = TENSOR_SCALE ? widen_quad(r.w.x) : scaled_quad(r.w.x, r.scale);
    const uint2 hi = TENSOR_SCALE ? widen_quad(r.w.y) : scaled_quad(r.w.y, r.scale);
    return make_uint4(lo.x, lo.y, hi.x, hi.y);
  }
  return rope_words(r.w);
}

// The landed raw stage -> the 16-bit tile `wide`, block-wide, once every warp is done with the
// previous tile (the loop's barrier); returns `wide` after a barrier, so every warp reads it whole.
// A position past the end was copied as zeros and widens to zeros (no 0 * Inf in P.V).
// Eight threads take a group of 8 chunks of one position (64 raw bytes read, one swizzled 128-byte
// group written: no bank conflicts). Where the groups a pass takes (PER_PASS) and the tile's
// positions divide one another, a thread keeps its position or steps by a constant, so each pass
// adds compile-time offsets to one address; otherwise the position and group are computed.
// A thread reads BATCH chunks before it widens and stores any: the compiler cannot move a read
// above a store to the same shared memory, so read-convert-store a chunk at a time waits out each
// read's latency. A chunk is stored in one 16-byte store (the tile's chunks are 16-byte aligned).
__device__ __forceinline__ T* widen_tile(const T* stage, T* wide) {
  const unsigned char* raw = reinterpret_cast<const unsigned char*>(stage);
  constexpr int GROUPS = CHUNKS / 8, UNITS = BLOCK_N * GROUPS;  // (position, group of 8 chunks)
  constexpr int PER_PASS = NUM_THREADS / 8, PASSES = (UNITS + PER_PASS - 1) / PER_PASS;
  constexpr int BATCH = 3;
  static_assert(CHUNKS % 8 == 0, "a row's chunks in whole groups of 8");
  const int j = threadIdx.x % 8, u0 = threadIdx.x / 8;
  // Whether pass k exists and its unit's group q is one of the row's.
  const auto live = [](int k, int q) {
    return (PASSES % BATCH == 0 || k < PASSES) && (UNITS % PER_PASS == 0 || q < GROUPS);
  };
#pragma unroll 1
  for (int k0 = 0; k0 < PASSES; k0 += BATCH) {
    RawChunk r[BATCH];
    int n[BATCH], q[BATCH];  // the position and the group of unit u0 + k * PER_PASS
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int k = k0 + b;
      if constexpr (PER_PASS % BLOCK_N == 0) {
        n[b] = u0 % BLOCK_N;
        q[b] = u0 / BLOCK_N + k * (PER_PASS / BLOCK_N);
      } else if constexpr (BLOCK_N % PER_PASS == 0) {
        n[b] = u0 + k % (BLOCK_N / PER_PASS) * PER_PASS;
        q[b] = k / (BLOCK_N / PER_PASS);
      } else {
        n[b] = (u0 + k * PER_PASS) % BLOCK_N;
        q[b] = (u0 + k * PER_PASS) / BLOCK_N;
      }
      if (live(k, q[b])) r[b] = read_chunk(raw + n[b] * KV_ROW_BYTES, q[b] * 8 + j);
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b)
      if (live(k0 + b, q[b])) {
        T* chunk = wide + n[b] * ROW_ELEMS + chunk_slot(q[b] * 8, j, n[b] % 8) * 8;
        *static_cast<uint4*>(__builtin_assume_aligned(chunk, 16)) = widen_chunk(r[b], q[b] * 8 + j);
      }
  }
  __syncthreads();
  return wide;
}

// A V row of the 16-bit tile as fold_bad_drafts reads it (the cache holds e4m3 bytes): value d of
// position n as the tile holds it (a tensor scale not yet applied).
struct WideRow {
  const T* tile;
  int n;
  __device__ __forceinline__ T operator[](int d) const { return tile[tile_at(n, d / 8) + d % 8]; }
};

// FRAGMENTS: the MMAs read the raw stage itself. An ldmatrix matrix of it (8 positions x 16 bytes)
// gives a lane 4 e4m3 bytes, and ldmatrix serves both products without a 16-bit tile:
//  - q.K^T, k step ks = raw chunk ks (16 dims): a lane gets dims 4qd..4qd+3 of position g, which
//    widen to the B fragment (k 2qd..2qd+1, k 2qd+8..2qd+9) of one n8 tile of positions. So a k
//    step's dims sit in the MMA's k order 0 1 4 5 8 9 12 13 | 2 3 6 7 10 11 14 15, and q's A
//    fragments are taken in that order too (load_q).
//  - P.V, transposed: a lane gets, of positions 2qd and 2qd + 1, dims 2g and 2g + 1 of a chunk;
//    one byte permute makes them the B fragments (k 2qd..2qd+1) of two n8 tiles of the output,
//    the chunk's even dims and its odd ones. So a warp's output tile 2m + e holds dims 16c + 2n + e
//    (c its m-th chunk, n the tile's column) and a lane's four values of a chunk and row are the
//    consecutive dims 16c + 4qd .. + 3 (o_dim, write_row).
// Each value widens once per warp that reads it (with several row groups, more than once a tile)
// and V's 512 dims twice (as K and as V), in one conversion a pair (T is float16).

// A pair of e4m3 values (low byte first) as the half2 bits of T = float16.
__device__ __forceinline__ unsigned f16_pair(unsigned bits) {
  static_assert(!FRAGMENTS || !T_IS_BF16, "fragments widen to float16 (kgen.mla.program.tile_dtype)");
  return widen_pair(static_cast<unsigned short>(bits));
}

// q.K^T's k step ks (one raw chunk) over every n8 tile of positions, into acc.
__device__ __forceinline__ void qk_fragments(float (&acc)[WARP_M][N_TILES][4], const unsigned (&a)[WARP_M][4],
                                             const T* stage, int ks, int lane) {
  constexpr int X = N_TILES % 4 == 0 ? 4 : 2;  // matrices (n8 tiles) an ldmatrix
  static_assert(N_TILES % X == 0, "n8 tiles in pairs");
  const unsigned char* raw = reinterpret_cast<const unsigned char*>(stage);
#pragma unroll
  for (int j = 0; j < N_TILES; j += X) {
    const unsigned char* row = raw + (8 * (j + lane / 8 % X) + lane % 8) * KV_ROW_BYTES + raw_slot(lane % 8, ks) * 16;
    unsigned k[4];
    if constexpr (X == 4) kgen::ldmatrix_x4(k, row);
    else kgen::ldmatrix_x2(k, row);
#pragma unroll
    for (int x = 0; x < X; ++x) {
      const unsigned b0 = f16_pair(k[x] & 0xffffu), b1 = f16_pair(k[x] >> 16);
#pragma unroll
      for (int i = 0; i < WARP_M; ++i) Mma::mma(acc[i][j + x], a[i], b0, b1);
    }
  }
}

// O += P.V over k step kk (positions 16 kk ..): this warp's O_TILES / 2 chunks of V's dims, two
// an ldmatrix (positions 0-7 and 8-15 of each).
__device__ __forceinline__ void pv_fragments(const T* stage, int kk, const unsigned (&a)[WARP_M][4],
                                             float (&o)[WARP_M][O_TILES][4], int lane, int cg) {
  static_assert(O_TILES % 4 == 0, "a warp's output in pairs of chunks");
  const unsigned char* raw = reinterpret_cast<const unsigned char*>(stage);
  const int row = 16 * kk + lane % 8 + lane / 8 % 2 * 8;
#pragma unroll
  for (int m = 0; m < O_TILES / 2; m += 2) {
    unsigned v[4];
    kgen::ldmatrix_x4_trans(v, raw + row * KV_ROW_BYTES + raw_slot(lane % 8, cg * (O_TILES / 2) + m + lane / 16) * 16);
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      // v[2x]: positions 2qd, 2qd + 1 of the first eight; bytes (p dim, p dim + 1, p + 1 dim, ...)
      const unsigned lo = __byte_perm(v[2 * x], 0u, 0x3120u), hi = __byte_perm(v[2 * x + 1], 0u, 0x3120u);
      const unsigned even0 = f16_pair(lo & 0xffffu), odd0 = f16_pair(lo >> 16);
      const unsigned even1 = f16_pair(hi & 0xffffu), odd1 = f16_pair(hi >> 16);
#pragma unroll
      for (int i = 0; i < WARP_M; ++i) {
        Mma::mma(o[i][2 * (m + x)], a[i], even0, even1);
        Mma::mma(o[i][2 * (m + x) + 1], a[i], odd0, odd1);
      }
    }
  }
}

// A V row of the raw stage as fold_bad_drafts reads it (FRAGMENTS): value d of position n, as T.
struct RawRow {
  const T* stage;
  int n;
  __device__ __forceinline__ T operator[](int d) const {
    const unsigned char* row = reinterpret_cast<const unsigned char*>(stage) + n * KV_ROW_BYTES;
    const unsigned h = f16_pair(row[raw_slot(n, d / 16) * 16 + d % 16]);
    return *reinterpret_cast<const T*>(&h);
  }
};

// The parameters with the cache's and q's scales folded into the softmax's: scores are
// (q x q_mul).(e4m3 values) x k_scale (q_mul: load_q's), so scale_log2 x k_scale / q_mul (read
// at each launch: a captured graph follows a new k_scale). Scales in rows are in the tile already.
__device__ __forceinline__ Params with_scales(Params p, float q_mul) {
  if constexpr (TENSOR_SCALE) p.scale_log2 *= __ldg(p.k_scale);
  p.scale_log2 /= q_mul;
  return p;
}
