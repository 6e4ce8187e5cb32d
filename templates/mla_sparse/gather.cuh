// Gathering BLOCK_N cache rows by slot into shared memory, and turning fp8 rows into the 16-bit
// rows ldmatrix reads. The fp8 row's layout is the cache format's (the constants of the format
// row, kgen.mla.kv_format): E4M3_DIMS e4m3 values, their scales (inline at TOKEN_SCALES, or in
// the page's scale rows after its payload rows), BF16_DIMS bfloat16 values at ROPE_OFFSET.
//
// An e4m3 value is exact in float16 and bfloat16 (3 mantissa bits, exponents 2^-9 to 2^8), so the
// 16-bit tile holds the fp8 values exactly, unscaled, and each row's SCALE_GROUPS scales go beside
// it as float32 (row_scales: BLOCK_N x SCALE_COLUMNS floats). The scales are applied in float32
// where the products are formed: per scale group of the partial scores, and to P before P.V
// (kernel). Rounding e4m3 x scale to 16 bits instead would cost a relative 2^-9 on every score,
// which huge logits turn into an lse error far over the tolerance.
//
// SCALED_TILE is the exception: a UE8M0 scale is a power of two, and bfloat16 has float32's
// exponent range and 7 mantissa bits, so e4m3 x scale is exact in a bfloat16 tile. The tile then
// holds the products, no scales go beside it, and q.K and P.V are the 16-bit cache's.
//
// A 16-bit tile row is the cached row (HEAD_DIM values) padded to an odd number of 16-byte
// chunks, so ldmatrix's eight row addresses hit distinct banks.
//
// Every row of a tile is gathered by LOAD_THREADS_PER_ROW threads, GATHER_BYTES per instruction.
// A masked row (slot -1, or past the split's end) reads nothing and holds zeros, so its V adds
// 0 * 0 to every output (no 0 * Inf from the tensor cores).

namespace mla {

constexpr int NUM_THREADS = NUM_WARPS * 32;
constexpr int CHUNKS = HEAD_DIM / 8;                          // 16-byte chunks of a 16-bit row
constexpr int TILE_ROW_CHUNKS = CHUNKS % 2 ? CHUNKS : CHUNKS + 1;
constexpr int ROW_ELEMS = TILE_ROW_CHUNKS * 8;                // one row of a 16-bit tile
constexpr int TILE_ELEMS = BLOCK_N * ROW_ELEMS;
constexpr int SCALE_GROUPS = KV_FP8 ? E4M3_DIMS / SCALE_GROUP : 0;  // scales a row; bf16 values have none
// What one gathered row takes: its bytes in the cache and in a pipeline stage (an fp8 stage row:
// the token's row, then with SCALES_PAGE its scale row).
constexpr int CACHE_ROW_BYTES = KV_FP8 ? ROW_BYTES : HEAD_DIM * 2;
constexpr int STAGE_ROW_BYTES = KV_FP8 ? FP8_STAGE_ROW : ROW_ELEMS * 2;
constexpr int STAGE_SCALES = SCALES_AT == SCALES_PAGE ? ROW_BYTES : TOKEN_SCALES;  // in a stage row
constexpr int STAGE_BYTES = BLOCK_N * STAGE_ROW_BYTES;
constexpr int LOAD_THREADS_PER_ROW = NUM_THREADS / BLOCK_N;

static_assert(sizeof(T) == 2, "the sparse family takes 16-bit q");
static_assert(!KV_FP8 || E4M3_DIMS + BF16_DIMS == HEAD_DIM, "an fp8 row holds every dim");
static_assert(!KV_FP8 || E4M3_DIMS % SCALE_GROUP == 0, "whole scale groups");
static_assert(SCALES_AT != SCALES_PAGE || SCALE_ROW_BYTES == 8, "a page's scale rows: 8 bytes a token");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 64, "BLOCK_N: a multiple of 16, at most 64");
static_assert(NUM_THREADS % BLOCK_N == 0, "every row of a tile is gathered by as many threads");
static_assert(CACHE_ROW_BYTES % GATHER_BYTES == 0 && ROPE_OFFSET % GATHER_BYTES == 0, "gather width");

using Mma = kgen::MmaType<T>;

