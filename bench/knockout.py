"""Knock-out timing of the tensor-core kernel: rebuild a case's shipped config with one part of
its main loop removed from the rendered source (the templates are untouched) and time what is
left. Where removing a part barely moves the time, that part is not what binds the kernel; the
part whose removal moves it most is. The results of a knocked-out kernel are wrong by design:
nothing is checked, only timed (L2 flushed, median, kgen.tune.timing).

Knock-outs (join several with '+'):
  nocopy  no KV tile copies (cp.async); the stages are zeroed once at the start
  noqk    no q.K^T MMAs (nor their K ldmatrix, now dead)
  nopv    no P.V MMAs (nor their V and P ldmatrix)
  nosoft  no softmax (split softmax's slice work and the rare rescale; its barrier stays)
  nobar   no row-group barriers inside the loop (split softmax's two; the tile barrier stays)
  notilebar  (racy, timing only; row path without qk_ahead) no block barrier at the top of a tile:
          the row-group barriers stay, so several row groups run their tiles at their own pace
          (a bound on what decoupling them could buy; Config.ring_slack is the real thing)
  noexp   2^x is x (no SFU work)
  nocomb  no split-KV combine (each split writes its partial and leaves)
  noscan  masks with drafts: no scan of the tile's draft V rows for Inf/NaN (row path)
  nofold  masks with drafts: no fold of the V rows the scan found (the call compiled out)
  nodrafts  masks with drafts: no draft loop at all (the tiles holding drafts are skipped): the
          prefix loop as a kernel of its own would compile it
  pfl2, pfl2x8  (knock-ins, results unchanged) the first head group prefetches into L2 the KV
          rows 4 (8) tiles past the one it works on, for the head groups that follow
  bpf1, bpf2, bpf4  (knock-ins, results unchanged; row path, sm_90 and later) the KV tile 1 (2, 4)
          tiles past the one being copied asked of L2 by one cp.async.bulk.prefetch.L2 a block
          (a thread per position where a page is shorter than a tile)
  lpf2  (knock-in, results unchanged; row path) the same 2 tiles ahead as 128-byte lines dealt
          over the block's threads (prefetch.global.L2)
  sbpf2, sbpf4  (knock-ins) bpf2 / bpf4 in a specialised block's q role
  wbpf2  (knock-in) bpf2 in a swapped-rows block
  evict1st, evictlast  (knock-ins, results unchanged) the line-hinted 16-byte copies (KV tiles, q)
          with an L2 eviction priority
  spread  (knock-in, results unchanged) SPREAD_COPIES for every block without q.K ahead, 4-warp
          blocks too: a tile's copies dealt over the next q.K^T's k steps, not issued in one
          burst right after the tile barrier
  nospread  (knock-in, results unchanged) no SPREAD_COPIES anywhere: the 8- and 12-warp blocks
          issue a tile's copies in one burst after the tile barrier, as 4-warp blocks do
  stag350, stag700, stag1400  (knock-ins, results unchanged; ring_slack >= 1) row group g starts
          the prefix loop g x 350 (700, 1400) clock cycles after row group 0, so the three-row
          block's groups run out of phase (one in q.K^T while another is in its softmax)
  qk2acc  (knock-in, results equal within rounding) q.K^T's k steps alternate between two sets of
          accumulators, summed at the end: two independent MMA chains of half the length each
  early   pdl_combine: the attention kernel lets mla_combine launch at its start, not its end
  notrig  pdl_combine: no explicit trigger (mla_combine launches as the attention blocks exit)
  tailtrig, tailtrigws  pdl_combine: the trigger at the start of a block's last tile instead of
          after its partials (the row path's loop; tailtrigws: both roles' loops of a specialized
          block), so mla_combine's launch overlaps the last tile and the partials' stores
  gridbar, gridbarsh  (knock-ins, results equal within rounding) the fused merge
          (pdl_combine=0) as a barrier of the group's blocks (sense-reversing counter, no
          reset) and a static piece per block, merged in one pass, its slices summed through
          shared memory (gridbarsh: by shuffles inside a warp): assumes the group's blocks
          co-resident (a cooperative launch would guarantee it); a stuck barrier gives up after
          2^20 polls and leaves NaN
  barrieronly  (after gridbar) the barrier and no merge after it
  nobarrier  (after gridbar) the merge without waiting at the barrier (racy: timing only)
  twice  (after gridbar) the merge's float4 loads done twice, the first pass apart
  trace  (after gridbar or gridbarsh; for bench/merge_trace.py) thread 0 of each block records
          %globaltimer and clock64 at the kernel's entry and at the merge's steps
  novalid  (results unchanged for valid inputs) no check of the split's page ids before its
          first copies (split_range's block-table loop; its barrier stays)
  nostore  no split-KV partials written to the workspace (with nocomb: the main loop alone)
  nohandoff  (specialize; racy, timing only) no hand-off barrier in either role's loop: each
          role runs its tiles at its own pace (a bound on what decoupling the roles could buy)
  ws16  (knock-in, results within one rounding of the output's dtype; row path and specialised
          block, pdl_combine) the split-KV partials stored in the output's 16-bit dtype (the
          workspace's first half), mla_combine reading 4 of them (8 bytes) a load
  noldk  (row path) q.K^T's K fragments loaded once a tile (k step 0, first n16 pair) and zeros
          after: the MMAs all run, ~1/18 of the K ldmatrix traffic is left
  noldv  (row path) P.V's V fragments loaded for the first n16 pair of each k step only, zeros
          after: the MMAs all run, 1/8 of the V ldmatrix.trans traffic is left
  pipe  (knock-in, results equal within rounding; qk_ahead=1, split_softmax=1, mask none, at
          least 4 stages, row path) one barrier an iteration over three tiles at once: q.K^T of
          tile i + 1, the split softmax of tile i and P.V of tile i - 1 in one straight-line
          body; partials, P and rescale factors double-buffered (the layout model patched to match)
  pipeb  (knock-in) pipe with the softmax of tile i first in the body, before the MMAs
The tiled float32 path (compute='tiled'):
  tkcast  q.K^T's K quads read by 4 distinct positions a warp, not 16 (1 shared-memory wavefront
          a load, not 2: the traffic of a 32 x 16 warp tile of scores)
  tvcast  P.V's V quads read by 16 distinct lanes, not 32 (2 wavefronts a load, not 4)
  tnobar  no block barrier between the pipeline's steps (racy: timing only)

    PYTHONPATH=. python3 bench/knockout.py [--reps N] CASE[:field=value,...]@KO[+KO...] ...
(CASE alone, or CASE@base, times the unedited kernel the same way.)
"""

