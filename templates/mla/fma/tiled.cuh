// MLA decode / draft-tree verify attention on CUDA cores, register-tiled like an SGEMM
// (compute='tiled'; float32, whose 1e-5 tolerance rules out the tensor cores' TF32).
//
// One block of 8 warps serves (sequence b, a group of HEADS_PER_BLOCK heads, KV split `split`):
// up to 64 query rows (ROWS, padded to 64), in KV tiles of 64 positions. Warp w owns rows
// 8w .. 8w + 7 for both products, so P never leaves the warp:
// - S = q.K^T: lane (h, pg) = (lane / 16, lane % 16) holds the 4 x 4 scores of rows h + 2i and
//   positions pg + 16j (i, j < 4), summed over the head dims in chunks of KC;
// - O += P.V: every lane holds all 8 rows x 16 output columns (4 float4 quads at lane * 4 + 128 q).
// Each product reads its operands as float4 from shared memory, 4 FMAs per loaded float: the
// FMA pipe, not the loads, is what a tile costs (the GEMV-style 'fma' path spends most of its
// issue slots on loads and butterflies).
//
// A tile is STEPS pipeline steps: QK_STEPS chunks of q and K columns [c KC, c KC + KC), then
// PV_STEPS chunks of V_ROWS V rows. Each step's operands come by cp.async into one of STAGES ring
// buffers, STAGES - 1 steps ahead, behind one block barrier per step. (q is copied again for every
// tile: 64 rows of 576 floats do not fit beside the pipeline in sm_120's 99 KB; L2 serves them.)
// Masked positions and positions past the split's end get p = 0; draft positions also leave out
// the rows that do not see them from P.V (0 x Inf would be NaN). The split-KV merge is fused (the
// FMA path's), or with PDL_COMBINE the tensor-core path's merge kernel (mla/combine_kernel.cuh).

