// Device side of the correctness check's inputs (compiler/device_check_inputs.h): the seeded B and
// C drawn where they are used, and the compared columns of C gathered before the download, so a
// graph-sized check moves kilobytes over PCIe instead of gigabytes. No generated kernel calls
// these, so they live in sg::check, outside the emitters' typed helper table (which indexes the
// functions directly in sg). Header-free on purpose: the helper program compiles in tens of
// milliseconds.
#pragma once

namespace sg {
namespace check {

// Draw `j` of the SplitMix64 stream that starts at `state0` (ir/random.h: the state advances by
// the golden gamma per draw, so any draw is reachable directly): a magnitude uniform in
// [0.5, 1.5) with a random sign, the same fp32 value as the host's draw before dtype rounding.
__device__ __forceinline__ float draw(unsigned long long state0, unsigned long long j) {
  unsigned long long z = state0 + (j + 1ull) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
  const float mag = static_cast<float>(0.5 + u);              // rounded to nearest, as on the host
  return (z & 1ull) != 0 ? -mag : mag;
}

// Round-to-nearest-even fp32 -> fp16 / bf16 bits in integer arithmetic, the algorithm of the
// host's float_to_half_bits / float_to_bf16_bits (ir/dtype.cpp), so the two agree on every input
// on any architecture.
__device__ __forceinline__ unsigned short f16_bits(float f) {
  const unsigned x = __float_as_uint(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned exp = (x >> 23) & 0xffu;
  unsigned mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<unsigned short>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<unsigned short>(sign | 0x7c00u);  // overflow: infinity
  if (e <= 0) {
    if (e < -10) return static_cast<unsigned short>(sign);  // underflow: signed zero
    mant |= 0x800000u;
    const unsigned shift = static_cast<unsigned>(14 - e);
    unsigned half = mant >> shift;
    const unsigned rem = mant & ((1u << shift) - 1u);
    const unsigned mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<unsigned short>(sign | half);
  }
  unsigned half = sign | (static_cast<unsigned>(e) << 10) | (mant >> 13);
  const unsigned rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return static_cast<unsigned short>(half);
}
__device__ __forceinline__ unsigned short bf16_bits(float f) {
  const unsigned x = __float_as_uint(f);
  if (f != f) return static_cast<unsigned short>((x >> 16) | 0x40u);  // NaN stays NaN
  return static_cast<unsigned short>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// out[i] = draw first + i, for i < count, in the element type of Store (a functor: fp32 bits,
// fp16 or bf16 bits). Grid-stride.
template <typename Word, typename Store>
__device__ __forceinline__ void fill(Word* __restrict__ out, unsigned long long count,
                                     unsigned long long state0, unsigned long long first,
                                     Store store) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x)
    out[i] = store(draw(state0, first + i));
}

// out[r·out_rs + i·out_cs] = c[r·rs + cols[i]·cs] for r < rows, i < ncols: the compared columns
// of C in the layout of the sub-problem they form. One thread per (row, column) pair, a row's
// columns in neighbouring threads.
template <typename Word>
__device__ __forceinline__ void gather(const Word* __restrict__ c, Word* __restrict__ out,
                                       long long rows, const long long* __restrict__ cols,
                                       int ncols, long long rs, long long cs, long long out_rs,
                                       long long out_cs) {
  const unsigned long long total = static_cast<unsigned long long>(rows) * ncols;
  for (unsigned long long t = blockIdx.x * 1ull * blockDim.x + threadIdx.x; t < total;
       t += 1ull * gridDim.x * blockDim.x) {
    const long long r = static_cast<long long>(t / ncols);
    const int i = static_cast<int>(t % ncols);
    out[r * out_rs + i * out_cs] = c[r * rs + cols[i] * cs];
  }
}

}  // namespace check
}  // namespace sg
