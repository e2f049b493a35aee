// Programmatic dependent launch (sm_90 and later): the kernels of one launch sequence (prologue,
// main kernel, epilogue) may overlap. The runtime launches a kernel whose LaunchShape says
// `programmatic_wait` with programmatic stream serialization right after another kernel of the
// same sequence; that kernel may then start while the one before it still runs, do the work that
// reads only A and B (index and value loads, the products), and calls grid_dependency_wait()
// before it reads or writes what the kernel before it writes (C, the workspace), reading that
// through pointers after_grid_dependency() returned when they are const __restrict__. The kernel
// before it calls launch_dependents() as early as it can, so that the next one starts at once.
// Both are no-ops on older architectures and when the launch had no such attribute.
#pragma once

namespace sg {

// Lets the next kernel of the stream, when launched with programmatic stream serialization, be
// scheduled now rather than when this grid exits.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Waits until the kernel launched before this one on the stream has finished and its memory
// writes are visible (returns at once when there is none or it has finished).
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// grid_dependency_wait() that also returns `p` through the wait's asm statement. Loads through
// the result depend on the wait, so the compiler cannot move them above it; it may move loads
// through a `const T* __restrict__` pointer (read-only for the whole kernel, ld.global.nc) that
// way, which would read the previous kernel's output before it is written. Launder every such
// pointer to what the previous kernel writes.
template <typename P>
__device__ __forceinline__ P* after_grid_dependency(P* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" : "+l"(p) : : "memory");
#endif
  return p;
}

}  // namespace sg
