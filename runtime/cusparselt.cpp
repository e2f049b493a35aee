#include "runtime/cusparselt.h"

#include <cusparse.h>  // status, order and operation enums (no cuSPARSE library is linked)
#include <dlfcn.h>
#include <glob.h>
#include <library_types.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/cuda_driver.h"
#include "runtime/dynamic_library.h"
#include "runtime/timing.h"

namespace sparsegen::cusparselt {
namespace {

// ---------------------------------------------------------------- our declarations of the C API
// The opaque structures are fixed 512-byte, 16-byte aligned arrays in cusparseLt.h (0.6+).
struct alignas(16) Opaque {
  uint8_t data[512];
};
static_assert(sizeof(Opaque) == 512 && alignof(Opaque) == 16);
using Handle = Opaque;
using MatDescr = Opaque;
using MatmulDescr = Opaque;
using AlgSelection = Opaque;
using Plan = Opaque;

// Enum values of cusparseLt.h (0.6+).
constexpr int kSparsity50 = 0;         // CUSPARSELT_SPARSITY_50_PERCENT
constexpr int kCompute32I = 0;         // CUSPARSE_COMPUTE_32I
constexpr int kCompute32F = 2;         // CUSPARSE_COMPUTE_32F
constexpr int kAlgDefault = 0;         // CUSPARSELT_MATMUL_ALG_DEFAULT
constexpr int kAttrConfigId = 0;       // CUSPARSELT_MATMUL_ALG_CONFIG_ID
constexpr int kAttrMaxId = 1;          // CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID
constexpr int kAttrSplitK = 3;         // CUSPARSELT_MATMUL_SPLIT_K
constexpr int kAttrSplitKMode = 4;     // CUSPARSELT_MATMUL_SPLIT_K_MODE
constexpr int kAttrSplitKBuffers = 5;  // CUSPARSELT_MATMUL_SPLIT_K_BUFFERS

using Status = cusparseStatus_t;
struct Api {
  std::string path;
  Status (*Init)(Handle*);
  Status (*Destroy)(const Handle*);
  Status (*GetProperty)(libraryPropertyType, int*);
  const char* (*GetErrorName)(Status);
  const char* (*GetErrorString)(Status);
  Status (*DenseDescriptorInit)(const Handle*, MatDescr*, int64_t, int64_t, int64_t, uint32_t,
                                cudaDataType, cusparseOrder_t);
  Status (*StructuredDescriptorInit)(const Handle*, MatDescr*, int64_t, int64_t, int64_t, uint32_t,
                                     cudaDataType, cusparseOrder_t, int);
  Status (*MatDescriptorDestroy)(const MatDescr*);
  Status (*MatmulDescriptorInit)(const Handle*, MatmulDescr*, cusparseOperation_t,
                                 cusparseOperation_t, const MatDescr*, const MatDescr*,
                                 const MatDescr*, const MatDescr*, int);
  Status (*MatmulAlgSelectionInit)(const Handle*, AlgSelection*, const MatmulDescr*, int);
  Status (*MatmulAlgSelectionDestroy)(const AlgSelection*);
  Status (*MatmulAlgSetAttribute)(const Handle*, AlgSelection*, int, const void*, size_t);
  Status (*MatmulAlgGetAttribute)(const Handle*, const AlgSelection*, int, void*, size_t);
  Status (*MatmulGetWorkspace)(const Handle*, const Plan*, size_t*);
  Status (*MatmulPlanInit)(const Handle*, Plan*, const MatmulDescr*, const AlgSelection*);
  Status (*MatmulPlanDestroy)(const Plan*);
  Status (*Matmul)(const Handle*, const Plan*, const void*, const void*, const void*, const void*,
                   const void*, void*, void*, CUstream*, int32_t);
  Status (*MatmulSearch)(const Handle*, Plan*, const void*, const void*, const void*, const void*,
                         const void*, void*, void*, CUstream*, int32_t);
  Status (*SpMMAPruneCheck2)(const Handle*, const MatDescr*, int, cusparseOperation_t, const void*,
                             int*, CUstream);
  Status (*SpMMACompressedSize)(const Handle*, const Plan*, size_t*, size_t*);
  Status (*SpMMACompress)(const Handle*, const Plan*, const void*, void*, void*, CUstream);
  int major = 0, minor = 0, patch = 0;
};

// Opens `path` and resolves every entry point; nullptr with the reason in *why otherwise.
// Tables are never freed (objects keep pointers to theirs) and libraries never closed.
const Api* open_library(const std::string& path, std::string* why) {
  void* lib = dynlib::open(path, why);
  if (lib == nullptr) return nullptr;
  using dynlib::resolve;
  auto api = std::make_unique<Api>();
  api->path = path;
  std::vector<std::string> missing;
  resolve(lib, "cusparseLtInit", api->Init, missing);
  resolve(lib, "cusparseLtDestroy", api->Destroy, missing);
  resolve(lib, "cusparseLtGetProperty", api->GetProperty, missing);
  resolve(lib, "cusparseLtGetErrorName", api->GetErrorName, missing);
  resolve(lib, "cusparseLtGetErrorString", api->GetErrorString, missing);
  resolve(lib, "cusparseLtDenseDescriptorInit", api->DenseDescriptorInit, missing);
  resolve(lib, "cusparseLtStructuredDescriptorInit", api->StructuredDescriptorInit, missing);
  resolve(lib, "cusparseLtMatDescriptorDestroy", api->MatDescriptorDestroy, missing);
  resolve(lib, "cusparseLtMatmulDescriptorInit", api->MatmulDescriptorInit, missing);
  resolve(lib, "cusparseLtMatmulAlgSelectionInit", api->MatmulAlgSelectionInit, missing);
  resolve(lib, "cusparseLtMatmulAlgSelectionDestroy", api->MatmulAlgSelectionDestroy, missing);
  resolve(lib, "cusparseLtMatmulAlgSetAttribute", api->MatmulAlgSetAttribute, missing);
  resolve(lib, "cusparseLtMatmulAlgGetAttribute", api->MatmulAlgGetAttribute, missing);
  resolve(lib, "cusparseLtMatmulGetWorkspace", api->MatmulGetWorkspace, missing);
  resolve(lib, "cusparseLtMatmulPlanInit", api->MatmulPlanInit, missing);
  resolve(lib, "cusparseLtMatmulPlanDestroy", api->MatmulPlanDestroy, missing);
  resolve(lib, "cusparseLtMatmul", api->Matmul, missing);
  resolve(lib, "cusparseLtMatmulSearch", api->MatmulSearch, missing);
  resolve(lib, "cusparseLtSpMMAPruneCheck2", api->SpMMAPruneCheck2, missing);
  resolve(lib, "cusparseLtSpMMACompressedSize", api->SpMMACompressedSize, missing);
  resolve(lib, "cusparseLtSpMMACompress", api->SpMMACompress, missing);
  if (!missing.empty()) {
    *why = dynlib::missing_text(missing);
    return nullptr;
  }
  // The version needs no GPU; older libraries number the enums differently.
  if (api->GetProperty(MAJOR_VERSION, &api->major) != CUSPARSE_STATUS_SUCCESS ||
      api->GetProperty(MINOR_VERSION, &api->minor) != CUSPARSE_STATUS_SUCCESS ||
      api->GetProperty(PATCH_LEVEL, &api->patch) != CUSPARSE_STATUS_SUCCESS) {
    *why = "cusparseLtGetProperty failed";
    return nullptr;
  }
  if (api->major == 0 && api->minor < 6) {
    *why = fmt::format("version {}.{}.{} is older than 0.6", api->major, api->minor, api->patch);
    return nullptr;
  }
  return api.release();
}

// Candidate paths when $SPARSEGEN_CUSPARSELT is not set.
std::vector<std::string> default_paths() {
  std::vector<std::string> out{"libcusparseLt.so.0"};
  std::vector<std::string> sites = {"/usr/local/lib/python3*/dist-packages",
                                    "/usr/lib/python3/dist-packages",
                                    "/usr/local/lib/python3*/site-packages"};
  if (const char* home = std::getenv("HOME")) {
    sites.push_back(std::string(home) + "/.local/lib/python3*/site-packages");
  }
  if (const char* venv = std::getenv("VIRTUAL_ENV")) {
    sites.push_back(std::string(venv) + "/lib/python3*/site-packages");
  }
  // Virtual environments installed under /opt (e.g. a PyTorch image's /opt/torch/.venv) and the
  // folders of $PYTHONPATH.
  sites.push_back("/opt/*/.venv/lib/python3*/site-packages");
  sites.push_back("/opt/*/lib/python3*/site-packages");
  if (const char* pp = std::getenv("PYTHONPATH")) {
    std::string all = pp;
    for (size_t b = 0, e; b <= all.size(); b = e + 1) {
      e = all.find(':', b);
      if (e == std::string::npos) e = all.size();
      if (e > b) sites.push_back(all.substr(b, e - b));
    }
  }
  for (const auto& site : sites) {
    for (const char* sub :
         {"/nvidia/cu13/lib/libcusparseLt.so.0", "/nvidia/cusparselt/lib/libcusparseLt.so.0",
          "/nvidia/cu12/lib/libcusparseLt.so.0"}) {
      glob_t g{};
      if (glob((site + sub).c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
      }
      globfree(&g);
    }
  }
  return out;
}

// The library for the current $SPARSEGEN_CUSPARSELT, loading it when that value changed.
const Api* load(std::string* why) {
  static dynlib::Loader<Api> loader("cuSPARSELt", "SPARSEGEN_CUSPARSELT", default_paths,
                                    open_library);
  return loader.get(why);
}

const Api& api_or_throw() {
  std::string why;
  const Api* api = load(&why);
  if (!api) throw CusparseLtError(why, "dlopen", -1);
  return *api;
}

void check(const Api& api, Status s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS) {
    const char* name = api.GetErrorName(s);
    const char* text = api.GetErrorString(s);
    throw CusparseLtError(
        fmt::format("{} failed: {} ({})", call, name ? name : "?", text ? text : "no description"),
        call, static_cast<int>(s));
  }
}

void* vptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

// Driver entry points the wrappers of cuda_driver.h do not offer (device-to-device copies for
// the padded path, the current device for the L2 flush); libcuda is already loaded by then.
struct DriverExtras {
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
};

const DriverExtras& driver_extras() {
  static const DriverExtras extras = [] {
    DriverExtras e;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return e;
    e.memcpy_dtod_async =
        reinterpret_cast<decltype(e.memcpy_dtod_async)>(dlsym(lib, "cuMemcpyDtoDAsync_v2"));
    e.ctx_get_device = reinterpret_cast<decltype(e.ctx_get_device)>(dlsym(lib, "cuCtxGetDevice"));
    e.ctx_synchronize =
        reinterpret_cast<decltype(e.ctx_synchronize)>(dlsym(lib, "cuCtxSynchronize"));
    e.get_error_name = reinterpret_cast<decltype(e.get_error_name)>(dlsym(lib, "cuGetErrorName"));
    return e;
  }();
  return extras;
}

void check_driver(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver_extras().get_error_name) driver_extras().get_error_name(r, &name);
  throw CudaError(fmt::format("{} failed: {}", call, name ? name : "unknown CUresult"), call,
                  static_cast<int>(r), name ? name : "");
}

// Waits for all work of the current context (before a plan change rewrites the compressed weight
// that enqueued GEMMs may still read, and after the compression, whose buffer is then freed).
void ctx_synchronize() {
  const auto fn = driver_extras().ctx_synchronize;
  if (!fn) throw CudaError("cuCtxSynchronize not found in libcuda.so.1", "dlsym", 0, "");
  check_driver(fn(), "cuCtxSynchronize");
}

void copy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  const auto fn = driver_extras().memcpy_dtod_async;
  if (!fn) throw CudaError("cuMemcpyDtoDAsync_v2 not found in libcuda.so.1", "dlsym", 0, "");
  check_driver(fn(dst, src, bytes, stream), "cuMemcpyDtoDAsync");
}

