#include "compiler/device_check_inputs.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "codegen/template_library.h"
#include "ir/diagnostics.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"

namespace sparsegen {
namespace {

// The helper program: one extern "C" entry per element width around templates/sg_check.cuh.
//   extern "C" __global__ void sg_check_fill_f16(unsigned short* out, unsigned long long count,
//                                                unsigned long long state0,
//                                                unsigned long long first) {
//     sg::check::fill(out, count, state0, first, F16{});
//   }
constexpr const char* kSource = R"(#include "sg_check.cuh"
struct F32 { __device__ unsigned operator()(float v) const { return __float_as_uint(v); } };
struct F16 { __device__ unsigned short operator()(float v) const { return sg::check::f16_bits(v); } };
struct BF16 { __device__ unsigned short operator()(float v) const { return sg::check::bf16_bits(v); } };
#define SG_FILL(NAME, WORD, STORE)                                                           \
  extern "C" __global__ void NAME(WORD* out, unsigned long long count,                       \
                                  unsigned long long state0, unsigned long long first) {     \
    sg::check::fill(out, count, state0, first, STORE{});                                      \
  }
SG_FILL(sg_check_fill_f32, unsigned, F32)
SG_FILL(sg_check_fill_f16, unsigned short, F16)
SG_FILL(sg_check_fill_bf16, unsigned short, BF16)
#define SG_GATHER(NAME, WORD)                                                                \
  extern "C" __global__ void NAME(const WORD* c, WORD* out, long long rows,                  \
                                  const long long* cols, int ncols, long long rs,            \
                                  long long cs, long long out_rs, long long out_cs) {        \
    sg::check::gather(c, out, rows, cols, ncols, rs, cs, out_rs, out_cs);                     \
  }
SG_GATHER(sg_check_gather32, unsigned)
SG_GATHER(sg_check_gather16, unsigned short)
)";

std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}

// The compiled program of one architecture (needs no context). Caller holds cache_mutex().
const nvrtc::CompileResult& compiled_for(const std::string& arch) {
  static std::map<std::string, nvrtc::CompileResult> compiled;
  auto it = compiled.find(arch);
  if (it != compiled.end()) return it->second;
  nvrtc::CompileOptions opt;
  opt.arch = arch;
  opt.program_name = "sg_check_inputs.cu";
  opt.cuda_include = false;
  for (const EmbeddedHeader& h : embedded_template_headers())
    if (h.name == "sg_check.cuh") opt.headers.emplace(std::string(h.name), std::string(h.content));
  return compiled.emplace(arch, nvrtc::compile(kSource, opt)).first->second;
}

// The program loaded in the current context (one per device's primary context). Modules stay
// loaded until the process ends (the primary context outlives every check).
const cuda::Module& module_for(const std::string& arch) {
  static std::map<std::pair<std::string, CUcontext>, std::unique_ptr<cuda::Module>> modules;
  const std::pair key{arch, cuda::current_context()};
  std::lock_guard lock(cache_mutex());
  auto it = modules.find(key);
  if (it != modules.end()) return *it->second;
  const nvrtc::CompileResult& c = compiled_for(arch);
  return *modules.emplace(key, std::make_unique<cuda::Module>(c.image)).first->second;
}

// A grid that covers `work` items with 256-thread blocks, capped (the loops are grid-stride).
cuda::LaunchConfig grid_for(int64_t work, CUstream stream) {
  cuda::LaunchConfig cfg;
  cfg.block.x = 256;
  const int64_t blocks = std::clamp<int64_t>((work + 255) / 256, 1, 65536);
  cfg.grid.x = static_cast<unsigned>(blocks);
  cfg.stream = stream;
  return cfg;
}

size_t element_bytes(DType t) {
  SG_ASSERT(t == DType::F32 || t == DType::F16 || t == DType::BF16,
            "check inputs are fp32, fp16 or bf16");
  return t == DType::F32 ? 4 : 2;
}

}  // namespace

void prepare_check_kernels(const std::string& arch) {
  std::lock_guard lock(cache_mutex());
  (void)compiled_for(arch);
}

void fill_check_values(const std::string& arch, CUdeviceptr out, int64_t count, uint64_t seed,
                       uint64_t first_draw, DType t, CUstream stream) {
  (void)element_bytes(t);
  if (count <= 0) return;
  const char* name = t == DType::F32   ? "sg_check_fill_f32"
                     : t == DType::F16 ? "sg_check_fill_f16"
                                       : "sg_check_fill_bf16";
  CUfunction f = module_for(arch).function(name);
  auto n = static_cast<unsigned long long>(count);
  unsigned long long state0 = check_stream_state(seed), first = first_draw;
  cuda::launch_kernel(f, grid_for(count, stream), out, n, state0, first);
}

void gather_check_columns(const std::string& arch, CUdeviceptr c, CUdeviceptr out, const Problem& p,
                          const std::vector<int64_t>& cols, CUstream stream) {
  const size_t w = element_bytes(p.c_dtype());
  if (p.m == 0 || cols.empty()) return;
  Problem sub = p;
  sub.n = static_cast<int64_t>(cols.size());
  // Strides of (row, column) in C and in the sub-problem's output, from the layouts' own index.
  long long rs = p.c_index(1, 0) - p.c_index(0, 0), cs = p.c_index(0, 1) - p.c_index(0, 0);
  long long out_rs = sub.c_index(1, 0) - sub.c_index(0, 0);
  long long out_cs = sub.c_index(0, 1) - sub.c_index(0, 0);
  cuda::DeviceBuffer dcols(cols.size() * sizeof(int64_t));
  dcols.upload(cols);
  CUfunction f = module_for(arch).function(w == 4 ? "sg_check_gather32" : "sg_check_gather16");
  long long rows = p.m;
  CUdeviceptr cols_ptr = dcols.ptr();
  int ncols = static_cast<int>(cols.size());
  cuda::launch_kernel(f, grid_for(p.m * ncols, stream), c, out, rows, cols_ptr, ncols, rs, cs,
                      out_rs, out_cs);
  // dcols is freed on return: wait for the gather that reads it.
  cuda::Event done;
  done.record(stream);
  done.synchronize();
}

}  // namespace sparsegen
