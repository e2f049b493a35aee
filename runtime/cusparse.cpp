#include "runtime/cusparse.h"

#include <cusparse.h>
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/dynamic_library.h"

namespace sparsegen::cusparse {
namespace {

// The entry points used here, resolved from the loaded library (types from the toolkit header).
struct Api {
  std::string path;
  decltype(&cusparseCreate) Create = nullptr;
  decltype(&cusparseDestroy) Destroy = nullptr;
  decltype(&cusparseGetProperty) GetProperty = nullptr;
  decltype(&cusparseGetErrorName) GetErrorName = nullptr;
  decltype(&cusparseSetStream) SetStream = nullptr;
  decltype(&cusparseCreateCsr) CreateCsr = nullptr;
  decltype(&cusparseDestroySpMat) DestroySpMat = nullptr;
  decltype(&cusparseCreateDnMat) CreateDnMat = nullptr;
  decltype(&cusparseDestroyDnMat) DestroyDnMat = nullptr;
  decltype(&cusparseSpMM_bufferSize) BufferSize = nullptr;
  decltype(&cusparseSpMM_preprocess) Preprocess = nullptr;
  decltype(&cusparseSpMM) SpMM = nullptr;
};

const Api* open_library(const std::string& path, std::string* why) {
  void* lib = dynlib::open(path, why);
  if (lib == nullptr) return nullptr;
  using dynlib::resolve;
  auto api = std::make_unique<Api>();
  api->path = path;
  std::vector<std::string> missing;
  resolve(lib, "cusparseCreate", api->Create, missing);
  resolve(lib, "cusparseDestroy", api->Destroy, missing);
  resolve(lib, "cusparseGetProperty", api->GetProperty, missing);
  resolve(lib, "cusparseGetErrorName", api->GetErrorName, missing);
  resolve(lib, "cusparseSetStream", api->SetStream, missing);
  resolve(lib, "cusparseCreateCsr", api->CreateCsr, missing);
  resolve(lib, "cusparseDestroySpMat", api->DestroySpMat, missing);
  resolve(lib, "cusparseCreateDnMat", api->CreateDnMat, missing);
  resolve(lib, "cusparseDestroyDnMat", api->DestroyDnMat, missing);
  resolve(lib, "cusparseSpMM_bufferSize", api->BufferSize, missing);
  resolve(lib, "cusparseSpMM_preprocess", api->Preprocess, missing);
  resolve(lib, "cusparseSpMM", api->SpMM, missing);
  if (!missing.empty()) {
    *why = dynlib::missing_text(missing);
    return nullptr;
  }
  return api.release();
}

std::vector<std::string> default_paths() {
  return {"libcusparse.so.12", "libcusparse.so", "/usr/local/cuda/lib64/libcusparse.so.12",
          "/usr/local/cuda/lib64/libcusparse.so"};
}

const Api* load(std::string* why) {
  static dynlib::Loader<Api> loader("cuSPARSE", "SPARSEGEN_CUSPARSE", default_paths, open_library);
  return loader.get(why);
}

const Api& api_or_throw() {
  std::string why;
  const Api* api = load(&why);
  if (api == nullptr) throw CusparseError(why, -1);
  return *api;
}

void check(const Api& api, cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw CusparseError(
        fmt::format("{} failed: {} ({})", call, api.GetErrorName(s), static_cast<int>(s)),
        static_cast<int>(s));
}

void* vptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

cusparseSpMMAlg_t alg_of(const std::string& name) {
  if (name == "default") return CUSPARSE_SPMM_ALG_DEFAULT;
  if (name == "alg1") return CUSPARSE_SPMM_CSR_ALG1;
  if (name == "alg2") return CUSPARSE_SPMM_CSR_ALG2;
  if (name == "alg3") return CUSPARSE_SPMM_CSR_ALG3;
  throw CusparseError("cuSPARSE: no CSR SpMM algorithm named '" + name + "'", -1);
}

cudaDataType value_type(const SpmmShape& s) {
  return s.value_bytes == 4 ? CUDA_R_32F : s.half ? CUDA_R_16F : CUDA_R_16BF;
}

}  // namespace

bool available(std::string* why) {
  std::string local;
  return load(why != nullptr ? why : &local) != nullptr;
}

std::string version() {
  const Api& api = api_or_throw();
  int major = 0, minor = 0, patch = 0;
  check(api, api.GetProperty(MAJOR_VERSION, &major), "cusparseGetProperty");
  check(api, api.GetProperty(MINOR_VERSION, &minor), "cusparseGetProperty");
  check(api, api.GetProperty(PATCH_LEVEL, &patch), "cusparseGetProperty");
  return fmt::format("cuSPARSE {}.{}.{} ({})", major, minor, patch, api.path);
}

struct Spmm::Impl {
  const Api* api = nullptr;
  SpmmShape shape;
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t a = nullptr;
  cuda::DeviceBuffer workspace;
  mutable std::mutex mu;  // the handle's stream and the first-call preprocessing
  mutable bool preprocessed = false;
  ~Impl() {
    if (api == nullptr) return;
    if (a) api->DestroySpMat(a);
    if (handle) api->Destroy(handle);
  }
};

namespace {

// The dense descriptors of one call (host objects: a few microseconds to make).
struct DenseOperands {
  const Api& api;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  DenseOperands(const Api& a, const SpmmShape& s, CUdeviceptr pb, CUdeviceptr pc) : api(a) {
    const cusparseOrder_t order = s.row_major ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
    const cudaDataType t = value_type(s);
    check(api, api.CreateDnMat(&b, s.k, s.n, s.row_major ? s.n : s.k, vptr(pb), t, order),
          "cusparseCreateDnMat(B)");
    check(api, api.CreateDnMat(&c, s.m, s.n, s.row_major ? s.n : s.m, vptr(pc), t, order),
          "cusparseCreateDnMat(C)");
  }
  ~DenseOperands() {
    if (c) api.DestroyDnMat(c);
    if (b) api.DestroyDnMat(b);
  }
  DenseOperands(const DenseOperands&) = delete;
  DenseOperands& operator=(const DenseOperands&) = delete;
};

}  // namespace

Spmm::Spmm(const SpmmShape& shape, CUdeviceptr row_offsets, CUdeviceptr col_idx, CUdeviceptr values)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.api = &api_or_throw();
  s.shape = shape;
  const Api& api = *s.api;
  check(api, api.Create(&s.handle), "cusparseCreate");
  check(api,
        api.CreateCsr(&s.a, shape.m, shape.k, shape.nnz, vptr(row_offsets), vptr(col_idx),
                      vptr(values), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                      CUSPARSE_INDEX_BASE_ZERO, value_type(shape)),
        "cusparseCreateCsr");
  // The workspace for this shape, order and algorithm (the size depends on the dense operands'
  // shapes only: a placeholder address stands for B and C). A refusal (NOT_SUPPORTED) surfaces
  // here, at load.
  const cuda::DeviceBuffer placeholder(16);
  const DenseOperands d(api, shape, placeholder.ptr(), placeholder.ptr());
  const float alpha = 1.0f, beta = 0.0f;
  size_t bytes = 0;
  check(api,
        api.BufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                       &alpha, s.a, d.b, &beta, d.c, CUDA_R_32F, alg_of(shape.algorithm), &bytes),
        "cusparseSpMM_bufferSize");
  s.workspace = cuda::DeviceBuffer(std::max<size_t>(bytes, 16));
}

Spmm::~Spmm() = default;

void Spmm::run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const {
  const Impl& s = *impl_;
  if (s.shape.m == 0 || s.shape.n == 0) return;
  const Api& api = *s.api;
  std::lock_guard lock(s.mu);
  check(api, api.SetStream(s.handle, reinterpret_cast<cudaStream_t>(stream)), "cusparseSetStream");
  const DenseOperands d(api, s.shape, b, c);
  const cusparseSpMMAlg_t alg = alg_of(s.shape.algorithm);
  if (!s.preprocessed) {
    check(
        api,
        api.Preprocess(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                       &alpha, s.a, d.b, &beta, d.c, CUDA_R_32F, alg, vptr(s.workspace.ptr())),
        "cusparseSpMM_preprocess");
    s.preprocessed = true;
  }
  check(api,
        api.SpMM(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                 &alpha, s.a, d.b, &beta, d.c, CUDA_R_32F, alg, vptr(s.workspace.ptr())),
        "cusparseSpMM");
}

const SpmmShape& Spmm::shape() const {
  return impl_->shape;
}

int64_t Spmm::workspace_bytes() const {
  return static_cast<int64_t>(impl_->workspace.bytes());
}

}  // namespace sparsegen::cusparse
