// Bulk asynchronous copies (cp.async.bulk, sm_90: the TMA unit's 1-D form) into shared memory,
// counted by an mbarrier. One thread announces a stage's bytes and issues its copies; the
// threads that read the stage wait on the barrier's phase. The copies write through the async
// proxy, so a wgmma may read them with no proxy fence; plain loads may too once the wait returns.
//   init(bar, 1) ... expect(bar, bytes); copy(dst, src, n, bar) x k ... wait(bar, phase)
#pragma once

namespace sg {
namespace detail {

// Initialises the mbarrier at shared address bar for one arriving thread (call from one thread,
// then a block barrier).
__device__ __forceinline__ void bulk_barrier_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
// Makes the barriers' initialisation visible to the async proxy (after the inits, before use).
__device__ __forceinline__ void bulk_barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// The arrival of the issuing thread, announcing that the phase completes once `bytes` bytes of
// bulk copies have landed.
__device__ __forceinline__ void bulk_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// Copies n bytes (a multiple of 16; both addresses 16-byte aligned) from global src to shared
// dst, completing on bar.
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned n, unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(n), "r"(bar)
      : "memory");
}

// Waits until the barrier's phase of the given parity (0, 1, 0, … per use) has completed.
__device__ __forceinline__ void bulk_wait(unsigned bar, unsigned parity) {
  unsigned ok = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (ok == 0);
}

}  // namespace detail
}  // namespace sg
