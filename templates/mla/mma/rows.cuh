// How a tensor-core warp's output fragments become a row's results, in both families (dense and
// sparse): out and lse where a split is the whole row, else the split's slot of the workspace
// (mla/combine.cuh's layout). Included after the family's T, Mma, O_TILES, Lane, out_row, lse_at
// and Finish.

namespace mla {

// Row r's results from this thread's output fragments o[i] (half h of the m16 tile): out/lse with
// one split, else its slot of the workspace. QUADS: the fragments hold four consecutive dims a lane
// and chunk of 16 (tiles 2m and 2m + 1: dims 16m + 4qd, + 1, + 2, + 3 as o[2m][2h], o[2m + 1][2h],
// o[2m][2h + 1], o[2m + 1][2h + 1]; the dense fp8 fragments' order, mla/mma/fp8_tiles.cuh).
template <bool QUADS = false>
__device__ __forceinline__ void write_row(const Params& p, int b, int r, long long slot, int num_splits, const Finish& fin,
                                          const float (&o)[O_TILES][4], int h, const Lane& ln) {
  // One address a row, the output tiles at immediate offsets from it (an address computed a
  // store cost the B = 1 kernels ~60 instructions a warp); the workspace row as a 32-bit offset
  // from the split's first row.
  const int d0 = ln.cg * O_TILES * 8 + (QUADS ? 4 : 2) * ln.qd;
  QT* const dst = out_row(p, b, r) + d0;
  float* const ws = p.ws_o + slot * LATENT_DIM + (r * LATENT_DIM + d0);
  if constexpr (QUADS) {
#pragma unroll
    for (int m = 0; m < O_TILES / 2; ++m) {
      const float4 x = make_float4(fin.apply(o[2 * m][2 * h]), fin.apply(o[2 * m + 1][2 * h]),
                                   fin.apply(o[2 * m][2 * h + 1]), fin.apply(o[2 * m + 1][2 * h + 1]));
      if (num_splits == 1) {
        *reinterpret_cast<uint2*>(dst + 16 * m) = make_uint2(kgen::MmaType<QT>::pack(x.x, x.y), kgen::MmaType<QT>::pack(x.z, x.w));
      } else {
        *reinterpret_cast<float4*>(ws + 16 * m) = x;
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < O_TILES; ++j) {
      const float x = fin.apply(o[j][2 * h]), y = fin.apply(o[j][2 * h + 1]);
      if (num_splits == 1) *reinterpret_cast<unsigned*>(dst + 8 * j) = kgen::MmaType<QT>::pack(x, y);
      else *reinterpret_cast<float2*>(ws + 8 * j) = make_float2(x, y);
    }
  }
  if (ln.cg == 0 && ln.qd == 0) {
    if (num_splits == 1) *lse_at(p, b, r) = fin.lse();
    else p.ws_lse[slot + r] = fin.lse();
  }
}

}  // namespace mla