int parse_int(std::string_view text, std::string_view field) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw std::invalid_argument(
        fmt::format("cuSPARSELt choice: {}='{}' is not an integer", field, text));
  }
  return v;
}

}  // namespace

// ---------------------------------------------------------------- public free functions

bool available(std::string* why) {
  try {
    return load(why) != nullptr;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string version() {
  const Api& api = api_or_throw();
  return fmt::format("cuSPARSELt {}.{}.{} ({})", api.major, api.minor, api.patch, api.path);
}

std::string_view to_string(Type t) {
  switch (t) {
    case Type::F16:
      return "fp16";
    case Type::BF16:
      return "bf16";
    case Type::I8:
      return "int8";
    case Type::E4M3:
      return "fp8_e4m3";
    case Type::I32:
      return "int32";
    case Type::F32:
      return "fp32";
  }
  return "?";
}

int type_bytes(Type t) {
  switch (t) {
    case Type::F16:
    case Type::BF16:
      return 2;
    case Type::I32:
    case Type::F32:
      return 4;
    default:
      return 1;
  }
}

cudaDataType cuda_data_type(Type t) {
  switch (t) {
    case Type::F16:
      return CUDA_R_16F;
    case Type::BF16:
      return CUDA_R_16BF;
    case Type::I8:
      return CUDA_R_8I;
    case Type::E4M3:
      return CUDA_R_8F_E4M3;
    case Type::I32:
      return CUDA_R_32I;
    case Type::F32:
      return CUDA_R_32F;
  }
  return CUDA_R_16F;
}

int64_t mk_multiple(Type in) {
  return type_bytes(in) == 1 ? 32 : 16;  // inputs only
}

std::string Choice::to_string() const {
  return fmt::format("alg={},split_k={},mode={},buffers={}", alg_id, split_k, split_k_mode,
                     split_k_buffers);
}

Choice Choice::parse(std::string_view text) {
  Choice c;
  std::map<std::string_view, int*> fields{{"alg", &c.alg_id},
                                          {"split_k", &c.split_k},
                                          {"mode", &c.split_k_mode},
                                          {"buffers", &c.split_k_buffers}};
  std::map<std::string_view, bool> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      throw std::invalid_argument(
          fmt::format("cuSPARSELt choice '{}': '{}' is not name=value", text, part));
    }
    const std::string_view name = part.substr(0, eq);
    const auto it = fields.find(name);
    if (it == fields.end()) {
      throw std::invalid_argument(
          fmt::format("cuSPARSELt choice '{}': unknown field '{}'", text, name));
    }
    if (seen[name]) {
      throw std::invalid_argument(
          fmt::format("cuSPARSELt choice '{}': '{}' given twice", text, name));
    }
    seen[name] = true;
    *it->second = parse_int(part.substr(eq + 1), name);
    pos = comma + 1;
  }
  if (seen.size() != fields.size()) {
    throw std::invalid_argument(
        fmt::format("cuSPARSELt choice '{}': needs alg, split_k, mode and buffers", text));
  }
  if (c.alg_id < 0 || c.split_k < 1 || c.split_k_mode < 0 || c.split_k_mode > 6 ||
      c.split_k_buffers < 1) {
    throw std::invalid_argument(fmt::format(
        "cuSPARSELt choice '{}': out of range (alg >= 0, split_k >= 1, mode 0..6, buffers >= 1)",
        text));
  }
  return c;
}

