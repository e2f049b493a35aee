// Bulk asynchronous copies (cp.async.bulk, sm_90: the TMA unit's 1-D form, and its 2-D tensor
// form through a tensor map) into shared memory, counted by an mbarrier. One thread announces a
// stage's bytes and issues its copies; the threads that read the stage wait on the barrier's phase.
// The copies write through the async proxy, so a wgmma may read them with no proxy fence; plain
// loads may too once the wait returns.
//   init(bar, 1) ... expect(bar, bytes); copy(dst, src, n, bar) x k ... wait(bar, phase)
#pragma once

namespace sg {

// A CUDA tensor map (CUtensorMap: 128 bytes, 64-byte aligned), passed to a kernel by value as a
// __grid_constant__ parameter and encoded on the host per run (runtime/cuda_driver.h).
struct alignas(64) TensorMap {
  unsigned long long word[16];
};

namespace detail {

// Initialises the mbarrier at shared address bar for `count` arriving threads (call from one
// thread, then a block or cluster barrier).
__device__ __forceinline__ void bulk_barrier_init(unsigned bar, unsigned count = 1) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
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

// Copies the box at coordinates (c0 along the inner dimension, c1 along the outer) of the 2-D
// tensor `map` describes (the map's box size and swizzle) to shared dst (aligned as the swizzle
// needs: 1024 bytes for 128-byte swizzle), completing on bar; elements outside the tensor arrive
// as zeros and count toward the box's bytes.
__device__ __forceinline__ void bulk_copy_tensor_2d(unsigned dst, const TensorMap* map, int c0,
                                                    int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// As bulk_copy_tensor_2d, the box written to the same shared offset dst in every CTA of the
// cluster whose bit is set in mask, completing its bytes on the barrier at offset bar of each.
__device__ __forceinline__ void bulk_copy_tensor_2d_multicast(unsigned dst, const TensorMap* map,
                                                              int c0, int c1, unsigned bar,
                                                              unsigned mask) {
  asm volatile(
      "{\n .reg .b16 m;\n cvt.u16.u32 m, %5;\n"
      " cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], m;\n}\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "r"(mask)
      : "memory");
}

// One plain arrival (release at CTA scope) on the barrier at shared address bar: a reader telling
// the thread that refills a buffer that it is done with it.
__device__ __forceinline__ void barrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// barrier_arrive by one lane of the calling (converged, full) warp, chosen by elect.sync: no lane
// index needed in a register (a test of it inside a loop makes ptxas re-read SR_TID there), and
// the predicate stays inside the asm (no register for it).
__device__ __forceinline__ void barrier_arrive_elected(unsigned bar) {
  asm volatile(
      "{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n"
      " @p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar)
      : "memory");
}

// Waits until the barrier's phase of the given parity (0, 1, 0, … per use) has completed.
// Acquire at CTA scope, also for a barrier that other CTAs of the cluster arrive on: what they
// released is the end of their reads of a buffer (wgmma, completed before they arrived), and
// what follows is an async-proxy copy into it, ordered by the barrier's phase itself. A
// cluster-scope acquire (and release in cluster_arrive) added a memory barrier to every wait.
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

// Clusters (a launch with a cluster dimension): several CTAs, co-scheduled on one GPC, that may
// write each other's shared memory and arrive on each other's barriers.
//   leader: bulk_wait(empty) -> bulk_copy_multicast(dst, src, n, full, mask)
//   each CTA: bulk_wait(full) ... read ... cluster_arrive(empty, leader's rank)
// This CTA's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster: the CTAs' earlier shared-memory writes and barrier
// initialisations are visible to the others after it (release / acquire at cluster scope), and
// no CTA leaves before the others have stopped touching its shared memory.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}

// As bulk_copy, written to the same shared offset dst in every CTA of the cluster whose bit is
// set in mask, completing the bytes on the barrier at offset bar of each of them.
__device__ __forceinline__ void bulk_copy_multicast(unsigned dst, const void* src, unsigned n,
                                                    unsigned bar, unsigned mask) {
  asm volatile(
      "{\n .reg .b16 m;\n cvt.u16.u32 m, %4;\n"
      " cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1], %2, [%3], m;\n}\n" ::"r"(dst),
      "l"(src), "r"(n), "r"(bar), "r"(mask)
      : "memory");
}

// One arrival (release at CTA scope, as bulk_wait acquires) on the barrier at this CTA's shared
// offset bar, in the CTA of the cluster with rank `rank` (which may be this one).
__device__ __forceinline__ void cluster_arrive(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// barrier_arrive on bar of this CTA and cluster_arrive on cbar of the CTA of rank `rank`, both by
// one lane of the calling (converged, full) warp (as barrier_arrive_elected).
__device__ __forceinline__ void barrier_arrive_elected_cluster(unsigned bar, unsigned cbar,
                                                               unsigned rank) {
  asm volatile(
      "{\n .reg .pred p;\n .reg .b32 remote;\n elect.sync _|p, 0xffffffff;\n"
      " @p mbarrier.arrive.shared::cta.b64 _, [%0];\n"
      " @p mapa.shared::cluster.u32 remote, %1, %2;\n"
      " @p mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cbar), "r"(rank)
      : "memory");
}

}  // namespace detail
}  // namespace sg