from __future__ import annotations

import argparse
import multiprocessing
import string
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from time_shipped import case_config, shipped_configs  # noqa: E402

import kgen.mla.kernel as kernel_module  # noqa: E402
import kgen.mla.mma_layout as mma_layout  # noqa: E402
from kgen.mla import build  # noqa: E402
from kgen.mla.layout import split_softmax_smem  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

ZERO_STAGES = (
    "  if (threadIdx.x < 2) bad_s[threadIdx.x] = 0ull;\n",
    "  if (threadIdx.x < 2) bad_s[threadIdx.x] = 0ull;\n"
    "  for (int i = threadIdx.x; i < STAGES * TILE_ELEMS / 8; i += NUM_THREADS)\n"
    "    reinterpret_cast<uint4*>(tiles)[i] = make_uint4(0u, 0u, 0u, 0u);\n",
)
TAIL_TRIGGER = "      if (PDL_COMBINE && it == num_tiles - 1) kgen::launch_dependents();\n"
LATE_TRIGGER = (
    "    kgen::launch_dependents();\n  } else if (num_splits > 1) {\n",
    "  } else if (num_splits > 1) {\n",
)


def evict_edit(priority: str) -> tuple[str, str]:
    """The 16-byte line-hinted copies (the KV tiles, q) with an L2 eviction priority."""
    return (
        '    asm volatile(KGEN_CP_ASYNC("cp.async.cg.shared.global.L2::128B") ::"r"(dst), '
        '"l"(gmem), "n"(BYTES), "r"(z) : "memory");\n',
        "    unsigned long long policy;\n"
        f'    asm("createpolicy.fractional.L2::{priority}.b64 %0, 1.0;" : "=l"(policy));\n'
        '    asm volatile("{\\n .reg .pred z;\\n setp.ne.b32 z, %3, 0;\\n '
        'cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], %2, z, %4;\\n}\\n" '
        '::"r"(dst), "l"(gmem), "n"(BYTES), "r"(z), "l"(policy) : "memory");\n',
    )


QK_ZERO = (
    "  float acc[WARP_M][N_TILES][4];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < WARP_M; ++i)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < N_TILES; ++j)\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;\n"
)
QK_MMAS = (
    "          Mma::mma(acc[i][j], a[i], k[0], k[1]);\n"
    "          Mma::mma(acc[i][j + 1], a[i], k[2], k[3]);\n"
)
QK_STORE = "  float* mine = partials + ln.cg * (M_TILES * 16 * S_STRIDE);\n"


def two_chain_edits() -> list[tuple[str, str]]:
    """(knock-in) q.K^T's odd k steps accumulate into a second set of registers, added to the
    first after the last step: each MMA waits on the one two steps back, not the one before."""
    summed = (
        "#pragma unroll\n"
        "  for (int i = 0; i < WARP_M; ++i)\n"
        "#pragma unroll\n"
        "    for (int j = 0; j < N_TILES; ++j)\n"
        "#pragma unroll\n"
        "      for (int e = 0; e < 4; ++e) acc[i][j][e] += acc2[i][j][e];\n"
    )
    return [
        (
            QK_ZERO,
            QK_ZERO.replace(
                "acc[WARP_M][N_TILES][4];", "acc[WARP_M][N_TILES][4], acc2[WARP_M][N_TILES][4];"
            ).replace("acc[i][j][e] = 0.f;", "acc[i][j][e] = acc2[i][j][e] = 0.f;"),
        ),
        (
            QK_MMAS,
            "          float (&d)[N_TILES][4] = kk % 2 ? acc2[i] : acc[i];\n"
            "          Mma::mma(d[j], a[i], k[0], k[1]);\n"
            "          Mma::mma(d[j + 1], a[i], k[2], k[3]);\n",
        ),
        (QK_STORE, summed + QK_STORE),
    ]


def l2_lead_edits(ahead: int) -> list[tuple[str, str]]:
    """(knock-in, results unchanged; the row path's kernel) the first head group asks L2 for the
    KV rows of the tile `ahead` iterations past the one it works on (prefetch.global.L2, a line
    per thread; the page read an iteration earlier), so the other head groups' copies of it hit."""
    prologue = (
        "  int page = fetch_page(p, b, tile_start(COPY_LEAD), end);  // of the next tile to copy\n"
    )
    loop = (
        "      page = fetch_page(p, b, tile_start(next + 1), end);  // used an iteration from now\n"
    )
    lead = (
        "      if (head_group() == 0) {\n"
        f"        const int n = tile_start(it + {ahead}) + load_pos();\n"
        "        if (n < end) {\n"
        "          const T* row = p.kv + lead_page * p.kv_sp\n"
        "                         + (n % PAGE_SIZE) * static_cast<int>(p.kv_sr);\n"
        "          for (int l = threadIdx.x % LOAD_THREADS_PER_ROW; l * 64 < HEAD_DIM;\n"
        "               l += LOAD_THREADS_PER_ROW)\n"
        '            asm volatile("prefetch.global.L2 [%0];" ::"l"(row + l * 64));\n'
        "        }\n"
        f"        lead_page = fetch_page(p, b, tile_start(it + {ahead + 1}), end);\n"
        "      }\n"
    )
    return [
        (
            prologue,
            prologue + "  int lead_page = head_group() == 0 ? "
            f"fetch_page(p, b, tile_start({ahead}), end) : 0;\n",
        ),
        (loop, loop + lead),
    ]


