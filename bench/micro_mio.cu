// Kernels of bench/micro_mio.py (one per MODE; the entry points are appended there).
#include <cuda_bf16.h>
__device__ __forceinline__ unsigned movm(unsigned a) {
  unsigned d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}
__device__ __forceinline__ void ldsm4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm4t(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// MODE: 0 movm x8 | 1 ldsm.x4 x2 | 2 ldsm.x4.trans x2 | 3 shfl x8 | 4 mma x8 | 5 mma x8 + movm x8
//       6 mma x8 + ldsm.x4.trans x2 | 7 mma x8 + movm x4 | 8 mma x8 + ldsm.x4 x1
//       9 mma x8 + ldsm.x4 x2 | 10 mma x8 + ldsm.x4.trans x1 | 11 mma x8 + ldsm.x4 x2 + movm x8
// (bench/micro_feed.py measures mma fed by the loads it consumes.)
template <int MODE>
__device__ void body(unsigned long long* cycles, unsigned* sink, int iters) {
  __shared__ __align__(16) unsigned short tile[64 * 64];
  const int lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) tile[i] = i;
  __syncthreads();
  const int w = threadIdx.x / 32;
  const unsigned base = (unsigned)__cvta_generic_to_shared(tile) + ((lane % 8) * 64 + (lane / 8) * 8 + (w % 4) * 64 * 8) * 2;
  unsigned r[8];
  for (int j = 0; j < 8; ++j) r[j] = threadIdx.x * 2654435761u + j;
  float acc[8][4] = {};
  unsigned a[4] = {r[0], r[1], r[2], r[3]};
  unsigned l[4];
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    if (MODE == 0 || MODE == 5) {
#pragma unroll
      for (int j = 0; j < 8; ++j) r[j] = movm(r[j]);
    }
    if (MODE == 11) {
#pragma unroll
      for (int j = 0; j < 8; ++j) r[j] = movm(r[j]);
    }
    if (MODE == 7) {
#pragma unroll
      for (int j = 0; j < 4; ++j) r[j] = movm(r[j]);
    }
    if (MODE == 1 || MODE == 2 || MODE == 6 || MODE == 8 || (MODE >= 9 && MODE <= 11)) {
#pragma unroll
      for (int j = 0; j < (MODE == 8 || MODE == 10 ? 1 : 2); ++j) {
        const unsigned at = base + j * 16 * 64 * 2 + (it & 1) * 32;
        if (MODE == 1 || MODE == 8 || MODE == 9 || MODE == 11) ldsm4(l, at);
        else ldsm4t(l, at);
        r[4 * j] ^= l[0]; r[4 * j + 1] ^= l[1]; r[4 * j + 2] ^= l[2]; r[4 * j + 3] ^= l[3];
      }
    }
    if (MODE == 3) {
#pragma unroll
      for (int j = 0; j < 8; ++j) r[j] = __shfl_xor_sync(0xffffffffu, r[j], 1 + j % 4);
    }
    if (MODE >= 4) {
#pragma unroll
      for (int j = 0; j < 8; ++j) mma(acc[j], a, a[j % 4], a[(j + 1) % 4]);  // independent of the loads
    }
  }
  const long long t1 = clock64();
  unsigned x = 0;
  for (int j = 0; j < 8; ++j) x ^= r[j] ^ __float_as_uint(acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = x;
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}
