// MLA decode / draft-tree verify attention over a paged latent cache, FMA compute path.
//
// One block serves (sequence b, a group of HEADS_PER_BLOCK heads, KV split `split`): ROWS =
// Q_LEN * HEADS_PER_BLOCK query rows that all read each KV row of the split once. Warps are a
// ROW_WARPS x POS_GROUPS grid: a warp owns ROWS_PER_WARP rows and every POS_GROUPS-th position.
// Inside a warp, lane l owns the VEC-wide chunks l, l + 32, ... of each 576-element KV row, so a
// KV row is read once (coalesced) and used for every row's q.k and p.v. Scores are summed across
// the warp with a butterfly, so every lane holds the same softmax state; the running max is only
// raised when a score exceeds it by RESCALE_THRESHOLD (log2 units), which keeps p <= 256.
//
// KV reaches the warps straight from global memory into registers (STAGES == 0), through one
// shared tile (STAGES == 1) or through a cp.async pipeline STAGES tiles deep (STAGES >= 2).
// With one split the block writes out/lse; with several it writes a normalised partial (o, lse)
// per row to the workspace and the fused combine (combine.cuh) merges them.
// An invalid sequence (seq_len < Q_LEN, beyond the block table, or a page id out of range) gets
// NaN rows: nothing outside the given tensors is ever read.

namespace mla {

static_assert(!RAGGED, "ragged head groups take the mma row path only");
static_assert(TOKEN_GROUPS == 1, "token groups take the mma path only");

using kgen::Vec;

constexpr int NUM_THREADS = NUM_WARPS * 32;
constexpr int CHUNKS = HEAD_DIM / VEC;                        // VEC-wide chunks in a KV row
constexpr int LATENT_CHUNKS = LATENT_DIM / VEC;               // ... of which V is made
constexpr int LANE_CHUNKS = (CHUNKS + 31) / 32;               // chunks a lane holds
constexpr int LANE_LATENT_CHUNKS = (LATENT_CHUNKS + 31) / 32;
constexpr float RESCALE_THRESHOLD = 8.0f;

static_assert(HEAD_DIM % VEC == 0 && LATENT_DIM % VEC == 0, "VEC must divide both dims");
static_assert(ROW_WARPS * POS_GROUPS <= NUM_WARPS, "warp grid larger than the block");
static_assert(ROW_WARPS * ROWS_PER_WARP >= ROWS, "rows not covered");
static_assert(POS_GROUPS == 1 || ROWS_PER_WARP == 1, "position groups split single rows");
static_assert(ROWS_PER_WARP <= 32, "visibility bits are a 32-bit word");
static_assert(Q_SOURCE == Q_REGISTERS || Q_SOURCE == Q_SHARED || Q_SOURCE == Q_GLOBAL, "q source");
static_assert(Q_SOURCE != Q_SHARED || ROW_WARPS * ROWS_PER_WARP * HEAD_DIM * sizeof(T) <= Q_SMEM_BYTES,
              "q rows outgrow their shared memory");


// Online-softmax state of one query row, as every lane of its warp holds it (log2 domain).
struct RowState {
  float m;  // running max (only raised by more than RESCALE_THRESHOLD)
  float l;  // sum of 2^(s - m)
  float o[LANE_LATENT_CHUNKS][VEC];  // this lane's chunks of sum 2^(s - m) * v
};

__device__ __forceinline__ bool lane_has(int lane, int i, int limit) { return lane + 32 * i < limit; }

// This lane's chunks of one row of HEAD_DIM elements (global or shared memory), as floats.
template <bool GLOBAL>
__device__ __forceinline__ void lane_chunks(const T* row, int lane, float (&k)[LANE_CHUNKS][VEC]) {
#pragma unroll
  for (int i = 0; i < LANE_CHUNKS; ++i) {
    Vec<T, VEC> w;
    if (lane_has(lane, i, CHUNKS)) {
      if constexpr (GLOBAL) w.load_global(row + (lane + 32 * i) * VEC);
      else w.load(row + (lane + 32 * i) * VEC);
      w.to_floats(k[i]);
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v) k[i][v] = 0.f;
    }
  }
}