// ---------------------------------------------------------------- SparseGemm

// The library is called in one of two formulations, the first it accepts:
//   direct:  C (M x N, col-major)  = A (row-major, structured, op N) * B (N x K row-major, op T)
//   swapped: C^T (N x M, row-major) = B (N x K row-major, op N) * A^T (structured, op T)
// Both read and write exactly the caller's arrays (no transposition of data).
struct SparseGemm::Impl {
  const Api* api = nullptr;
  Shape shape;
  int64_t n_eff = 0;
  bool swapped = false;
  Handle handle{};
  bool handle_ok = false;
  MatDescr sparse{}, dense{}, out{};
  bool descr_ok = false;
  MatmulDescr matmul{};
  AlgSelection alg{};
  bool alg_ok = false;
  Plan plan{};
  bool plan_ok = false;
  Choice choice;
  cuda::DeviceBuffer a_dense;     // the caller's A, kept to compress it for every plan
  cuda::DeviceBuffer compressed;  // A compressed for the current plan
  cuda::DeviceBuffer workspace;
  cuda::DeviceBuffer b_pad, c_pad;  // only when n_eff != shape.n
  int max_id = 0;

  ~Impl() { release(); }

  // A destroyed plan or algorithm selection is zeroed. cuSPARSELt (0.8.0, the PyTorch wheel's,
  // on an H100) crashed with SIGSEGV inside cusparseLtMatmulPlanInit when a plan was initialized
  // again, after cusparseLtMatmulPlanDestroy, from the same matmul descriptor and algorithm
  // selection (its API log lists the matmul descriptor as an output of PlanInit). Every plan is
  // therefore made from a chain initialized afresh: matmul descriptor, algorithm selection,
  // attributes, plan, compression of A (plan_for).
  void release_plan() {
    if (plan_ok) api->MatmulPlanDestroy(&plan);
    plan_ok = false;
    plan = Plan{};
  }
  void release_alg() {
    release_plan();
    if (alg_ok) api->MatmulAlgSelectionDestroy(&alg);
    alg_ok = false;
    alg = AlgSelection{};
  }
  void release_descriptors() {
    release_alg();
    if (descr_ok) {
      api->MatDescriptorDestroy(&sparse);
      api->MatDescriptorDestroy(&dense);
      api->MatDescriptorDestroy(&out);
    }
    descr_ok = false;
  }
  void release() {
    if (!api) return;
    release_descriptors();
    if (handle_ok) api->Destroy(&handle);
    handle_ok = false;
  }

