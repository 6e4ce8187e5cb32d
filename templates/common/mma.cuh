// Tensor-core fragment helpers: ldmatrix, mma.sync m16n8k16 (16-bit inputs, fp32 accumulators)
// and bf16/f16 packing (each family issues its own cp.async). Only instructions sm_80, sm_90 and
// sm_120 all have.
//
// Fragment layouts of mma.m16n8k16 (g = lane / 4, q = lane % 4):
//   A 16x16 (row-major): a[0] = (row g, cols 2q..2q+1), a[1] = (row g+8, same cols),
//                        a[2] = (row g, cols 2q+8..),  a[3] = (row g+8, cols 2q+8..)
//   B 16x8  (col-major): b[0] = (k 2q..2q+1, col g),   b[1] = (k 2q+8.., col g)
//   C 16x8  (fp32):      c[0..1] = (row g, cols 2q..2q+1), c[2..3] = (row g+8, same cols)

namespace kgen {

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i receives it.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

// Two 8x8 b16 matrices (lanes 0..15 give the row addresses).
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 { %0, %1 }, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_address(row)));
}

// The same, each matrix transposed (B fragments of a row-major [k][n] tile).
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 { %0, %1, %2, %3 }, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

template <typename T> struct MmaType;
template <> struct MmaType<__nv_bfloat16> {
  __device__ __forceinline__ static void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, "
        "{ %8, %9 }, { %0, %1, %2, %3 };\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static unsigned pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  }
  __device__ __forceinline__ static float2 unpack(unsigned x) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
  }
  static constexpr unsigned short EXPONENT = 0x7f80;  // all ones: Inf or NaN
};
template <> struct MmaType<__half> {
  __device__ __forceinline__ static void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, "
        "{ %8, %9 }, { %0, %1, %2, %3 };\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static unsigned pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  }
  __device__ __forceinline__ static float2 unpack(unsigned x) {
    return __half22float2(*reinterpret_cast<const __half2*>(&x));
  }
  static constexpr unsigned short EXPONENT = 0x7c00;
};

// Whether any of the eight 16-bit values in a 16-byte word is Inf or NaN.
template <typename T>
__device__ __forceinline__ bool any_nonfinite(uint4 w) {
  const unsigned e = MmaType<T>::EXPONENT;
  bool bad = false;
  const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) bad |= ((words[i] & e) == e) || (((words[i] >> 16) & e) == e);
  return bad;
}

// Whether any of the sixteen e4m3 values in a 16-byte word is NaN (0x7f or 0xff; e4m3 has no Inf):
// a byte's low seven bits plus one carry into its top bit only from 0x7f.
__device__ __forceinline__ bool any_e4m3_nan(uint4 w) {
  const unsigned words[4] = {w.x, w.y, w.z, w.w};
  unsigned hit = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) hit |= (words[i] & 0x7f7f7f7fu) + 0x01010101u;
  return (hit & 0x80808080u) != 0u;
}

}  // namespace kgen