// A warp's query rows held in registers (few rows per warp) ...
struct QInRegisters {
  float v[ROWS_PER_WARP][LANE_CHUNKS][VEC];
  __device__ __forceinline__ void row(int r, int, float (&out)[LANE_CHUNKS][VEC]) const {
#pragma unroll
    for (int i = 0; i < LANE_CHUNKS; ++i)
#pragma unroll
      for (int j = 0; j < VEC; ++j) out[i][j] = v[r][i][j];
  }
};

// ... or read from the block's shared copy at every position (many rows per warp).
struct QInShared {
  const T* rows;  // this warp's first row, HEAD_DIM elements per row
  __device__ __forceinline__ void row(int r, int lane, float (&out)[LANE_CHUNKS][VEC]) const {
    lane_chunks<false>(rows + r * HEAD_DIM, lane, out);
  }
};

// ... or, when shared memory is taken by the KV tiles, re-read from global memory (L1-resident).
struct QInGlobal {
  const T* first;  // this warp's first row
  long long row_stride, t_stride;
  int row0;
  __device__ __forceinline__ void row(int r, int lane, float (&out)[LANE_CHUNKS][VEC]) const {
    const int row = row0 + r;  // rows past ROWS are padding: read row 0 instead, never used
    const int rr = row < ROWS ? row : 0;
    const T* ptr = first + (rr / HEADS_PER_BLOCK) * t_stride + (rr % HEADS_PER_BLOCK) * row_stride;
    lane_chunks<true>(ptr, lane, out);
  }
};

// Fold one KV position (this lane's chunks of it, as floats) into the rows that see it.
template <class QRows>
__device__ __forceinline__ void consume(const float (&k)[LANE_CHUNKS][VEC], const QRows& q,
                                        float scale_log2, RowState (&st)[ROWS_PER_WARP],
                                        unsigned visible, int lane) {
  float s[ROWS_PER_WARP];
#pragma unroll
  for (int r = 0; r < ROWS_PER_WARP; ++r) {
    float qr[LANE_CHUNKS][VEC];
    q.row(r, lane, qr);
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < LANE_CHUNKS; ++i) {
      if (lane_has(lane, i, CHUNKS)) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc = fmaf(qr[i][v], k[i][v], acc);
      }
    }
    s[r] = kgen::warp_allsum(acc) * scale_log2;
  }
#pragma unroll
  for (int r = 0; r < ROWS_PER_WARP; ++r) {
    // Masked rows and -inf logits add nothing (and must not turn 0 * garbage into NaN).
    if (!((visible >> r) & 1u) || s[r] == -CUDART_INF_F) continue;
    if (s[r] > st[r].m + RESCALE_THRESHOLD) {  // warp-uniform: all lanes hold the same s and m
      const float alpha = kgen::fast_exp2(st[r].m - s[r]);
      st[r].l *= alpha;
#pragma unroll
      for (int i = 0; i < LANE_LATENT_CHUNKS; ++i)
#pragma unroll
        for (int v = 0; v < VEC; ++v) st[r].o[i][v] *= alpha;
      st[r].m = s[r];
    }
    const float p = kgen::fast_exp2(s[r] - st[r].m);
    st[r].l += p;
#pragma unroll
    for (int i = 0; i < LANE_LATENT_CHUNKS; ++i) {
      if (lane_has(lane, i, LATENT_CHUNKS)) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) st[r].o[i][v] = fmaf(p, k[i][v], st[r].o[i][v]);
      }
    }
  }
}

// Where one query row's result goes: final out/lse (one split) or the split's workspace slot.
struct RowSink {
  const Params& p;
  int b, split, num_splits;