  // Descriptors, matmul descriptor, algorithm selection and default plan for one formulation.
  void init_descriptors(int64_t n, bool swap) {
    const Api& a = *api;
    const uint32_t align = 16;
    const cudaDataType tin = cuda_data_type(shape.in), tout = cuda_data_type(shape.out);
    const int64_t m = shape.m, k = shape.k;
    check(a,
          a.StructuredDescriptorInit(&handle, &sparse, m, k, k, align, tin, CUSPARSE_ORDER_ROW,
                                     kSparsity50),
          "cusparseLtStructuredDescriptorInit");
    Status s = a.DenseDescriptorInit(&handle, &dense, n, k, k, align, tin, CUSPARSE_ORDER_ROW);
    if (s != CUSPARSE_STATUS_SUCCESS) {
      a.MatDescriptorDestroy(&sparse);
      check(a, s, "cusparseLtDenseDescriptorInit (B)");
    }
    s = swap ? a.DenseDescriptorInit(&handle, &out, n, m, m, align, tout, CUSPARSE_ORDER_ROW)
             : a.DenseDescriptorInit(&handle, &out, m, n, m, align, tout, CUSPARSE_ORDER_COL);
    if (s != CUSPARSE_STATUS_SUCCESS) {
      a.MatDescriptorDestroy(&sparse);
      a.MatDescriptorDestroy(&dense);
      check(a, s, "cusparseLtDenseDescriptorInit (C)");
    }
    descr_ok = true;
    n_eff = n;
    swapped = swap;
    init_matmul();
    check(a, a.MatmulAlgGetAttribute(&handle, &alg, kAttrMaxId, &max_id, sizeof(max_id)),
          "cusparseLtMatmulAlgGetAttribute(CONFIG_MAX_ID)");
    plan_for(Choice{});
  }

