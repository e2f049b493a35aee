#include "runtime/cublaslt.h"

#include <cublasLt.h>
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/dynamic_library.h"

namespace sparsegen::cublaslt {
namespace {

// The entry points used here, resolved from the loaded library (types from the toolkit header).
struct Api {
  std::string path;
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtDestroy) Destroy = nullptr;
  decltype(&cublasLtGetVersion) GetVersion = nullptr;
  decltype(&cublasLtMatmulDescCreate) DescCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) DescDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) DescSetAttribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) LayoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) LayoutDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) PrefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) PrefDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) PrefSetAttribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) GetHeuristic = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
};

// Opens `path` and resolves every entry point; null with the reason in *why otherwise. Tables
// are never freed and libraries never closed (plans keep pointers into them).
const Api* open_library(const std::string& path, std::string* why) {
  void* lib = dynlib::open(path, why);
  if (lib == nullptr) return nullptr;
  using dynlib::resolve;
  auto api = std::make_unique<Api>();
  api->path = path;
  std::vector<std::string> missing;
  resolve(lib, "cublasLtCreate", api->Create, missing);
  resolve(lib, "cublasLtDestroy", api->Destroy, missing);
  resolve(lib, "cublasLtGetVersion", api->GetVersion, missing);
  resolve(lib, "cublasLtMatmulDescCreate", api->DescCreate, missing);
  resolve(lib, "cublasLtMatmulDescDestroy", api->DescDestroy, missing);
  resolve(lib, "cublasLtMatmulDescSetAttribute", api->DescSetAttribute, missing);
  resolve(lib, "cublasLtMatrixLayoutCreate", api->LayoutCreate, missing);
  resolve(lib, "cublasLtMatrixLayoutDestroy", api->LayoutDestroy, missing);
  resolve(lib, "cublasLtMatmulPreferenceCreate", api->PrefCreate, missing);
  resolve(lib, "cublasLtMatmulPreferenceDestroy", api->PrefDestroy, missing);
  resolve(lib, "cublasLtMatmulPreferenceSetAttribute", api->PrefSetAttribute, missing);
  resolve(lib, "cublasLtMatmulAlgoGetHeuristic", api->GetHeuristic, missing);
  resolve(lib, "cublasLtMatmul", api->Matmul, missing);
  if (!missing.empty()) {
    *why = dynlib::missing_text(missing);
    return nullptr;
  }
  return api.release();
}

std::vector<std::string> default_paths() {
  return {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
          "/usr/local/cuda/lib64/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.12"};
}

// The library for the current $SPARSEGEN_CUBLASLT, loading it when that value changed.
const Api* load(std::string* why) {
  static dynlib::Loader<Api> loader("cuBLASLt", "SPARSEGEN_CUBLASLT", default_paths, open_library);
  return loader.get(why);
}

const Api& api_or_throw() {
  std::string why;
  const Api* api = load(&why);
  if (api == nullptr) throw CublasLtError(why, -1);
  return *api;
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CublasLtError(fmt::format("{} failed: cuBLAS status {}", call, static_cast<int>(s)),
                        static_cast<int>(s));
}

void* vptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

bool available(std::string* why) {
  return load(why) != nullptr;
}

std::string version() {
  const Api& api = api_or_throw();
  return fmt::format("cuBLASLt {} ({})", api.GetVersion(), api.path);
}

struct Gemm::Impl {
  const Api* api = nullptr;
  GemmShape shape;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::shared_ptr<cuda::DeviceBuffer> workspace;  // its own, or one shared with another plan
  ~Impl() {
    if (api == nullptr) return;
    if (lc) api->LayoutDestroy(lc);
    if (lb) api->LayoutDestroy(lb);
    if (la) api->LayoutDestroy(la);
    if (desc) api->DescDestroy(desc);
    if (lt) api->Destroy(lt);
  }
};