__device__ __forceinline__ int load_row() { return threadIdx.x / LOAD_THREADS_PER_ROW; }
__device__ __forceinline__ int load_lane() { return threadIdx.x % LOAD_THREADS_PER_ROW; }

// The slot of this thread's row of the tile at `start` (-1 past `end`). Read a tile ahead of the
// gather that uses it, so no gather waits on the index list.
__device__ __forceinline__ int fetch_slot(const int* slots, int start, int end) {
  const int n = start + load_row();
  return n < end ? __ldg(slots + n) : -1;
}

// The same of the V4 op's joined lists (Lists: a second cache's slot s as main_slots + s).
__device__ __forceinline__ int fetch_slot(const Lists& l, int start, int end) {
  const int n = start + load_row();
  if (n >= end) return -1;
  if (n < l.n_main) return __ldg(l.main + n);
  const int s = __ldg(l.extra + (n - l.n_main));
  return s < 0 ? s : static_cast<int>(s + l.main_slots);
}

// Where the row of a slot lives: its bytes and its scales (inline, or the token's scale row after
// its page's payload rows). The V4 op's second cache holds the slots past the main cache's. A
// cache's row stride is the tensor's; with SCALES_PAGE it is the payload row's, ROW_BYTES (the
// runner's). Computed once a row: each cache's page size is a compile-time constant.
struct RowAt {
  const unsigned char* row;
  const unsigned char* scales;
};
template <int PAGE>
__device__ __forceinline__ RowAt row_in(const unsigned char* kv, long long sp, long long sr, int slot) {
  const int page = slot / PAGE, offset = slot % PAGE;
  const unsigned char* base = kv + page * sp;
  if constexpr (SCALES_AT == SCALES_PAGE) {
    return {base + offset * ROW_BYTES, base + PAGE * ROW_BYTES + offset * SCALE_ROW_BYTES};
  } else {
    const unsigned char* row = base + offset * sr;
    return {row, row + TOKEN_SCALES};
  }
}
__device__ __forceinline__ RowAt row_at(const Params& p, int slot) {
{% if has_extra == "true" %}
  if (slot >= p.num_slots) {
    return row_in<EXTRA_PAGE_SIZE>(p.extra_kv, p.extra_kv_sp, p.extra_kv_sr, slot - static_cast<int>(p.num_slots));
  }
{% endif %}
  return row_in<PAGE_SIZE>(p.kv, p.kv_sp, p.kv_sr, slot);
}

// Scale g of a row's scales as a float: a float32, or a UE8M0 byte (2^(b - 127); 255: NaN), by
// selects (not branches).
__device__ __forceinline__ float ue8m0(unsigned b) {
  unsigned bits = b == 0u ? 0x00400000u : b << 23;
  bits = b == 255u ? 0x7fc00000u : bits;
  return __uint_as_float(bits);
}
// A scale's bits as loaded (the float32's, or the UE8M0 byte) and as a float: the register
// gather decodes them a tile later, in store(), so the load stays in flight until then.
__device__ __forceinline__ unsigned load_scale_bits(const unsigned char* scales, int g) {
  if constexpr (SCALE_KIND == SCALE_F32) return __ldg(reinterpret_cast<const unsigned*>(scales) + g);
  else return __ldg(scales + g);
}
__device__ __forceinline__ float scale_of_bits(unsigned bits) {
  if constexpr (SCALE_KIND == SCALE_F32) return __uint_as_float(bits);
  else return ue8m0(bits);
}
// A UE8M0 byte as a packed pair of bfloat16 (the float32's high half, twice: 2^(b - 127) is
// exact in bfloat16, a subnormal for b = 0).
__device__ __forceinline__ unsigned ue8m0_pair(unsigned b) { return __byte_perm(__float_as_uint(ue8m0(b)), 0u, 0x3232u); }
__device__ __forceinline__ float stage_scale(const unsigned char* scales, int g) {
  if constexpr (SCALE_KIND == SCALE_F32) return reinterpret_cast<const float*>(scales)[g];
  else return ue8m0(scales[g]);
}

