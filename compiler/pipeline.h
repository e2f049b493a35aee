// The compilation pipeline: one straight sequence of steps from a matrix to a launchable kernel.
//
//   1 problem     (matrix, N, dtype, layouts) -> Problem          make_problem
//   2 schedule    --schedule SPEC, else the first enumerated one   choose_schedule
//   3 verify      hardware limits of the target device             (reasons -> UserError)
//   4 pack        the family's format (CSR tasks, MACKO deltas, ...)  IrFamily::pack
//   5 values      fp32 master -> problem dtype; out-of-range values are a UserError naming the
//                 count and the first (row, col), never a silent inf
//   6 emit        CUDA source + KernelSignature                    codegen::emit_kernel
//   7 nvrtc       cubin for the device's own sm_XY (PTX for compute_90 without a GPU)
//   --- steps 1-7 need no GPU (build_kernel); steps 8-9 do (CompiledKernel) ---
//   8 load        module load, function lookup
//   9 upload      values, column indices and offset tables to device memory; the fp32
//                 workspace (Atomic output with fp16/bf16: M*N floats) is allocated here, once
//   then run():   prologue when present (C = beta*C, or ws = beta*C), the kernel, epilogue when
//                 present (C = ws rounded to the dtype); an empty grid is not launched, but
//                 C = beta*C is still applied.
//
// With SPARSEGEN_DEBUG=1 every step logs one line to stderr with its duration, e.g.
//   sparsegen: [pipeline] 7/9 nvrtc     312.4 ms  sm_90 cubin, 18432 bytes
//
//   KernelBuild b = build_kernel(a, {.n = 32, .dtype = DType::F16}, detect_target());
//   auto ctx = std::make_shared<cuda::Context>(0);
//   CompiledKernel k(ctx, std::move(b));
//   k.run(dB, dC, 1.0f, 0.0f, stream);   // as often as needed, any B/C/alpha/beta
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "ir/device_limits.h"
#include "ir/dtype.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"

namespace sparsegen {

// What to compile for.
struct CompileTarget {
  std::string arch = "compute_90";  // NVRTC architecture: "sm_XY" (cubin) or "compute_XY" (PTX)
  DeviceLimits limits = DeviceLimits::sm90();
  bool has_gpu = false;
  std::string device_name = "none";
};

// The target of device `ordinal` when a GPU is present (sm_XY of its compute capability, or PTX
// for the newest architecture NVRTC knows when the device is newer than NVRTC, limits from the
// device query); else PTX for compute_90 with sm_90 limits. Never throws.
CompileTarget detect_target(int ordinal = 0);
// Hardware limits of a queried device, for the verifier and the enumerator.
DeviceLimits device_limits(const cuda::DeviceInfo& info);

struct KernelRequest {
  int64_t n = 1;
  DType dtype = DType::F32;
  // The type of B and C when dtype is quantized (int8, fp8_e4m3): fp16 or bf16.
  DType io_dtype = DType::F16;
  Layout b_layout = Layout::RowMajor;
  Layout c_layout = Layout::RowMajor;
  // Schedule SPEC (ir/schedule.h). Empty: the first schedule of the enumeration (the reduction
  // rule's pick comes first); `sparsegen tune` (compiler/tune.h) ranks and measures instead.
  std::string schedule;
  // Names the flag in messages ("--schedule"): API callers get "schedule".
  std::string schedule_flag = "schedule";
  bool line_info = false;  // -lineinfo, for compute-sanitizer and profilers
};

// Step 1. N == 1 with row-major B and C is the SpMV problem; everything else SpMM; a quantized
// dtype gives Problem::quantized_spmm with B and C in io_dtype. Throws
// UserError naming the bad field (negative N, dimensions beyond the kernels' 32-bit indices).
Problem make_problem(const CsrMatrix& a, const KernelRequest& req);

// Step 2 (+3): the schedule for the problem. `why` (optional) receives a short explanation
// ("given by --schedule", "first of 212 enumerated schedules (general's preferred order ...)").
// Throws UserError naming the field of a bad SPEC, the reasons an illegal one is refused, or saying
// that no schedule is valid.
Schedule choose_schedule(const Problem& p, const CsrMatrix& a, const KernelRequest& req,
                         const CompileTarget& target, std::string* why = nullptr);

// Step 5's check on its own: throws UserError when finite values of A lie outside the range of
// `dtype`, naming how many and the first one's (row, col) (1-based, as in the file) and value.
// NaN and Inf pass (the reader reported them at load).
void check_value_range(const CsrMatrix& a, DType dtype);

struct PreparedPack;  // compiler/family.h

// Everything steps 1-7 produce; no GPU involved, so it can be built on any thread.
struct KernelBuild {
  Problem problem;
  Schedule schedule;
  std::string schedule_reason;
  CompileTarget target;
  codegen::GeneratedKernel kernel;  // source, headers, signature (tables included)
  std::vector<char> values;         // packed values in the problem dtype (raw bytes)
  std::vector<int32_t> col_idx;     // packed column indices
  // An fp32 build from its own pack adopts the pack's fp32 master values here, moved instead of
  // copied into `values` (which then stays empty): at 88M packed nonzeros the copy was another
  // 0.35 GB at the build's peak.
  std::vector<float> adopted_values;
  nvrtc::CompileResult compiled;      // cubin or PTX
  int64_t nnz = 0;                    // real nonzeros of A
  std::vector<std::string> step_log;  // "verify 0.02 ms", one per step
  // A build made from a pack the caller shares (the tuner: BuildOptions::pack_owner) borrows the
  // pack's converted values and column indices instead of copying them, and `values` and
  // `col_idx` stay empty: at 65M nonzeros each copy is 0.7 GB and a search holds a dozen builds.
  // Null: the arrays above are the build's own.
  std::shared_ptr<const PreparedPack> borrowed;