  // (Re-)initializes the matmul descriptor and a fresh default algorithm selection for the
  // current formulation, destroying the plan and selection made before.
  void init_matmul() {
    const Api& a = *api;
    release_alg();
    matmul = MatmulDescr{};
    const int compute = shape.in == Type::I8 ? kCompute32I : kCompute32F;
    check(a,
          a.MatmulDescriptorInit(&handle, &matmul, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_TRANSPOSE, swapped ? &dense : &sparse,
                                 swapped ? &sparse : &dense, &out, &out, compute),
          "cusparseLtMatmulDescriptorInit");
    check(a, a.MatmulAlgSelectionInit(&handle, &alg, &matmul, kAlgDefault),
          "cusparseLtMatmulAlgSelectionInit");
    alg_ok = true;
  }

  // Sets the algorithm attributes and creates the plan and workspace; throws on rejection.
  // CONFIG_MAX_ID is the number of ids (valid ids are 0 .. max_id - 1); an id past it is
  // refused here, before the library sees it. All four attributes are int-sized (the split-K
  // mode is the enum cusparseLtSplitKMode_t); mode and buffers are set only for split-K > 1, so
  // a split-K 1 plan keeps the fresh selection's defaults.
  void plan_for(const Choice& c) {
    const Api& a = *api;
    if (c.alg_id < 0 || (max_id > 0 && c.alg_id >= max_id)) {
      throw CusparseLtError(fmt::format("cuSPARSELt: algorithm id {} is outside 0..{} for this "
                                        "shape",
                                        c.alg_id, max_id - 1),
                            "cusparseLtMatmulAlgSetAttribute(CONFIG_ID)",
                            static_cast<int>(CUSPARSE_STATUS_INVALID_VALUE));
    }
    init_matmul();
    check(a, a.MatmulAlgSetAttribute(&handle, &alg, kAttrConfigId, &c.alg_id, sizeof(int)),
          "cusparseLtMatmulAlgSetAttribute(CONFIG_ID)");
    check(a, a.MatmulAlgSetAttribute(&handle, &alg, kAttrSplitK, &c.split_k, sizeof(int)),
          "cusparseLtMatmulAlgSetAttribute(SPLIT_K)");
    if (c.split_k > 1 && c.split_k_mode != 0) {
      check(a,
            a.MatmulAlgSetAttribute(&handle, &alg, kAttrSplitKMode, &c.split_k_mode, sizeof(int)),
            "cusparseLtMatmulAlgSetAttribute(SPLIT_K_MODE)");
    }
    if (c.split_k > 1 && c.split_k_buffers > 1) {
      check(a,
            a.MatmulAlgSetAttribute(&handle, &alg, kAttrSplitKBuffers, &c.split_k_buffers,
                                    sizeof(int)),
            "cusparseLtMatmulAlgSetAttribute(SPLIT_K_BUFFERS)");
    }
    check(a, a.MatmulPlanInit(&handle, &plan, &matmul, &alg), "cusparseLtMatmulPlanInit");
    plan_ok = true;
    size_t ws = 0;
    check(a, a.MatmulGetWorkspace(&handle, &plan, &ws), "cusparseLtMatmulGetWorkspace");
    if (ws > workspace.bytes()) workspace = cuda::DeviceBuffer(ws);
    compress_for_plan();
    choice = c;
  }

