// The correctness check's seeded inputs drawn on the device, and its compared columns gathered
// there, for problems whose B and C are too large to generate on the host and move over PCIe (a
// graph of 4.2M rows at N = 64: 1 GB each, for a check that compares 8 columns).
//
//   fill_check_values(b.ptr(), p.k * p.n, seed, /*first_draw=*/0, p.b_dtype(), stream);
//   ... run the kernel ...
//   gather_check_columns(c.ptr(), sub.ptr(), p, cols, stream);   // M x cols.size()
//
// The values are bit for bit those of make_check_inputs (compiler/gpu_check.h): draw j of the
// seed's SplitMix64 stream, B's K·N draws first (in B's layout order) and then C's M·N, rounded to
// nearest-even in the dtype. check_value gives any one of them on the host, so a host reference
// needs only the columns it compares. The device code is templates/sg_check.cuh, compiled with
// NVRTC once per architecture per process.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/interpreter.h"
#include "ir/problem.h"
#include "ir/random.h"

namespace sparsegen {

// The stream's starting state for `seed` (make_check_inputs' state0).
inline uint64_t check_stream_state(uint64_t seed) {
  return seed * 0x2545F4914F6CDD1DULL + 1;
}

// Draw `draw` of the seeded stream rounded to `t` (fp32, fp16 or bf16), as a float: a magnitude
// uniform in [0.5, 1.5) with a random sign. Inline: a graph's check draws tens of millions.
inline float check_value(uint64_t seed, uint64_t draw, DType t) {
  uint64_t state = check_stream_state(seed) + draw * kSplitmixGamma;
  const uint64_t r = splitmix64(state);
  const double u = double(r >> 11) * 0x1.0p-53;  // [0, 1)
  const float mag = static_cast<float>(0.5 + u);
  const float v = (r & 1) != 0 ? -mag : mag;
  return t == DType::F32 ? v : round_to(t, v);
}

// Compiles the helper program for `arch` now (otherwise on first use); needs no context, so a
// worker thread can do it while the tuner measures. Throws NvrtcError.
void prepare_check_kernels(const std::string& arch);

// Writes draws first_draw … first_draw + count − 1 of the seed's stream, rounded to `t`, to
// device memory at `out` (4 bytes per element for fp32, 2 for fp16/bf16), on `stream`
// (asynchronous). `arch`: the architecture of the current context (the kernel's CompileTarget).
void fill_check_values(const std::string& arch, CUdeviceptr out, int64_t count, uint64_t seed,
                       uint64_t first_draw, DType t, CUstream stream);

// Copies columns `cols` of the M x N output `c` (p's c_layout and c_dtype) into `out`, an
// M x cols.size() matrix of the same layout and dtype, on `stream` (asynchronous; `cols` is
// uploaded before it returns).
void gather_check_columns(const std::string& arch, CUdeviceptr c, CUdeviceptr out, const Problem& p,
                          const std::vector<int64_t>& cols, CUstream stream);

}  // namespace sparsegen
