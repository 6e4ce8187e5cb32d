// The split softmax's slices, as both tensor-core families (dense and sparse) deal them: a row
// group's (row, position pair) items of a tile go to its lanes (by rows), so a row's BLOCK_N / 2
// pairs are consecutive lanes of one warp (a whole warp is in or out). Each lane sums the partial
// scores of its items once, takes its rows' tile max over the row's lanes, writes P to shared
// memory and keeps its share of l; a row whose max rose leaves its rescale factor for the warps
// holding its output columns. Included after the family's WARP_M, M_TILES, BLOCK_N, COL_GROUPS,
// ROW_GROUPS, O_TILES, S_STRIDE, P_STRIDE, SPLIT_SOFTMAX, T, Lane, frag_row and Accum, and after
// online_softmax.cuh.

namespace mla {

constexpr int PAIRS_PER_ROW = BLOCK_N / 2;
constexpr int GROUP_LANES = COL_GROUPS * 32;
constexpr int GROUP_PAIRS = WARP_M * 16 * PAIRS_PER_ROW;
constexpr int ITEMS = (GROUP_PAIRS + GROUP_LANES - 1) / GROUP_LANES;
static_assert(!SPLIT_SOFTMAX || 32 % PAIRS_PER_ROW == 0, "a row's position pairs in one warp");

// A row group's (row, position pair) items of a tile, dealt to its lanes: item k of a lane is
// index(k); a row's BLOCK_N / 2 pairs are consecutive lanes of one warp. At 16-position tiles a
// warp holds four rows of 8 lanes; with one row group they are dealt 0, 2, 1, 3 (lane bits 3 and
// 4 swapped), so each half-warp reads the partial scores of rows two apart,
// whose banks do not overlap (rows 0 and 1, S_STRIDE = 24 floats apart, share 8 banks: twice the
// ideal wavefronts). Measured on the H200: 1-2% faster on the 16-position entries; with three
// row groups the 12-warp block spilled 4 B on sm_120, so several row groups keep the lanes in
// order (docs/decisions.md: item rows).
constexpr bool SWAP_ITEM_ROWS = PAIRS_PER_ROW == 8 && ROW_GROUPS == 1;
struct Items {
  __device__ __forceinline__ static int place(int lane) {  // the lane's place in the deal
    return SWAP_ITEM_ROWS ? lane ^ ((((lane >> 3) ^ (lane >> 4)) & 1) * 24) : lane;
  }
  __device__ __forceinline__ static int index(int k, const Lane& ln) { return ln.cg * 32 + place(ln.lane) + k * GROUP_LANES; }
  __device__ __forceinline__ static bool live(int k, const Lane& ln) {
    return GROUP_PAIRS % GROUP_LANES == 0 || index(k, ln) < GROUP_PAIRS;  // warp-uniform
  }
  __device__ __forceinline__ static int row(int k, const Lane& ln) {
    return ln.rg * WARP_M * 16 + index(k, ln) / PAIRS_PER_ROW;
  }
  __device__ __forceinline__ static int col(int k, const Lane& ln) { return 2 * (index(k, ln) % PAIRS_PER_ROW); }
};

// The sum over the column groups of the partial scores of one (row, position pair): `partial` is
// column group 0's float2.
__device__ __forceinline__ float2 partial_sum(const float* partial) {
  float2 sum = *reinterpret_cast<const float2*>(partial);
#pragma unroll
  for (int c = 1; c < COL_GROUPS; ++c) {
    const float2 v = *reinterpret_cast<const float2*>(partial + c * (M_TILES * 16 * S_STRIDE));
    sum.x += v.x;
    sum.y += v.y;
  }
  return sum;
}

// The max over a row's lanes (butterfly: every lane of the row gets the same bits).
__device__ __forceinline__ float row_max(float x) {
#pragma unroll
  for (int offset = PAIRS_PER_ROW / 2; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ float row_sum(float x) {
#pragma unroll
  for (int offset = PAIRS_PER_ROW / 2; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// After the slices' barrier, when some row's max rose: rescale this warp's output columns.
__device__ __forceinline__ void rescale_rows(const float* alpha_s, Accum& o, const Lane& ln) {
#pragma unroll
  for (int i = 0; i < WARP_M; ++i) {
    const float a[2] = {alpha_s[frag_row(ln.rg, i, 0, ln.g)], alpha_s[frag_row(ln.rg, i, 1, ln.g)]};
#pragma unroll
    for (int j = 0; j < O_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[i][j][e] *= a[e / 2];
  }
}

// One item of a lane's slice: its (row r, columns c, c + 1) scores s, masked and in log2 units;
// m the row's running max, l the item's share of the row's sum. P into p_s, the row's rescale
// factor (1 when its max held) into alpha_s[r] (by the row's first pair); `rose` is set when the
// row's max rose. Every lane of the warp calls it (the max vote and the row's shuffles).
__device__ __forceinline__ void softmax_item(float2 s, int r, int c, float& m, float& l, T* p_s, float* alpha_s,
                                             bool& rose) {
  float alpha = 1.f;
  const float mx = fmaxf(s.x, s.y);
  if (__any_sync(0xffffffffu, may_rise(m, mx))) rose |= max_rose(m, row_max(mx), alpha);
  const float base = exp_base(m);
  const unsigned packed = Mma::pack(kgen::fast_exp2(s.x - base), kgen::fast_exp2(s.y - base));
  const float2 rounded = Mma::unpack(packed);  // l sums exactly the p that P.V uses
  l = l * alpha + rounded.x + rounded.y;
  *reinterpret_cast<unsigned*>(p_s + r * P_STRIDE + c) = packed;
  if (c == 0) alpha_s[r] = alpha;
}

// P.V's A fragments of k step kk (positions 16 kk ..) for this warp's m16 tiles, from P in p_s.
__device__ __forceinline__ void load_p(unsigned (&a)[WARP_M][4], const T* p_s, int kk, const Lane& ln) {
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
    kgen::ldmatrix_x4(a[i], p_s + ((ln.rg * WARP_M + i) * 16 + ln.lane % 16) * P_STRIDE + (2 * kk + ln.lane / 16) * 8);
}

// At the end of the split: each row's m and l (summed over its lanes) into m_s and l_s. `sl` is
// the family's slice state: per item the row's running max m[k] and the item's share of l, l[k].
template <class Slice>
__device__ __forceinline__ void publish_rows(const Slice& sl, float* m_s, float* l_s, const Lane& ln) {
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    if (!Items::live(k, ln)) continue;
    const float l = row_sum(sl.l[k]);
    if (Items::col(k, ln) == 0) {
      m_s[Items::row(k, ln)] = sl.m[k];
      l_s[Items::row(k, ln)] = l;
    }
  }
}

}  // namespace mla
