// sparsegen: the C++ front door.
//
// Load a sparse matrix, compile a kernel for (matrix, N, dtype[, schedule]) and run it on device
// pointers:
//
//   #include <sparsegen/sparsegen.h>
//   sparsegen::CsrMatrix a = sparsegen::load_matrix("layer0.safetensors").matrix;
//   sparsegen::Runtime rt;                                 // device 0 (CudaError without a GPU)
//   sparsegen::Kernel k = rt.spmm(a, 32, {.dtype = sparsegen::DType::BF16});
//   k(dB, dC, stream);                                     // C = A·B   (beta = 0)
//   k.run(dB, dC, 1.0f, 1.0f, stream);                     // C = A·B + C
//   sparsegen::KernelGraph g = k.capture(dB, dC);          // that run as a CUDA graph:
//   g.launch(stream);                                      // one launch per replay
//   std::puts(k.schedule().c_str());                       // the schedule SPEC chosen, and
//   std::puts(k.schedule_reason().c_str());                // why
//
// C[M×N] = alpha·A[M×K]·B[K×N] + beta·C. B and C are device pointers (cudaMalloc/cuMemAlloc) to
// dtype values (float, __half, __nv_bfloat16) in the layouts of SpmmOptions (row-major by
// default; K×N and M×N, no padding). Accumulation is fp32. When beta == 0, C is not read.
//
// One compiled Kernel serves any number of runs (any B, C, alpha, beta, stream); kernels are
// specific to the matrix's structure and values (the values live on the device with the kernel).
// Runs of one Kernel must not overlap in time when it splits rows across blocks in fp16/bf16
// (it then owns an fp32 accumulation workspace): issue them on one stream, or order the streams.
// Kernels come from the kernel database when this (matrix structure, N, dtype, device) was tuned
// before (milliseconds); otherwise spmm() tunes (compiler/tune.h): enumerate the schedule space,
// rank it with the cost model, measure the top_k candidates on the GPU with the L2 flushed, check
// the fastest against a CPU reference, and store the result. The values of A are not part of the
// key: a matrix with the same structure and other values reuses the tuned kernel. Offline
// runtimes are model-only (top_k 0): they compile and cache without a GPU.
//
//   sparsegen::SpmmOptions o;  o.top_k = 4;  o.cache_dir = "/tmp/sg-cache";
//   sparsegen::Kernel k = rt.spmm(a, 32, o);
//   if (k.cache_hit()) ...;  k.measured_ms();  // median of the timed runs (nullopt: not measured)
//
// Installed (cmake --install), this header and the sparsegen/*.h it includes are the whole API:
// find_package(sparsegen CONFIG) gives the targets sparsegen::sparsegen (shared library) and
// sparsegen::sparsegen_static.
//
// Errors: UserError for bad input (a bad schedule SPEC names the field; matrix values outside the
// dtype's range name the count and the first (row, col)); CudaError for the GPU stack (no
// driver, compile or launch failures, with the NVRTC log).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sparsegen/dtype.h"    // DType
#include "sparsegen/errors.h"   // UserError, CudaError
#include "sparsegen/ffn.h"      // FfnWeights
#include "sparsegen/matrix.h"   // CsrMatrix, load_matrix, LoadOptions, LoadedMatrix
#include "sparsegen/problem.h"  // Problem, Layout

namespace sparsegen {

class CompiledKernel;

// Options of Runtime::gated_ffn.
struct FfnOptions {
  DType dtype = DType::BF16;  // fp16 or bf16: x, y and the weights on the device
  // A schedule SPEC (twell;... or dense_ffn;...); empty: tuned on `calibration`.
  std::string schedule;
  // Calibration tokens, M x K row-major fp32 (rounded to dtype when used): the FFN tuner measures
  // the best-ranked schedules of every FFN family on them (the sparsity is theirs) and returns
  // the fastest, the dense FFN included. Needed unless a schedule is given.
  const std::vector<float>* calibration = nullptr;
  int per_family = 3;  // schedules measured per family
  // The tuning is kept in the kernel database keyed by the problem, the device and the
  // calibration's statistics bucket (mean and 99th percentile of nonzeros per row): another
  // calibration of the same distribution reuses it without measuring. Folder as in SpmmOptions.
  std::string cache_dir;
  bool use_cache = true;
};
struct KernelBuild;

struct SpmmOptions {
  DType dtype = DType::F32;
  // int8 / fp8_e4m3 (per-row weight scales, per-token activation scales): the type of B and C,
  // fp16 or bf16. Ignored for floating dtypes.
  DType io_dtype = DType::F16;
  Layout b_layout = Layout::RowMajor;
  Layout c_layout = Layout::RowMajor;
  // A schedule SPEC (`sparsegen schedules FILE -n N` lists them); empty: tuned (see above).
  std::string schedule;
  // Candidates measured on the GPU; 0: cost model only; -1: 8 on a GPU, 0 offline.
  int top_k = -1;
  // Host bytes the candidates being packed may hold at once while they are measured (what bounds
  // the memory of a graph-sized matrix's search); 0: automatic, twice the CSR's bytes where this
  // process reuses freed memory (GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0,
  // as the CLI sets for itself), else the CSR's bytes, at least 4 GiB.
  int64_t build_memory_bytes = 0;
  // Kernel database folder; empty: $SPARSEGEN_CACHE_DIR, else $XDG_CACHE_HOME/sparsegen, else
  // ~/.cache/sparsegen. A damaged or foreign database file is a UserError naming it.
  std::string cache_dir;
  bool use_cache = true;  // false: neither read nor write the database
};

// A Kernel's run recorded as a CUDA graph (Kernel::capture), for fixed B, C, alpha and beta.
class KernelGraph {
 public:
  // Replays the captured run, asynchronously on `stream` (null = the legacy default stream),
  // with one graph launch whatever the number of kernels and library steps it holds.
  void launch(void* stream = nullptr) const;