  // Compresses A for the current plan (cusparseLtSpMMACompress with the plan): the compressed
  // layout belongs to the algorithm: with A compressed once by cusparseLtSpMMACompress2 (which
  // knows no algorithm), some ids (e.g. the last of 52 for fp16) faulted on an H100 with
  // cuSPARSELt 0.8.0 (CUDA_ERROR_ILLEGAL_INSTRUCTION, which ends the context); compressed per
  // plan, all 52 ran and matched the reference. Synchronous: the
  // context is synchronized first, as enqueued GEMMs may still read the previous compression.
  void compress_for_plan() {
    const Api& a = *api;
    size_t size = 0, buffer_size = 0;
    check(a, a.SpMMACompressedSize(&handle, &plan, &size, &buffer_size),
          "cusparseLtSpMMACompressedSize");
    ctx_synchronize();
    if (size > compressed.bytes()) compressed = cuda::DeviceBuffer(size);
    cuda::DeviceBuffer tmp(std::max<size_t>(buffer_size, 1));
    check(a,
          a.SpMMACompress(&handle, &plan, vptr(a_dense.ptr()), vptr(compressed.ptr()),
                          buffer_size ? vptr(tmp.ptr()) : nullptr, nullptr),
          "cusparseLtSpMMACompress");
    ctx_synchronize();  // the temporary buffer is freed on return
  }

  // The attributes the library's search left in the algorithm selection.
  Choice read_choice() const {
    const Api& a = *api;
    Choice c;
    check(a, a.MatmulAlgGetAttribute(&handle, &alg, kAttrConfigId, &c.alg_id, sizeof(int)),
          "cusparseLtMatmulAlgGetAttribute(CONFIG_ID)");
    check(a, a.MatmulAlgGetAttribute(&handle, &alg, kAttrSplitK, &c.split_k, sizeof(int)),
          "cusparseLtMatmulAlgGetAttribute(SPLIT_K)");
    check(a, a.MatmulAlgGetAttribute(&handle, &alg, kAttrSplitKMode, &c.split_k_mode, sizeof(int)),
          "cusparseLtMatmulAlgGetAttribute(SPLIT_K_MODE)");
    check(
        a,
        a.MatmulAlgGetAttribute(&handle, &alg, kAttrSplitKBuffers, &c.split_k_buffers, sizeof(int)),
        "cusparseLtMatmulAlgGetAttribute(SPLIT_K_BUFFERS)");
    c.split_k = std::max(c.split_k, 1);
    c.split_k_buffers = std::max(c.split_k_buffers, 1);
    // Mode and buffers mean nothing without split-K (plan_for does not set them then).
    if (c.split_k == 1) c.split_k_mode = 0, c.split_k_buffers = 1;
    return c;
  }

  // The library's operands for the caller's B and C (the padded copies when N is padded).
  std::pair<CUdeviceptr, CUdeviceptr> operands(CUdeviceptr b, CUdeviceptr c) const {
    if (n_eff == shape.n) return {b, c};
    return {b_pad.ptr(), c_pad.ptr()};
  }

  void matmul_raw(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream,
                  bool search) {
    const Api& a = *api;
    if (!plan_ok) {
      throw CusparseLtError("cuSPARSELt GEMM: no plan (a failed re-planning left none)",
                            "cusparseLtMatmul", -1);
    }
    CUstream streams[1] = {stream};
    const void* first = swapped ? vptr(b) : vptr(compressed.ptr());
    const void* second = swapped ? vptr(compressed.ptr()) : vptr(b);
    void* ws = workspace.bytes() ? vptr(workspace.ptr()) : nullptr;
    if (search) {
      check(a,
            a.MatmulSearch(&handle, &plan, &alpha, first, second, &beta, vptr(c), vptr(c), ws,
                           streams, 1),
            "cusparseLtMatmulSearch");
    } else {
      check(
          a,
          a.Matmul(&handle, &plan, &alpha, first, second, &beta, vptr(c), vptr(c), ws, streams, 1),
          "cusparseLtMatmul");
    }
  }

