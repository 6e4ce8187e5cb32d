// The kernel entry of the row path with warps specialised by phase (SPECIALIZE): the pipeline over
// the helpers of mla/mma/attention.cuh, in two roles a tile apart.
//
// Measured on the H200 (docs/decisions.md: specialised): in the one-role loop each warp runs
// copy -> q.K^T -> partial exchange -> softmax -> P exchange -> P.V as one dependent chain per
// tile, and removing any part saves what it costs. Here the q role (warps 0 .. ROLE_WARPS - 1)
// copies the tiles, computes tile i + 1's partial scores and scans its drafts while the v role
// (the other warps) runs the softmax and P.V of tile i: the chains of two tiles run side by side
// on different warps.
//
// One block barrier per tile (hand_off) hands tiles over. At hand-off i the q role has written tile i's
// partial scores and draft flags; the v role has finished P.V of tile i - 1, so that tile's stage,
// partial scores and draft flags are free: the q role then copies tile i + STAGES - 1 into its
// stage, waits for tile i + 1 and takes its own barrier (2, q_role_sync_or), which makes that tile
// whole for its q.K^T, while the v role runs tile i. The v role's own barrier (1,
// row_group_sync_or) makes P whole; nothing else is shared between its warps.

namespace mla {

static_assert(!RAGGED, "ragged head and token groups take the mma row path only");

// The block barrier between the roles, which reach it at different places in the code: barrier 0
// (__syncthreads'; every thread takes part) in its non-aligned form, which conditional code may use.
__device__ __forceinline__ void hand_off() { asm volatile("barrier.sync 0;" : : : "memory"); }

// The q role's own barrier (2). Per tile each role takes its own barrier once (the q role after
// the copies of tile i + 1 landed, the v role in softmax_slice), and twice more where the tile
// holds non-finite draft V rows (the v role in fold_bad_drafts; the q role only to match). Returns
// whether any q thread passed true. Equal counts keep compute-sanitizer's racecheck exact, which
// orders two threads' shared-memory accesses by how many barriers each has passed: with one role
// taking more, it reports P.V's reads of a stage and its later refill as "potential WAR" hazards
// (20 on the sample, also with synchronous copies in place of cp.async), none with the counts
// equal.
__device__ __forceinline__ bool q_role_sync_or(bool pred) {
  int any;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.s32 p, %1, 0;\n bar.red.or.pred q, 2, %2, p;\n selp.s32 %0, 1, 0, q;\n}"
      : "=r"(any)
      : "r"(static_cast<int>(pred)), "n"(ROLE_THREADS)
      : "memory");
  return any != 0;
}
__device__ __forceinline__ void q_role_sync() { asm volatile("bar.sync 2, %0;" : : "n"(ROLE_THREADS) : "memory"); }

static_assert(SPECIALIZE && SCORE_BUFFERS == 2 && NUM_WARPS == 2 * ROLE_WARPS, "two roles, two score buffers");
static_assert(STAGES >= 3, "tiles i - 1 (P.V), i + 1 (q.K^T) resident while the next loads");

}  // namespace mla

extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, MIN_BLOCKS) mla_attention(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  T* tiles = reinterpret_cast<T*>(smem + TILES_OFFSET);
  float* scores = reinterpret_cast<float*>(smem + SCORES_OFFSET);
  unsigned long long* bad_s = reinterpret_cast<unsigned long long*>(smem + BAD_OFFSET);
  T* p_h = reinterpret_cast<T*>(smem + P_OFFSET);
  float* alpha_s = reinterpret_cast<float*>(smem + ROW_STATE_OFFSET);  // rescale factors, then m
  float* l_s = alpha_s + M_TILES * 16;

  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;
  const Lane ln;
  const bool q_role = threadIdx.x < ROLE_THREADS;
  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);

  QFrags qf;  // the q role's (zeros in the v role's warps)
  load_q(p, b, qf, q_s, ln, q_role);
  if (threadIdx.x < 2) bad_s[threadIdx.x] = 0ull;

  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, b, split, num_splits);  // syncs
  const int prefix = range.prefix, begin = range.begin, end = range.end;
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;

  Accum o;
  Slice sl;
  if (q_role) {
    // The prologue of mla/mma/kernel.cuh (inline in each entry: as a helper call it moves the
    // one-role kernels' SASS, measured with bench/restamp.py, and their tuning entries with it)
    int first[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) first[s] = fetch_page(p, b, begin + s * BLOCK_N, end);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < num_tiles) TileCopy(p, begin + s * BLOCK_N, end, first[s], tiles + s * TILE_ELEMS).all();
      kgen::cp_async_commit();
    }
    int page = fetch_page(p, b, begin + (STAGES - 1) * BLOCK_N, end);  // of the next tile to copy
    kgen::cp_async_wait<STAGES - 2>();
    q_role_sync_or(false);  // tile 0 landed
    for (int it = 0; it < num_tiles; ++it) {
      const int start = begin + it * BLOCK_N, next = it + STAGES - 1;
      qk_partials(tiles + (it % STAGES) * TILE_ELEMS, qf, q_s, scores + (it % 2) * SCORE_FLOATS, TileCopy(), ln);
      const bool found = scan_tile(tiles + (it % STAGES) * TILE_ELEMS, start, end, prefix, bad_s + it % 2);
      hand_off();  // hand-off `it`: tile it's partials written, tile it - 1 free
      if (next < num_tiles) TileCopy(p, begin + next * BLOCK_N, end, page, tiles + (next % STAGES) * TILE_ELEMS).all();
      kgen::cp_async_commit();
      page = fetch_page(p, b, begin + (next + 1) * BLOCK_N, end);  // used an iteration from now
      kgen::cp_async_wait<STAGES - 2>();
      if (q_role_sync_or(found)) {  // tile it + 1 landed (the fold's two barriers matched)
        q_role_sync();
        q_role_sync();
      }
    }
    kgen::cp_async_wait<0>();
  } else {
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int j = 0; j < O_TILES; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][j][e] = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int r = Slice::row(k, ln);
      sl.m[k] = -CUDART_INF_F;
      sl.l[k] = 0.f;
      sl.drafts[k] = r < ROWS ? row_drafts(p, b, r) : 0u;
    }
    role_sync();  // (the q role's barrier of tile 0 matched)
    for (int it = 0; it < num_tiles; ++it) {
      T* tile = tiles + (it % STAGES) * TILE_ELEMS;
      float* partials = scores + (it % 2) * SCORE_FLOATS;
      unsigned long long* bad = bad_s + it % 2;
      const int start = begin + it * BLOCK_N, count = min(BLOCK_N, end - start);
      hand_off();  // hand-off `it`: tile it's partials and draft flags written
      // The role's P whole; a row's rescale factor is read before its next softmax (barrier between)
      if (row_group_sync_or(softmax_slice<true>(p, partials, start, count, prefix, sl, p_h, alpha_s, ln), ln)) {
        rescale_rows(alpha_s, o, ln);
      }
      if constexpr (MASK_KIND != MASK_NONE) {
        if (*bad) {
          const PFrags unused = {};  // (the split softmax's P is in p_h)
          fold_bad_drafts(p, b, tile, start, prefix, bad, partials, p_h, unused, o, ln);
        }
      }
      pv_tile(tile, p_h, o, ln);
    }
  }
  __syncthreads();  // every rescale factor read
  if (!q_role) publish_rows(sl, alpha_s, l_s, ln);
  __syncthreads();

  // Results (the v role's): out/lse with one split, else this split's slot of the workspace,
  // then the combine (here, or with PDL_COMBINE in mla_combine, a kernel of its own).
  const long long slot = num_splits > 1 ? slot_row(p, b, split, num_splits) : 0;
  if (!q_role) {
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = frag_row(ln.rg, i, h, ln.g);
        if (r < ROWS) write_row(p, b, r, slot, num_splits, Finish(alpha_s[r], l_s[r], range.poisoned), o[i], h, ln);
      }
  }
  end_split(p, b, num_splits, smem);
}