  __device__ void write(int row, const float (&o)[LANE_LATENT_CHUNKS][VEC], float m, float l,
                        bool poisoned, int lane) const {
    const Finish fin(m, l, poisoned);
    const long long slot = num_splits > 1 ? slot_row(p, b, split, num_splits) + row : 0;
#pragma unroll
    for (int i = 0; i < LANE_LATENT_CHUNKS; ++i) {
      if (!lane_has(lane, i, LATENT_CHUNKS)) continue;
      const int d = (lane + 32 * i) * VEC;
      float vals[VEC];
#pragma unroll
      for (int v = 0; v < VEC; ++v) vals[v] = fin.apply(o[i][v]);
      if (num_splits == 1) {
        Vec<T, VEC> w;
        w.from_floats(vals);
        w.store(out_row(p, b, row) + d);
      } else {
        float* dst = p.ws_o + slot * LATENT_DIM + d;
#pragma unroll
        for (int v = 0; v < VEC; ++v) dst[v] = vals[v];
      }
    }
    if (lane == 0) {
      if (num_splits == 1) *lse_at(p, b, row) = fin.lse();
      else p.ws_lse[slot] = fin.lse();
    }
  }
};

// Issue the loads of one KV tile [start, end) into shared memory (not waited for).
__device__ __forceinline__ void load_tile(const Params& p, int b, int start, int end, T* tile) {
  constexpr int ITEMS = (BLOCK_N * CHUNKS + NUM_THREADS - 1) / NUM_THREADS;
  if constexpr (STAGES >= 2) {
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int idx = threadIdx.x + it * NUM_THREADS;
      const int pos = idx / CHUNKS, c = idx % CHUNKS;
      if (idx < BLOCK_N * CHUNKS && start + pos < end)
        kgen::cp_async<VEC * sizeof(T)>(tile + pos * HEAD_DIM + c * VEC, kv_row(p, b, start + pos) + c * VEC);
    }
  } else {
    Vec<T, VEC> staged[ITEMS];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int idx = threadIdx.x + it * NUM_THREADS;
      const int pos = idx / CHUNKS, c = idx % CHUNKS;
      if (idx < BLOCK_N * CHUNKS && start + pos < end) staged[it].load_global(kv_row(p, b, start + pos) + c * VEC);
    }
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int idx = threadIdx.x + it * NUM_THREADS;
      const int pos = idx / CHUNKS, c = idx % CHUNKS;
      if (idx < BLOCK_N * CHUNKS && start + pos < end) staged[it].store(tile + pos * HEAD_DIM + c * VEC);
    }
  }
}

}  // namespace mla

extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS) mla_attention(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];

  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row_warp = warp / POS_GROUPS, pos_group = warp % POS_GROUPS;
  const bool computes = row_warp < ROW_WARPS;

  if (num_splits > 1) note_started(p, b);
  const Range range = split_range<NUM_THREADS, BLOCK_N>(p, b, split, num_splits);
  const bool poisoned = range.poisoned;
  const int prefix = range.prefix, begin = range.begin, end = range.end;

  // The rows of this warp and their draft-visibility bits.
  const int row0 = row_warp * ROWS_PER_WARP;
  unsigned long long drafts[ROWS_PER_WARP];
  unsigned rows_present = 0;  // bit r: row0 + r is a row of this block
  RowState st[ROWS_PER_WARP];
