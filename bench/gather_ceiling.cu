// What the sparse family's gathers can reach on this GPU: every listed cache row of every query
// token read once with 16-byte loads and folded into one XOR (nothing else: no math, no shared
// memory, no stores but one guarded word). Set by bench/gather_ceiling.py: CHUNKS (16-byte pieces
// of a row: 41 for the 656-byte fp8 row), UNROLL (loads, or rows, a thread has in flight), LISTED
// (0: each token's entries read from consecutive rows token * topk + entry instead, the same
// bytes streamed, for comparison) and WARP_ROWS (how the entries are dealt, below).
//
// Block (split, token) reads listed entries [split * per, (split + 1) * per) of that token's list.
// WARP_ROWS = 0: the (entry, chunk) pairs flattened and dealt to the block's threads in turn.
// WARP_ROWS = 1: a warp reads whole rows, UNROLL of them at once (lane l: chunks l and l + 32).

__device__ __forceinline__ int row_of(const int* list, int token, int topk, int entry) {
  return LISTED ? __ldg(list + entry) : token * topk + entry;
}

extern "C" __global__ void __launch_bounds__(1024) gather_rows(const uint4* __restrict__ cache,
                                                               const int* __restrict__ indices, int topk,
                                                               unsigned* __restrict__ sink) {
  const int token = blockIdx.y;
  const int* list = indices + static_cast<long long>(token) * topk;
  const int per = (topk + gridDim.x - 1) / gridDim.x;
  const int first = blockIdx.x * per, last = min(topk, first + per);
  unsigned acc = 0u;
  if (WARP_ROWS) {
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int base = first + threadIdx.x / 32; base < last; base += warps * UNROLL) {
      uint4 v[UNROLL][2];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int entry = base + u * warps;
        const int row = entry < last ? row_of(list, token, topk, entry) : -1;
        const uint4* src = cache + static_cast<long long>(row) * CHUNKS;
        v[u][0] = row >= 0 ? __ldg(src + lane) : make_uint4(0u, 0u, 0u, 0u);
        v[u][1] = row >= 0 && lane + 32 < CHUNKS ? __ldg(src + lane + 32) : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int h = 0; h < 2; ++h) acc ^= v[u][h].x ^ v[u][h].y ^ v[u][h].z ^ v[u][h].w;
    }
  } else {
    const int pairs = (last - first) * CHUNKS;
    for (int base = threadIdx.x; base < pairs; base += blockDim.x * UNROLL) {
      uint4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int pair = base + u * blockDim.x;
        v[u] = make_uint4(0u, 0u, 0u, 0u);
        if (pair < pairs) {
          const int row = row_of(list, token, topk, first + pair / CHUNKS);
          if (row >= 0) v[u] = __ldg(cache + static_cast<long long>(row) * CHUNKS + pair % CHUNKS);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; (almost) never taken
}
