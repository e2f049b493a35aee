#include "benchmarks/lt_dense.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "benchmarks/baselines.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/timing.h"

namespace sparsegen::bench {
namespace {

using cusparselt::Shape;
using cusparselt::Type;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kMaxHeuristics = 8;

void check_lt(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw BaselineError(fmt::format("{} failed: status {} ({})", call, static_cast<int>(s),
                                    cublasGetStatusString(s)));
  }
}

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw BaselineError(
        fmt::format("{} failed: {} ({})", call, cudaGetErrorName(e), cudaGetErrorString(e)));
  }
}

void* vptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

// int32 accumulators -> fp16/bf16 output: C = alpha * acc + beta * C, grid-stride.
constexpr const char* kConvertSource = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void sg_lt_i32_to_f16(const int* acc, __half* c, unsigned long long count,
                                            float alpha, float beta) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x) {
    float v = alpha * static_cast<float>(acc[i]);
    if (beta != 0.0f) v += beta * __half2float(c[i]);
    c[i] = __float2half_rn(v);
  }
}
extern "C" __global__ void sg_lt_i32_to_bf16(const int* acc, __nv_bfloat16* c,
                                             unsigned long long count, float alpha, float beta) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count;
       i += 1ull * gridDim.x * blockDim.x) {
    float v = alpha * static_cast<float>(acc[i]);
    if (beta != 0.0f) v += beta * __bfloat162float(c[i]);
    c[i] = __float2bfloat16_rn(v);
  }
}
)";

// The conversion kernel for the current device, compiled once per architecture. The modules
// stay loaded until the process ends (the primary context outlives every LtDenseGemm).
CUfunction conversion_kernel(const cuda::DeviceInfo& info, Type out) {
  static std::mutex mu;
  static std::map<std::string, cuda::Module*> modules;
  const std::string arch = nvrtc::sm_arch_for(info.cc_major, info.cc_minor);
  std::lock_guard lock(mu);
  auto it = modules.find(arch);
  if (it == modules.end()) {
    nvrtc::CompileOptions opt;
    opt.arch = arch;
    opt.program_name = "sg_lt_convert.cu";
    const nvrtc::CompileResult compiled = nvrtc::compile(kConvertSource, opt);
    it = modules.emplace(arch, new cuda::Module(compiled.image)).first;
  }
  return it->second->function(out == Type::BF16 ? "sg_lt_i32_to_bf16" : "sg_lt_i32_to_f16");
}

int current_device() {
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  return dev;
}

}  // namespace

std::string cublaslt_version() {
  return fmt::format("cuBLASLt {}", cublasLtGetVersion());
}

struct LtDenseGemm::Impl {
  Shape shape;
  CUdeviceptr a = 0;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics;
  int chosen = 0;
  cuda::DeviceBuffer workspace;
  cuda::DeviceBuffer acc;  // int8 only: M x N int32
  CUfunction convert = nullptr;
  cuda::DeviceInfo info;

  ~Impl() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (lt) cublasLtDestroy(lt);
  }

  bool is_int8() const { return shape.in == Type::I8; }

  void gemm(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const {
    const cublasLtMatmulAlgo_t* algo = &heuristics[static_cast<size_t>(chosen)].algo;
    if (is_int8()) {
      const int32_t one = 1, zero = 0;
      check_lt(cublasLtMatmul(lt, desc, &one, vptr(a), la, vptr(b), lb, &zero, vptr(acc.ptr()), lc,
                              vptr(acc.ptr()), lc, algo, vptr(workspace.ptr()), workspace.bytes(),
                              stream),
               "cublasLtMatmul (int8 -> int32)");
    } else {
      check_lt(cublasLtMatmul(lt, desc, &alpha, vptr(a), la, vptr(b), lb, &beta, vptr(c), lc,
                              vptr(c), lc, algo, vptr(workspace.ptr()), workspace.bytes(), stream),
               "cublasLtMatmul");
    }
  }

  void convert_out(CUdeviceptr c, float alpha, float beta, CUstream stream) const {
    CUdeviceptr src = acc.ptr(), dst = c;
    unsigned long long count = static_cast<unsigned long long>(shape.m * shape.n);
    cuda::LaunchConfig cfg;
    cfg.block.x = 256;
    const unsigned long long blocks = (count + 255) / 256;
    const unsigned long long cap = static_cast<unsigned long long>(std::max(info.sm_count, 1)) * 8;
    cfg.grid.x = static_cast<unsigned>(std::max(1ull, std::min(blocks, cap)));
    cfg.stream = stream;
    cuda::launch_kernel(convert, cfg, src, dst, count, alpha, beta);
  }
};

