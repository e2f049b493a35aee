// Asynchronous global -> shared copies (cp.async, sm_80 and later): 16-byte pieces that need no
// registers and no instruction per piece on arrival, so a thread can keep all of its pieces in
// flight at once instead of a few loads per round trip. Used by the bitmap_tc B/A tile pipeline
// and by the staged-B MACKO kernels' copy of B.
#pragma once

namespace sg {
namespace detail {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte asynchronous copy global -> shared (both 16-byte aligned); src_bytes 0 zero-fills the
// destination without reading src.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}

}  // namespace detail

// Commits the cp.async copies issued so far as one group.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most PENDING groups of this thread's cp.async copies are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

}  // namespace sg
