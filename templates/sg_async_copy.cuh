// Asynchronous global -> shared copies (cp.async, sm_80 and later): 16-byte pieces that need no
// registers and no instruction per piece on arrival, so a thread can keep all of its pieces in
// flight at once instead of a few loads per round trip. Used by the bitmap_tc B/A tile pipeline
// (the staged-B MACKO kernels copy B with plain loads: see sg_macko.cuh).
#pragma once

namespace sg {

// The 32-bit shared-window address of a pointer into shared memory: kernels keep their staging
// buffers as such addresses, so per-copy address math stays 32-bit.
__device__ __forceinline__ unsigned smem_addr(const unsigned* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

namespace detail {

// 16-byte asynchronous copy global -> shared (both 16-byte aligned), to a 32-bit shared-window
// address; with skip = true, 16 zero bytes without reading src (the PTX ignore-src operand), so
// src may then point past the end of its array: callers pass the address they would copy from,
// with no select of a fallback address per copy, and the copy keeps src's immediate offset.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool skip) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
      " cp.async.cg.shared.global [%0], [%1], 16, p;\n}\n" ::"r"(dst),
      "l"(src), "r"(static_cast<int>(skip)));
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