namespace mla {

static_assert(!RAGGED, "ragged head groups take the mma row path only");
static_assert(TOKEN_GROUPS == 1, "token groups take the mma path only");

constexpr int NUM_THREADS = NUM_WARPS * 32;
constexpr int TILE_ROWS = 64;  // rows of a block, padded
constexpr int KC = QK_CHUNK;   // head dims per q.K^T step (kgen.mla.tiled_layout)
constexpr int PAD = 4;         // floats after each KC-wide row: conflict-free float4 reads
constexpr int QK_STEPS = HEAD_DIM / KC;
constexpr int O_QUADS = LATENT_DIM / 128;  // float4 output quads per lane and row
constexpr int CHUNK_STRIDE = KC + PAD;
constexpr int QK_FLOATS = TILE_ROWS * CHUNK_STRIDE;  // one of q's and one of K's chunks
// V rows per P.V step: 16 where they fit the q.K^T step's buffer (64-dim steps), else 8
constexpr int V_ROWS = 2 * QK_FLOATS >= 16 * LATENT_DIM ? 16 : 8;
constexpr int PV_STEPS = BLOCK_N / V_ROWS;
constexpr int STEPS = QK_STEPS + PV_STEPS;
constexpr int Q_COPIES = TILE_ROWS * (KC / 4) / NUM_THREADS;  // q rows (and K rows) a thread copies a step
constexpr int STAGE_FLOATS = 2 * QK_FLOATS > V_ROWS * LATENT_DIM ? 2 * QK_FLOATS : V_ROWS * LATENT_DIM;
constexpr int P_FLOATS = BLOCK_N * 8;  // a warp's P, [position][row]

static_assert(NUM_WARPS == 8 && BLOCK_N == 64, "8 warps of 8 rows, tiles of 64 positions");
static_assert(ROWS <= TILE_ROWS, "at most 64 rows a block");
static_assert(HEAD_DIM % KC == 0 && LATENT_DIM % 128 == 0, "head dims in KC chunks, output quads");
static_assert(STAGES >= 2, "a cp.async ring of at least two steps");
static_assert(sizeof(T) == 4, "the tiled path reads float4 operands: float32");
static_assert(TILE_ROWS * (KC / 4) % NUM_THREADS == 0, "a q.K^T step: whole q and K rows a thread");
static_assert(STAGES - 1 <= STEPS, "the copies run at most a tile ahead");

// The KV rows of tile `tile` (BLOCK_N positions from `start`; nullptr past the split's end), one
// per thread of the first BLOCK_N, into the tile's half of `rows_s`: the copies of the tile's
// steps read their sources there instead of each looking its page up again.
__device__ __forceinline__ void tile_rows(const Params& p, int b, int start, int end, int tile, const T** rows_s) {
  if (threadIdx.x < BLOCK_N) {
    const int n = start + threadIdx.x;
    rows_s[(tile % 2) * BLOCK_N + threadIdx.x] = n < end ? kv_row(p, b, n) : nullptr;
  }
}

// Issue the copies of step `s` of a tile whose KV rows are `rows` into `buf`; `q_rows`: this
// thread's two q rows (nullptr for padding rows).
__device__ __forceinline__ void copy_step(const Params& p, int s, const T* const* rows, const T* const (&q_rows)[Q_COPIES],
                                          float* buf) {
  if (s < QK_STEPS) {
    constexpr int QUADS = KC / 4;  // per row of a chunk
    const int c = s * KC + threadIdx.x % QUADS * 4;
#pragma unroll
    for (int it = 0; it < Q_COPIES; ++it) {
      const int r = threadIdx.x / QUADS + it * (NUM_THREADS / QUADS);  // a q row and a K position
      float* dst = buf + r * CHUNK_STRIDE + threadIdx.x % QUADS * 4;
      kgen::cp_async_or_zeros<16>(dst, q_rows[it] ? q_rows[it] + c : p.q, !q_rows[it]);
      const T* k = rows[r];
      kgen::cp_async_or_zeros<16>(dst + QK_FLOATS, k ? k + c : p.kv, !k);
    }
  } else {
    constexpr int QUADS = LATENT_DIM / 4;
    const int c = threadIdx.x % QUADS * 4;
#pragma unroll
    for (int it = 0; it < V_ROWS * QUADS / NUM_THREADS; ++it) {
      const int v = threadIdx.x / QUADS + it * (NUM_THREADS / QUADS);
      const T* x = rows[(s - QK_STEPS) * V_ROWS + v];
      kgen::cp_async_or_zeros<16>(buf + v * LATENT_DIM + c, x ? x + c : p.kv, !x);
    }
  }
}

// One q.K^T step: s[i][j] += q[row h + 2i] . K[position pg + 16j] over the chunk's KC dims.
__device__ __forceinline__ void qk_step(const float* buf, int warp, int h, int pg, float (&s)[4][4]) {
  const float* q = buf + (warp * 8 + h) * CHUNK_STRIDE;
  const float* k = buf + QK_FLOATS + pg * CHUNK_STRIDE;
#pragma unroll
  for (int k4 = 0; k4 < KC; k4 += 4) {
    float4 kv[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) kv[j] = *reinterpret_cast<const float4*>(k + 16 * j * CHUNK_STRIDE + k4);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 a = *reinterpret_cast<const float4*>(q + 2 * i * CHUNK_STRIDE + k4);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[i][j] = fmaf(a.x, kv[j].x, s[i][j]);
        s[i][j] = fmaf(a.y, kv[j].y, s[i][j]);
        s[i][j] = fmaf(a.z, kv[j].z, s[i][j]);
        s[i][j] = fmaf(a.w, kv[j].w, s[i][j]);
      }
    }
  }
}

