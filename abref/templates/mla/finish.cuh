// How one row's softmax state becomes its result, in both families: 1/l scales o, lse = m +
// log2(l) (log2 units). A row that saw nothing (no position; in the sparse family, every entry -1)
// gets o = 0, lse = -inf; a poisoned one NaN.

namespace mla {

constexpr float LN2 = 0.693147180559945309f;
constexpr float LOG2E = 1.4426950408889634f;

struct Finish {
  float scale, lse2;
  __device__ __forceinline__ Finish(float m, float l, bool poisoned) {
    if (poisoned) {
      scale = lse2 = CUDART_NAN_F;
    } else if (l > 0.f || l != l) {
      scale = 1.f / l;
      lse2 = m + log2f(l);
    } else {
      scale = 0.f;
      lse2 = -CUDART_INF_F;
    }
  }
  __device__ __forceinline__ float apply(float o) const { return scale == 0.f ? 0.f : o * scale; }
  __device__ __forceinline__ float lse() const { return lse2 * LN2; }
};

}  // namespace mla
