// bench/cluster_probe.py's kernels. probe_merge: each block of a (1, SPLITS, 1) cluster holds a
// split's partial (ROWS x 512 float32 output rows, their max m and sum l) in shared memory, as the
// sparse kernel's epilogue would; with MERGE the cluster merges them through distributed shared
// memory (each block the ROWS x 512/SPLITS columns of its rank, read from every block) and writes
// out; without, each block writes its partial to global memory as the split-KV path does now.
#ifndef ROWS
#define ROWS 16
#endif
#define COLS 512

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_size() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned remote(const void* p, unsigned rank) {
  unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p)), out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(local), "r"(rank));
  return out;
}
__device__ __forceinline__ float4 ld_remote4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ float ld_remote(unsigned addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}

extern "C" __global__ void __launch_bounds__(256, 1) probe_merge(float* out, float* partials, int merge) {
  extern __shared__ __align__(16) float sm[];
  float* o = sm;                  // ROWS x COLS
  float* ml = sm + ROWS * COLS;   // m[ROWS], l[ROWS]
  const unsigned split = blockIdx.y, splits = gridDim.y;
  for (int i = threadIdx.x; i < ROWS * COLS; i += blockDim.x) o[i] = split + i * 1e-3f;
  if (threadIdx.x < ROWS) {
    ml[threadIdx.x] = 0.25f * split;
    ml[ROWS + threadIdx.x] = 1.f + split;
  }
  const long long head_base = static_cast<long long>(blockIdx.x) * ROWS * COLS;
  if (!merge) {  // as now: the partial to global memory
    __syncthreads();
    float4* dst = reinterpret_cast<float4*>(partials + (head_base * splits) + split * ROWS * COLS);
    for (int i = threadIdx.x; i < ROWS * COLS / 4; i += blockDim.x) dst[i] = reinterpret_cast<const float4*>(o)[i];
    return;
  }
  cluster_sync();  // every partial in its block's shared memory
  const unsigned rank = cluster_rank(), n = cluster_size();
  const int cols = COLS / n, quads = cols / 4;
  for (int e = threadIdx.x; e < ROWS * quads; e += blockDim.x) {
    const int r = e / quads, c = rank * cols + (e % quads) * 4;
    float mx = -__int_as_float(0x7f800000);
    for (unsigned s = 0; s < n; ++s) mx = fmaxf(mx, ld_remote(remote(ml + r, s)));
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    float l = 0.f;
    for (unsigned s = 0; s < n; ++s) {
      const float w = exp2f(ld_remote(remote(ml + r, s)) - mx);
      l += w * ld_remote(remote(ml + ROWS + r, s));
      const float4 v = ld_remote4(remote(o + r * COLS + c, s));
      acc.x += w * v.x; acc.y += w * v.y; acc.z += w * v.z; acc.w += w * v.w;
    }
    const float inv = 1.f / l;
    *reinterpret_cast<float4*>(out + head_base + r * COLS + c) = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
  }
  cluster_sync();  // no block leaves while others read its shared memory
}