# Where each kernel entry reads the page of the tile after the one it copies now: the row path
# (mla/mma/kernel.cuh), the specialised one's q role (specialized.cuh), swapped rows (swapped.cuh)
_NEXT_PAGE = "  // used an iteration from now\n"
PAGE_AHEAD = {
    "row": "      page = fetch_page(p, b, tile_start(next + 1), end);" + _NEXT_PAGE,
    "spec": "      page = fetch_page(p, b, begin + (next + 1) * BLOCK_N, end);" + _NEXT_PAGE,
    "swap": "    page = fetch_page(p, b, begin + (next + 1) * BLOCK_N, end);" + _NEXT_PAGE,
}


def l2_ahead_edit(ahead: int, bulk: bool, entry: str = "row") -> tuple[str, str]:
    """The KV tile `ahead` tiles past the one being copied asked of L2 now: one
    cp.async.bulk.prefetch.L2 a page run (sm_90 and later; a thread per position at page sizes
    under the tile), or (bulk=False) its 128-byte lines dealt over the block's threads with
    prefetch.global.L2. (Thread 0 and the first BLOCK_N are the q role's in a specialised block.)"""
    if bulk:
        body = (
            "          if (PAGE_SIZE % BLOCK_N == 0 ? threadIdx.x == 0 : threadIdx.x < rows_) {\n"
            "            const int n_ = s_ + (PAGE_SIZE % BLOCK_N == 0 ? 0 : threadIdx.x);\n"
            "            const int pg_ = __ldg(p.block_table + b * p.bt_sb + n_ / PAGE_SIZE);\n"
            "            const T* src_ = p.kv + pg_ * p.kv_sp + (n_ % PAGE_SIZE) * p.kv_sr;\n"
            "            const int bytes_ =\n"
            "              (PAGE_SIZE % BLOCK_N == 0 ? rows_ : 1) * int(p.kv_sr) * 2;\n"
            '            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"\n'
            '                         :: "l"(src_), "r"(bytes_) : "memory");\n'
            "          }\n"
        )
    else:
        body = (
            "          const int pg_ = __ldg(p.block_table + b * p.bt_sb + s_ / PAGE_SIZE);\n"
            "          const char* src_ =\n"
            "              (const char*)(p.kv + pg_ * p.kv_sp + (s_ % PAGE_SIZE) * p.kv_sr);\n"
            "          const int lines_ = rows_ * static_cast<int>(p.kv_sr) * 2 / 128;\n"
            "          for (int l_ = threadIdx.x; l_ < lines_; l_ += NUM_THREADS)\n"
            '            asm volatile("prefetch.global.L2 [%0];" :: "l"(src_ + 128 * l_));\n'
        )
    start = (
        f"tile_start(next + {ahead})" if entry == "row" else f"begin + (next + {ahead}) * BLOCK_N"
    )
    return (
        PAGE_AHEAD[entry],
        PAGE_AHEAD[entry]
        + f"      if (next + {ahead} < num_tiles) {{  // knock-in: L2 asked {ahead} tiles ahead\n"
        + f"        const int s_ = {start}, rows_ = min(BLOCK_N, end - s_);\n"
        + ("        {\n" if bulk else "        if constexpr (PAGE_SIZE % BLOCK_N == 0) {\n")
        + body
        + "        }\n      }\n",
    )


def template(path: str) -> str:
    """The text of a template file (templates/PATH), whose lines the edits below anchor on."""
    return (Path(__file__).resolve().parent.parent / "templates" / path).read_text()


def text_span(text: str, first: str, last: str) -> str:
    """The part of `text` from the line(s) `first` through the line(s) `last`."""
    start = text.index(first)
    return text[start : text.index(last, start) + len(last)]


