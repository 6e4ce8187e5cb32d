// Prototype (bench/fp8mma/fp8mma.py): sparse MLA decode over the fp8 cache with e4m3 tensor-core
// MMAs (mma.sync m16n8k32, sm_89+: sm_90 and sm_120 have it) on the raw cached bytes: no 16-bit
// tile, no dequantization pass. 16 heads a block (one m16 tile), 4 warps; warp cg owns latent dims
// 128 cg ... 128 cg + 127 (exactly scale group cg: its q.K^T run and its P.V output columns) and
// rope k16 step cg. Raw 656-byte rows arrive by cp.async in a STAGES-deep ring of 32-row tiles.
//
// Exactness: K and V are the cached e4m3 values. q (bf16: 8 significant bits) is split into two
// e4m3 parts, hi + lo, after scaling each (row, warp) run by a power of two that puts its largest
// magnitude under 2^8: hi carries the top 4 bits, lo the rest (exact down to 2^-10 of the run's
// largest element). The rope is multiplied in bf16 as it is. P times the fp8 scale of each
// position (one group a warp) is split the same way, after a power of two 2^(8 - E) with 2^E over
// every scale the warp has seen in the split (O is rescaled when E rises): P's 8 bits, as bf16's.
// Scores, l and O accumulate in float32.
//
// P.V's k order within a tile is permuted so that a thread's A fragment is its own score
// fragments: k 4qd..4qd+3 is positions 2qd, 2qd+1, 2qd+8, 2qd+9, and k 16+4qd.. is those + 16.
// Its output columns are permuted so that a V fragment is a 4 x 4 byte transpose of four 32-bit
// loads: n-tile t of a warp's 32-column block blk, column g is dim 128 cg + 32 blk + 4 g + t.
//
// Results: out/lse with one split, else per split the unnormalised O (float32, already times its
// 2^(E - 8)), m (log2 units) and l, merged by the host (prototype).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define INF __int_as_float(0x7f800000)

#ifndef STAGES
#define STAGES 4
#endif
constexpr int HEADS = 16, WARPS = 4, THREADS = 128, BLOCK_N = 32;
constexpr int ROW_BYTES = 656, SCALES_AT = 512, ROPE_AT = 528, PIECES = ROW_BYTES / 16;
constexpr int STAGE_BYTES = BLOCK_N * ROW_BYTES;
constexpr int S_STRIDE = 40;  // partial-score row stride (floats): = 8 mod 16, conflict-free float2
constexpr int SMEM = STAGES * STAGE_BYTES + STAGES * BLOCK_N * 4 + WARPS * HEADS * S_STRIDE * 4;

struct Params {
  const __nv_bfloat16* q;  // [B, T, 16, 576]
  long long q_sb, q_st;    // strides in elements (heads contiguous, 576 apart)
  const unsigned char* kv; // [slots, 656]
  long long num_slots;
  const int* indices;      // [B*T, topk]
  int topk, q_len;
  __nv_bfloat16* out;      // [B*T, 16, 512]
  float* lse;              // [B*T, 16]
  float* ws_o;             // [B*T, splits, 16, 512]
  float* ws_ml;            // [B*T, splits, 2, 16]
  float scale_log2;
};