LtDenseGemm::LtDenseGemm(CUdeviceptr a_dev, const Shape& shape) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.shape = shape;
  s.a = a_dev;
  if (shape.out != Type::F16 && shape.out != Type::BF16) {
    throw BaselineError("cuBLASLt dense GEMM: the output type must be fp16 or bf16");
  }
  if ((shape.in == Type::F16 || shape.in == Type::BF16) && shape.out != shape.in) {
    throw BaselineError(fmt::format("cuBLASLt dense GEMM: {} input needs {} output",
                                    cusparselt::to_string(shape.in),
                                    cusparselt::to_string(shape.in)));
  }
  if (shape.m <= 0 || shape.k <= 0 || shape.n <= 0) {
    throw BaselineError(
        fmt::format("cuBLASLt dense GEMM: bad shape M={} K={} N={}", shape.m, shape.k, shape.n));
  }
  s.info = cuda::query_device(current_device());
  check_lt(cublasLtCreate(&s.lt), "cublasLtCreate");

  const bool i8 = s.is_int8();
  const cublasComputeType_t compute = i8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
  const cudaDataType scale = i8 ? CUDA_R_32I : CUDA_R_32F;
  check_lt(cublasLtMatmulDescCreate(&s.desc, compute, scale), "cublasLtMatmulDescCreate");
  const int32_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)),
           "cublasLtMatmulDescSetAttribute(TRANSA)");
  check_lt(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)),
           "cublasLtMatmulDescSetAttribute(TRANSB)");

  // Column-major descriptions of the arrays as they lie (see the header).
  const cudaDataType tin = cusparselt::cuda_data_type(shape.in);
  const cudaDataType tc = i8 ? CUDA_R_32I : cusparselt::cuda_data_type(shape.out);
  const auto k = static_cast<uint64_t>(shape.k), m = static_cast<uint64_t>(shape.m),
             n = static_cast<uint64_t>(shape.n);
  check_lt(cublasLtMatrixLayoutCreate(&s.la, tin, k, m, shape.k), "cublasLtMatrixLayoutCreate(A)");
  check_lt(cublasLtMatrixLayoutCreate(&s.lb, tin, k, n, shape.k), "cublasLtMatrixLayoutCreate(B)");
  check_lt(cublasLtMatrixLayoutCreate(&s.lc, tc, m, n, shape.m), "cublasLtMatrixLayoutCreate(C)");

  check_lt(cublasLtMatmulPreferenceCreate(&s.pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(s.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof(ws)),
           "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  s.heuristics.resize(kMaxHeuristics);
  int returned = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(s.lt, s.desc, s.la, s.lb, s.lc, s.lc, s.pref,
                                          kMaxHeuristics, s.heuristics.data(), &returned),
           "cublasLtMatmulAlgoGetHeuristic");
  s.heuristics.resize(static_cast<size_t>(std::max(returned, 0)));
  std::erase_if(s.heuristics, [](const cublasLtMatmulHeuristicResult_t& h) {
    return h.state != CUBLAS_STATUS_SUCCESS;
  });
  if (s.heuristics.empty()) {
    throw BaselineError(fmt::format(
        "cuBLASLt dense GEMM {}->{} M={} K={} N={}: the heuristic returned no algorithm",
        cusparselt::to_string(shape.in), cusparselt::to_string(shape.out), shape.m, shape.k,
        shape.n));
  }
  s.workspace = cuda::DeviceBuffer(kWorkspaceBytes);
  if (i8) {
    s.acc = cuda::DeviceBuffer(static_cast<size_t>(shape.m * shape.n) * sizeof(int32_t));
    s.convert = conversion_kernel(s.info, shape.out);
  }
}

LtDenseGemm::~LtDenseGemm() = default;

std::string LtDenseGemm::search(CUdeviceptr b, CUdeviceptr c, CUstream stream, int top,
                                int repetitions) {
  Impl& s = *impl_;
  L2Flusher flusher(s.info);
  TimingOptions opt;
  opt.warmup = 1;
  opt.repetitions = std::max(repetitions, 1);
  opt.min_repetitions = opt.repetitions;
  opt.stream = stream;
  opt.flusher = &flusher;
  opt.device = s.info.ordinal;
  const int count = std::min(static_cast<int>(s.heuristics.size()), std::max(top, 1));
  int best = -1;
  double best_ms = std::numeric_limits<double>::infinity();
  std::string failures;
  for (int i = 0; i < count; ++i) {
    s.chosen = i;
    try {
      const double ms = measure([&](CUstream st) { run(b, c, 1.0f, 0.0f, st); }, opt).median_ms;
      if (ms < best_ms) {
        best_ms = ms;
        best = i;
      }
    } catch (const BaselineError& e) {
      failures += fmt::format(" [{}: {}]", i, e.what());  // an algorithm that fails to launch
    }
  }
  if (best < 0) throw BaselineError("cuBLASLt search: every algorithm failed:" + failures);
  s.chosen = best;
  return describe();
}

void LtDenseGemm::run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta,
                      CUstream stream) const {
  impl_->gemm(b, c, alpha, beta, stream);
  if (impl_->is_int8()) impl_->convert_out(c, alpha, beta, stream);
}

void LtDenseGemm::run_gemm_only(CUdeviceptr b, CUdeviceptr c, CUstream stream) const {
  impl_->gemm(b, c, 1.0f, 0.0f, stream);
}

bool LtDenseGemm::has_conversion() const {
  return impl_->is_int8();
}

std::string LtDenseGemm::describe() const {
  const Impl& s = *impl_;
  const auto& h = s.heuristics[static_cast<size_t>(s.chosen)];
  int32_t id = -1, splitk = 1;
  uint32_t tile = 0;
  size_t written = 0;
  check_lt(cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id),
                                                &written),
           "cublasLtMatmulAlgoConfigGetAttribute(ID)");
  check_lt(cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                sizeof(tile), &written),
           "cublasLtMatmulAlgoConfigGetAttribute(TILE_ID)");
  check_lt(cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                                sizeof(splitk), &written),
           "cublasLtMatmulAlgoConfigGetAttribute(SPLITK_NUM)");
  return fmt::format("heuristic {}/{}: algo {} tile {} splitK {} ws {} B", s.chosen + 1,
                     s.heuristics.size(), id, tile, splitk, h.workspaceSize);
}

int LtDenseGemm::heuristic_count() const {
  return static_cast<int>(impl_->heuristics.size());
}

const Shape& LtDenseGemm::shape() const {
  return impl_->shape;
}

}  // namespace sparsegen::bench