# The row path's prologue and tile loops (templates/mla/mma/kernel.cuh), replaced whole by pipe
PIPE_REGION = text_span(
    template("mla/mma/kernel.cuh"),
    "  {\n    int first[COPY_LEAD];",
    "  tiles_loop(Flag<false>(), draft_tiles, num_tiles);\n",
)
PIPE_HEAD = r"""
  // (knock-in pipe) three tiles in flight through one barrier an iteration: q.K^T of tile
  // it + 1 (A), the split softmax of tile it (B) and P.V of tile it - 1 (C), straight-line code
  // with no dependence between them; partials, P and the rescale factors double-buffered.
  static_assert(QK_AHEAD && SPLIT_SOFTMAX && !SPECIALIZE && MASK_KIND == MASK_NONE && STAGES >= 4,
                "pipe: qk_ahead, split_softmax, mask none, at least 4 stages");
  constexpr int P_BUF = M_TILES * 16 * P_STRIDE;  // 16-bit elements
  constexpr int ALPHA_BUF = 2 * M_TILES * 16;      // the second factors after l
  {
    int first[STAGES - 2];
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) first[s] = fetch_page(p, b, tile_start(s), end);
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
      if (s < num_tiles) TileCopy(p, tile_start(s), end, first[s], tiles + s * TILE_ELEMS).all();
      kgen::cp_async_commit();
    }
  }
  int page = fetch_page(p, b, tile_start(STAGES - 2), end);
  bool rose = false;
  // One iteration: ab = A and B, c = C (compile-time flags)
  auto iteration = [&](auto ab, auto c, int it) {
    kgen::cp_async_wait<STAGES - 4>();
    // tile it + 1 landed; partials of tile it whole; P of it - 1 whole; tile it - 2's buffer free
    const bool rose_prev = __syncthreads_or(rose);
    // C's rescale first: the rest of the body is then one basic block (C, A, then B's sums)
    if (decltype(c)::value && rose_prev) rescale_rows(alpha_s + ((it - 1) % 2) * ALPHA_BUF, o, ln);
    const int next = it + STAGES - 2;
    T* to = tiles + (next % STAGES) * TILE_ELEMS;
    const TileCopy copy =
        next < num_tiles ? TileCopy(p, tile_start(next), end, page, to) : TileCopy();
    copy.all();
    kgen::cp_async_commit();
    page = fetch_page(p, b, tile_start(next + 1), end);
"""
# B: the split softmax of tile it
PIPE_SOFTMAX = r"""    if constexpr (decltype(ab)::value) {
      const int start = tile_start(it), count = min(BLOCK_N, end - start);
      rose = softmax_slice<false>(p, scores + (it % 2) * SCORE_FLOATS, start, count, prefix, sl,
                                  p_h + (it % 2) * P_BUF, alpha_s + (it % 2) * ALPHA_BUF, ln);
    }
"""
# C then A: P.V of tile it - 1, q.K^T of tile it + 1
PIPE_PV_QK = r"""    if constexpr (decltype(c)::value) {
      pv_tile(tiles + ((it - 1) % STAGES) * TILE_ELEMS, p_h + ((it - 1) % 2) * P_BUF, o, ln);
    }
    if constexpr (decltype(ab)::value) {
      // past the last tile, A reads a consumed buffer into partials no one reads
      float* ahead = scores + ((it + 1) % 2) * SCORE_FLOATS;
      qk_partials(tiles + ((it + 1) % STAGES) * TILE_ELEMS, qf, q_s, ahead, TileCopy(), ln);
    }
"""
PIPE_TAIL = r"""  };
  if (num_tiles > 0) {
    kgen::cp_async_wait<STAGES - 3>();
    __syncthreads();  // tile 0 landed
    qk_partials(tiles, qf, q_s, scores, TileCopy(), ln);
    iteration(Flag<true>(), Flag<false>(), 0);
    for (int it = 1; it < num_tiles; ++it) iteration(Flag<true>(), Flag<true>(), it);
    iteration(Flag<false>(), Flag<true>(), num_tiles);
  }
"""


def pipe_loop(softmax_first: bool) -> str:
    """The pipe loop with B (the softmax) after C and A (pipe) or before them (pipeb)."""
    body = PIPE_SOFTMAX + PIPE_PV_QK if softmax_first else PIPE_PV_QK + PIPE_SOFTMAX
    return PIPE_HEAD + body + PIPE_TAIL


PIPE_SMEM = [
    (
        "constexpr int P_BYTES = SPLIT_SOFTMAX ? M_TILES * 16 * P_STRIDE * 2 : 0;\n",
        "constexpr int P_BYTES = SPLIT_SOFTMAX ? 2 * M_TILES * 16 * P_STRIDE * 2 : 0;  // pipe\n",
    ),
    (
        "(SPLIT_SOFTMAX ? 2 * M_TILES * 16 * 4 : 0);\n",
        "(SPLIT_SOFTMAX ? 3 * M_TILES * 16 * 4 : 0);  // pipe: a second set of factors\n",
    ),
]


def pipe_softmax_smem(m_tiles: int, block_n: int) -> int:
    """The pipe knock-in's split-softmax shared memory: kgen.mla.layout.split_softmax_smem's
    (P, a rescale factor and l a row) plus a second P buffer and a second set of factors."""
    return split_softmax_smem(m_tiles, block_n) + m_tiles * 16 * ((block_n + 8) * 2 + 4)


GRID_BARRIER_HEAD = r"""
// (knock-in gridbar) the group's blocks meet at a barrier, then each merges a static piece.
#ifndef KGEN_TRACE
#define KGEN_TRACE(k)
#endif
__device__ __forceinline__ void merge_add(float& m, float& l, float4& acc, float y,
                                          const float4& v) {
  if (y == -CUDART_INF_F) return;
  if (y > m) {
    const float a = exp2f(m - y);
    acc = make_float4(acc.x * a, acc.y * a, acc.z * a, acc.w * a);
    l *= a;
    m = y;
  }
  const float w = exp2f(y - m);
  acc = make_float4(fmaf(w, v.x, acc.x), fmaf(w, v.y, acc.y), fmaf(w, v.z, acc.z),
                    fmaf(w, v.w, acc.w));
  l += w;
}

template <int THREADS>
__device__ void finish_split(const Params& p, int b, int num_splits, float* scratch) {
  KGEN_TRACE(1);
  unsigned* bar = reinterpret_cast<unsigned*>(group_counters(p, b));
  volatile int* stuck_s = reinterpret_cast<volatile int*>(scratch + 6 * THREADS);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned old = atomicAdd(bar, blockIdx.y == 0 ? 0x80000000u - (num_splits - 1) : 1u);
    KGEN_TRACE(2);
    int polls = 0;
    while (((*reinterpret_cast<volatile unsigned*>(bar) ^ old) & 0x80000000u) == 0
           && ++polls < (1 << 20)) {
    }
    *stuck_s = polls >= (1 << 20);
    __threadfence();
    KGEN_TRACE(3);
  }
  __syncthreads();
  const bool stuck = *stuck_s;
  constexpr int ALL = ROWS * QUADS;
  const int per = (ALL + num_splits - 1) / num_splits;
  const int first = blockIdx.y * per, n = min(per, ALL - first);
  if (n <= 0) return;
  const long long base = slot_row(p, b, 0, num_splits);
"""


