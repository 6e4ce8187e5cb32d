// Kernels of bench/micro_feed.py: mma.sync m16n8k16 fed with B fragments from shared memory, the
// way the row path feeds q.K^T (one m16 tile a warp: one MMA per B fragment), per MODE:
//   0 ldmatrix.x4 x4 -> mma x8 | 1 ld.shared.v4 x4 -> mma x8 | 2 mma x8 (B in registers)
//   3 ldmatrix.x4 x4 alone     | 4 ld.shared.v4 x4 alone     | 5 ldmatrix.x4.trans x4 -> mma x8
//   6 ldmatrix.x4 x4 -> movmatrix x16 -> mma x8
// A 16 KB tile of 128-byte rows, 16-byte chunks XOR-swizzled by row (conflict-free for both load
// kinds); each iteration reads the next 2 KB block (16 rows x 64 dims).
#include <cuda_bf16.h>
__device__ __forceinline__ unsigned movm(unsigned a) {
  unsigned d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}
template <bool TRANS>
__device__ __forceinline__ void ldsm4(unsigned (&r)[4], unsigned addr) {
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void lds4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned swz(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) * 16); }

template <int MODE>
__device__ void body(unsigned long long* cycles, unsigned* sink, int iters) {
  __shared__ __align__(128) unsigned short tile[8192];
  const int lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) tile[i] = (unsigned short)(i * 7);
  __syncthreads();
  const unsigned smem = (unsigned)__cvta_generic_to_shared(tile);
  // ldmatrix.x4: lanes 8m..8m+7 give the rows of matrix m: (n 0-7 | 8-15) x (k chunk 0 | 1)
  unsigned ldsm_at[4], lds_at[4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int m = lane / 8, row = lane % 8 + 8 * (m / 2), chunk = 2 * (kk % 2) + m % 2 + 4 * (kk / 2);
    ldsm_at[kk] = smem + swz(row, chunk);
    // ld.shared.v4: thread (g, qd) reads row g (+8 for kk odd), chunk 2 * qd + kk / 2
    lds_at[kk] = smem + swz(lane / 4 + 8 * (kk % 2), 2 * (lane % 4) + kk / 2);
  }
  unsigned a[4];
  for (int j = 0; j < 4; ++j) a[j] = threadIdx.x * 2654435761u + j;
  unsigned b[16];
  for (int j = 0; j < 16; ++j) b[j] = threadIdx.x * 40503u + j;
  float acc[8][4] = {};
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    const unsigned block = (it % 8) * 2048;
    if (MODE == 0 || MODE == 3 || MODE == 6) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        unsigned r[4];
        ldsm4<false>(r, ldsm_at[kk] + block);
#pragma unroll
        for (int e = 0; e < 4; ++e) b[4 * kk + e] = MODE == 3 ? b[4 * kk + e] ^ r[e] : r[e];
      }
    } else if (MODE == 1 || MODE == 4) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        unsigned r[4];
        lds4(r, lds_at[kk] + block);
#pragma unroll
        for (int e = 0; e < 4; ++e) b[4 * kk + e] = MODE == 4 ? b[4 * kk + e] ^ r[e] : r[e];
      }
    } else if (MODE == 5) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        unsigned r[4];
        ldsm4<true>(r, ldsm_at[kk] + block);
#pragma unroll
        for (int e = 0; e < 4; ++e) b[4 * kk + e] = r[e];
      }
    }
    if (MODE == 6) {
#pragma unroll
      for (int j = 0; j < 16; ++j) b[j] = movm(b[j]);
    }
    if (MODE != 3 && MODE != 4) {
#pragma unroll
      for (int j = 0; j < 8; ++j) mma(acc[j], a, b[2 * j], b[2 * j + 1]);
    }
  }
  const long long t1 = clock64();
  unsigned x = 0;
  for (int j = 0; j < 16; ++j) x ^= b[j];
  for (int j = 0; j < 8; ++j) x ^= __float_as_uint(acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = x;
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}
