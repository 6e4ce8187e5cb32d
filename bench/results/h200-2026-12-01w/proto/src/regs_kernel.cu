// Prototype (not a kgen template): MLA decode, tensor-core path with the KV tile in registers.
// Each warp loads its own slice of a 16-position tile straight from global memory (LDG.128, in
// the dims order q.K^T's B fragments want, q permuted to match), and gets P.V's V fragments from
// the same registers with movmatrix (an 8x8 transpose across the warp) instead of staging the
// tile in shared memory (cp.async + ldmatrix + ldmatrix.trans). Shared memory carries only the
// partial scores. 16 rows (heads) per block, 4 warps: warp w owns latent columns 128w..128w+127
// (q.K^T dims and P.V output) and rope dims 512+16w..+15. MASK_NONE, q_len 1, page size PAGE.
#include <cuda_bf16.h>


#ifndef PAGE
#define PAGE 64
#endif
#ifndef AHEAD
#define AHEAD 1
#endif
constexpr int D = 576, DL = 512, ROWS = 16, WARPS = 4;
constexpr float THRESH = 8.0f;
#define INFINITY __int_as_float(0x7f800000)

__device__ __forceinline__ unsigned movm(unsigned a) {
  unsigned d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}
__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint4 ldg4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ldg2(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ unsigned word(const uint4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }

struct Tile {
  uint4 k[2][4];  // [position group][32-dim chunk]: K[pos 8pg + g][128w + 32c + 8t .. +7]
  uint2 r[2];     // [position group]: K[pos][512 + 16w + 4t .. +3]
};

__device__ __forceinline__ void load_tile(Tile& tile, const __nv_bfloat16* kv, const int* table, int pos0, int end, int w, int g, int t) {
#pragma unroll
  for (int pg = 0; pg < 2; ++pg) {
    const int pos = pos0 + 8 * pg + g;
    if (pos < end) {
      const __nv_bfloat16* row = kv + ((size_t)table[pos / PAGE] * PAGE + pos % PAGE) * D;
#pragma unroll
      for (int c = 0; c < 4; ++c) tile.k[pg][c] = ldg4(row + 128 * w + 32 * c + 8 * t);
      tile.r[pg] = ldg2(row + DL + 16 * w + 4 * t);
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) tile.k[pg][c] = make_uint4(0, 0, 0, 0);
      tile.r[pg] = make_uint2(0, 0);
    }
  }
}

// grid (splits, H / 16, B); partials ws_o [B][H/16][splits][16][512] (normalised), ws_lse [..][16] (log2)
extern "C" __global__ void __launch_bounds__(128, 2)
regs_attention(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv,
               const int* __restrict__ block_table, const int* __restrict__ seq_lens,
               float* __restrict__ ws_o, float* __restrict__ ws_lse,
               int heads, int max_pages, int split_len, float scale_log2) {
  __shared__ __align__(16) float4 spart[2][WARPS][32][2];
  const int split = blockIdx.x, hg = blockIdx.y, b = blockIdx.z, splits = gridDim.x;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int len = seq_lens[b];
  const int start = split * split_len, end = min(len, start + split_len);
  const int* table = block_table + (size_t)b * max_pages;

  // q fragments (virtual k steps: chunk c's A = dims 8t..8t+3, B = 8t+4..8t+7 of 32; rope 4t..4t+3)
  unsigned qa[8][4], qr[4];
  {
    const __nv_bfloat16* q0 = q + ((size_t)b * heads + hg * ROWS + g) * D;
    const __nv_bfloat16* q1 = q0 + 8 * D;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint4 x = *reinterpret_cast<const uint4*>(q0 + 128 * w + 32 * c + 8 * t);
      const uint4 y = *reinterpret_cast<const uint4*>(q1 + 128 * w + 32 * c + 8 * t);
      qa[2 * c][0] = x.x; qa[2 * c][1] = y.x; qa[2 * c][2] = x.y; qa[2 * c][3] = y.y;
      qa[2 * c + 1][0] = x.z; qa[2 * c + 1][1] = y.z; qa[2 * c + 1][2] = x.w; qa[2 * c + 1][3] = y.w;
    }
    const uint2 x = *reinterpret_cast<const uint2*>(q0 + DL + 16 * w + 4 * t);
    const uint2 y = *reinterpret_cast<const uint2*>(q1 + DL + 16 * w + 4 * t);
    qr[0] = x.x; qr[1] = y.x; qr[2] = x.y; qr[3] = y.y;
  }
  float o[4][4][4];
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[c][j][e] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows g, g + 8

  const int tiles = end > start ? (end - start + 15) / 16 : 0;
  Tile buf[AHEAD + 1];