Gemm::Gemm(const GemmShape& shape, const Gemm* share_workspace_with)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.api = &api_or_throw();
  s.shape = shape;
  const Api& api = *s.api;
  const bool i8 = shape.operands == Operands::Int8, f8 = shape.operands == Operands::Fp8;
  if (i8 || f8) {
    const int64_t kq = f8 ? 16 : 4;  // k, lda and ldb (elements, 1 byte each)
    if (!shape.b_transposed || shape.relu || shape.relu_mask_ld != 0 || shape.c_fp32 ||
        shape.k % kq != 0 || shape.lda % kq != 0 || shape.ldb % kq != 0 || shape.ldc % 4 != 0)
      throw CublasLtError(
          fmt::format("cuBLASLt runs an {} {}x{}x{} GEMM only as TN with k and the leading "
                      "dimensions of A and B multiples of {} (of C: of 4), without ReLU",
                      i8 ? "int8" : "fp8 e4m3", shape.m, shape.n, shape.k, kq),
          -1);
  }
  const cudaDataType t = i8           ? CUDA_R_8I
                         : f8         ? CUDA_R_8F_E4M3
                         : shape.half ? CUDA_R_16F
                                      : CUDA_R_16BF;
  const cudaDataType tc = i8 ? CUDA_R_32I : f8 || shape.c_fp32 ? CUDA_R_32F : t;
  check(api.Create(&s.lt), "cublasLtCreate");
  if (i8)
    check(api.DescCreate(&s.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I), "cublasLtMatmulDescCreate");
  else
    check(api.DescCreate(&s.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // Row-major C = A·B is column-major C^T = B^T·A^T: the library's "A" is our B (n x k as
  // column-major when B is row-major k x n; transposed when B is stored n x k), its "B" our A.
  const cublasOperation_t ta = shape.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = CUBLAS_OP_N;
  check(api.DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(api.DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (shape.relu_mask_ld != 0 &&
      (!shape.relu || shape.relu_mask_ld % 128 != 0 || shape.relu_mask_ld < shape.n))
    throw CublasLtError(fmt::format("cuBLASLt's ReLU bit-mask needs relu and a leading dimension "
                                    "that is a multiple of 128 bits and at least n = {} (got {})",
                                    shape.n, shape.relu_mask_ld),
                        -1);
  if (shape.relu) {
    const cublasLtEpilogue_t e =
        shape.relu_mask_ld != 0 ? CUBLASLT_EPILOGUE_RELU_AUX : CUBLASLT_EPILOGUE_RELU;
    check(api.DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
          "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  }
  if (shape.relu_mask_ld != 0) {
    const int64_t ld = shape.relu_mask_ld;
    check(api.DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld),
          "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    // The heuristic reads only the mask address's alignment; run() sets the real one, which has
    // at least this one's (256 bytes).
    const void* placeholder = reinterpret_cast<const void*>(uintptr_t{256});
    check(api.DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &placeholder,
                               sizeof placeholder),
          "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
  }
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (shape.b_transposed)
    check(api.LayoutCreate(&s.la, t, u(shape.k), u(shape.n), shape.ldb),
          "cublasLtMatrixLayoutCreate(B)");
  else
    check(api.LayoutCreate(&s.la, t, u(shape.n), u(shape.k), shape.ldb),
          "cublasLtMatrixLayoutCreate(B)");
  check(api.LayoutCreate(&s.lb, t, u(shape.k), u(shape.m), shape.lda),
        "cublasLtMatrixLayoutCreate(A)");
  check(api.LayoutCreate(&s.lc, tc, u(shape.n), u(shape.m), shape.ldc),
        "cublasLtMatrixLayoutCreate(C)");
  cublasLtMatmulPreference_t pref = nullptr;
  check(api.PrefCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kWorkspaceBytes;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  // fp32 accumulation end to end: split-K parts are summed in the compute type (or not split);
  // schemes that add the parts in the 16-bit output type (in place or in the workspace) round
  // every partial sum and break the fp32-accumulation error bound the results are checked with.
  const uint32_t reductions =
      CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  cublasStatus_t st1 =
      api.PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (st1 == CUBLAS_STATUS_SUCCESS)
    st1 = api.PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                               sizeof reductions);
  const cublasStatus_t st2 =
      st1 != CUBLAS_STATUS_SUCCESS
          ? st1
          : api.GetHeuristic(s.lt, s.desc, s.la, s.lb, s.lc, s.lc, pref, 1, &result, &found);
  api.PrefDestroy(pref);
  check(st2, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw CublasLtError(
        fmt::format("cuBLASLt has no algorithm for a {}x{}x{} GEMM", shape.m, shape.n, shape.k),
        -1);
  s.algo = result.algo;
  s.workspace = share_workspace_with != nullptr
                    ? share_workspace_with->impl_->workspace
                    : std::make_shared<cuda::DeviceBuffer>(kWorkspaceBytes);
}

Gemm::~Gemm() = default;

void Gemm::run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, float alpha, float beta,
               CUstream stream, CUdeviceptr relu_mask) const {
  const Impl& s = *impl_;
  if (s.shape.m == 0 || s.shape.n == 0) return;
  if (s.shape.relu_mask_ld != 0) {
    if (relu_mask == 0 || relu_mask % 256 != 0)
      throw CublasLtError("cuBLASLt GEMM with a ReLU bit-mask needs its 256-byte aligned address",
                          -1);
    const void* mask = vptr(relu_mask);
    check(s.api->DescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &mask,
                                  sizeof mask),
          "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
  }
  // int8: the scale type is int32 (CUBLAS_COMPUTE_32I).
  const bool i8 = s.shape.operands == Operands::Int8;
  const int32_t alpha_i = static_cast<int32_t>(alpha), beta_i = static_cast<int32_t>(beta);
  if (i8 && (static_cast<float>(alpha_i) != alpha || static_cast<float>(beta_i) != beta))
    throw CublasLtError(
        fmt::format("cuBLASLt int8 GEMM with non-integer alpha {} or beta {}", alpha, beta), -1);
  const void* pa = i8 ? static_cast<const void*>(&alpha_i) : &alpha;
  const void* pb = i8 ? static_cast<const void*>(&beta_i) : &beta;
  check(s.api->Matmul(s.lt, s.desc, pa, vptr(b), s.la, vptr(a), s.lb, pb, vptr(c), s.lc, vptr(c),
                      s.lc, &s.algo, vptr(s.workspace->ptr()), s.workspace->bytes(),
                      reinterpret_cast<cudaStream_t>(stream)),
        "cublasLtMatmul");
}

const GemmShape& Gemm::shape() const {
  return impl_->shape;
}

}  // namespace sparsegen::cublaslt