// Issue the gather of this thread's row (cache slot `slot`, -1: zeros) into a pipeline stage, as
// the cached bytes are (fp8 rows whole, with SCALES_PAGE their scale row after them; 16-bit rows
// into padded tile rows).
__device__ __forceinline__ void gather_row(const Params& p, int slot, unsigned char* stage) {
  constexpr int PIECES = CACHE_ROW_BYTES / GATHER_BYTES;
  constexpr int ITEMS = (PIECES + LOAD_THREADS_PER_ROW - 1) / LOAD_THREADS_PER_ROW;
  const RowAt at = slot >= 0 ? row_at(p, slot) : RowAt{p.kv, p.kv};
  const unsigned char* src = at.row;
  unsigned char* dst = stage + load_row() * STAGE_ROW_BYTES;
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int piece = load_lane() + j * LOAD_THREADS_PER_ROW;
    if (PIECES % LOAD_THREADS_PER_ROW == 0 || piece < PIECES)
      kgen::cp_async_or_zeros<GATHER_BYTES>(dst + piece * GATHER_BYTES, src + piece * GATHER_BYTES, slot < 0);
  }
  if constexpr (KV_FP8 && SCALES_AT == SCALES_PAGE) {
    if (load_lane() == LOAD_THREADS_PER_ROW - 1)
      kgen::cp_async_or_zeros<SCALE_ROW_BYTES>(dst + ROW_BYTES, at.scales, slot < 0);
  }
}

{% include "mla/fp8_values.cuh" %}
static_assert(!SCALED_TILE || (T_IS_BF16 && SCALE_KIND == SCALE_UE8M0), "a scaled tile: bfloat16, power-of-two scales");
static_assert(SCALE_COLUMNS == (KV_FP8 && !SCALED_TILE ? SCALE_GROUPS : 0), "scales beside an unscaled fp8 tile only");

// SCALED_TILE: four e4m3 values (one 32-bit word) times a UE8M0 scale pair, as two packed pairs of
// bfloat16, exactly. (fp8_values.cuh's scaled_quad rounds a float32 product, two FMULs a pair for
// any scale; a power of two needs no rounding, so one bfloat16 HMUL2 a pair does it.)
__device__ __forceinline__ unsigned times_pair(unsigned x, unsigned scale2) {
  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&x), *reinterpret_cast<const __nv_bfloat162*>(&scale2));
  return *reinterpret_cast<const unsigned*>(&r);
}
__device__ __forceinline__ uint2 widen_quad_times(unsigned word, unsigned scale2) {
  const uint2 w = widen_quad(word);
  return make_uint2(times_pair(w.x, scale2), times_pair(w.y, scale2));
}

// dequant='shared': a stage of raw fp8 rows -> the 16-bit tile and its rows' scales (SCALED_TILE:
// the tile of products), block-wide.
__device__ __forceinline__ void dequantize_stage(const unsigned char* stage, T* tile, float* row_scales) {
  constexpr int E4M3_CHUNKS = E4M3_DIMS / 8;  // 8 e4m3 values -> one 16-byte chunk
  if constexpr (SCALE_KIND == SCALE_F32 && SCALE_GROUPS == 4 && STAGE_SCALES % 16 == 0) {
    if (threadIdx.x < BLOCK_N) {
      *reinterpret_cast<float4*>(row_scales + threadIdx.x * SCALE_GROUPS) =
          *reinterpret_cast<const float4*>(stage + threadIdx.x * STAGE_ROW_BYTES + STAGE_SCALES);
    }
  } else {
    for (int idx = threadIdx.x; idx < BLOCK_N * SCALE_COLUMNS; idx += NUM_THREADS) {  // (SCALED_TILE: none)
      const int n = idx / SCALE_COLUMNS, g = idx % SCALE_COLUMNS;
      row_scales[idx] = stage_scale(stage + n * STAGE_ROW_BYTES + STAGE_SCALES, g);
    }
  }
  for (int idx = threadIdx.x; idx < BLOCK_N * CHUNKS; idx += NUM_THREADS) {
    const int n = idx / CHUNKS, c = idx % CHUNKS;
    const unsigned char* row = stage + n * STAGE_ROW_BYTES;
    uint4 v;
    if (c < E4M3_CHUNKS) {
      const uint2 w = *reinterpret_cast<const uint2*>(row + c * 8);
      uint2 lo, hi;
      if constexpr (SCALED_TILE) {
        const unsigned s = ue8m0_pair(row[STAGE_SCALES + c * 8 / SCALE_GROUP]);
        lo = widen_quad_times(w.x, s);
        hi = widen_quad_times(w.y, s);
      } else {
        lo = widen_quad(w.x);
        hi = widen_quad(w.y);
      }
      v = make_uint4(lo.x, lo.y, hi.x, hi.y);
    } else {
      v = rope_words(*reinterpret_cast<const uint4*>(row + ROPE_OFFSET + (c - E4M3_CHUNKS) * 16));
    }
    *reinterpret_cast<uint4*>(tile + n * ROW_ELEMS + c * 8) = v;
  }
}

