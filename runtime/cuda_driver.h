// The CUDA driver API, loaded at run time.
//
// libcuda.so.1 is opened with dlopen on first use, so the sparsegen binary and the test suites
// start on machines without a GPU driver (CI, build machines); there, driver_available() says
// why and every other entry point throws CudaError. Entry points are resolved through
// cuGetProcAddress for the CUDA version of the headers we were built with, so each pointer has
// exactly the signature <cuda.h> declares (cuMemAlloc -> cuMemAlloc_v2, cuCtxCreate -> _v4, ...).
//
// The RAII types below (Context, Module, DeviceBuffer, Stream, Event) check every return code;
// their destructors never throw (a failure while releasing is ignored: there is nobody to tell).
// All of them expect the Context they were made under to be current on the calling thread.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparsegen/errors.h"

namespace sparsegen {

// CudaError (every failure of the CUDA stack) is public: sparsegen/errors.h.

namespace cuda {

// True when libcuda.so.1 loads, cuInit(0) succeeds and at least one device exists. Otherwise
// false, with the reason (dlopen's message, the cuInit error, "no CUDA device") in *why.
// Cheap after the first call; never throws.
bool driver_available(std::string* why = nullptr);

// The driver's CUDA version as cuDriverGetVersion reports it (e.g. 13000). Throws CudaError.
int driver_version();

// Number of CUDA devices. Throws CudaError when the driver is unavailable.
int device_count();

// What the code generator and the verifier need to know about one device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory_bytes = 0;
  int l2_cache_bytes = 0;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;        // without opt-in (usually 48 KiB)
  int max_shared_memory_per_block_optin = 0;  // after cuFuncSetAttribute
  int max_shared_memory_per_sm = 0;
  int max_registers_per_block = 0;
  int max_registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int warp_size = 0;
  int max_grid_dim_x = 0;
  int max_grid_dim_y = 0;
  int max_grid_dim_z = 0;
  int memory_bus_width_bits = 0;
  int clock_rate_khz = 0;  // 0 where the driver no longer reports it
};

// Queries device `ordinal`. Throws CudaError.
DeviceInfo query_device(int ordinal);

// The primary context of one device, made current on the constructing thread. The primary
// context itself is retained on first use and kept until the process exits (as the CUDA runtime
// does), so Context objects may come and go, nest, or live on several threads. Movable, not
// copyable.
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Makes this context current on the calling thread (for work from other threads).
  void make_current() const;
  // Waits for all work in the context; surfaces asynchronous kernel faults.
  void synchronize() const;

  const DeviceInfo& info() const { return info_; }
  CUdevice device() const { return device_; }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo info_;
};

// The context current on the calling thread (null when none). Throws CudaError.
CUcontext current_context();

// A loaded module (cubin, fatbin or PTX image, as NVRTC or nvcc produced it).
class Module {
 public:
  // `image` is a cubin or a NUL-terminated PTX text. The JIT log of a failed PTX load is
  // included in the CudaError.
  explicit Module(const std::vector<char>& image);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel named `name` (a mangled or extern "C" name). Throws CudaError naming it.
  CUfunction function(const std::string& name) const;
  CUmodule get() const { return module_; }

 private:
  CUmodule module_ = nullptr;
};

// Reads a function attribute (registers, local bytes, max threads per block, ...).
int function_attribute(CUfunction f, CUfunction_attribute attr);
// Lets `f` use up to `bytes` of dynamic shared memory (needed above 48 KiB).
void set_max_dynamic_shared_memory(CUfunction f, int bytes);

// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

  // Copies of `bytes` (at most bytes()) to / from the start of the buffer, complete on return:
  // the data is on the device (or the host) for work on any stream, non-blocking ones included.
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <class T>
  void upload(const std::vector<T>& host) {
    upload(host.data(), host.size() * sizeof(T));
  }
  template <class T>
  void download(std::vector<T>& host) const {
    download(host.data(), host.size() * sizeof(T));
  }
  // Fills the buffer with a byte / with a 32-bit pattern (bytes() must be a multiple of 4), e.g.
  // a NaN pattern to poison an output before a launch; complete on return, as upload().
  void fill_bytes(unsigned char value);
  // Asynchronous fill_bytes on `stream` (e.g. the L2 flush before a timed run, runtime/timing.h).
  void fill_bytes_async(unsigned char value, CUstream stream);
  void fill_u32(std::uint32_t value);
  // The same with a 16-bit pattern (bytes() a multiple of 2): an fp16/bf16 poison.
  void fill_u16(std::uint16_t value);

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