def merge_loads(step: str) -> str:
    """The prototypes' merge loop of one item: slot slice, slice + step, ..., MERGE_LOADS loads in
    flight, each taken in by merge_add (gridbar: step `slices`; gridbarsh: `sl`)."""
    return MERGE_LOADS_TEXT.strip("\n").replace("STEP", step)


MERGE_LOADS_TEXT = r"""
    float m = -CUDART_INF_F, l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (active) {
      for (int s0 = slice; s0 < num_splits; s0 += MERGE_LOADS * STEP) {
        float y[MERGE_LOADS];
        float4 v[MERGE_LOADS];
#pragma unroll
        for (int c = 0; c < MERGE_LOADS; ++c) {
          const int s = s0 + c * STEP;
          const long long slot = base + static_cast<long long>(s) * ROWS + r;
          y[c] = s < num_splits ? __ldcg(p.ws_lse + slot) * LOG2E : -CUDART_INF_F;
          const float4* src = reinterpret_cast<const float4*>(p.ws_o + slot * LATENT_DIM + d);
          v[c] = s < num_splits ? __ldcg(src) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int c = 0; c < MERGE_LOADS; ++c) merge_add(m, l, acc, y[c], v[c]);
      }
    }
    KGEN_TRACE(4);
"""


MERGED_ROW_TEXT = string.Template("""\
const bool seen = $weight > 0.f || $weight != $weight;
const float inv = stuck ? CUDART_NAN_F : seen ? 1.f / $weight : 0.f;
T* o = out_row(p, b, r) + d;
o[0] = kgen::from_float<T>(seen || stuck ? $acc.x * inv : 0.f);
o[1] = kgen::from_float<T>(seen || stuck ? $acc.y * inv : 0.f);
o[2] = kgen::from_float<T>(seen || stuck ? $acc.z * inv : 0.f);
o[3] = kgen::from_float<T>(seen || stuck ? $acc.w * inv : 0.f);
if (d == 0) *lse_at(p, b, r) = seen ? ($top + log2f($weight)) * LN2 : -CUDART_INF_F;""")


def merged_row(acc: str, weight: str, top: str, indent: str, guard: str = "") -> str:
    """The prototypes' write of one merged item (out's four columns, lse at column 0) from its
    weighted sum `acc`, sum of weights `weight` and max `top` (NaN everywhere if the barrier gave
    up); with `guard`, the stores inside that `if (...) {` (one level deeper, closed after)."""
    lines = MERGED_ROW_TEXT.substitute(acc=acc, weight=weight, top=top).split("\n")
    deeper = indent + "  " if guard else indent
    text = [indent + x for x in lines[:2]] + ([indent + guard] if guard else [])
    text += [deeper + x for x in lines[2:]] + ([indent + "}"] if guard else [])
    return "\n".join(text)


SLICES_MERGE = (
    r"""
  // slices of an item in threads `lanes` apart, merged through shared memory
  const int lanes = min(n, THREADS), slices = min(THREADS / lanes, num_splits);
  const int lane = threadIdx.x % lanes, slice = threadIdx.x / lanes;
  float4* acc_s = reinterpret_cast<float4*>(scratch);
  float2* ml_s = reinterpret_cast<float2*>(scratch + 4 * THREADS);
  for (int i0 = 0; i0 < n; i0 += lanes) {
    const int item = first + i0 + lane;
    const bool active = slice < slices && i0 + lane < n;
    const int r = item / QUADS, d = item % QUADS * 4;
"""
    + merge_loads("slices")
    + r"""
    acc_s[threadIdx.x] = acc;
    ml_s[threadIdx.x] = make_float2(m, l);
    __syncthreads();
    if (active && slice == 0) {
      float am = -CUDART_INF_F, al = 0.f;
      float4 aa = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int k = 0; k < slices; ++k) am = fmaxf(am, ml_s[lane + k * lanes].x);
      for (int k = 0; k < slices; ++k) {
        const float2 ml = ml_s[lane + k * lanes];
        const float4 a = acc_s[lane + k * lanes];
        const float w = ml.x == -CUDART_INF_F ? 0.f : exp2f(ml.x - am);
        aa = make_float4(fmaf(w, a.x, aa.x), fmaf(w, a.y, aa.y), fmaf(w, a.z, aa.z),
                         fmaf(w, a.w, aa.w));
        al = fmaf(w, ml.y, al);
      }
"""
    + merged_row("aa", "al", "am", "      ", "if (!RAGGED || row_real(r)) {")
    + r"""
    }
    __syncthreads();
  }
  KGEN_TRACE(5);
}

template <int THREADS>
__device__ void finish_split_unused("""
)