  void run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream, bool search) {
    if (n_eff == shape.n) {
      matmul_raw(b, c, alpha, beta, stream, search);
      return;
    }
    // The padded tokens are the trailing rows of B / columns of C in both formulations, so the
    // caller's arrays are the contiguous leading parts of the padded ones.
    const size_t b_bytes = static_cast<size_t>(shape.n * shape.k) * type_bytes(shape.in);
    const size_t c_bytes = static_cast<size_t>(shape.n * shape.m) * type_bytes(shape.out);
    copy_async(b_pad.ptr(), b, b_bytes, stream);
    if (beta != 0.0f) copy_async(c_pad.ptr(), c, c_bytes, stream);
    matmul_raw(b_pad.ptr(), c_pad.ptr(), alpha, beta, stream, search);
    copy_async(c, c_pad.ptr(), c_bytes, stream);
  }
};

SparseGemm::SparseGemm(CUdeviceptr a_dev, const Shape& shape, CUstream stream)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.api = &api_or_throw();
  const Api& a = *s.api;
  s.shape = shape;
  // 16-bit outputs for every input; the 8-bit inputs' raw accumulators also (int8 -> int32,
  // e4m3 -> fp32), for a caller that applies its own scales.
  const bool raw_out = (shape.in == Type::I8 && shape.out == Type::I32) ||
                       (shape.in == Type::E4M3 && shape.out == Type::F32);
  if (shape.out != Type::F16 && shape.out != Type::BF16 && !raw_out) {
    throw CusparseLtError(fmt::format("cuSPARSELt GEMM: {} input cannot write {} (fp16, bf16, or "
                                      "int32 for int8 and fp32 for fp8_e4m3)",
                                      to_string(shape.in), to_string(shape.out)),
                          "SparseGemm", -1);
  }
  if ((shape.in == Type::F16 || shape.in == Type::BF16) && shape.out != shape.in) {
    throw CusparseLtError(fmt::format("cuSPARSELt GEMM: {} input needs {} output",
                                      to_string(shape.in), to_string(shape.in)),
                          "SparseGemm", -1);
  }
  const int64_t mult = mk_multiple(shape.in);
  if (shape.m <= 0 || shape.k <= 0 || shape.n <= 0 || shape.m % mult || shape.k % mult) {
    throw CusparseLtError(
        fmt::format("cuSPARSELt GEMM: M={} K={} N={}: M and K must be positive multiples of {} "
                    "for {} and N positive",
                    shape.m, shape.k, shape.n, mult, to_string(shape.in)),
        "SparseGemm", -1);
  }
  check(a, a.Init(&s.handle), "cusparseLtInit");
  s.handle_ok = true;
  // A private copy of A: every plan compresses it afresh (compress_for_plan).
  const size_t a_bytes = static_cast<size_t>(shape.m * shape.k) * type_bytes(shape.in);
  s.a_dense = cuda::DeviceBuffer(a_bytes);
  copy_async(s.a_dense.ptr(), a_dev, a_bytes, stream);
  {
    cuda::Event copied;
    copied.record(stream);
    copied.synchronize();
  }

  // The exact N first, then N padded to 32 tokens; direct formulation first, then swapped.
  const int64_t n_padded = (shape.n + 31) / 32 * 32;
  std::vector<int64_t> widths{shape.n};
  if (n_padded != shape.n) widths.push_back(n_padded);
  std::vector<std::string> refusals;
  bool ok = false;
  for (const int64_t n : widths) {
    for (const bool swap : {false, true}) {
      try {
        s.init_descriptors(n, swap);
        ok = true;
        break;
      } catch (const CusparseLtError& e) {
        refusals.push_back(fmt::format("N={} {}: {}", n, swap ? "swapped" : "direct", e.what()));
        s.release_descriptors();
      }
    }
    if (ok) break;
  }
  if (!ok) {
    throw CusparseLtError(fmt::format("cuSPARSELt GEMM {}->{} M={} K={} N={}: no formulation "
                                      "accepted: {}",
                                      to_string(shape.in), to_string(shape.out), shape.m, shape.k,
                                      shape.n, fmt::join(refusals, "; ")),
                          "SparseGemm", -1);
  }
  if (s.n_eff != shape.n) {
    s.b_pad = cuda::DeviceBuffer(static_cast<size_t>(s.n_eff * shape.k) * type_bytes(shape.in));
    s.c_pad = cuda::DeviceBuffer(static_cast<size_t>(s.n_eff * shape.m) * type_bytes(shape.out));
    s.b_pad.fill_bytes(0);
    s.c_pad.fill_bytes(0);
  }

  // 2:4 check of the caller's A (the structured operand: op N when direct, op T when swapped,
  // the same row-major M x K array either way).
  const int is_sparse_a = s.swapped ? 0 : 1;
  const cusparseOperation_t op =
      s.swapped ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
  cuda::DeviceBuffer valid(sizeof(int));
  valid.fill_bytes(0);
  check(a,
        a.SpMMAPruneCheck2(&s.handle, &s.sparse, is_sparse_a, op, vptr(a_dev),
                           reinterpret_cast<int*>(vptr(valid.ptr())), stream),
        "cusparseLtSpMMAPruneCheck2");
  int is_invalid = 1;
  valid.download(&is_invalid, sizeof(int));  // synchronizes with the check on `stream`
  if (is_invalid != 0) {
    throw CusparseLtError(
        fmt::format("cuSPARSELt GEMM: A ({} x {}) is not 2:4 along K (cusparseLtSpMMAPruneCheck2)",
                    shape.m, shape.k),
        "cusparseLtSpMMAPruneCheck2", -1);
  }
  // A was compressed for the default plan by init_descriptors (plan_for).
}