// One P.V step: o[r] += P[r][position] V[position] over the chunk's V_ROWS positions (from `first`,
// the chunk's first position in the tile). With `drafts`, a row adds a draft position only where
// it sees it (its bit in drafts_s; `draft0` is the tile position of draft 0).
template <bool DRAFTS>
__device__ __forceinline__ void pv_step(const float* buf, const float* pw, int first, int lane, float (&o)[8][O_QUADS][4],
                                        const unsigned long long* drafts_s, int warp, int draft0) {
#pragma unroll
  for (int v = 0; v < V_ROWS; ++v) {
    const float4 p0 = *reinterpret_cast<const float4*>(pw + (first + v) * 8);
    const float4 p1 = *reinterpret_cast<const float4*>(pw + (first + v) * 8 + 4);
    const float pr[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
    unsigned sees = 0xffu;
    if constexpr (DRAFTS) {
      const int j = first + v - draft0;
      if (j >= 0) {  // (past the drafts, past the split's end: p = 0 and V = 0 there)
        sees = 0u;
        if (j < Q_LEN)
#pragma unroll
          for (int r = 0; r < 8; ++r) sees |= static_cast<unsigned>((drafts_s[warp * 8 + r] >> j) & 1ull) << r;
      }
    }
#pragma unroll
    for (int q = 0; q < O_QUADS; ++q) {
      const float4 x = *reinterpret_cast<const float4*>(buf + v * LATENT_DIM + lane * 4 + 128 * q);
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        if (DRAFTS && !((sees >> r) & 1u)) continue;
        o[r][q][0] = fmaf(pr[r], x.x, o[r][q][0]);
        o[r][q][1] = fmaf(pr[r], x.y, o[r][q][1]);
        o[r][q][2] = fmaf(pr[r], x.z, o[r][q][2]);
        o[r][q][3] = fmaf(pr[r], x.w, o[r][q][3]);
      }
    }
  }
}

// A value of lane-group h's row h + 2i (held in register i) for local row r, in every lane.
__device__ __forceinline__ float row_value(const float (&x)[4], int r) {
  return __shfl_sync(0xffffffffu, x[r / 2], (r % 2) * 16);
}

}  // namespace mla

extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS, 1) mla_attention(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  float* stages = reinterpret_cast<float*>(smem);
  float* pws = stages + STAGES * STAGE_FLOATS;
  unsigned long long* drafts_s = reinterpret_cast<unsigned long long*>(pws + NUM_WARPS * P_FLOATS);
  const T** rows_s = reinterpret_cast<const T**>(drafts_s + TILE_ROWS);  // [2][BLOCK_N]

  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, h = lane / 16, pg = lane % 16;
  float* pw = pws + warp * P_FLOATS;

  if (!PDL_COMBINE && num_splits > 1) note_started(p, b);
  if (threadIdx.x < TILE_ROWS) {
    const int r = threadIdx.x;
    drafts_s[r] = r < ROWS ? draft_bits(p, b, row_token(r)) : 0ull;
  }
  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, b, split, num_splits);  // syncs
  const int prefix = range.prefix, begin = range.begin, end = range.end;
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N, total = num_tiles * STEPS;
  const T* q_rows[Q_COPIES];  // the q rows this thread copies
#pragma unroll
  for (int it = 0; it < Q_COPIES; ++it) {
    const int r = threadIdx.x / (KC / 4) + it * (NUM_THREADS / (KC / 4));
    q_rows[it] = r < ROWS ? q_row(p, b, r) : nullptr;
  }
  tile_rows(p, b, begin, end, 0, rows_s);
  __syncthreads();  // tile 0's rows

  float o[8][O_QUADS][4];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < O_QUADS; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[r][q][e] = 0.f;
  float s[4][4], m[4], l[4];  // scores; running max (log2 units) and this lane's share of the sum
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -CUDART_INF_F;
    l[i] = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) s[i][j] = 0.f;
  }

