// Programmatic dependent launch (sm_90 and later): a primary kernel lets the next kernel in its
// stream start early, and that kernel waits until the primary grid has finished and its writes
// are visible. Both are no-ops where the launch set up no such dependency.

namespace kgen {

// Primary side: this block no longer holds back the dependent grid's launch.
__device__ __forceinline__ void launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Dependent side: wait for the prerequisite grids to complete, their memory visible.
__device__ __forceinline__ void wait_for_prerequisites() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace kgen
