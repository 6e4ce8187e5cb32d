// Device helpers shared by kgen kernels: vector loads of N elements, float conversion, warp
// reductions, fast exp2 and cp.async. Plain CUDA; the Jinja template includes it verbatim.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <math_constants.h>

namespace kgen {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// An unsigned type of exactly BYTES bytes, so N elements move in one memory instruction.
template <int BYTES> struct Raw;
template <> struct Raw<2> { using type = unsigned short; };
template <> struct Raw<4> { using type = unsigned int; };
template <> struct Raw<8> { using type = uint2; };
template <> struct Raw<16> { using type = uint4; };

// N consecutive elements of T held as one raw word (as loaded), converted to float on demand.
template <typename T, int N>
struct Vec {
  using Word = typename Raw<sizeof(T) * N>::type;
  Word word;

  __device__ __forceinline__ void load_global(const T* p) {
    word = __ldg(reinterpret_cast<const Word*>(p));
  }
  __device__ __forceinline__ void load(const T* p) { word = *reinterpret_cast<const Word*>(p); }
  __device__ __forceinline__ void store(T* p) const { *reinterpret_cast<Word*>(p) = word; }

  __device__ __forceinline__ void to_floats(float (&out)[N]) const {
    const T* e = reinterpret_cast<const T*>(&word);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(e[i]);
  }
  __device__ __forceinline__ void from_floats(const float (&in)[N]) {
    T* e = reinterpret_cast<T*>(&word);
#pragma unroll
    for (int i = 0; i < N; ++i) e[i] = from_float<T>(in[i]);
  }
};

// Butterfly sum: every lane ends with the same bits (each step adds the same pair, a + b == b + a).
// x, with how it was computed hidden from the optimizer (it may still be hoisted or shared): for a
// value the kernel should treat as data, as it does a loaded one.
__device__ __forceinline__ unsigned long long opaque(unsigned long long x) {
  asm("mov.b64 %0, %0;" : "+l"(x));
  return x;
}

__device__ __forceinline__ float warp_allsum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// 2^x with the SFU (ex2.approx: relative error ~2^-22; 2^-inf = +0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Asynchronous global -> shared copy of BYTES (4, 8 or 16) bytes (sm_80+; .cg past L1 for 16,
// .ca below), or zeros where `zero` (cp.async's ignore-src predicate: ptxas makes a src-size
// operand four integer instructions per copy, a predicate none). L2_LINE asks L2 to fetch the
// source's whole 128-byte line (.L2::128B; 16-byte copies).
template <int BYTES, bool L2_LINE = false>
__device__ __forceinline__ void cp_async_or_zeros(void* smem, const void* gmem, bool zero) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(!L2_LINE || BYTES == 16, "the L2 line hint is for 16-byte copies");
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int z = zero;
#define KGEN_CP_ASYNC(OP) "{\n .reg .pred z;\n setp.ne.b32 z, %3, 0;\n " OP " [%0], [%1], %2, z;\n}\n"
  if constexpr (L2_LINE) {
    asm volatile(KGEN_CP_ASYNC("cp.async.cg.shared.global.L2::128B") ::"r"(dst), "l"(gmem), "n"(BYTES), "r"(z) : "memory");
  } else if constexpr (BYTES == 16) {
    asm volatile(KGEN_CP_ASYNC("cp.async.cg.shared.global") ::"r"(dst), "l"(gmem), "n"(BYTES), "r"(z) : "memory");
  } else {
    asm volatile(KGEN_CP_ASYNC("cp.async.ca.shared.global") ::"r"(dst), "l"(gmem), "n"(BYTES), "r"(z) : "memory");
  }
#undef KGEN_CP_ASYNC
}
template <int BYTES>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem) {
  cp_async_or_zeros<BYTES>(smem, gmem, false);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

}  // namespace kgen