#pragma unroll
  for (int g = 0; g < STAGES - 1; ++g) {
    if (g < total) copy_step(p, g, rows_s, q_rows, stages + g * STAGE_FLOATS);
    kgen::cp_async_commit();
  }
  // The step to copy next (tile ct, step cs of it, into buffer cb) and the one computed (step,
  // of the tile at `start`, from buffer gb), counted along instead of divided out.
  int ct = 0, cs = STAGES - 1, cb = STAGES - 1;
  int step = 0, start = begin, gb = 0;
  for (int g = 0; g < total; ++g) {
    kgen::cp_async_wait<STAGES - 2>();
    __syncthreads();  // step g landed for all; step g - 1's buffer is free; the rows of tile ct
    if (g + STAGES - 1 < total) copy_step(p, cs, rows_s + (ct % 2) * BLOCK_N, q_rows, stages + cb * STAGE_FLOATS);
    kgen::cp_async_commit();
    if (cs == STEPS - 1 && ct + 1 < num_tiles) tile_rows(p, b, begin + (ct + 1) * BLOCK_N, end, ct + 1, rows_s);
    if (++cs == STEPS) cs = 0, ++ct;
    if (++cb == STAGES) cb = 0;
    const float* buf = stages + gb * STAGE_FLOATS;
    if (++gb == STAGES) gb = 0;
    if (step < QK_STEPS) {
      qk_step(buf, warp, h, pg, s);
      if (step == QK_STEPS - 1) {
        // The tile's online softmax: mask, the rows' new max, P into the warp's buffer, rescale o.
        const bool edge = start + BLOCK_N > min(prefix, end);  // drafts or the split's end inside
        float alpha[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const unsigned long long drafts = drafts_s[warp * 8 + h + 2 * i];
          float x[4], top = -CUDART_INF_F;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int n = start + pg + 16 * j;
            const bool seen = !edge || (n < end && (n < prefix || ((drafts >> (n - prefix)) & 1ull)));
            x[j] = seen ? s[i][j] * p.scale_log2 : -CUDART_INF_F;
            top = fmaxf(top, x[j]);
            s[i][j] = 0.f;
          }
#pragma unroll
          for (int k = 1; k < 16; k *= 2) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, k));
          const float m_new = fmaxf(m[i], top);
          const float base = m_new == -CUDART_INF_F ? 0.f : m_new;  // nothing seen yet: p = 0
          alpha[i] = kgen::fast_exp2(m[i] - base);
          m[i] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float pij = kgen::fast_exp2(x[j] - base);
            sum += pij;
            pw[(pg + 16 * j) * 8 + h + 2 * i] = pij;
          }
          l[i] = l[i] * alpha[i] + sum;
        }
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          const float a = row_value(alpha, r);
#pragma unroll
          for (int q = 0; q < O_QUADS; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[r][q][e] *= a;
        }
        __syncwarp();  // P whole for the warp's P.V steps
      }
    } else {
      const int first = (step - QK_STEPS) * V_ROWS;
      if (MASK_KIND != MASK_NONE && start + first + V_ROWS > prefix) {
        pv_step<true>(buf, pw, first, lane, o, drafts_s, warp, prefix - start);
      } else {
        pv_step<false>(buf, pw, first, lane, o, drafts_s, warp, 0);
      }
    }
    if (++step == STEPS) step = 0, start += BLOCK_N;
  }
  kgen::cp_async_wait<0>();

  // Results: out/lse with one split, else this split's slot of the workspace.
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 1; k < 16; k *= 2) l[i] += __shfl_xor_sync(0xffffffffu, l[i], k);
  const long long slot = num_splits > 1 ? slot_row(p, b, split, num_splits) : 0;
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int row = warp * 8 + r;
    const Finish fin(row_value(m, r), row_value(l, r), range.poisoned);
    if (row >= ROWS) continue;
#pragma unroll
    for (int q = 0; q < O_QUADS; ++q) {
      const int d = lane * 4 + 128 * q;
      const float4 v = make_float4(fin.apply(o[r][q][0]), fin.apply(o[r][q][1]), fin.apply(o[r][q][2]), fin.apply(o[r][q][3]));
      float* dst = num_splits == 1 ? out_row(p, b, row) + d : p.ws_o + (slot + row) * LATENT_DIM + d;
      *reinterpret_cast<float4*>(dst) = v;
    }
    if (lane == 0) {
      if (num_splits == 1) *lse_at(p, b, row) = fin.lse();
      else p.ws_lse[slot + row] = fin.lse();
    }
  }
  // The split-KV merge: here (the group's blocks share it), or with PDL_COMBINE in mla_combine,
  // which may launch once every block is here
  if constexpr (PDL_COMBINE) {
    kgen::launch_dependents();
  } else if (num_splits > 1) {
    __syncthreads();  // the stages are no longer read: the combine reuses shared memory
    finish_split<NUM_THREADS>(p, b, num_splits, reinterpret_cast<float*>(smem));
  }
}
