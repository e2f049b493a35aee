#include "benchmarks/baselines.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "runtime/cuda_driver.h"

namespace sparsegen::bench {
namespace {

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw BaselineError(
        fmt::format("{} failed: {} ({})", call, cudaGetErrorName(e), cudaGetErrorString(e)));
  }
}

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw BaselineError(fmt::format("{} failed: status {} ({})", call, static_cast<int>(s),
                                    cublasGetStatusString(s)));
  }
}

std::string cusparse_status(cusparseStatus_t s) {
  return fmt::format("{} ({})", cusparseGetErrorName(s), cusparseGetErrorString(s));
}

void check_cusparse(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS) {
    throw BaselineError(fmt::format("{} failed: {}", call, cusparse_status(s)));
  }
}

// True for statuses that mean "this algorithm / layout / dtype combination is not offered", which
// the benchmark records instead of failing.
bool is_unsupported(cusparseStatus_t s) {
  return s == CUSPARSE_STATUS_NOT_SUPPORTED || s == CUSPARSE_STATUS_INVALID_VALUE;
}

cudaDataType cuda_type(DType t) {
  switch (t) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::I8:
      return CUDA_R_8I;
    case DType::F8E4M3:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

// `values` converted to the raw bytes of `t`.
void store_value(DType t, float v, char* dst) {
  if (t == DType::F32) {
    std::memcpy(dst, &v, 4);
  } else {
    const uint16_t h = t == DType::F16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
    std::memcpy(dst, &h, 2);
  }
}

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    throw BaselineError(fmt::format("{} = {} does not fit the libraries' 32-bit int", what, v));
  }
  return static_cast<int>(v);
}

void* ptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

}  // namespace

void attach_cudart(int ordinal) {
  check_cuda(cudaSetDevice(ordinal), "cudaSetDevice");
  check_cuda(cudaFree(nullptr), "cudaFree(0) (runtime initialization)");
  int dev = -1;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev != ordinal) {
    throw BaselineError(fmt::format("cudart selected device {} instead of {}", dev, ordinal));
  }
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  check_cublas(cublasGetProperty(MAJOR_VERSION, &major), "cublasGetProperty");
  check_cublas(cublasGetProperty(MINOR_VERSION, &minor), "cublasGetProperty");
  check_cublas(cublasGetProperty(PATCH_LEVEL, &patch), "cublasGetProperty");
  return fmt::format("cuBLAS {}.{}.{}", major, minor, patch);
}

std::string cusparse_version() {
  int major = 0, minor = 0, patch = 0;
  check_cusparse(cusparseGetProperty(MAJOR_VERSION, &major), "cusparseGetProperty");
  check_cusparse(cusparseGetProperty(MINOR_VERSION, &minor), "cusparseGetProperty");
  check_cusparse(cusparseGetProperty(PATCH_LEVEL, &patch), "cusparseGetProperty");
  return fmt::format("cuSPARSE {}.{}.{}", major, minor, patch);
}

std::string cudart_version() {
  int v = 0;
  check_cuda(cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion");
  return fmt::format("CUDA runtime {}", v);
}

// ---------------------------------------------------------------- cuBLAS

struct CublasDense::Impl {
  cublasHandle_t handle = nullptr;
  cuda::DeviceBuffer a;
  int m = 0, k = 0;
  DType dtype = DType::F32;
  ~Impl() {
    if (handle) cublasDestroy(handle);
  }
};

CublasDense::CublasDense(const CsrMatrix& a, DType dtype) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.m = to_int(a.rows, "rows");
  s.k = to_int(a.cols, "cols");
  s.dtype = dtype;
  const std::size_t w = static_cast<std::size_t>(dtype_bytes(dtype));
  const std::size_t bytes = static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols) * w;
  std::vector<char> host(bytes, 0);  // +0.0 in every dtype is all-zero bits
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t j = a.row_ptr[r]; j < a.row_ptr[r + 1]; ++j) {
      const std::size_t pos = static_cast<std::size_t>(r) * static_cast<std::size_t>(a.cols) +
                              static_cast<std::size_t>(a.col_idx[j]);
      store_value(dtype, a.values[j], host.data() + pos * w);
    }
  }
  s.a = cuda::DeviceBuffer(bytes);
  s.a.upload(host.data(), bytes);
  check_cublas(cublasCreate(&s.handle), "cublasCreate");
}

CublasDense::~CublasDense() = default;

