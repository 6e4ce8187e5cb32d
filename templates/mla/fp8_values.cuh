{#- e4m3 and bfloat16 rope values as packed pairs of T, exactly: shared by the tiles of both
tensor-core families (included inside namespace mla, after Mma; needs cuda_fp8.h). -#}
constexpr bool T_IS_BF16 = Mma::EXPONENT == 0x7f80;

// Two e4m3 values (low byte first) as a packed pair of T, exactly: the conversion's float16 pair
// as it is, or through float32 to bfloat16.
__device__ __forceinline__ unsigned widen_pair(unsigned short pair) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair), __NV_E4M3);
  if constexpr (!T_IS_BF16) return static_cast<unsigned>(raw.x) | static_cast<unsigned>(raw.y) << 16;
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&raw));
  return Mma::pack(f.x, f.y);
}

// Four e4m3 values (one 32-bit word) as two packed pairs of T, exactly.
__device__ __forceinline__ uint2 widen_quad(unsigned word) {
  return make_uint2(widen_pair(word & 0xffffu), widen_pair(word >> 16));
}

// Two e4m3 values x `scale`, rounded to a packed pair of T.
__device__ __forceinline__ unsigned scaled_pair(unsigned short pair, float scale) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&raw));
  return Mma::pack(f.x * scale, f.y * scale);
}

// Four e4m3 values (one 32-bit word) x `scale`, as two packed pairs of T.
__device__ __forceinline__ uint2 scaled_quad(unsigned word, float scale) {
  return make_uint2(scaled_pair(word & 0xffffu, scale), scaled_pair(word >> 16, scale));
}

// The fp8 cache keeps rope in bfloat16 whatever q's dtype: two rope values (one 32-bit word, low
// first) as a packed pair of T (as stored for bf16 q, converted for float16 q).
__device__ __forceinline__ unsigned rope_pair(unsigned word) {
  if constexpr (T_IS_BF16) {
    return word;
  } else {
    return Mma::pack(__uint_as_float(word << 16), __uint_as_float(word & 0xffff0000u));
  }
}
template <typename W>
__device__ __forceinline__ W rope_words(W w) {
  if constexpr (!T_IS_BF16) {
    unsigned* u = reinterpret_cast<unsigned*>(&w);
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(W) / 4); ++k) u[k] = rope_pair(u[k]);
  }
  return w;
}