__device__ __forceinline__ unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool zero) {
  asm volatile("{\n .reg .pred z;\n setp.ne.b32 z, %2, 0;\n cp.async.cg.shared.global [%0], [%1], 16, z;\n}\n"
               ::"r"(smem_u32(dst)), "l"(src), "r"(static_cast<int>(zero)) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> e4m3 (x in the low byte), round to nearest, saturating.
__device__ __forceinline__ unsigned short e4m3x2(float x, float y) {
  return static_cast<unsigned short>(__nv_cvt_float2_to_fp8x2(make_float2(x, y), __NV_SATFINITE, __NV_E4M3));
}
__device__ __forceinline__ float2 from_e4m3x2(unsigned short v) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}
// Four floats (already scaled under 2^8) -> their hi and lo e4m3 parts, four bytes each (v0 lowest).
__device__ __forceinline__ void split4(float v0, float v1, float v2, float v3, unsigned& hi, unsigned& lo) {
  const unsigned short h01 = e4m3x2(v0, v1), h23 = e4m3x2(v2, v3);
  const float2 f01 = from_e4m3x2(h01), f23 = from_e4m3x2(h23);
  const unsigned short l01 = e4m3x2(v0 - f01.x, v1 - f01.y), l23 = e4m3x2(v2 - f23.x, v3 - f23.y);
  hi = static_cast<unsigned>(h01) | static_cast<unsigned>(h23) << 16;
  lo = static_cast<unsigned>(l01) | static_cast<unsigned>(l23) << 16;
}

// PATH_F16 (sm_90's native path): the e4m3 bytes become float16 pairs (exact, one conversion a
// pair) and the MMAs are m16n8k16 f16; q's latent run in float16 after the same power-of-two
// scaling (exact down to 2^-22 of its largest element), P x scale x 2^(8 - E) in float16.
#ifndef PATH_F16
#define PATH_F16 0
#endif
__device__ __forceinline__ unsigned f16x2_of_e4m3x2(unsigned pair) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair & 0xffffu), __NV_E4M3);
  return static_cast<unsigned>(h.x) | static_cast<unsigned>(h.y) << 16;
}
__device__ __forceinline__ unsigned f16x2(float x, float y) {
  const __half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ void mma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 32-bit words at `base` of rows +0, +1, +8, +9 (4 columns each), bytes interleaved by row
// pair: x0 = (row 0 col 0, row 1 col 0, row 0 col 1, row 1 col 1), x1 the same of cols 2, 3; y0,
// y1 of rows 8, 9.
__device__ __forceinline__ void paired_rows(const unsigned char* base, unsigned& x0, unsigned& x1, unsigned& y0,
                                            unsigned& y1) {
  const unsigned w0 = *reinterpret_cast<const unsigned*>(base);
  const unsigned w1 = *reinterpret_cast<const unsigned*>(base + ROW_BYTES);
  const unsigned w2 = *reinterpret_cast<const unsigned*>(base + 8 * ROW_BYTES);
  const unsigned w3 = *reinterpret_cast<const unsigned*>(base + 9 * ROW_BYTES);
  x0 = __byte_perm(w0, w1, 0x5140);
  x1 = __byte_perm(w0, w1, 0x7362);
  y0 = __byte_perm(w2, w3, 0x5140);
  y1 = __byte_perm(w2, w3, 0x7362);
}

// 2^k as a float (k in float-exponent range).
__device__ __forceinline__ float pow2(int k) { return __int_as_float((k + 127) << 23); }
// The smallest e with |x| < 2^e (x finite, nonzero); -126 for 0.
__device__ __forceinline__ int exponent_above(float x) {
  const int bits = __float_as_int(fabsf(x));
  return bits == 0 ? -126 : ((bits >> 23) & 0xff) - 126;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) fp8mma_sparse(const Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* stages = smem;
  int* slots_s = reinterpret_cast<int*>(smem + STAGES * STAGE_BYTES);
  float* scores = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES + STAGES * BLOCK_N * 4);

  const int split = blockIdx.y, splits = gridDim.y, bt = blockIdx.z;
  const int lane = threadIdx.x % 32, cg = threadIdx.x / 32, g = lane / 4, qd = lane % 4;
  const int* slots = p.indices + static_cast<long long>(bt) * p.topk;
  const int load_row = threadIdx.x / 4, load_lane = threadIdx.x % 4;

  // The split's entries [begin, end): whole 32-entry tiles.
  const int tiles = (p.topk + BLOCK_N - 1) / BLOCK_N, per = (tiles + splits - 1) / splits;
  const int begin = min(split * per * BLOCK_N, p.topk), end = min(begin + per * BLOCK_N, p.topk);
  const int num_tiles = (end - begin + BLOCK_N - 1) / BLOCK_N;

  auto fetch_slot = [&](int tile) {
    const int n = begin + tile * BLOCK_N + load_row;
    int s = n < end ? __ldg(slots + n) : -1;
    return (s < -1 || s >= p.num_slots) ? -2 : s;  // -2: bad (the prototype treats it as a hole)
  };
  auto gather = [&](int slot, int stage) {
    const unsigned char* src = p.kv + (slot >= 0 ? static_cast<long long>(slot) * ROW_BYTES : 0);
    unsigned char* dst = stages + stage * STAGE_BYTES + load_row * ROW_BYTES;
#pragma unroll
    for (int j = 0; j < (PIECES + 3) / 4; ++j) {
      const int piece = load_lane + 4 * j;
      if (piece < PIECES) cp_async16(dst + piece * 16, src + piece * 16, slot < 0);
    }
    if (load_lane == 0) slots_s[stage * BLOCK_N + load_row] = slot;
  };

  // q: this warp's latent run as hi/lo e4m3 A fragments (4 k32 steps), scaled per row by 2^qa[h];
  // its rope k16 step as bf16 A fragments.
  const __nv_bfloat16* q0 = p.q + (bt / p.q_len) * p.q_sb + (bt % p.q_len) * p.q_st;
#if PATH_F16
  unsigned qh[8][4], qr[4];
#else
  unsigned qhi[4][4], qlo[4][4], qr[4];
#endif
  float qinv[2];  // 2^-qa of rows g, g + 8
  {
    float v[2][4][2][4];  // [row half][ks][k half][4 values]
    float mx[2] = {0.f, 0.f};
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int kh = 0; kh < 2; ++kh) {
          const __nv_bfloat16* at = q0 + (g + 8 * h) * 576 + 128 * cg + 32 * ks + 16 * kh + 4 * qd;
          const uint2 w = __ldg(reinterpret_cast<const uint2*>(at));
          const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w.x));
          const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w.y));
          v[h][ks][kh][0] = a.x; v[h][ks][kh][1] = a.y; v[h][ks][kh][2] = b.x; v[h][ks][kh][3] = b.y;