std::size_t CublasDense::a_bytes() const {
  return impl_->a.bytes();
}

std::vector<Candidate> CublasDense::candidates(int64_t n64, CUdeviceptr b, CUdeviceptr c) const {
  const Impl* s = impl_.get();
  const int n = to_int(n64, "N");
  std::vector<Candidate> out;
  // Row-major C (M x N) is column-major C^T (N x M) = B^T (N x K, ld N) * A^T (K x M, ld K): no
  // transposes, each operand in its natural row-major storage.
  Candidate g;
  g.name = "cublasGemmEx";
  g.run = [s, n, b, c](CUstream stream) {
    check_cublas(cublasSetStream(s->handle, stream), "cublasSetStream");
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType t = cuda_type(s->dtype);
    check_cublas(cublasGemmEx(s->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, s->m, s->k, &alpha, ptr(b), t,
                              n, ptr(s->a.ptr()), t, s->k, &beta, ptr(c), t, n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  };
  out.push_back(std::move(g));
  if (n == 1) {
    // y (M) = A x: A row-major M x K is column-major K x M, transposed.
    Candidate v;
    v.run = [s, b, c](CUstream stream) {
      check_cublas(cublasSetStream(s->handle, stream), "cublasSetStream");
      const float alpha = 1.0f, beta = 0.0f;
      switch (s->dtype) {
        case DType::F16:
          check_cublas(cublasHSHgemvStridedBatched(s->handle, CUBLAS_OP_T, s->k, s->m, &alpha,
                                                   static_cast<const __half*>(ptr(s->a.ptr())),
                                                   s->k, 0, static_cast<const __half*>(ptr(b)), 1,
                                                   0, &beta, static_cast<__half*>(ptr(c)), 1, 0, 1),
                       "cublasHSHgemvStridedBatched");
          break;
        case DType::BF16:
          check_cublas(
              cublasTSTgemvStridedBatched(s->handle, CUBLAS_OP_T, s->k, s->m, &alpha,
                                          static_cast<const __nv_bfloat16*>(ptr(s->a.ptr())), s->k,
                                          0, static_cast<const __nv_bfloat16*>(ptr(b)), 1, 0, &beta,
                                          static_cast<__nv_bfloat16*>(ptr(c)), 1, 0, 1),
              "cublasTSTgemvStridedBatched");
          break;
        case DType::I8:
        case DType::F8E4M3:
          throw UserError(
              fmt::format("dense baseline: {} gemv is not measured here", to_string(s->dtype)));
        case DType::F32:
          check_cublas(cublasSgemv(s->handle, CUBLAS_OP_T, s->k, s->m, &alpha,
                                   static_cast<const float*>(ptr(s->a.ptr())), s->k,
                                   static_cast<const float*>(ptr(b)), 1, &beta,
                                   static_cast<float*>(ptr(c)), 1),
                       "cublasSgemv");
          break;
      }
    };
    v.name = s->dtype == DType::F16    ? "cublasHSHgemvStridedBatched"
             : s->dtype == DType::BF16 ? "cublasTSTgemvStridedBatched"
                                       : "cublasSgemv";
    out.push_back(std::move(v));
  }
  return out;
}

// ---------------------------------------------------------------- cuSPARSE

namespace {

struct SpMatDeleter {
  void operator()(cusparseSpMatDescr_t d) const { cusparseDestroySpMat(d); }
};
struct DnMatDeleter {
  void operator()(cusparseDnMatDescr_t d) const { cusparseDestroyDnMat(d); }
};
struct DnVecDeleter {
  void operator()(cusparseDnVecDescr_t d) const { cusparseDestroyDnVec(d); }
};
using SpMat = std::unique_ptr<std::remove_pointer_t<cusparseSpMatDescr_t>, SpMatDeleter>;
using DnMat = std::unique_ptr<std::remove_pointer_t<cusparseDnMatDescr_t>, DnMatDeleter>;
using DnVec = std::unique_ptr<std::remove_pointer_t<cusparseDnVecDescr_t>, DnVecDeleter>;

// What one prepared configuration keeps alive: descriptors and its workspace. Each configuration
// has its own sparse-matrix descriptor (over the shared device arrays), since preprocessing may
// attach algorithm-specific data to the descriptor.
struct Prepared {
  SpMat a_mat;
  DnMat b_mat, c_mat;
  DnVec x_vec, y_vec;
  cuda::DeviceBuffer workspace;
};

}  // namespace

struct CusparseCsr::Impl {
  cusparseHandle_t handle = nullptr;
  cuda::DeviceBuffer row_ptr, col_idx, values;
  int64_t m = 0, k = 0, nnz = 0;
  DType dtype = DType::F32;
  std::vector<std::shared_ptr<Prepared>> prepared;  // kept until the next candidates() call
  SpMat make_csr() const;
  ~Impl() {
    prepared.clear();
    if (handle) cusparseDestroy(handle);
  }
};

CusparseCsr::CusparseCsr(const CsrMatrix& a, DType dtype) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.m = a.rows;
  s.k = a.cols;
  s.nnz = a.nnz();
  s.dtype = dtype;
  to_int(a.nnz(), "nnz");  // 32-bit offsets
  std::vector<int32_t> rp(a.row_ptr.begin(), a.row_ptr.end());
  const std::size_t w = static_cast<std::size_t>(dtype_bytes(dtype));
  std::vector<char> vals(static_cast<std::size_t>(a.nnz()) * w);
  for (std::size_t j = 0; j < a.values.size(); ++j) store_value(dtype, a.values[j], &vals[j * w]);
  // One extra element each so that empty arrays still get a valid (non-null) pointer.
  s.row_ptr = cuda::DeviceBuffer(rp.size() * 4);
  s.row_ptr.upload(rp);
  s.col_idx = cuda::DeviceBuffer((a.col_idx.size() + 1) * 4);
  s.col_idx.upload(a.col_idx);
  s.values = cuda::DeviceBuffer(vals.size() + w);
  s.values.upload(vals.data(), vals.size());
  check_cusparse(cusparseCreate(&s.handle), "cusparseCreate");
  // Fail early (here, not per candidate) when the CSR itself is refused.
  (void)s.make_csr();
}

SpMat CusparseCsr::Impl::make_csr() const {
  cusparseSpMatDescr_t d = nullptr;
  check_cusparse(cusparseCreateCsr(&d, m, k, nnz, ptr(row_ptr.ptr()), ptr(col_idx.ptr()),
                                   ptr(values.ptr()), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, cuda_type(dtype)),
                 "cusparseCreateCsr");
  return SpMat(d);
}

CusparseCsr::~CusparseCsr() = default;

std::size_t CusparseCsr::a_bytes() const {
  const Impl& s = *impl_;
  return static_cast<std::size_t>(s.nnz) * (static_cast<std::size_t>(dtype_bytes(s.dtype)) + 4) +
         static_cast<std::size_t>(s.m + 1) * 4;
}

std::vector<Candidate> CusparseCsr::candidates(int64_t n, CUdeviceptr b_row, CUdeviceptr b_col,
                                               CUdeviceptr c) {
  Impl& s = *impl_;
  s.prepared.clear();
  std::vector<Candidate> out;
  const cudaDataType t = cuda_type(s.dtype);
  const float alpha = 1.0f, beta = 0.0f;
  if (n == 1) {
    const std::pair<cusparseSpMVAlg_t, const char*> algs[] = {
        {CUSPARSE_SPMV_ALG_DEFAULT, "ALG_DEFAULT"},
        {CUSPARSE_SPMV_CSR_ALG1, "CSR_ALG1"},
        {CUSPARSE_SPMV_CSR_ALG2, "CSR_ALG2"}};
    for (const auto& [alg, alg_name] : algs) {
      Candidate cand;
      cand.name = fmt::format("cusparseSpMV {}", alg_name);
      auto p = std::make_shared<Prepared>();
      p->a_mat = s.make_csr();
      cusparseSpMatDescr_t mat = p->a_mat.get();
      cusparseDnVecDescr_t x = nullptr, y = nullptr;
      check_cusparse(cusparseCreateDnVec(&x, s.k, ptr(b_row), t), "cusparseCreateDnVec");
      p->x_vec.reset(x);
      check_cusparse(cusparseCreateDnVec(&y, s.m, ptr(c), t), "cusparseCreateDnVec");
      p->y_vec.reset(y);
      std::size_t bytes = 0;
      cusparseStatus_t st =
          cusparseSpMV_bufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, x, &beta,
                                  y, CUDA_R_32F, alg, &bytes);
      if (st != CUSPARSE_STATUS_SUCCESS) {
        if (!is_unsupported(st)) check_cusparse(st, "cusparseSpMV_bufferSize");
        cand.unsupported = "cusparseSpMV_bufferSize: " + cusparse_status(st);
        out.push_back(std::move(cand));
        continue;
      }
      p->workspace = cuda::DeviceBuffer(bytes);
      st = cusparseSpMV_preprocess(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, x,
                                   &beta, y, CUDA_R_32F, alg, ptr(p->workspace.ptr()));
      if (st != CUSPARSE_STATUS_SUCCESS) {
        if (!is_unsupported(st)) check_cusparse(st, "cusparseSpMV_preprocess");
        cand.unsupported = "cusparseSpMV_preprocess: " + cusparse_status(st);
        out.push_back(std::move(cand));
        continue;
      }
      cand.workspace_bytes = bytes;
      cusparseHandle_t h = s.handle;
      Prepared* raw = p.get();
      cand.run = [h, mat, raw, alg](CUstream stream) {
        const float one = 1.0f, zero = 0.0f;
        check_cusparse(cusparseSetStream(h, stream), "cusparseSetStream");
        check_cusparse(
            cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, raw->x_vec.get(), &zero,
                         raw->y_vec.get(), CUDA_R_32F, alg, ptr(raw->workspace.ptr())),
            "cusparseSpMV");
      };
      s.prepared.push_back(std::move(p));
      out.push_back(std::move(cand));
    }
    return out;
  }

  const std::pair<cusparseSpMMAlg_t, const char*> algs[] = {
      {CUSPARSE_SPMM_ALG_DEFAULT, "ALG_DEFAULT"},
      {CUSPARSE_SPMM_CSR_ALG1, "CSR_ALG1"},
      {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
      {CUSPARSE_SPMM_CSR_ALG3, "CSR_ALG3"}};
  for (const Layout layout : {Layout::RowMajor, Layout::ColMajor}) {
    const bool row = layout == Layout::RowMajor;
    for (const auto& [alg, alg_name] : algs) {
      Candidate cand;
      cand.name = fmt::format("cusparseSpMM {} {}", alg_name, row ? "row" : "col");
      cand.b_layout = layout;
      cand.c_layout = layout;
      auto p = std::make_shared<Prepared>();
      p->a_mat = s.make_csr();
      cusparseSpMatDescr_t mat = p->a_mat.get();
      const cusparseOrder_t order = row ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
      cusparseDnMatDescr_t bm = nullptr, cm = nullptr;
      check_cusparse(
          cusparseCreateDnMat(&bm, s.k, n, row ? n : s.k, ptr(row ? b_row : b_col), t, order),
          "cusparseCreateDnMat");
      p->b_mat.reset(bm);
      check_cusparse(cusparseCreateDnMat(&cm, s.m, n, row ? n : s.m, ptr(c), t, order),
                     "cusparseCreateDnMat");
      p->c_mat.reset(cm);
      std::size_t bytes = 0;
      cusparseStatus_t st = cusparseSpMM_bufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                    CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat,
                                                    bm, &beta, cm, CUDA_R_32F, alg, &bytes);
      if (st != CUSPARSE_STATUS_SUCCESS) {
        if (!is_unsupported(st)) check_cusparse(st, "cusparseSpMM_bufferSize");
        cand.unsupported = "cusparseSpMM_bufferSize: " + cusparse_status(st);
        out.push_back(std::move(cand));
        continue;
      }
      p->workspace = cuda::DeviceBuffer(bytes);
      st = cusparseSpMM_preprocess(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, bm, &beta, cm,
                                   CUDA_R_32F, alg, ptr(p->workspace.ptr()));
      if (st != CUSPARSE_STATUS_SUCCESS) {
        if (!is_unsupported(st)) check_cusparse(st, "cusparseSpMM_preprocess");
        cand.unsupported = "cusparseSpMM_preprocess: " + cusparse_status(st);
        out.push_back(std::move(cand));
        continue;
      }
      cand.workspace_bytes = bytes;
      cusparseHandle_t h = s.handle;
      Prepared* raw = p.get();
      cand.run = [h, mat, raw, alg](CUstream stream) {
        const float one = 1.0f, zero = 0.0f;
        check_cusparse(cusparseSetStream(h, stream), "cusparseSetStream");
        check_cusparse(
            cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                         &one, mat, raw->b_mat.get(), &zero, raw->c_mat.get(), CUDA_R_32F, alg,
                         ptr(raw->workspace.ptr())),
            "cusparseSpMM");
      };
      s.prepared.push_back(std::move(p));
      out.push_back(std::move(cand));
    }
  }
  return out;
}

}  // namespace sparsegen::bench
