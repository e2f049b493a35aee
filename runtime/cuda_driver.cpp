#include "runtime/cuda_driver.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace sparsegen::cuda {
namespace {

// Every driver entry point we use, with the ABI version we ask cuGetProcAddress for. The version
// is explicit because the name alone is ambiguous: asking for "cuCtxSynchronize" at CUDA 13000
// returns the 13.0 ABI, which takes a CUcontext, while <cuda.h> still declares the old (void)
// one (calling it that way failed with CUDA_ERROR_CONTEXT_IS_DESTROYED on an H200). Each pointer
// has the cudaTypedefs.h type of that version, and a static_assert checks it is the signature
// <cuda.h> declares for the macro-mapped name (cuMemAlloc -> cuMemAlloc_v2, ...).
#define SPARSEGEN_CU_FUNCTIONS(X)       \
  X(cuInit, 2000)                       \
  X(cuDriverGetVersion, 2020)           \
  X(cuGetErrorName, 6000)               \
  X(cuGetErrorString, 6000)             \
  X(cuDeviceGetCount, 2000)             \
  X(cuDeviceGet, 2000)                  \
  X(cuDeviceGetName, 2000)              \
  X(cuDeviceGetAttribute, 2000)         \
  X(cuDeviceTotalMem, 3020)             \
  X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuDevicePrimaryCtxRelease, 11000)   \
  X(cuCtxSetCurrent, 4000)              \
  X(cuCtxGetCurrent, 4000)              \
  X(cuCtxSynchronize, 2000)             \
  X(cuModuleLoadDataEx, 2010)           \
  X(cuModuleUnload, 2000)               \
  X(cuModuleGetFunction, 2000)          \
  X(cuFuncGetAttribute, 2020)           \
  X(cuFuncSetAttribute, 9000)           \
  X(cuMemAlloc, 3020)                   \
  X(cuMemFree, 3020)                    \
  X(cuMemcpyHtoD, 3020)                 \
  X(cuMemcpyDtoH, 3020)                 \
  X(cuMemcpyHtoDAsync, 3020)            \
  X(cuMemcpyDtoHAsync, 3020)            \
  X(cuMemHostAlloc, 2020)               \
  X(cuMemFreeHost, 2000)                \
  X(cuMemsetD8, 3020)                   \
  X(cuMemsetD16, 3020)                  \
  X(cuMemsetD32, 3020)                  \
  X(cuMemsetD8Async, 3020)              \
  X(cuStreamCreate, 2000)               \
  X(cuStreamDestroy, 4000)              \
  X(cuStreamSynchronize, 2000)          \
  X(cuEventCreate, 2000)                \
  X(cuEventDestroy, 4000)               \
  X(cuEventRecord, 2000)                \
  X(cuEventSynchronize, 2000)           \
  X(cuStreamWaitEvent, 3020)            \
  X(cuEventElapsedTime, 12080)          \
  X(cuLaunchKernel, 4000)               \
  X(cuLaunchKernelEx, 11060)            \
  X(cuStreamBeginCapture, 10010)        \
  X(cuStreamEndCapture, 10000)          \
  X(cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphLaunch, 10000)               \
  X(cuGraphExecDestroy, 10000)          \
  X(cuGraphDestroy, 10000)              \
  X(cuTensorMapEncodeTiled, 12000)

#define SPARSEGEN_CU_CHECK_TYPE(name, version)                              \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::name)>, \
                #name " v" #version " is not the signature <cuda.h> declares");
SPARSEGEN_CU_FUNCTIONS(SPARSEGEN_CU_CHECK_TYPE)
#undef SPARSEGEN_CU_CHECK_TYPE

struct Driver {
#define SPARSEGEN_CU_MEMBER(name, version) PFN_##name##_v##version name = nullptr;
  SPARSEGEN_CU_FUNCTIONS(SPARSEGEN_CU_MEMBER)
#undef SPARSEGEN_CU_MEMBER
};

struct LoadState {
  std::once_flag once;
  Driver driver;
  bool ok = false;
  std::string why;  // the reason ok is false
};