#pragma unroll
  for (int r = 0; r < ROWS_PER_WARP; ++r) {
    const bool valid = computes && row0 + r < ROWS;
    drafts[r] = valid ? draft_bits(p, b, (row0 + r) / HEADS_PER_BLOCK) : 0ull;
    if (valid) rows_present |= 1u << r;
    st[r].m = -CUDART_INF_F;
    st[r].l = 0.f;
#pragma unroll
    for (int i = 0; i < LANE_LATENT_CHUNKS; ++i)
#pragma unroll
      for (int v = 0; v < VEC; ++v) st[r].o[i][v] = 0.f;
  }
  // Which of this warp's rows see position n (all see the prefix).
  auto visible = [&](int n) {
    if (n < prefix) return rows_present;
    unsigned bits = 0;
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r)
      if ((drafts[r] >> (n - prefix)) & 1ull) bits |= 1u << r;
    return bits;
  };

  // Fold positions [begin, end) into st, reading q through `q`.
  auto fold_all = [&](const auto& q) {
    if constexpr (STAGES == 0) {
      // Each warp loads BLOCK_N of its positions into registers, then folds them in.
      if (!computes) return;
      for (int n0 = begin + pos_group; n0 < end; n0 += POS_GROUPS * BLOCK_N) {
        Vec<T, VEC> raw[BLOCK_N][LANE_CHUNKS];
#pragma unroll
        for (int u = 0; u < BLOCK_N; ++u) {
          const int n = n0 + u * POS_GROUPS;
          if (n < end) {
            const T* row = kv_row(p, b, n);
#pragma unroll
            for (int i = 0; i < LANE_CHUNKS; ++i)
              if (lane_has(lane, i, CHUNKS)) raw[u][i].load_global(row + (lane + 32 * i) * VEC);
          }
        }
#pragma unroll
        for (int u = 0; u < BLOCK_N; ++u) {
          const int n = n0 + u * POS_GROUPS;
          if (n < end) {
            float k[LANE_CHUNKS][VEC];
#pragma unroll
            for (int i = 0; i < LANE_CHUNKS; ++i) {
              if (lane_has(lane, i, CHUNKS)) {
                raw[u][i].to_floats(k[i]);
              } else {
#pragma unroll
                for (int v = 0; v < VEC; ++v) k[i][v] = 0.f;
              }
            }
            consume(k, q, p.scale_log2, st, visible(n), lane);
          }
        }
      }
    } else {
      T* tiles = reinterpret_cast<T*>(smem + Q_SMEM_BYTES);
      constexpr int TILE = BLOCK_N * HEAD_DIM;
      const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;
      auto fold_tile = [&](int tile_index, const T* tile) {
        const int start = begin + tile_index * BLOCK_N;
        const int count = min(BLOCK_N, end - start);
        if (!computes) return;
#pragma unroll 2
        for (int pos = pos_group; pos < count; pos += POS_GROUPS) {
          float k[LANE_CHUNKS][VEC];
          lane_chunks<false>(tile + pos * HEAD_DIM, lane, k);
          consume(k, q, p.scale_log2, st, visible(start + pos), lane);
        }
      };
      if constexpr (STAGES == 1) {
        for (int it = 0; it < num_tiles; ++it) {
          load_tile(p, b, begin + it * BLOCK_N, end, tiles);
          __syncthreads();
          fold_tile(it, tiles);
          __syncthreads();
        }
      } else {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
          if (s < num_tiles) load_tile(p, b, begin + s * BLOCK_N, end, tiles + s * TILE);
          kgen::cp_async_commit();
        }
        for (int it = 0; it < num_tiles; ++it) {
          kgen::cp_async_wait<STAGES - 2>();
          __syncthreads();  // tile `it` landed for all; tile `it - 1`'s buffer is free again
          const int next = it + STAGES - 1;
          if (next < num_tiles) load_tile(p, b, begin + next * BLOCK_N, end, tiles + (next % STAGES) * TILE);
          kgen::cp_async_commit();
          fold_tile(it, tiles + (it % STAGES) * TILE);
        }
        kgen::cp_async_wait<0>();
      }
    }
  };

  if constexpr (Q_SOURCE == Q_GLOBAL) {
    fold_all(QInGlobal{p.q + b * p.q_sb + head_group() * HEADS_PER_BLOCK * p.q_sh, p.q_sh, p.q_st, row0});
  } else if constexpr (Q_SOURCE == Q_SHARED) {
    // Many rows per warp: the block's q lives in shared memory and is re-read per position.
    T* q_smem = reinterpret_cast<T*>(smem);
    constexpr int PADDED_ROWS = ROW_WARPS * ROWS_PER_WARP;  // a warp's last rows may be padding
    for (int idx = threadIdx.x; idx < PADDED_ROWS * CHUNKS; idx += NUM_THREADS) {
      const int row = idx / CHUNKS, c = idx % CHUNKS;
      Vec<T, VEC> w;
      if (row < ROWS) {
        w.load_global(q_row(p, b, row) + c * VEC);
      } else {
        const float zeros[VEC] = {};
        w.from_floats(zeros);
      }
      w.store(q_smem + row * HEAD_DIM + c * VEC);
    }
    __syncthreads();
    fold_all(QInShared{q_smem + row0 * HEAD_DIM});
  } else {
    QInRegisters q;
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r) {
      if (computes && row0 + r < ROWS) {
        lane_chunks<true>(q_row(p, b, row0 + r), lane, q.v[r]);
      } else {
#pragma unroll
        for (int i = 0; i < LANE_CHUNKS; ++i)
#pragma unroll
          for (int v = 0; v < VEC; ++v) q.v[r][i][v] = 0.f;
      }
    }
    fold_all(q);
  }

  const RowSink sink{p, b, split, num_splits};
  if constexpr (POS_GROUPS == 1) {
    if (computes) {
#pragma unroll
      for (int r = 0; r < ROWS_PER_WARP; ++r)
        if (row0 + r < ROWS) sink.write(row0 + r, st[r].o, st[r].m, st[r].l, poisoned, lane);
    }
  } else {
    // Merge the position groups of each row through shared memory (one row per warp here).
    __syncthreads();  // q and the KV tiles are no longer read
    float* part_o = reinterpret_cast<float*>(smem);                      // [POS_GROUPS][ROW_WARPS][LATENT_DIM]
    float* part_ml = part_o + POS_GROUPS * ROW_WARPS * LATENT_DIM;       // [POS_GROUPS][ROW_WARPS][2]
    if (computes) {
      const int slot = pos_group * ROW_WARPS + row_warp;
#pragma unroll
      for (int i = 0; i < LANE_LATENT_CHUNKS; ++i)
        if (lane_has(lane, i, LATENT_CHUNKS))
#pragma unroll
          for (int v = 0; v < VEC; ++v) part_o[slot * LATENT_DIM + (lane + 32 * i) * VEC + v] = st[0].o[i][v];
      if (lane == 0) {
        part_ml[slot * 2] = st[0].m;
        part_ml[slot * 2 + 1] = st[0].l;
      }
    }
    __syncthreads();
    if (computes && pos_group == 0 && row0 < ROWS) {
      float m = -CUDART_INF_F;
      for (int g = 0; g < POS_GROUPS; ++g) m = fmaxf(m, part_ml[(g * ROW_WARPS + row_warp) * 2]);
      float l = 0.f, o[LANE_LATENT_CHUNKS][VEC] = {};
      for (int g = 0; g < POS_GROUPS; ++g) {
        const int slot = g * ROW_WARPS + row_warp;
        const float mg = part_ml[slot * 2];
        const float w = (mg == -CUDART_INF_F) ? 0.f : kgen::fast_exp2(mg - m);
        l += w * part_ml[slot * 2 + 1];
#pragma unroll
        for (int i = 0; i < LANE_LATENT_CHUNKS; ++i)
          if (lane_has(lane, i, LATENT_CHUNKS))
#pragma unroll
            for (int v = 0; v < VEC; ++v) o[i][v] += w * part_o[slot * LATENT_DIM + (lane + 32 * i) * VEC + v];
      }
      sink.write(row0, o, m, l, poisoned, lane);
    }
  }
  if (num_splits > 1) {
    __syncthreads();  // q and the KV tiles are no longer read: the combine reuses shared memory
    finish_split<NUM_THREADS>(p, b, num_splits, reinterpret_cast<float*>(smem));
  }
}
