// The benchmarks' floor probes (templates/sg_probe.cuh) as NVRTC programs: the row-chain floor
// (a warp per row: the row's start, one dependent line, one store) and the streaming floors
// (a byte count read with almost no work per byte, by warps with plain loads and by blocks with
// bulk copies). sparsegen-macko-bench times them next to its kernels; tests compile them without
// a GPU, so a template change that breaks a probe fails in CI, not on the device.
#pragma once

#include <string>
#include <vector>

#include "runtime/nvrtc_compiler.h"

namespace sparsegen::bench {

struct ProbeProgram {
  std::string source;                // CUDA source, #including sg_probe.cuh
  std::vector<std::string> kernels;  // its extern "C" kernels, launched with 256 threads
};

// sg_row_chain(const int* starts, const float* lines, float* out, int rows).
ProbeProgram row_chain_program();

// Loads per lane of the warp-pattern streaming kernels, and the bulk stages (KiB, 4 stages each)
// of the bulk-pattern ones; kernels sg_stream_warps<Q> and sg_stream_bulk<KiB>, all taking
// (const unsigned* src, int vecs, unsigned* out); the bulk ones need 4 * KiB * 1024 bytes of
// dynamic shared memory.
inline constexpr int kStreamLoads[] = {2, 4, 8};
inline constexpr int kStreamBulkKib[] = {16, 8};
ProbeProgram stream_program();
std::string stream_warps_kernel(int loads);  // "sg_stream_warps<loads>"
std::string stream_bulk_kernel(int kib);     // "sg_stream_bulk<kib>"

// NVRTC options for a probe program on `arch`: sg_probe.cuh and what it includes, from the
// embedded templates.
nvrtc::CompileOptions probe_compile_options(const std::string& arch,
                                            const std::string& program_name);

}  // namespace sparsegen::bench