LoadState& state() {
  static LoadState s;
  return s;
}

std::string result_name(const Driver& d, CUresult r) {
  const char* s = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return fmt::format("CUresult {}", static_cast<int>(r));
}

std::string result_string(const Driver& d, CUresult r) {
  const char* s = nullptr;
  if (d.cuGetErrorString && d.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown error";
}

[[noreturn]] void throw_result(const Driver& d, CUresult r, const char* call,
                               const std::string& context) {
  std::string name = result_name(d, r);
  std::string msg = fmt::format("{} failed: {} ({})", call, name, result_string(d, r));
  if (!context.empty()) msg += ": " + context;
  throw CudaError(msg, call, static_cast<int>(r), name);
}

// Loads libcuda.so.1, resolves every entry point and runs cuInit(0). Sets state().ok/why.
void load_driver() {
  LoadState& s = state();
  // Never closed: the driver stays loaded for the process's lifetime, as with a normal link.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    s.why = fmt::format("cannot load the CUDA driver (libcuda.so.1): {}", err ? err : "unknown");
    return;
  }
  // cuGetProcAddress_v2 exists since driver 12.0; older drivers cannot run cubins from this NVRTC.
  auto get_proc = reinterpret_cast<decltype(&cuGetProcAddress)>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    s.why = "the CUDA driver is too old (no cuGetProcAddress_v2; need a CUDA 12+ driver)";
    return;
  }
  Driver d;
  bool missing = false;
#define SPARSEGEN_CU_RESOLVE(name, version)                                                    \
  if (!missing) {                                                                              \
    void* p = nullptr;                                                                         \
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;              \
    CUresult r = get_proc(#name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);           \
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p) {                    \
      s.why = fmt::format("the CUDA driver has no {} (ABI {}; CUresult {}, status {})", #name, \
                          version, static_cast<int>(r), static_cast<int>(status));             \
      missing = true;                                                                          \
    } else {                                                                                   \
      d.name = reinterpret_cast<decltype(d.name)>(p);                                          \
    }                                                                                          \
  }
  SPARSEGEN_CU_FUNCTIONS(SPARSEGEN_CU_RESOLVE)
#undef SPARSEGEN_CU_RESOLVE
  if (missing) return;

  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    s.why = fmt::format("cuInit failed: {} ({})", result_name(d, r), result_string(d, r));
    return;
  }
  int version = 0;
  r = d.cuDriverGetVersion(&version);
  if (r != CUDA_SUCCESS) {
    s.why = fmt::format("cuDriverGetVersion failed: {}", result_name(d, r));
    return;
  }
  int count = 0;
  r = d.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    s.why = fmt::format("cuDeviceGetCount failed: {} ({})", result_name(d, r), result_string(d, r));
    return;
  }
  if (count <= 0) {
    s.why = "the CUDA driver loaded but reports no CUDA device";
    return;
  }
  s.driver = d;
  s.ok = true;
}

// The loaded driver, or a CudaError saying why there is none.
const Driver& drv() {
  LoadState& s = state();
  std::call_once(s.once, load_driver);
  if (!s.ok) {
    throw CudaError(s.why, "dlopen", static_cast<int>(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED),
                    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED");
  }
  return s.driver;
}

void check(CUresult r, const char* call, const std::string& context = {}) {
  if (r != CUDA_SUCCESS) throw_result(drv(), r, call, context);
}

int attribute(CUdevice dev, CUdevice_attribute attr, const char* what) {
  int v = 0;
  check(drv().cuDeviceGetAttribute(&v, attr, dev), "cuDeviceGetAttribute", what);
  return v;
}

// For attributes a newer driver may drop (the clock rate): 0 instead of an error.
int attribute_or_zero(CUdevice dev, CUdevice_attribute attr) {
  int v = 0;
  return drv().cuDeviceGetAttribute(&v, attr, dev) == CUDA_SUCCESS ? v : 0;
}

}  // namespace