#pragma unroll
  for (int a = 0; a < AHEAD; ++a)
    if (a < tiles) load_tile(buf[a], kv, table, start + 16 * a, end, w, g, t);

  for (int it0 = 0; it0 < tiles; it0 += AHEAD + 1) {
#pragma unroll
    for (int u = 0; u <= AHEAD; ++u) {
      const int it = it0 + u;
      if (it >= tiles) break;
      Tile& cur = buf[u];
      // issue the load AHEAD tiles on into the buffer freed last tile
      if (it + AHEAD < tiles) load_tile(buf[(u + AHEAD) % (AHEAD + 1)], kv, table, start + 16 * (it + AHEAD), end, w, g, t);
      const int pos0 = start + 16 * it;
      float s[2][4] = {};
#pragma unroll
      for (int pg = 0; pg < 2; ++pg) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          mma(s[pg], qa[2 * c][0], qa[2 * c][1], qa[2 * c][2], qa[2 * c][3], cur.k[pg][c].x, cur.k[pg][c].y);
          mma(s[pg], qa[2 * c + 1][0], qa[2 * c + 1][1], qa[2 * c + 1][2], qa[2 * c + 1][3], cur.k[pg][c].z, cur.k[pg][c].w);
        }
        mma(s[pg], qr[0], qr[1], qr[2], qr[3], cur.r[pg].x, cur.r[pg].y);
      }
      float4 (*part)[32][2] = spart[it & 1];
      part[w][lane][0] = make_float4(s[0][0], s[0][1], s[0][2], s[0][3]);
      part[w][lane][1] = make_float4(s[1][0], s[1][1], s[1][2], s[1][3]);
      __syncthreads();
      float x[2][4] = {};
#pragma unroll
      for (int v = 0; v < WARPS; ++v) {
#pragma unroll
        for (int pg = 0; pg < 2; ++pg) {
          const float4 p = part[v][lane][pg];
          x[pg][0] += p.x; x[pg][1] += p.y; x[pg][2] += p.z; x[pg][3] += p.w;
        }
      }
      // softmax (log2 units); positions past the end are -inf
#pragma unroll
      for (int pg = 0; pg < 2; ++pg)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int pos = pos0 + 8 * pg + 2 * t + (e & 1);
          x[pg][e] = pos < end ? x[pg][e] * scale_log2 : -INFINITY;
        }
      float t0 = fmaxf(fmaxf(x[0][0], x[0][1]), fmaxf(x[1][0], x[1][1]));
      float t1 = fmaxf(fmaxf(x[0][2], x[0][3]), fmaxf(x[1][2], x[1][3]));
      t0 = fmaxf(t0, __shfl_xor_sync(0xffffffffu, t0, 1)); t0 = fmaxf(t0, __shfl_xor_sync(0xffffffffu, t0, 2));
      t1 = fmaxf(t1, __shfl_xor_sync(0xffffffffu, t1, 1)); t1 = fmaxf(t1, __shfl_xor_sync(0xffffffffu, t1, 2));
      const bool up0 = t0 > m0 + THRESH, up1 = t1 > m1 + THRESH;
      if (__any_sync(0xffffffffu, up0 || up1)) {
        const float n0 = up0 ? t0 : m0, n1 = up1 ? t1 : m1;
        const float a0 = m0 == -INFINITY ? 0.f : exp2f(m0 - n0), a1 = m1 == -INFINITY ? 0.f : exp2f(m1 - n1);
        m0 = n0; m1 = n1; l0 *= a0; l1 *= a1;
#pragma unroll
        for (int c = 0; c < 4; ++c)
#pragma unroll
          for (int j = 0; j < 4; ++j) { o[c][j][0] *= a0; o[c][j][1] *= a0; o[c][j][2] *= a1; o[c][j][3] *= a1; }
      }
      const float s0 = m0 == -INFINITY ? 0.f : m0, s1 = m1 == -INFINITY ? 0.f : m1;
      float p[2][4];
#pragma unroll
      for (int pg = 0; pg < 2; ++pg) {
        p[pg][0] = exp2f(x[pg][0] - s0); p[pg][1] = exp2f(x[pg][1] - s0);
        p[pg][2] = exp2f(x[pg][2] - s1); p[pg][3] = exp2f(x[pg][3] - s1);
        l0 += p[pg][0] + p[pg][1]; l1 += p[pg][2] + p[pg][3];
      }
      const unsigned pa0 = pack(p[0][0], p[0][1]), pa1 = pack(p[0][2], p[0][3]);
      const unsigned pa2 = pack(p[1][0], p[1][1]), pa3 = pack(p[1][2], p[1][3]);
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma(o[c][j], pa0, pa1, pa2, pa3, movm(word(cur.k[0][c], j)), movm(word(cur.k[1][c], j)));
    }
  }
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1); l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1); l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  const float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
  const size_t base = (((size_t)b * gridDim.y + hg) * splits + split) * ROWS;
  float* o0 = ws_o + (base + g) * DL + 128 * w + 8 * t;
  float* o1 = o0 + 8 * DL;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    float4* d0 = reinterpret_cast<float4*>(o0 + 32 * c);
    float4* d1 = reinterpret_cast<float4*>(o1 + 32 * c);
    d0[0] = make_float4(o[c][0][0] * i0, o[c][0][1] * i0, o[c][1][0] * i0, o[c][1][1] * i0);
    d0[1] = make_float4(o[c][2][0] * i0, o[c][2][1] * i0, o[c][3][0] * i0, o[c][3][1] * i0);
    d1[0] = make_float4(o[c][0][2] * i1, o[c][0][3] * i1, o[c][1][2] * i1, o[c][1][3] * i1);
    d1[1] = make_float4(o[c][2][2] * i1, o[c][2][3] * i1, o[c][3][2] * i1, o[c][3][3] * i1);
  }
  if (w == 0 && t == 0) {
    ws_lse[base + g] = l0 > 0.f ? m0 + log2f(l0) : -INFINITY;
    ws_lse[base + g + 8] = l1 > 0.f ? m1 + log2f(l1) : -INFINITY;
  }
}