#pragma unroll
          for (int e = 0; e < 4; ++e) mx[h] = fmaxf(mx[h], fabsf(v[h][ks][kh][e]));
        }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const int qa = 8 - exponent_above(mx[h]);  // |q| 2^qa < 2^8
      const float up = pow2(min(qa, 127));
      qinv[h] = pow2(max(-qa, -126));
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int kh = 0; kh < 2; ++kh)
#pragma unroll
          for (int e = 0; e < 4; ++e) v[h][ks][kh][e] *= up;
    }
#if PATH_F16
    // k16 step 2 ks + kh is dims 128 cg + 32 ks + 16 kh ..: its k slots 2qd, 2qd + 1 are dims
    // 4qd, 4qd + 1 and slots 2qd + 8, 2qd + 9 dims 4qd + 2, 4qd + 3 (the order K's bytes arrive in).
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int kh = 0; kh < 2; ++kh)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float* x = v[h][ks][kh];
          qh[2 * ks + kh][h] = f16x2(x[0], x[1]);
          qh[2 * ks + kh][h + 2] = f16x2(x[2], x[3]);
        }
#else
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int kh = 0; kh < 2; ++kh) {  // a[h + 2 kh]: row g + 8h, k 16 kh + 4qd ..
          const float* x = v[h][ks][kh];
          split4(x[0], x[1], x[2], x[3], qhi[ks][h + 2 * kh], qlo[ks][h + 2 * kh]);
        }
#endif
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int kh = 0; kh < 2; ++kh)
        qr[h + 2 * kh] = __ldg(reinterpret_cast<const unsigned*>(q0 + (g + 8 * h) * 576 + 512 + 16 * cg + 8 * kh + 2 * qd));
  }

  float o[4][4][4];  // [block][t][c]