SHUFFLE_MERGE = (
    r"""
  // an item's slices in neighbouring lanes (a power of two, at most 32), merged by shuffles
  int sl = 32;
  while (sl > 1 && (sl > num_splits || n * sl > THREADS)) sl /= 2;
  const int per_round = THREADS / sl, slice = threadIdx.x % sl;
  for (int i0 = 0; i0 < n; i0 += per_round) {
    const int k = i0 + threadIdx.x / sl;
    const bool active = k < n;
    const int item = first + min(k, n - 1), r = item / QUADS, d = item % QUADS * 4;
"""
    + merge_loads("sl")
    + r"""
    for (int off = sl / 2; off > 0; off /= 2) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
      const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
      float4 a2;
      a2.x = __shfl_xor_sync(0xffffffffu, acc.x, off);
      a2.y = __shfl_xor_sync(0xffffffffu, acc.y, off);
      a2.z = __shfl_xor_sync(0xffffffffu, acc.z, off);
      a2.w = __shfl_xor_sync(0xffffffffu, acc.w, off);
      const float mm = fmaxf(m, m2);
      const float wa = m == -CUDART_INF_F ? 0.f : exp2f(m - mm);
      const float wb = m2 == -CUDART_INF_F ? 0.f : exp2f(m2 - mm);
      acc = make_float4(fmaf(wa, acc.x, wb * a2.x), fmaf(wa, acc.y, wb * a2.y),
                        fmaf(wa, acc.z, wb * a2.z), fmaf(wa, acc.w, wb * a2.w));
      l = fmaf(wa, l, wb * l2);
      m = mm;
    }
    if (active && slice == 0 && (!RAGGED || row_real(r))) {
"""
    + merged_row("acc", "l", "m", "      ")
    + r"""
    }
  }
  KGEN_TRACE(5);
}

template <int THREADS>
__device__ void finish_split_unused("""
)

TWICE_ANCHOR = (
    "    if (active) {\n      for (int s0 = slice; s0 < num_splits; s0 += MERGE_LOADS * slices) {\n"
)
TRACE_POINTS = 7  # kernel entry, merge entry, arrival counted, barrier passed, loads done, end,
# (twice) the first pass of loads done
TRACE = r"""
// (knock-in trace) per block: globaltimer and clock64 at each point of the fused merge
extern "C" {
__device__ unsigned long long kgen_trace[8192][2 * TRACE_POINTS];
}
#define KGEN_TRACE(k) do { if (threadIdx.x == 0) { \
  unsigned long long g; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); \
  const int id = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x; \
  kgen_trace[id][2 * (k)] = g; kgen_trace[id][2 * (k) + 1] = clock64(); } } while (0)
""".replace("TRACE_POINTS", str(TRACE_POINTS))
NOTE_STARTED = "  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);\n"
GRIDBAR_COMMENT = "// (knock-in gridbar) the group's blocks meet"
STUCK = "  const bool stuck = *stuck_s;\n"


def gridbar_edits(merge: str) -> list[tuple[str, str]]:
    return [
        ("template <int THREADS>\n__device__ void finish_split(", GRID_BARRIER_HEAD + merge),
        ("  if (threadIdx.x == 0) atomicAdd(group_counters(p, b) + STARTED, 1);\n", ""),
    ]


# Knock-ins that edit another's code, and the one they apply after (CASE@gridbar+trace)
AFTER = {"barrieronly": "gridbar", "nobarrier": "gridbar", "twice": "gridbar", "trace": "gridbar"}

LOOP_AFTER_DRAFTS = "  tiles_loop(Flag<false>(), draft_tiles, num_tiles);\n"


def spread_rule(rule: str) -> tuple[str, str]:
    """SPREAD_COPIES (which blocks deal a tile's copies over q.K^T) set to `rule`."""
    return (
        "constexpr bool SPREAD_COPIES = NUM_WARPS >= 8 && !QK_AHEAD;\n",
        f"constexpr bool SPREAD_COPIES = {rule};\n",
    )


def stagger_edit(cycles: int) -> tuple[str, str]:
    """Row group g spins g x `cycles` clocks before its prefix loop (the ring lets it lag)."""
    return (
        LOOP_AFTER_DRAFTS,
        "  if constexpr (RING_SLACK > 0) {\n"
        "    const long long t0 = clock64();\n"
        f"    while (clock64() - t0 < {cycles}ll * ln.rg) {{}}\n"
        "  }\n" + LOOP_AFTER_DRAFTS,
    )


