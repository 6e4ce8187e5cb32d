// The kernel entry of the row path (rows on the m16 side of both products): the pipeline over
// the helpers of mla/mma/attention.cuh.

{% if kv_fp8 == "true" %}extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, MIN_BLOCKS) mla_attention(const mla::Params params) {
{% else %}extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, MIN_BLOCKS) mla_attention(const mla::Params p) {
{% endif %}  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  T* tiles = reinterpret_cast<T*>(smem + TILES_OFFSET);
{% if kv_fp8 == "true" and fragments != "true" %}  T* wide = reinterpret_cast<T*>(smem + WIDE_OFFSET);  // the 16-bit tile the raw stages widen into
{% endif %}  float* scores = reinterpret_cast<float*>(smem + SCORES_OFFSET);
  unsigned long long* bad_s = reinterpret_cast<unsigned long long*>(smem + BAD_OFFSET);
  T* p_h = reinterpret_cast<T*>(smem + P_OFFSET);                      // SPLIT_SOFTMAX: P
  float* alpha_s = reinterpret_cast<float*>(smem + ROW_STATE_OFFSET);  // its rescale factors, then m
  float* l_s = alpha_s + M_TILES * 16;
{% if kv_fp8 == "true" %}  Params p = params;  // K's scale and q's factor folded into scale_log2 once q is loaded
{% endif %}
  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;
  const Lane ln;
  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);

  QFrags qf;
  load_q(p, b, qf, q_s, ln);
  if (threadIdx.x < 2) bad_s[threadIdx.x] = 0ull;
  const Ring ring{reinterpret_cast<unsigned long long*>(smem + RING_OFFSET)};
  if (RING_SLACK && threadIdx.x == 0) ring.init();

  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, b, split, num_splits);  // syncs

  FragRows rows;
  RowState st;
  Accum o;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = frag_row(ln.rg, i, h, ln.g);
      rows.valid[i][h] = row_real(r);
      rows.drafts[i][h] = 0u;
      st.m[i][h] = -CUDART_INF_F;
      st.l[i][h] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < O_TILES; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[i][j][e] = 0.f;
  }
  Slice sl;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    sl.m[k] = -CUDART_INF_F;
    sl.l[k] = 0.f;
    sl.drafts[k] = 0u;
  }

  const int prefix = range.prefix, begin = range.begin, end = range.end;
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;
  // The tiles holding drafts (with a draft mask only the last split's last one or two) come
  // first, in a loop of their own; the others follow in a loop compiled without the draft logic.
  // Measured on the H200 (NVRTC 13.0): with the draft loop after the prefix loop, what the draft
  // loop keeps live (its bits, the scan's flags) made the prefix loop 358 SASS instructions a tile
  // where the decode kernel's takes 322; with the draft tiles first it is 332, and the three tree
  // entries 2-3% faster. (Positions computed without the select in the prefix loop: 323, but
  // kimi-tp1-verify-tree 1.5% slower.) The order of the tiles does not matter to the online softmax.
  const int prefix_tiles =
      MASK_KIND == MASK_NONE || end <= prefix ? num_tiles : min(num_tiles, max(0, (prefix - begin) / BLOCK_N));
  const int draft_tiles = num_tiles - prefix_tiles;
  // The first position of the tile iteration `it` works on. Past the last tile (the page fetched
  // an iteration ahead) it is a position of the split's draft tiles or past its end: a block-table
  // entry of this split's, or none, read and never used (no copy is issued for it). Without drafts
  // the formula as it was: the select, never taken there, still cost sm_120 (NVRTC 13.5) 12 B of
  // spill in two decode entries.
  auto tile_start = [&](int it) {
    if constexpr (MASK_KIND == MASK_NONE) return begin + it * BLOCK_N;
    return begin + (it < draft_tiles ? prefix_tiles + it : it - draft_tiles) * BLOCK_N;
  };
  {
    int first[COPY_LEAD];  // the prologue's block-table reads all in flight at once
#pragma unroll
    for (int s = 0; s < COPY_LEAD; ++s) first[s] = fetch_page(p, b, tile_start(s), end);
#pragma unroll
    for (int s = 0; s < COPY_LEAD; ++s) {
      if (s < num_tiles) {
        TileCopy(p, tile_start(s), end, first[s], tiles + s * TILE_ELEMS).all();
        if constexpr (RING_SLACK > 0) ring.copied(s);
      }
      kgen::cp_async_commit();
    }
  }
{% if kv_fp8 == "true" %}  p = with_scales(p, q_into_t(qf, q_s, reinterpret_cast<unsigned*>(scores)));  // q in T
{% endif %}  int page = fetch_page(p, b, tile_start(COPY_LEAD), end);  // of the next tile to copy
  bool found = false;  // QK_AHEAD: the scan of the tile whose partials are ready found bad V rows
  if constexpr (QK_AHEAD) {
    kgen::cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile 0 landed
    if (num_tiles > 0) {
      qk_partials(tiles, qf, q_s, scores, TileCopy(), ln);
      found = scan_tile(tiles, tile_start(0), end, prefix, bad_s);
    }
  }

  auto tiles_loop = [&](auto with_drafts, int from, int to) {
    constexpr bool DRAFTS = decltype(with_drafts)::value;
    if constexpr (DRAFTS) {
#pragma unroll
      for (int i = 0; i < WARP_M; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = frag_row(ln.rg, i, h, ln.g);
          rows.drafts[i][h] = !SPLIT_SOFTMAX && row_real(r) ? row_drafts(p, b, r) : 0u;
        }
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        const int r = Slice::row(k, ln);
        sl.drafts[k] = SPLIT_SOFTMAX && row_real(r) ? row_drafts(p, b, r) : 0u;
      }
    }
    for (int it = from; it < to; ++it) {
      T* tile = tiles + (it % STAGES) * TILE_ELEMS;
      float* partials = scores + (QK_AHEAD ? (it % 2) * SCORE_FLOATS : 0);
      unsigned long long* bad = bad_s + (QK_AHEAD ? it % 2 : 0);
      const int start = tile_start(it), count = min(BLOCK_N, end - start), next = it + COPY_LEAD;
      bool any_bad;
      if constexpr (QK_AHEAD) {
        kgen::cp_async_wait<STAGES - 3>();
        any_bad = __syncthreads_or(found);  // tile it + 1 landed, tile it's partials are whole, tile it - 1's buffer is free
      } else if constexpr (RING_SLACK > 0) {
        ring.wait_landed(it);  // every thread's copies of tile `it`
        if (next < num_tiles) ring.wait_drained(next);  // the stage tile `next` goes to
      } else {
        kgen::cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile `it` landed for all; tile it - 1's buffer and the scores are free
      }
      // Tile `next`'s copy: now, or with SPREAD_COPIES in pieces by this iteration's q.K^T
      const TileCopy copy =
          next < num_tiles ? TileCopy(p, tile_start(next), end, page, tiles + (next % STAGES) * TILE_ELEMS) : TileCopy();
      // Its copies issued: one cp.async group a tile, and with the ring this thread's arrival on
      // the stage's full barrier as they land
      auto commit = [&] {
        kgen::cp_async_commit();
        if (RING_SLACK > 0 && next < num_tiles) ring.copied(next);
      };
      if constexpr (!SPREAD_COPIES) {
        copy.all();
        commit();
      }
      page = fetch_page(p, b, tile_start(next + 1), end);  // used an iteration from now
{% if kv_fp8 == "true" and fragments != "true" %}      tile = widen_tile(tile, wide);  // tile `it`, raw, into the 16-bit tile (its last tile's readers passed the barrier)
{% endif %}      if constexpr (!QK_AHEAD) {
        qk_partials(tile, qf, q_s, partials, copy, ln);
        if constexpr (SPREAD_COPIES) commit();
        // The partials are whole. A row group reads only its own rows' partials, so without drafts
        // (no scan, whose flags are block-wide) its own barrier is enough.
        if constexpr (!DRAFTS) {
          any_bad = row_group_sync_or(false, ln);
        } else {
          any_bad = __syncthreads_or(scan_tile(tile, start, end, prefix, bad));
        }
      }
      PFrags pa;
      if constexpr (SPLIT_SOFTMAX) {
        // The row group's P whole; a row's rescale factor is read before the group's next softmax (the
        // tile barrier between)
        if (row_group_sync_or(softmax_slice<DRAFTS>(p, partials, start, count, prefix, sl, p_h, alpha_s, ln), ln)) {
          rescale_rows(alpha_s, o, ln);
        }
      } else {
        softmax_tile<DRAFTS>(p, partials, start, count, prefix, rows, st, o, pa, ln);
      }
      // Without draft rows no V row is ever folded (no scan either). Measured on the H200: compiling
      // the never-taken fold out of MASK_NONE kernels saves 2-4% on the H >= 64 cases.
      if constexpr (DRAFTS) {
        if (any_bad) fold_bad_drafts(p, b, tile, start, prefix, bad, partials, p_h, pa, o, ln);
      }
      if constexpr (SPLIT_SOFTMAX) {
        pv_tile(tile, p_h, o, ln);
      } else {
        pv_tile(tile, pa, o, ln);
      }
      if constexpr (RING_SLACK > 0) ring.consumed(it, ln.lane);
      if constexpr (QK_AHEAD) {
        // Tile it + 1's partial scores, in the same straight-line code as the P.V above so that the
        // two interleave. Past the last tile this reads a consumed buffer into a buffer nobody reads.
        const T* ahead = tiles + ((it + 1) % STAGES) * TILE_ELEMS;
        qk_partials(ahead, qf, q_s, scores + ((it + 1) % 2) * SCORE_FLOATS, TileCopy(), ln);
        // (After the last draft tile the next is a prefix tile: nothing to scan.)
        if constexpr (DRAFTS) found = it + 1 < to && scan_tile(ahead, tile_start(it + 1), end, prefix, bad_s + (it + 1) % 2);
      }
    }
  };
  if constexpr (MASK_KIND != MASK_NONE) tiles_loop(Flag<true>(), 0, draft_tiles);
  tiles_loop(Flag<false>(), draft_tiles, num_tiles);
  kgen::cp_async_wait<0>();
  if constexpr (SPLIT_SOFTMAX) {
    __syncthreads();  // every rescale factor read
    publish_rows(sl, alpha_s, l_s, ln);
    __syncthreads();
  }

{% if kv_fp8 == "true" %}  // V's tensor scale, once: the tiles held the e4m3 values unscaled (and fold_bad_drafts read them so)
  if constexpr (TENSOR_SCALE) {
    const float v_scale = __ldg(p.k_scale);
#pragma unroll
    for (int i = 0; i < WARP_M; ++i)
#pragma unroll
      for (int j = 0; j < O_TILES; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][j][e] *= v_scale;
  }

{% endif %}  // Results: out/lse with one split, else this split's slot of the workspace, then the combine
  // (here, or with PDL_COMBINE in mla_combine, a kernel of its own).
  const long long slot = num_splits > 1 ? slot_row(p, b, split, num_splits) : 0;
#pragma unroll
  for (int i = 0; i < WARP_M; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = st.l[i][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int r = frag_row(ln.rg, i, h, ln.g);
      if (!row_real(r)) continue;
      const Finish fin(SPLIT_SOFTMAX ? alpha_s[r] : st.m[i][h], SPLIT_SOFTMAX ? l_s[r] : sum, range.poisoned);
      write_row<FRAGMENTS>(p, b, r, slot, num_splits, fin, o[i], h, ln);
    }
  end_split(p, b, num_splits, smem);
}