#pragma unroll
  for (int b = 0; b < 4; ++b)
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int c = 0; c < 4; ++c) o[b][t][c] = 0.f;
  float m[2] = {-INF, -INF}, l[2] = {0.f, 0.f};
  int E = -110;  // 2^E >= every scale of group cg seen so far (2^-110 at least)

  // Prologue: STAGES - 1 tiles in flight.
  int next_slot;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_tiles) gather(fetch_slot(s), s);
    cp_commit();
  }
  next_slot = fetch_slot(STAGES - 1);

  for (int it = 0; it < num_tiles; ++it) {
    const int stage = it % STAGES;
    cp_wait<STAGES - 2>();
    __syncthreads();  // tile it landed for all; tile it - 1's stage and the scores are free
    {
      const int ahead = it + STAGES - 1;
      if (ahead < num_tiles) gather(next_slot, ahead % STAGES);
      cp_commit();
      next_slot = fetch_slot(ahead + 1);
    }
    const unsigned char* tile = stages + stage * STAGE_BYTES;
    const int* tile_slots = slots_s + stage * BLOCK_N;

    // q.K^T: the warp's latent run (e4m3, hi and lo into one accumulator) and rope step (bf16).
    float acc[4][4], rope[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[j][c] = rope[j][c] = 0.f;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int j = 0; j < 4; j += 2) {
        unsigned k[4];  // (j, dims +0..15), (j, +16..31), (j + 1, ..), (j + 1, ..)
        ldsm_x4(k, tile + (8 * (j + lane / 16) + lane % 8) * ROW_BYTES + 128 * cg + 32 * ks + 16 * ((lane / 8) % 2));
#if PATH_F16
#pragma unroll
        for (int m2 = 0; m2 < 4; ++m2) {  // matrix m2: n-tile j + m2 / 2, k16 step 2 ks + m2 % 2
          mma_f16(acc[j + m2 / 2], qh[2 * ks + m2 % 2], f16x2_of_e4m3x2(k[m2]), f16x2_of_e4m3x2(k[m2] >> 16));
        }
#else
        mma_e4m3(acc[j], qhi[ks], k[0], k[1]);
        mma_e4m3(acc[j], qlo[ks], k[0], k[1]);
        mma_e4m3(acc[j + 1], qhi[ks], k[2], k[3]);
        mma_e4m3(acc[j + 1], qlo[ks], k[2], k[3]);
#endif
      }
#pragma unroll
    for (int j = 0; j < 4; j += 2) {
      unsigned k[4];
      ldsm_x4(k, tile + (8 * (j + lane / 16) + lane % 8) * ROW_BYTES + ROPE_AT + 32 * cg + 16 * ((lane / 8) % 2));
      mma_bf16(rope[j], qr, k[0], k[1]);
      mma_bf16(rope[j + 1], qr, k[2], k[3]);
    }
    // This warp's partial scores: latent x 2^-qa x scale(position, group cg) + rope.
    float sc[4][2];  // scales of positions 8j + 2qd + c
    float* mine = scores + cg * HEADS * S_STRIDE;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c)
        sc[j][c] = *reinterpret_cast<const float*>(tile + (8 * j + 2 * qd + c) * ROW_BYTES + SCALES_AT + 4 * cg);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float x = fmaf(acc[j][2 * h] * qinv[h], sc[j][0], rope[j][2 * h]);
        const float y = fmaf(acc[j][2 * h + 1] * qinv[h], sc[j][1], rope[j][2 * h + 1]);
        *reinterpret_cast<float2*>(mine + (g + 8 * h) * S_STRIDE + 8 * j + 2 * qd) = make_float2(x, y);
      }
    }
    __syncthreads();  // every warp's partials

    // Whole scores of all 16 rows (every warp), masked; online softmax.
    float s[4][4];  // [j][c]: row g (c 0, 1), row g + 8 (c 2, 3); positions 8j + 2qd + (c & 1)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int2 sl = *reinterpret_cast<const int2*>(tile_slots + 8 * j + 2 * qd);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float2 sum = make_float2(0.f, 0.f);
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
          const float2 v = *reinterpret_cast<const float2*>(scores + w * HEADS * S_STRIDE + (g + 8 * h) * S_STRIDE + 8 * j + 2 * qd);
          sum.x += v.x;
          sum.y += v.y;
        }
        s[j][2 * h] = sl.x >= 0 ? sum.x * p.scale_log2 : -INF;
        s[j][2 * h + 1] = sl.y >= 0 ? sum.y * p.scale_log2 : -INF;
      }
    }
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = m[h];
#pragma unroll
      for (int j = 0; j < 4; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float ref = mx == -INF ? 0.f : mx;
      alpha[h] = exp2f(m[h] - ref);  // 0 when m was -inf
      m[h] = mx;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[j][2 * h] = exp2f(s[j][2 * h] - ref);
        s[j][2 * h + 1] = exp2f(s[j][2 * h + 1] - ref);
        l[h] = fmaf(l[h], j == 0 ? alpha[h] : 1.f, s[j][2 * h] + s[j][2 * h + 1]);
      }
    }
    // The scale bound of group cg over this tile; a rise rescales O.
    float smax = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) smax = fmaxf(smax, fmaxf(sc[j][0], sc[j][1]));
    smax = fmaxf(smax, __shfl_xor_sync(0xffffffffu, smax, 1));
    smax = fmaxf(smax, __shfl_xor_sync(0xffffffffu, smax, 2));
    const int e_new = max(E, max(exponent_above(smax), -110));  // 2^(8 - E) stays a float
    const float drop = pow2(max(E - e_new, -126));
    E = e_new;
    const float up = pow2(8 - E);
    if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f || drop != 1.f))
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float f = alpha[h] * drop;
#pragma unroll
      for (int b = 0; b < 4; ++b)
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          o[b][t][2 * h] *= f;
          o[b][t][2 * h + 1] *= f;
        }
    }