// dequant='registers': this thread's pieces of its row held in registers between the global loads
// and the store of their 16-bit values (a tile ahead of the compute that reads them). Each e4m3
// piece loads its group's scale: SCALED_TILE multiplies the piece by it, else the group's first
// piece stores it into row_scales.
struct HeldRow {
  static constexpr int LATENT_PIECES = E4M3_DIMS / GATHER_BYTES;
  static constexpr int PIECES = LATENT_PIECES + BF16_DIMS * 2 / GATHER_BYTES;
  static constexpr int ITEMS = KV_FP8 ? (PIECES + LOAD_THREADS_PER_ROW - 1) / LOAD_THREADS_PER_ROW : 1;
  using Word = typename kgen::Raw<GATHER_BYTES>::type;
  Word words[ITEMS];
  unsigned scale_bits[ITEMS];

  __device__ __forceinline__ void load(const Params& p, int slot) {
    const unsigned char* row = nullptr;
    const unsigned char* page_scales = nullptr;  // (SCALES_PAGE; inline scales are at row + TOKEN_SCALES)
    if (slot >= 0) {
      const RowAt at = row_at(p, slot);
      row = at.row;
      page_scales = at.scales;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int piece = load_lane() + j * LOAD_THREADS_PER_ROW;
      words[j] = Word{};
      scale_bits[j] = 0u;
      if (row != nullptr && (PIECES % LOAD_THREADS_PER_ROW == 0 || piece < PIECES)) {
        if (piece < LATENT_PIECES) {
          words[j] = __ldg(reinterpret_cast<const Word*>(row + piece * GATHER_BYTES));
          const unsigned char* scales = SCALES_AT == SCALES_PAGE ? page_scales : row + TOKEN_SCALES;
          scale_bits[j] = load_scale_bits(scales, piece * GATHER_BYTES / SCALE_GROUP);
        } else {
          words[j] = __ldg(reinterpret_cast<const Word*>(row + ROPE_OFFSET + (piece - LATENT_PIECES) * GATHER_BYTES));
        }
      }
    }
  }

  __device__ __forceinline__ void store(T* tile, float* row_scales) const {
    T* dst = tile + load_row() * ROW_ELEMS;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int piece = load_lane() + j * LOAD_THREADS_PER_ROW;
      if (!(PIECES % LOAD_THREADS_PER_ROW == 0 || piece < PIECES)) continue;
      const unsigned* w = reinterpret_cast<const unsigned*>(&words[j]);
      if (piece < LATENT_PIECES) {  // GATHER_BYTES e4m3 values -> 2 * GATHER_BYTES bytes of T
        const unsigned s = SCALED_TILE ? ue8m0_pair(scale_bits[j]) : 0u;
#pragma unroll
        for (int k = 0; k < GATHER_BYTES / 4; ++k)
          *reinterpret_cast<uint2*>(dst + piece * GATHER_BYTES + 4 * k) = SCALED_TILE ? widen_quad_times(w[k], s) : widen_quad(w[k]);
        if (!SCALED_TILE && piece * GATHER_BYTES % SCALE_GROUP == 0)
          row_scales[load_row() * SCALE_GROUPS + piece * GATHER_BYTES / SCALE_GROUP] = scale_of_bits(scale_bits[j]);
      } else {
        *reinterpret_cast<Word*>(dst + E4M3_DIMS + (piece - LATENT_PIECES) * GATHER_BYTES / 2) = rope_words(words[j]);
      }
    }
  }
};

}  // namespace mla