bool driver_available(std::string* why) {
  LoadState& s = state();
  std::call_once(s.once, load_driver);
  if (!s.ok && why) *why = s.why;
  return s.ok;
}

int driver_version() {
  int v = 0;
  check(drv().cuDriverGetVersion(&v), "cuDriverGetVersion");
  return v;
}

int device_count() {
  int n = 0;
  check(drv().cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

DeviceInfo query_device(int ordinal) {
  const Driver& d = drv();
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet", fmt::format("device {}", ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  check(d.cuDeviceGetName(name, static_cast<int>(sizeof(name) - 1), dev), "cuDeviceGetName");
  info.name = name;
  check(d.cuDeviceTotalMem(&info.total_memory_bytes, dev), "cuDeviceTotalMem");
  info.cc_major = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major");
  info.cc_minor = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor");
  info.sm_count = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  info.l2_cache_bytes = attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  info.max_threads_per_block =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  info.max_shared_memory_per_block =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block");
  info.max_shared_memory_per_block_optin =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory");
  info.max_shared_memory_per_sm = attribute(
      dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM");
  info.max_registers_per_block =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  info.max_registers_per_sm =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
  info.max_threads_per_sm =
      attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM");
  info.warp_size = attribute(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  info.max_grid_dim_x = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "grid x");
  info.max_grid_dim_y = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "grid y");
  info.max_grid_dim_z = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "grid z");
  info.memory_bus_width_bits = attribute_or_zero(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  info.clock_rate_khz = attribute_or_zero(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  return info;
}

// ---- Context ----

namespace {
// Each device's primary context is retained once and kept for the process's lifetime, as the CUDA
// runtime does: releasing it with the last Context object would destroy every module and buffer
// made under it, even those other objects still hold, and make the next Context start cold.
CUcontext retained_primary_context(CUdevice device) {
  static std::mutex mutex;
  static std::vector<std::pair<CUdevice, CUcontext>> retained;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [dev, ctx] : retained) {
    if (dev == device) return ctx;
  }
  CUcontext ctx = nullptr;
  check(drv().cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain",
        fmt::format("device {}", static_cast<int>(device)));
  retained.emplace_back(device, ctx);
  return ctx;
}
}  // namespace

Context::Context(int ordinal) : info_(query_device(ordinal)) {
  check(drv().cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  ctx_ = retained_primary_context(device_);
  check(drv().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

// The primary context stays retained (see retained_primary_context).
Context::~Context() = default;

Context::Context(Context&& other) noexcept
    : device_(other.device_), ctx_(std::exchange(other.ctx_, nullptr)), info_(other.info_) {}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    device_ = other.device_;
    ctx_ = std::exchange(other.ctx_, nullptr);
    info_ = other.info_;
  }
  return *this;
}

void Context::make_current() const {
  check(drv().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

CUcontext current_context() {
  CUcontext ctx = nullptr;
  check(drv().cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  return ctx;
}

void Context::synchronize() const {
  check(drv().cuCtxSynchronize(), "cuCtxSynchronize");
}

// ---- Module ----

Module::Module(const std::vector<char>& image) {
  if (image.empty()) {
    throw CudaError("cuModuleLoadDataEx: empty module image", "cuModuleLoadDataEx",
                    static_cast<int>(CUDA_ERROR_INVALID_IMAGE), "CUDA_ERROR_INVALID_IMAGE");
  }
  const Driver& d = drv();
  // The JIT error log explains a PTX image the driver cannot compile.
  std::vector<char> log(16384, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(log.size() - 1))};
  CUresult r = d.cuModuleLoadDataEx(&module_, image.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    std::string jit_log(log.data());
    throw_result(d, r, "cuModuleLoadDataEx",
                 jit_log.empty() ? std::string() : "JIT log:\n" + jit_log);
  }
}

Module::~Module() {
  if (module_) drv().cuModuleUnload(module_);
}

Module::Module(Module&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    if (module_) drv().cuModuleUnload(module_);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  check(drv().cuModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction",
        fmt::format("kernel '{}'", name));
  return f;
}

int function_attribute(CUfunction f, CUfunction_attribute attr) {
  int v = 0;
  check(drv().cuFuncGetAttribute(&v, attr, f), "cuFuncGetAttribute");
  return v;
}

void set_max_dynamic_shared_memory(CUfunction f, int bytes) {
  check(drv().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute", fmt::format("max dynamic shared memory {} bytes", bytes));
}

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  // cuMemAlloc rejects 0 bytes; an empty buffer is a null pointer (degenerate problems).
  if (bytes == 0) return;
  check(drv().cuMemAlloc(&ptr_, bytes), "cuMemAlloc", fmt::format("{} bytes", bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) drv().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) drv().cuMemFree(ptr_);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

namespace {
void check_size(std::size_t bytes, std::size_t capacity, const char* call) {
  if (bytes > capacity) {
    throw CudaError(
        fmt::format("{}: {} bytes do not fit a buffer of {} bytes", call, bytes, capacity), call,
        static_cast<int>(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
  }
}
}  // namespace

namespace {

// cuMemcpyHtoD from pageable memory returns once the data is staged, and cuMemset* are
// asynchronous; both run on the legacy default stream, which a non-blocking stream does not wait
// for. Waiting here makes upload() and fill_*() complete on return for every stream (without it an
// H200 showed poisoned "never written" outputs: the poison landed after the kernel's stores).
void wait_for_legacy_stream() {
  Event done;
  done.record(nullptr);
  done.synchronize();
}

}  // namespace

namespace {

// Large copies go through two pinned staging buffers: the host-side copy of one chunk overlaps the
// DMA of the other. The driver's own path for pageable memory moved 0.5-0.7 GB uploads at 1.5-6
// GB/s on an H200 host while a search packed its next candidates, and a graph's check moves
// gigabytes of B and C.
//
//   upload:   chunk i: wait until buffer i%2's last DMA is done, memcpy host -> buffer,
//             cuMemcpyHtoDAsync buffer -> device, record its event
//   download: DMA of chunk i+1 in flight while chunk i is memcpy'd out of its buffer
//
// The copies run on a blocking stream of their own (ordered with the legacy default stream, as
// cuMemcpyHtoD/DtoH are) and are complete on return. The buffers are process-wide (portable
// across contexts), allocated on first use and kept for the process's lifetime, like the driver;
// one staged copy runs at a time. Where pinned memory cannot be had, the plain copy is used.
constexpr std::size_t kStageChunkBytes = std::size_t{32} << 20;
constexpr std::size_t kStagedMinBytes = std::size_t{16} << 20;

struct Staging {
  std::mutex mu;
  void* buffer[2] = {};
  bool tried = false, ok = false;
};

Staging& staging() {
  static Staging s;
  return s;
}

// memcpy of one chunk on up to four threads (one memcpy stream does not saturate host memory).
void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kPartBytes = std::size_t{8} << 20;
  const std::size_t parts = std::clamp<std::size_t>(bytes / kPartBytes, 1, 4);
  const std::size_t step = (bytes + parts - 1) / parts;
  auto part = [&](std::size_t i) {
    const std::size_t off = i * step;
    if (off < bytes)
      std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off,
                  std::min(step, bytes - off));
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < parts; ++i) {
    try {
      threads.emplace_back(part, i);
    } catch (const std::system_error&) {
      part(i);  // no thread to be had: this one does it
    }
  }
  part(0);
  for (std::thread& t : threads) t.join();
}

// The stream and the two events of one staged copy; the stream is drained before they go, so no
// DMA still reads or writes a staging buffer when the next copy takes it (also after a throw).
struct StagedCopy {
  const Driver& d;
  CUstream stream = nullptr;
  CUevent done[2] = {};
  explicit StagedCopy(const Driver& drv_) : d(drv_) {
    check(d.cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate");
    for (CUevent& e : done) check(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  ~StagedCopy() {
    if (stream != nullptr) d.cuStreamSynchronize(stream);
    for (CUevent e : done)
      if (e != nullptr) d.cuEventDestroy(e);
    if (stream != nullptr) d.cuStreamDestroy(stream);
  }
  StagedCopy(const StagedCopy&) = delete;
  StagedCopy& operator=(const StagedCopy&) = delete;
};

// The staging buffers, allocated on the first call; false when they cannot be had.
bool staging_ready(const Driver& d, Staging& s) {
  if (!s.tried) {
    s.tried = true;
    s.ok = true;
    for (void*& b : s.buffer)
      if (s.ok && d.cuMemHostAlloc(&b, kStageChunkBytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
        s.ok = false, b = nullptr;
    if (!s.ok)
      for (void*& b : s.buffer)
        if (b != nullptr) d.cuMemFreeHost(b), b = nullptr;
  }
  return s.ok;
}

// Host -> device through the staging buffers; false (nothing copied) when there are none.
bool staged_upload(CUdeviceptr dst, const void* src, std::size_t bytes) {
  const Driver& d = drv();
  Staging& s = staging();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!staging_ready(d, s)) return false;
  StagedCopy c(d);
  bool used[2] = {false, false};
  for (std::size_t off = 0, i = 0; off < bytes; ++i) {
    const std::size_t len = std::min(kStageChunkBytes, bytes - off), b = i % 2;
    if (used[b]) check(d.cuEventSynchronize(c.done[b]), "cuEventSynchronize");
    parallel_memcpy(s.buffer[b], static_cast<const char*>(src) + off, len);
    check(d.cuMemcpyHtoDAsync(dst + off, s.buffer[b], len, c.stream), "cuMemcpyHtoDAsync",
          fmt::format("{} bytes at offset {}", len, off));
    check(d.cuEventRecord(c.done[b], c.stream), "cuEventRecord");
    used[b] = true;
    off += len;
  }
  check(d.cuStreamSynchronize(c.stream), "cuStreamSynchronize");
  return true;
}

// Device -> host through the staging buffers; false (nothing copied) when there are none.
bool staged_download(void* dst, CUdeviceptr src, std::size_t bytes) {
  const Driver& d = drv();
  Staging& s = staging();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!staging_ready(d, s)) return false;
  StagedCopy c(d);
  const std::size_t chunks = (bytes + kStageChunkBytes - 1) / kStageChunkBytes;
  auto chunk_len = [&](std::size_t i) {
    return std::min(kStageChunkBytes, bytes - i * kStageChunkBytes);
  };
  // Chunk i's DMA into buffer i % 2; that buffer's previous chunk was copied out before.
  auto start = [&](std::size_t i) {
    check(d.cuMemcpyDtoHAsync(s.buffer[i % 2], src + i * kStageChunkBytes, chunk_len(i), c.stream),
          "cuMemcpyDtoHAsync",
          fmt::format("{} bytes at offset {}", chunk_len(i), i * kStageChunkBytes));
    check(d.cuEventRecord(c.done[i % 2], c.stream), "cuEventRecord");
  };
  start(0);
  for (std::size_t i = 0; i < chunks; ++i) {
    if (i + 1 < chunks) start(i + 1);
    check(d.cuEventSynchronize(c.done[i % 2]), "cuEventSynchronize");
    parallel_memcpy(static_cast<char*>(dst) + i * kStageChunkBytes, s.buffer[i % 2], chunk_len(i));
  }
  return true;
}

}  // namespace

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  check_size(bytes, bytes_, "cuMemcpyHtoD");
  if (bytes == 0) return;
  if (bytes >= kStagedMinBytes && staged_upload(ptr_, host, bytes)) return;
  check(drv().cuMemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD", fmt::format("{} bytes", bytes));
  wait_for_legacy_stream();
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  check_size(bytes, bytes_, "cuMemcpyDtoH");
  if (bytes == 0) return;
  if (bytes >= kStagedMinBytes && staged_download(host, ptr_, bytes)) return;
  check(drv().cuMemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH", fmt::format("{} bytes", bytes));
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_ == 0) return;
  check(drv().cuMemsetD8(ptr_, value, bytes_), "cuMemsetD8");
  wait_for_legacy_stream();
}

namespace {

// Throws the driver's own error when a buffer of `bytes` cannot be filled with `width`-byte words.
void check_fill_width(std::size_t bytes, std::size_t width, const char* call) {
  if (bytes % width != 0)
    throw CudaError(
        fmt::format("{}: buffer of {} bytes is not a multiple of {}", call, bytes, width), call,
        static_cast<int>(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
}

}  // namespace

void DeviceBuffer::fill_u32(std::uint32_t value) {
  check_fill_width(bytes_, 4, "cuMemsetD32");
  if (bytes_ == 0) return;
  check(drv().cuMemsetD32(ptr_, value, bytes_ / 4), "cuMemsetD32");
  wait_for_legacy_stream();
}

void DeviceBuffer::fill_u16(std::uint16_t value) {
  check_fill_width(bytes_, 2, "cuMemsetD16");
  if (bytes_ == 0) return;
  check(drv().cuMemsetD16(ptr_, value, bytes_ / 2), "cuMemsetD16");
  wait_for_legacy_stream();
}

void DeviceBuffer::fill_bytes_async(unsigned char value, CUstream stream) {
  if (bytes_ == 0) return;
  check(drv().cuMemsetD8Async(ptr_, value, bytes_, stream), "cuMemsetD8Async");
}

// ---- Stream ----

Stream::Stream() {
  check(drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() {
  if (stream_) drv().cuStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) drv().cuStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  check(drv().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

// ---- Event ----

Event::Event() {
  check(drv().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
}

Event::~Event() {
  if (event_) drv().cuEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) drv().cuEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(CUstream stream) {
  check(drv().cuEventRecord(event_, stream), "cuEventRecord");
}

void stream_wait(CUstream stream, CUstream producer) {
  if (stream == producer) return;
  CUevent e = nullptr;
  check(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  const CUresult recorded = drv().cuEventRecord(e, producer);
  const CUresult waited =
      recorded == CUDA_SUCCESS ? drv().cuStreamWaitEvent(stream, e, 0) : CUDA_SUCCESS;
  drv().cuEventDestroy(e);  // its resources go once the wait is done
  check(recorded, "cuEventRecord");
  check(waited, "cuStreamWaitEvent");
}

// ---- graphs ----

Graph::~Graph() {
  if (exec_) drv().cuGraphExecDestroy(exec_);
}

Graph::Graph(Graph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    if (exec_) drv().cuGraphExecDestroy(exec_);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

Graph Graph::capture(CUstream stream, const std::function<void(CUstream)>& enqueue) {
  if (stream == nullptr)
    throw CudaError("cuStreamBeginCapture: the legacy default stream cannot be captured",
                    "cuStreamBeginCapture", static_cast<int>(CUDA_ERROR_INVALID_VALUE),
                    "CUDA_ERROR_INVALID_VALUE");
  const Driver& d = drv();
  // Thread-local mode: only this thread's calls are recorded or refused; other threads' work goes
  // on as usual.
  check(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  CUgraph g = nullptr;
  try {
    enqueue(stream);
  } catch (...) {
    // The capture ends with the error (an unsupported call invalidates it); its result is moot.
    if (d.cuStreamEndCapture(stream, &g) == CUDA_SUCCESS && g != nullptr) d.cuGraphDestroy(g);
    throw;
  }
  check(d.cuStreamEndCapture(stream, &g), "cuStreamEndCapture");
  Graph out;
  const CUresult r = d.cuGraphInstantiateWithFlags(&out.exec_, g, 0);
  d.cuGraphDestroy(g);  // the executable graph is independent of it
  check(r, "cuGraphInstantiateWithFlags");
  return out;
}

void Graph::launch(CUstream stream) const {
  if (exec_ == nullptr)
    throw CudaError("cuGraphLaunch: the graph is empty (moved from or never captured)",
                    "cuGraphLaunch", static_cast<int>(CUDA_ERROR_INVALID_VALUE),
                    "CUDA_ERROR_INVALID_VALUE");
  check(drv().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

void Event::synchronize() const {
  check(drv().cuEventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0.0f;
  check(drv().cuEventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime");
  return ms;
}

// ---- launch ----

void fill_bytes_async(CUdeviceptr ptr, std::size_t bytes, unsigned char value, CUstream stream) {
  check(drv().cuMemsetD8Async(ptr, value, bytes, stream), "cuMemsetD8Async",
        fmt::format("{} bytes at 0x{:x}", bytes, static_cast<unsigned long long>(ptr)));
}

void launch(CUfunction f, const LaunchConfig& c, void** params) {
  // The shape is formatted for the error only: run() is on the caller's hot path.
  auto shape = [&c] {
    return fmt::format("grid ({},{},{}) block ({},{},{}) shared {} bytes", c.grid.x, c.grid.y,
                       c.grid.z, c.block.x, c.block.y, c.block.z, c.shared_bytes);
  };
  if (!c.programmatic && c.cluster_x <= 1) {
    const CUresult r = drv().cuLaunchKernel(f, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y,
                                            c.block.z, c.shared_bytes, c.stream, params, nullptr);
    if (r != CUDA_SUCCESS) check(r, "cuLaunchKernel", shape());
    return;
  }
  CUlaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (c.programmatic) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (c.cluster_x > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = c.cluster_x;
    attrs[n].value.clusterDim.y = 1;
    attrs[n++].value.clusterDim.z = 1;
  }
  CUlaunchConfig lc{};
  lc.gridDimX = c.grid.x;
  lc.gridDimY = c.grid.y;
  lc.gridDimZ = c.grid.z;
  lc.blockDimX = c.block.x;
  lc.blockDimY = c.block.y;
  lc.blockDimZ = c.block.z;
  lc.sharedMemBytes = c.shared_bytes;
  lc.hStream = c.stream;
  lc.attrs = attrs;
  lc.numAttrs = n;
  const CUresult r = drv().cuLaunchKernelEx(&lc, f, params, nullptr);
  if (r != CUDA_SUCCESS)
    check(
        r, "cuLaunchKernelEx",
        fmt::format("{}{}{}", shape(), c.programmatic ? ", programmatic stream serialization" : "",
                    c.cluster_x > 1 ? fmt::format(", clusters of {}", c.cluster_x) : ""));
}

TensorMap encode_tensor_map_2d(CUdeviceptr base, const TensorMapRequest& r) {
  if (r.elem_bytes != 1 && r.elem_bytes != 2 && r.elem_bytes != 4)
    throw std::invalid_argument("encode_tensor_map_2d: elements of 1, 2 or 4 bytes");
  const CUtensorMapDataType type = r.elem_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : r.elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                                       : CU_TENSOR_MAP_DATA_TYPE_UINT32;
  const CUtensorMapSwizzle swizzle = r.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : r.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : r.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(r.inner), static_cast<cuuint64_t>(r.outer)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(r.row_elems * r.elem_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(r.box_inner),
                             static_cast<cuuint32_t>(r.box_outer)};
  const cuuint32_t elem_strides[2] = {1, 1};
  TensorMap m;
  static_assert(sizeof(TensorMap) == sizeof(CUtensorMap) && alignof(TensorMap) >= 64);
  check(drv().cuTensorMapEncodeTiled(
            reinterpret_cast<CUtensorMap*>(m.word), type, 2, reinterpret_cast<void*>(base), dims,
            strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled",
        fmt::format("{} x {} elements of {} bytes, rows {} apart, box {} x {}, at 0x{:x}", r.inner,
                    r.outer, r.elem_bytes, r.row_elems, r.box_inner, r.box_outer,
                    static_cast<unsigned long long>(base)));
  return m;
}

}  // namespace sparsegen::cuda

namespace sparsegen {

bool CudaError::sticky() const {
  switch (code_) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

}  // namespace sparsegen
