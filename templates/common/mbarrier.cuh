// Shared-memory barrier objects (mbarrier, sm_80 and later): a 64-bit word that completes a phase
// once its expected count of arrivals is in; a waiter names the phase by its parity.
namespace kgen {

__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" : : "r"(smem_address(bar)), "r"(count) : "memory");
}

// One arrival, made when every cp.async this thread issued before it has landed (the count it
// makes toward is the one given to mbarrier_init: .noinc).
__device__ __forceinline__ void mbarrier_arrive_on_copies(unsigned long long* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" : : "r"(smem_address(bar)) : "memory");
}

// One arrival now (release: this thread's earlier shared-memory reads and writes come first).
__device__ __forceinline__ void mbarrier_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" : : "r"(smem_address(bar)) : "memory");
}

// Wait until the phase of parity `parity` has completed (acquire: what the arrivals released is
// visible after). sm_90 and later suspend the thread in try_wait; sm_80 polls test_wait.
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  unsigned done;
  do {
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smem_address(bar)), "r"(parity)
                 : "memory");
#else
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smem_address(bar)), "r"(parity)
                 : "memory");
#endif
  } while (!done);
}

}  // namespace kgen