  // The values and column indices the device gets: the build's own, or the borrowed pack's.
  std::span<const char> device_values() const;
  std::span<const int32_t> device_col_idx() const;

  // A copy without what goes to the device (values, column indices, the borrowed pack, the
  // image, the tables' data): what a CompiledKernel keeps. Positional aggregate initialisation
  // inside: a field added above and not handled there fails the -Wextra build
  // (missing-field-initializers).
  KernelBuild without_host_arrays() const;
  // Frees what goes to the device (values, column indices, the borrowed pack, the tables' data)
  // and keeps the rest, the image included: a candidate the tuner has uploaded and may still store
  // in the cache. At 65M nonzeros the arrays are 0.5 GB a candidate.
  void drop_device_arrays();
};

// Steps 1-7 with a given schedule (no enumeration), through the schedule's family
// (compiler/family.h: BuildOptions carries a shared pack, the line-info flag, a source hook).
struct BuildOptions;
KernelBuild build_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                         const CompileTarget& target, const BuildOptions& opt);
KernelBuild build_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                         const CompileTarget& target, bool line_info = false);
// Steps 1-7: problem and schedule from the request.
KernelBuild build_kernel(const CsrMatrix& a, const KernelRequest& req, const CompileTarget& target);

// Step 9's copies of a build's arrays on the device: its values, column indices and one buffer
// per table parameter (empty for the other parameters).
struct DeviceArrays {
  cuda::DeviceBuffer values;
  cuda::DeviceBuffer col_idx;
  std::vector<cuda::DeviceBuffer> tables;  // by parameter index of the signature
  size_t bytes() const;
};

// Step 9's array copies on their own, possibly before step 7: a caller that bounds the host
// memory of its builds (the tuner at graph scale) uploads a build's arrays once it is emitted,
// drops them (KernelBuild::drop_device_arrays), then compiles and hands both to CompiledKernel,
// so the compile does not run while the arrays are held. Needs a current context.
DeviceArrays upload_arrays(const KernelBuild& build);

// A kernel on the GPU (steps 8-9): module, functions and device tables. One object serves any
// number of runs with different B, C, alpha, beta and streams. Needs the context it was built
// under to be current on the calling thread (cuda::Context::make_current()).
class CompiledKernel {
 public:
  // Precondition: build.target.arch is one this device can load (detect_target()). The build's
  // host arrays (values, column indices, image, the tables' data) are uploaded and then dropped.
  CompiledKernel(std::shared_ptr<cuda::Context> ctx, KernelBuild&& build);
  // The same from a build the caller keeps (e.g. the tuner, which stores it in the cache later):
  // uploads straight from `build`'s arrays and copies only what the kernel keeps, not the arrays.
  CompiledKernel(std::shared_ptr<cuda::Context> ctx, const KernelBuild& build);
  // The same with the arrays on the device already (upload_arrays of this build, under `ctx`):
  // the build's own host arrays are not read and may have been dropped.
  CompiledKernel(std::shared_ptr<cuda::Context> ctx, const KernelBuild& build,
                 DeviceArrays&& arrays);
  ~CompiledKernel();
  CompiledKernel(CompiledKernel&&) noexcept;
  CompiledKernel& operator=(CompiledKernel&&) noexcept;
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  // C = alpha * A * B + beta * C on `stream` (asynchronous). B: K*N values of the problem dtype,
  // C: M*N, in the problem's layouts. When beta == 0 C is not read (NaN in C is overwritten).
  // Degenerate problems launch nothing invalid: M*N == 0 does nothing; an empty grid only
  // applies C = beta*C. A kernel with a workspace (signature().workspace_bytes > 0) owns one:
  // its runs must not overlap in time (one stream, or streams ordered by events); runs of
  // kernels without a workspace may overlap freely.
  void run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream = nullptr) const;
  // run(b, c, alpha, beta) recorded once as a CUDA graph: each graph.launch(stream) replays the
  // whole sequence (B transform, prologue, kernel, epilogue, library steps) with one launch, for
  // these b, c, alpha and beta. run() enqueues only launches, memsets and library calls, so a
  // caller's own stream capture may record it as well. The kernel must outlive the graph; the
  // workspace rule of run() holds for its replays.
  cuda::Graph graph(CUdeviceptr b, CUdeviceptr c, float alpha, float beta) const;

  const Problem& problem() const;
  const Schedule& schedule() const;
  const std::string& schedule_reason() const;
  // Replaces the reason (a tuner that measured this kernel among others says why it won).
  void set_schedule_reason(std::string reason);
  // The signature; its table parameters' data is empty (the tables are on the device).
  const codegen::KernelSignature& signature() const;
  const std::string& source() const;
  const CompileTarget& target() const;
  double compile_ms() const;
  // Registers per thread of the main kernel as the driver reports them (0 when none is loaded).
  int registers() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True when SPARSEGEN_DEBUG=1 (read once).
bool debug_logging();

}  // namespace sparsegen