  KernelGraph(const KernelGraph&) = default;
  KernelGraph& operator=(const KernelGraph&) = default;
  ~KernelGraph();

 private:
  friend class Kernel;
  struct Impl;
  explicit KernelGraph(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

class Kernel {
 public:
  // C = A·B on `stream` (a CUstream / cudaStream_t; null = the legacy default stream).
  void operator()(const void* b, void* c, void* stream = nullptr) const {
    run(b, c, 1.0f, 0.0f, stream);
  }
  // C = alpha·A·B + beta·C, asynchronous on `stream`. Throws CudaError for a kernel compiled
  // offline (Runtime::offline) or a launch failure.
  void run(const void* b, void* c, float alpha, float beta, void* stream = nullptr) const;
  // Makes `stream` wait on the device (the host does not block) for the work enqueued so far on
  // `producer`, the stream an input was written on (e.g. the `stream` of an array's
  // __cuda_array_interface__ v3); nothing when they are the same stream. Throws CudaError for a
  // kernel compiled offline or a failed call.
  void order_after(void* producer, void* stream = nullptr) const;
  // run(b, c, alpha, beta) captured once as a CUDA graph, replayed by KernelGraph::launch with one
  // launch (a kernel with a prologue, an epilogue or library steps otherwise issues several).
  // The graph keeps this kernel alive; a kernel with a workspace (see above) must not have a
  // replay and a run, or two replays, in flight at once. run() itself enqueues only launches,
  // memsets and library calls, so it may also be recorded by the caller's own stream capture
  // (cudaStreamBeginCapture, torch.cuda.graph). Throws CudaError for an offline kernel or a refused
  // capture.
  KernelGraph capture(const void* b, void* c, float alpha = 1.0f, float beta = 0.0f) const;

  const Problem& problem() const;
  std::string schedule() const;         // one-line SPEC
  std::string schedule_reason() const;  // why it was chosen
  std::string arch() const;             // "sm_90" (cubin) or "compute_90" (PTX)
  const std::string& cuda_source() const;
  bool runnable() const;                       // false for offline kernels
  bool cache_hit() const;                      // true when the kernel came from the database
  std::optional<double> predicted_ms() const;  // the cost model's time
  std::optional<double> measured_ms() const;   // median measured time (when top_k > 0)
  std::string cache_key() const;               // database key ("" without the cache)

  Kernel(const Kernel&) = default;
  Kernel& operator=(const Kernel&) = default;
  ~Kernel();

 private:
  friend class Runtime;
  struct Impl;
  explicit Kernel(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

class Runtime {
 public:
  // Uses device `ordinal` (its primary context, shared with the CUDA runtime API) and compiles
  // for its own architecture. Throws CudaError when there is no driver or device.
  explicit Runtime(int ordinal = 0);
  // Compiles without a GPU, to PTX for `arch` (e.g. "compute_90"): kernels report their schedule
  // and source but cannot run. For ahead-of-time checks and CI.
  static Runtime offline(const std::string& arch = "compute_90");

  // Compiles the SpMM kernel for A and N dense columns (N = 1: SpMV). See the errors above.
  Kernel spmm(const CsrMatrix& a, int64_t n, const SpmmOptions& options = {}) const;

  // The feed-forward block (sparsegen/ffn.h) for M tokens: the returned Kernel runs
  // y = alpha·FFN(x) + beta·y with run(x, y, alpha, beta, stream), x and y device pointers to
  // M x K dtype values (row-major; x 16-byte aligned for the fastest schedules). Tuned on the
  // calibration tokens (options.calibration, M x K) unless options.schedule is given; the
  // reason names the measured dense time. Activation-sparse schedules (twell) are correct at
  // every sparsity: tiles fuller than their capacity take a dense path. Offline runtimes need
  // options.schedule. Not cached in the kernel database (yet): each call builds.
  // Throws UserError for weights that do not match (naming the tensor), a bad SPEC, no
  // calibration and no schedule.
  Kernel gated_ffn(const FfnWeights& weights, int64_t m, const FfnOptions& options = {}) const;

  // "NVIDIA H100 80GB HBM3" or "none (offline)".
  const std::string& device_name() const;

  Runtime(const Runtime&) = default;
  Runtime& operator=(const Runtime&) = default;
  ~Runtime();

 private:
  struct Impl;
  explicit Runtime(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sparsegen