// Asynchronously sets `bytes` bytes from device address `ptr` to `value` on `stream`.
void fill_bytes_async(CUdeviceptr ptr, std::size_t bytes, unsigned char value, CUstream stream);

// A non-blocking stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

// Makes `stream` wait, on the device (the host does not block), for the work enqueued on
// `producer` so far: an event recorded on `producer` and waited on by `stream`. Nothing to do when
// they are the same stream. Needs a current context.
void stream_wait(CUstream stream, CUstream producer);

// An executable CUDA graph: a captured sequence of launches, memsets and library calls that one
// cuGraphLaunch replays with the pointers and scalars it was captured with.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Records what `enqueue` puts on `stream` (a created stream, not the legacy default one, with
  // no capture in progress) and instantiates it. A call that a capture refuses (a synchronous
  // copy, an allocation, a synchronize) throws its CudaError out of `enqueue`, and the capture
  // is ended and dropped.
  static Graph capture(CUstream stream, const std::function<void(CUstream)>& enqueue);
  // Enqueues the whole graph on `stream` (null: the legacy default stream) with one launch.
  void launch(CUstream stream = nullptr) const;
  bool empty() const { return exec_ == nullptr; }

 private:
  CUgraphExec exec_ = nullptr;
};

// A timing event.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(CUstream stream = nullptr);
  void synchronize() const;
  CUevent get() const { return event_; }

  // Milliseconds between two recorded events (waits for `end`).
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  CUevent event_ = nullptr;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  // Programmatic dependent launch (sm_90+): the kernel may start before the previous kernel on
  // the stream has finished (as soon as that one's blocks all called griddepcontrol
  // .launch_dependents, or exited). The kernel must call griddepcontrol.wait before it touches
  // anything the previous kernel writes (templates/sg_grid_dependency.cuh).
  bool programmatic = false;
  // Blocks per thread-block cluster along x (sm_90+; grid.x a multiple of it); 1: no cluster.
  unsigned cluster_x = 1;
};

// A 2-D TMA tensor map (CUtensorMap's 128 bytes), to pass to a kernel by value
// (templates/sg_bulk_copy.cuh, sg::TensorMap): `outer` rows of `inner` elements of elem_bytes,
// rows `row_elems` elements apart (row_elems·elem_bytes a multiple of 16, base 16-byte aligned),
// copied in boxes of box_inner x box_outer elements with a 0, 32, 64 or 128-byte swizzle
// (box_inner·elem_bytes at most the swizzle); elements outside the tensor are read as zeros.
struct alignas(64) TensorMap {
  unsigned long long word[16] = {};
};
struct TensorMapRequest {
  int64_t inner = 0, outer = 0, row_elems = 0, box_inner = 0, box_outer = 0;
  int elem_bytes = 2, swizzle_bytes = 0;
};
// Encodes the map on the host (no device work; cheap enough per launch). Throws CudaError when the
// driver refuses the shape.
TensorMap encode_tensor_map_2d(CUdeviceptr base, const TensorMapRequest& r);

// Launches `f` with kernel parameters `params` (one pointer per parameter, as cuLaunchKernel
// takes them; cuLaunchKernelEx with config.programmatic or a cluster). An invalid configuration
// throws CudaError from the launch call; faults during the kernel surface at the next synchronizing
// call.
void launch(CUfunction f, const LaunchConfig& config, void** params);

// Convenience: launch(f, config, a, b, c) passes the addresses of a, b, c. Each argument must have
// exactly the type of the kernel's parameter (CUdeviceptr for pointers, float, int, ...).
template <class... Args>
void launch_kernel(CUfunction f, const LaunchConfig& config, Args&... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  launch(f, config, params);
}

}  // namespace cuda
}  // namespace sparsegen