SparseGemm::~SparseGemm() = default;

Choice SparseGemm::search(CUdeviceptr b, CUdeviceptr c, CUstream stream,
                          const SearchOptions& options) {
  Impl& s = *impl_;
  const Choice before = s.choice;
  int device = 0;
  if (driver_extras().ctx_get_device) {
    CUdevice d = 0;
    check_driver(driver_extras().ctx_get_device(&d), "cuCtxGetDevice");
    device = static_cast<int>(d);
  }
  L2Flusher flusher(cuda::query_device(device));
  TimingOptions topt;
  topt.warmup = options.warmup;
  topt.repetitions = std::max(options.repetitions, 1);
  topt.min_repetitions = topt.repetitions;
  topt.stream = stream;
  topt.flusher = &flusher;
  topt.device = device;

  std::optional<Choice> best;
  double best_ms = std::numeric_limits<double>::infinity();
  auto time_choice = [&](const Choice& ch) -> double {
    try {
      s.plan_for(ch);
    } catch (const CusparseLtError&) {
      return std::numeric_limits<double>::infinity();  // not offered for this shape
    }
    double ms = std::numeric_limits<double>::infinity();
    try {
      ms = measure([&](CUstream st) { s.run(b, c, 1.0f, 0.0f, st, false); }, topt).median_ms;
    } catch (const CusparseLtError&) {
      return ms;  // planned but refused at launch (a status, not a device fault): skip it
    }
    if (ms < best_ms) {
      best_ms = ms;
      best = ch;
    }
    return ms;
  };

  const int ids = std::min(std::max(s.max_id, 1), std::max(options.max_alg_ids, 1));
  for (int id = 0; id < ids; ++id) time_choice(Choice{id, 1, 0, 1});
  if (options.library_search) {
    std::optional<Choice> picked;
    try {
      s.plan_for(Choice{});
      s.run(b, c, 1.0f, 0.0f, stream, true);
      cuda::Event done;
      done.record(stream);
      done.synchronize();
      picked = s.read_choice();
    } catch (const CusparseLtError&) {
      // The library's search is one more candidate; its failure leaves ours.
    }
    if (picked) time_choice(*picked);
  }
  // Split-K variants of the best so far (the library's pick included).
  if (options.try_split_k && best && best->split_k == 1) {
    const int id = best->alg_id;
    for (const int sk : {2, 4, 8}) {
      for (const int mode : {1, 2}) time_choice(Choice{id, sk, mode, 1});
    }
  }
  if (!best) {
    s.plan_for(before);
    throw CusparseLtError("cuSPARSELt search: no candidate could be planned", "search", -1);
  }
  s.plan_for(*best);
  return *best;
}

void SparseGemm::set_choice(const Choice& choice) {
  Impl& s = *impl_;
  const Choice before = s.choice;
  try {
    s.plan_for(choice);
  } catch (const CusparseLtError&) {
    s.plan_for(before);  // keep a usable plan
    throw;
  }
}

const Choice& SparseGemm::choice() const {
  return impl_->choice;
}

void SparseGemm::run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const {
  impl_->run(b, c, alpha, beta, stream, false);
}

const Shape& SparseGemm::shape() const {
  return impl_->shape;
}

size_t SparseGemm::compressed_bytes() const {
  return impl_->compressed.bytes();
}

size_t SparseGemm::workspace_bytes() const {
  return impl_->workspace.bytes();
}

int64_t SparseGemm::padded_n() const {
  return impl_->n_eff;
}

int SparseGemm::max_alg_id() const {
  return impl_->max_id;
}

}  // namespace sparsegen::cusparselt
