#include "benchmarks/ffn_dense.h"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <cstring>

#include "benchmarks/baselines.h"
#include "codegen/template_library.h"
#include "ir/diagnostics.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"

namespace sparsegen::bench {
namespace {

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw BaselineError(fmt::format("{} failed: {}", call, cublasGetStatusString(s)));
}
void* ptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}
cudaDataType cuda_type(DType t) {
  return t == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
}
std::vector<char> to_bytes(const std::vector<float>& v, DType t) {
  std::vector<char> out(v.size() * 2);
  convert_values_to(v, t, std::as_writable_bytes(std::span<char>(out)));
  return out;
}

}  // namespace

struct CublasFfn::Impl {
  cublasHandle_t handle = nullptr;
  DType dtype = DType::BF16;
  int k = 0, n = 0;
  bool gated = true;
  int64_t max_m = 0;
  cuda::DeviceBuffer w_gu, w_d, gu, h;
  std::unique_ptr<cuda::Module> module;
  CUfunction gate = nullptr;
  ~Impl() {
    if (handle) cublasDestroy(handle);
  }
};

CublasFfn::CublasFfn(const FfnWeights& w, DType dtype, int64_t max_m, const CompileTarget& target)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.dtype = dtype;
  s.k = static_cast<int>(w.k);
  s.n = static_cast<int>(w.n);
  s.gated = w.gated;
  s.max_m = max_m;
  const int64_t cols = w.gated ? 2 * w.n : w.n;
  // [W_g | W_u] row-major K x 2N (or W_u alone).
  std::vector<float> gu(static_cast<size_t>(w.k * cols));
  for (int64_t r = 0; r < w.k; ++r)
    for (int64_t c = 0; c < w.n; ++c) {
      if (w.gated) {
        gu[r * cols + c] = w.gate[r * w.n + c];
        gu[r * cols + w.n + c] = w.up[r * w.n + c];
      } else {
        gu[r * cols + c] = w.up[r * w.n + c];
      }
    }
  const std::vector<char> gub = to_bytes(gu, dtype), db = to_bytes(w.down, dtype);
  s.w_gu = cuda::DeviceBuffer(gub.size());
  s.w_gu.upload(gub.data(), gub.size());
  s.w_d = cuda::DeviceBuffer(db.size());
  s.w_d.upload(db.data(), db.size());
  s.gu = cuda::DeviceBuffer(static_cast<size_t>(max_m * cols * 2 + 16));
  s.h = cuda::DeviceBuffer(static_cast<size_t>(max_m * w.n * 2 + 16));
  nvrtc::CompileOptions o;
  o.arch = target.arch;
  o.program_name = "dense_ffn_gate.cu";
  for (const EmbeddedHeader& e : embedded_template_headers())
    o.headers.emplace(std::string(e.name), std::string(e.content));
  const std::string src = fmt::format(
      "#include \"sg_ffn.cuh\"\nusing T = {};\n"
      "extern \"C\" __global__ void dense_gate(const T* gu, T* h, int m, int n, int gated) {{\n"
      "  sg::ffn_gate<T>(gu, h, m, n, gated);\n}}\n",
      dtype == DType::F16 ? "__half" : "__nv_bfloat16");
  const nvrtc::CompileResult r = nvrtc::compile(src, o);
  s.module = std::make_unique<cuda::Module>(r.image);
  s.gate = s.module->function("dense_gate");
  check_cublas(cublasCreate(&s.handle), "cublasCreate");
}

CublasFfn::~CublasFfn() = default;

void CublasFfn::run(CUdeviceptr x, CUdeviceptr y, int64_t m, CUstream stream) const {
  run_gemms(x, y, m, false, stream);
}

void CublasFfn::run_three_gemms(CUdeviceptr x, CUdeviceptr y, int64_t m, CUstream stream) const {
  run_gemms(x, y, m, impl_->gated, stream);
}

void CublasFfn::run_gemms(CUdeviceptr x, CUdeviceptr y, int64_t m64, bool split_gate_up,
                          CUstream stream) const {
  const Impl& s = *impl_;
  SG_ASSERT(m64 <= s.max_m, "CublasFfn::run: more tokens than its buffers");
  const int m = static_cast<int>(m64);
  const int cols = s.gated ? 2 * s.n : s.n;
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType t = cuda_type(s.dtype);
  check_cublas(cublasSetStream(s.handle, stream), "cublasSetStream");
  // Row-major GU (m x cols) = x (m x K) · W (K x cols): column-major GU^T = W^T · x^T. Split:
  // G and U as the column blocks 0 .. N-1 and N .. 2N-1 of both, each its own GEMM.
  const int parts = split_gate_up ? 2 : 1, width = cols / parts;
  for (int i = 0; i < parts; ++i) {
    const size_t off = static_cast<size_t>(i) * static_cast<size_t>(width) * 2;  // bytes
    check_cublas(cublasGemmEx(s.handle, CUBLAS_OP_N, CUBLAS_OP_N, width, m, s.k, &one,
                              static_cast<char*>(ptr(s.w_gu.ptr())) + off, t, cols, ptr(x), t, s.k,
                              &zero, static_cast<char*>(ptr(s.gu.ptr())) + off, t, cols,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 parts == 1 ? "cublasGemmEx (gate and up)" : "cublasGemmEx (gate or up)");
  }
  cuda::LaunchConfig c;
  const int64_t total = int64_t{m} * s.n;
  c.grid.x = static_cast<unsigned>((total + 255) / 256);
  c.block.x = 256;
  c.stream = stream;
  CUdeviceptr gu = s.gu.ptr(), h = s.h.ptr();
  int mm = m, nn = s.n, gated = s.gated ? 1 : 0;
  if (total > 0) cuda::launch_kernel(s.gate, c, gu, h, mm, nn, gated);
  // Row-major y (m x K) = h (m x N) · W_d (N x K).
  check_cublas(cublasGemmEx(s.handle, CUBLAS_OP_N, CUBLAS_OP_N, s.k, m, s.n, &one, ptr(s.w_d.ptr()),
                            t, s.k, ptr(s.h.ptr()), t, s.n, &zero, ptr(y), t, s.k,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (down)");
}

}  // namespace sparsegen::bench