EDITS = {
    "nocopy": [
        (
            "kgen::cp_async_or_zeros<16, true>(to, src + j * LOAD_THREADS_PER_ROW * 8, "
            "bytes == 0);",
            "(void)to;",
        ),
        ZERO_STAGES,
    ],
    "noqk": [(QK_MMAS, "")],
    "nopv": [
        (
            "      Mma::mma(o[i][j], a[i], v[0], v[1]);\n"
            "      Mma::mma(o[i][j + 1], a[i], v[2], v[3]);\n",
            "",
        ),
    ],
    "nosoft": [
        (
            "if (row_group_sync_or(softmax_slice<DRAFTS>(p, partials, start, count, prefix, sl, "
            "p_h, alpha_s, ln), ln)) {\n          rescale_rows(alpha_s, o, ln);\n        }\n",
            "row_group_sync_or(false, ln);\n",
        ),
    ],
    "nobar": [("    return __syncthreads_or(pred);\n", "    return pred;\n")],
    "notilebar": [
        (
            "        __syncthreads();  // tile `it` landed for all; tile it - 1's buffer and the "
            "scores are free\n",
            "        // tile barrier knocked out\n",
        )
    ],
    "noexp": [
        ('  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));\n', "  y = x;\n"),
    ],
    "qk2acc": two_chain_edits(),
    "nospread": [spread_rule("false")],
    "spread": [spread_rule("!QK_AHEAD")],
    **{f"stag{c}": [stagger_edit(c)] for c in (350, 700, 1400)},
    "early": [
        LATE_TRIGGER,
        (
            "  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);\n",
            "  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);\n"
            "  if constexpr (PDL_COMBINE) kgen::launch_dependents();\n",
        ),
    ],
    "notrig": [LATE_TRIGGER],
    "tailtrig": [
        LATE_TRIGGER,
        (
            "      T* tile = tiles + (it % STAGES) * TILE_ELEMS;\n"
            "      float* partials = scores + (QK_AHEAD ? (it % 2) * SCORE_FLOATS : 0);\n",
            TAIL_TRIGGER + "      T* tile = tiles + (it % STAGES) * TILE_ELEMS;\n"
            "      float* partials = scores + (QK_AHEAD ? (it % 2) * SCORE_FLOATS : 0);\n",
        ),
    ],
    "tailtrigws": [
        LATE_TRIGGER,
        (
            "      T* tile = tiles + (it % STAGES) * TILE_ELEMS;\n"
            "      float* partials = scores + (it % 2) * SCORE_FLOATS;\n",
            TAIL_TRIGGER + "      T* tile = tiles + (it % STAGES) * TILE_ELEMS;\n"
            "      float* partials = scores + (it % 2) * SCORE_FLOATS;\n",
        ),
        (
            "      const int start = begin + it * BLOCK_N, next = it + STAGES - 1;\n",
            TAIL_TRIGGER
            + "      const int start = begin + it * BLOCK_N, next = it + STAGES - 1;\n",
        ),
    ],
    "tkcast": [
        (
            "  const float* k = buf + QK_FLOATS + pg * CHUNK_STRIDE;\n",
            "  const float* k = buf + QK_FLOATS + (pg % 4) * CHUNK_STRIDE;\n",
        ),
    ],
    "tvcast": [
        (
            "buf + v * LATENT_DIM + lane * 4 + 128 * q)",
            "buf + v * LATENT_DIM + (lane % 16) * 4 + 128 * q)",
        ),
    ],
    "tnobar": [
        (
            "    __syncthreads();  // step g landed for all; step g - 1's buffer is free; "
            "the rows of tile ct\n",
            "",
        ),
    ],
    "gridbar": gridbar_edits(SLICES_MERGE),
    "gridbarsh": gridbar_edits(SHUFFLE_MERGE),
    "trace": [
        (GRIDBAR_COMMENT, TRACE + GRIDBAR_COMMENT),
        (NOTE_STARTED, NOTE_STARTED + "  KGEN_TRACE(0);\n"),
    ],
    "twice": [
        (
            TWICE_ANCHOR,
            "    if (active) {\n"
            "      float sum = 0.f;\n"
            "      for (int s0 = slice; s0 < num_splits; s0 += MERGE_LOADS * slices) {\n"
            "        float4 v[MERGE_LOADS];\n"
            "#pragma unroll\n"
            "        for (int c = 0; c < MERGE_LOADS; ++c) {\n"
            "          const int s = s0 + c * slices;\n"
            "          const long long slot = base + static_cast<long long>(s) * ROWS + r;\n"
            "          const float4* src =\n"
            "              reinterpret_cast<const float4*>(p.ws_o + slot * LATENT_DIM + d);\n"
            "          v[c] = s < num_splits ? __ldcg(src) : make_float4(0.f, 0.f, 0.f, 0.f);\n"
            "        }\n"
            "#pragma unroll\n"
            "        for (int c = 0; c < MERGE_LOADS; ++c) sum += v[c].x;\n"
            "      }\n"
            "      if (sum == 12345.f) acc.y = 1.f;\n"
            "    }\n"
            "    KGEN_TRACE(6);\n" + TWICE_ANCHOR,
        )
    ],
    "barrieronly": [(STUCK, STUCK + "  if (!stuck) return;\n")],
    "nobarrier": [("           && ++polls < (1 << 20)) {", "           && false) {")],
    "novalid": [
        (
            "  bool bad_page = false;\n  if (begin < end) {\n",
            "  bool bad_page = false;\n  if (false) {\n",
        )
    ],
    "nostore": [
        (
            "    else *reinterpret_cast<float2*>(ws + 8 * j) = make_float2(x, y);\n",
            "    else (void)x, (void)y;\n",
        ),
    ],
    "nohandoff": [("hand_off();  // hand-off `it`", "/* no hand-off */;  // `it`")],
    "ws16": [
        (
            "  float* const ws = p.ws_o + slot * LATENT_DIM + (r * LATENT_DIM + d0);\n"
            "#pragma unroll\n  for (int j = 0; j < O_TILES; ++j) {\n",
            "  T* const ws = reinterpret_cast<T*>(p.ws_o) + slot * LATENT_DIM\n"
            "                + (r * LATENT_DIM + d0);\n"
            "#pragma unroll\n  for (int j = 0; j < O_TILES; ++j) {\n",
        ),
        (
            "    else *reinterpret_cast<float2*>(ws + 8 * j) = make_float2(x, y);\n",
            "    else *reinterpret_cast<unsigned*>(ws + 8 * j) = Mma::pack(x, y);\n",
        ),
        (
            "constexpr int ROW_QUADS = LATENT_DIM / 4;  // float4 columns of a row\n",
            "constexpr int ROW_QUADS = LATENT_DIM / 4;  // float4 columns of a row\n"
            "__device__ __forceinline__ float4 load_partial4(const T* src) {\n"
            "  const uint2 raw = __ldcg(reinterpret_cast<const uint2*>(src));\n"
            "  const float2 a = Mma::unpack(raw.x), c = Mma::unpack(raw.y);\n"
            "  return make_float4(a.x, a.y, c.x, c.y);\n"
            "}\n",
        ),
        (
            "__ldcg(reinterpret_cast<const float4*>(p.ws_o + slot * LATENT_DIM + d))",
            "load_partial4(reinterpret_cast<const T*>(p.ws_o) + slot * LATENT_DIM + d)",
        ),
    ],
    "nocomb": [
        ("    finish_split<NUM_THREADS>(p, b, num_splits, reinterpret_cast<float*>(smem));\n", ""),
    ],
    "noscan": [
        (
            "  return lo < count && scan_drafts(tile, lo, count, bad);\n",
            "  return false;  // knocked out\n",
        ),
    ],
    "nofold": [
        (
            "if (any_bad) fold_bad_drafts(p, b, tile, start, prefix, bad, partials, p_h, pa, o, "
            "ln);\n",
            "\n",
        ),
    ],
    "nodrafts": [
        (
            "  if constexpr (MASK_KIND != MASK_NONE) tiles_loop(Flag<true>(), 0, draft_tiles);\n",
            "",
        ),
    ],
    "noldk": [
        (
            "        unsigned k[4];\n        kgen::ldmatrix_x4(k, ",
            "        unsigned k[4] = {0u, 0u, 0u, 0u};\n"
            "        if (kk == 0 && j == 0) kgen::ldmatrix_x4(k, ",
        )
    ],
    "noldv": [
        (
            "    unsigned v[4];\n    kgen::ldmatrix_x4_trans(v, ",
            "    unsigned v[4] = {0u, 0u, 0u, 0u};\n    if (j == 0) kgen::ldmatrix_x4_trans(v, ",
        )
    ],
    "pfl2": l2_lead_edits(4),
    "pfl2x8": l2_lead_edits(8),
    "bpf1": [l2_ahead_edit(1, True)],
    "bpf2": [l2_ahead_edit(2, True)],
    "bpf4": [l2_ahead_edit(4, True)],
    "lpf2": [l2_ahead_edit(2, False)],
    "sbpf2": [l2_ahead_edit(2, True, "spec")],
    "sbpf4": [l2_ahead_edit(4, True, "spec")],
    "wbpf2": [l2_ahead_edit(2, True, "swap")],
    "evict1st": [evict_edit("evict_first")],
    "evictlast": [evict_edit("evict_last")],
    "pipe": [(PIPE_REGION, pipe_loop(False)), *PIPE_SMEM],
    "pipeb": [(PIPE_REGION, pipe_loop(True)), *PIPE_SMEM],
}