#if PATH_F16
    // P x scale x 2^(8 - E) as float16 A fragments (k step kk: n-tiles 2 kk, 2 kk + 1, natural order).
    unsigned pa[2][4];
#pragma unroll
    for (int kk = 0; kk < 2; ++kk)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int j = 2 * kk + jj;
          pa[kk][h + 2 * jj] = f16x2(s[j][2 * h] * sc[j][0] * up, s[j][2 * h + 1] * sc[j][1] * up);
        }
    // P.V: V's k16 step kk from rows 16 kk + 2qd, + 1, + 8, + 9, bytes paired by a permute.
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) {
        unsigned x0, x1, y0, y1;
        paired_rows(tile + (16 * kk + 2 * qd) * ROW_BYTES + 128 * cg + 32 * b + 4 * g, x0, x1, y0, y1);
        const unsigned xs[4] = {x0, x0 >> 16, x1, x1 >> 16}, ys[4] = {y0, y0 >> 16, y1, y1 >> 16};
#pragma unroll
        for (int t = 0; t < 4; ++t) mma_f16(o[b][t], pa[kk], f16x2_of_e4m3x2(xs[t]), f16x2_of_e4m3x2(ys[t]));
      }
#else
    // P x scale x 2^(8 - E) as hi/lo A fragments in the permuted k order.
    unsigned phi[4], plo[4];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int kh = 0; kh < 2; ++kh) {  // a[h + 2 kh]: n-tiles j = 2 kh, 2 kh + 1
        const int j0 = 2 * kh, j1 = 2 * kh + 1;
        split4(s[j0][2 * h] * sc[j0][0] * up, s[j0][2 * h + 1] * sc[j0][1] * up, s[j1][2 * h] * sc[j1][0] * up,
               s[j1][2 * h + 1] * sc[j1][1] * up, phi[h + 2 * kh], plo[h + 2 * kh]);
      }
    // P.V: V fragments by 4 x 4 byte transposes of 32-bit loads from the positions of k.
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      unsigned bf[2][4];  // [k half][t]
#pragma unroll
      for (int kh = 0; kh < 2; ++kh) {
        unsigned x0, x1, y0, y1;
        paired_rows(tile + (16 * kh + 2 * qd) * ROW_BYTES + 128 * cg + 32 * b + 4 * g, x0, x1, y0, y1);
        bf[kh][0] = __byte_perm(x0, y0, 0x5410);
        bf[kh][1] = __byte_perm(x0, y0, 0x7632);
        bf[kh][2] = __byte_perm(x1, y1, 0x5410);
        bf[kh][3] = __byte_perm(x1, y1, 0x7632);
      }
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        mma_e4m3(o[b][t], phi, bf[0][t], bf[1][t]);
        mma_e4m3(o[b][t], plo, bf[0][t], bf[1][t]);
      }
    }
#endif
  }
  cp_wait<0>();

  // Results. O x 2^(E - 8) is the split's unnormalised output.
  const float down = pow2(max(E - 8, -126));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int r = g + 8 * h;
    const long long row = static_cast<long long>(bt) * HEADS + r;
    if (splits == 1) {
      const bool seen = m[h] != -INF;
      const float inv = seen ? down / sum : 0.f;
      __nv_bfloat16* dst = p.out + row * 512 + 128 * cg;
#pragma unroll
      for (int b = 0; b < 4; ++b)
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int c = 0; c < 2; ++c) dst[32 * b + 4 * (2 * qd + c) + t] = __float2bfloat16(o[b][t][2 * h + c] * inv);
      if (cg == 0 && qd == 0) p.lse[row] = seen ? (m[h] + log2f(sum)) * 0.6931471805599453f : -INF;
    } else {
      const long long slot = (static_cast<long long>(bt) * splits + split);
      float* dst = p.ws_o + (slot * HEADS + r) * 512 + 128 * cg;
#pragma unroll
      for (int b = 0; b < 4; ++b)
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int c = 0; c < 2; ++c) dst[32 * b + 4 * (2 * qd + c) + t] = o[b][t][2 * h + c] * down;
      if (cg == 0 && qd == 0) {
        p.ws_ml[slot * 2 * HEADS + r] = m[h];
        p.ws_ml[slot * 2 * HEADS + HEADS + r] = sum;
      }
    }
  }
}