_render = kernel_module.mla_program


def apply_edits(program, knockouts: list[str], edits: dict):
    """`program` with each knock-out's (anchor, replacement) edits made in its source (every
    anchor must occur) and its name tagged with them (bench/sparse_knockout.py uses it too)."""
    source = program.source
    for ko in knockouts:
        for anchor, new in edits[ko]:
            n = source.count(anchor)
            assert n >= 1, f"{ko}: anchor not found: {anchor!r}"
            source = source.replace(anchor, new)
    tag = "_ko_" + "_".join(knockouts) if knockouts else ""
    return replace(program, name=program.name + tag, source=source)


def edited(knockouts: list[str]):
    def render(*args, **kwargs):
        return apply_edits(_render(*args, **kwargs), knockouts, EDITS)

    return render


def build_knocked(spec, config, knockouts: list[str]):
    kernel_module._build.cache_clear()
    kernel_module.mla_program = edited(knockouts)
    # the layout model's shared memory as the edited kernel's
    if {"pipe", "pipeb"} & set(knockouts):
        mma_layout.split_softmax_smem = pipe_softmax_smem
    try:
        return build(spec, config, "native")
    finally:
        kernel_module.mla_program = _render
        mma_layout.split_softmax_smem = split_softmax_smem
        kernel_module._build.cache_clear()


def parse(run: str, configs: dict, grid: dict) -> tuple:
    """`CASE[:overrides]@KO+KO` -> (name, knock-outs, case, config)."""
    name, _, kos = run.partition("@")
    knockouts = [k for k in kos.split("+") if k and k != "base"]
    case, config = case_config(name, configs)
    return name, knockouts, grid[case], config


def precompile(run: str) -> None:
    """Build one run's kernel into the disk cache (a worker process)."""
    grid = {c.name: c for c in load_grid()}
    _, knockouts, case, config = parse(run, shipped_configs(), grid)
    build_knocked(case.spec, config, knockouts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument(
        "--check",
        action="store_true",
        help="also print the largest difference from the unedited kernel's out and lse (for "
        "knock-ins, whose results should not change)",
    )
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(precompile, args.runs))
    timer = Timer(torch.device("cuda"))
    workloads = {}
    print(f"{'case':60} {'knock-outs':24} {'regs':>4} {'us':>8}")
    for run in args.runs:
        name, knockouts, case, config = parse(run, configs, grid)
        kernel = build_knocked(case.spec, config, knockouts)
        if case.name not in workloads:
            workloads[case.name] = make_workload(case.spec, case.seq_lens, seed=1)
        w = workloads[case.name]
        out, lse = w.poisoned_outputs()
        kernel(*w.args(), out=out, lse=lse)
        torch.cuda.synchronize()
        regs = next(iter(kernel.binary.usage.values())).registers
        args_ = w.packed_args()  # a tree mask packed once, as the sweep times it
        us = timer.flushed(lambda: kernel(*args_, out=out, lse=lse), args.reps).median_us  # noqa: B023
        diff = ""
        if args.check:  # after the timed launches: a launch that left state behind shows here
            out, lse = w.poisoned_outputs()
            kernel(*w.args(), out=out, lse=lse)
            want_out, want_lse = w.poisoned_outputs()
            build(case.spec, config, "native")(*w.args(), out=want_out, lse=want_lse)
            d_out = (out.float() - want_out.float()).abs().nan_to_num(float("inf")).max().item()
            d_lse = (lse - want_lse).abs().nan_to_num(float("inf")).max().item()
            diff = f"  max|d out| {d_out:.3g} max|d lse| {d_lse:.3g}"
        print(f"{name:60} {'+'.join(knockouts) or 'base':24} {regs:4d} {us:8.1f}{diff}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
