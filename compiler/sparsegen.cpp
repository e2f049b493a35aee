#include "sparsegen/sparsegen.h"

#include <fmt/format.h>

#include <optional>

#include "compiler/ffn.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/interpreter.h"
#include "ir/schedule.h"
#include "runtime/cuda_driver.h"

namespace sparsegen {

struct Kernel::Impl {
  std::shared_ptr<CompiledKernel> gpu;  // set when compiled on a device
  std::optional<KernelBuild> offline;   // set for Runtime::offline kernels
  bool cache_hit = false;
  std::optional<double> predicted_ms, measured_ms;
  std::string cache_key;
  const KernelBuild* build() const { return offline ? &*offline : nullptr; }
};

struct Runtime::Impl {
  std::shared_ptr<cuda::Context> ctx;  // null offline
  CompileTarget target;
};

namespace {

// The refusal of a GPU call (`call`) on a kernel compiled offline.
void require_gpu(const std::shared_ptr<CompiledKernel>& gpu, const char* call) {
  if (!gpu)
    throw CudaError("kernel was compiled offline (Runtime::offline) and cannot run", call,
                    CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
}

}  // namespace

Kernel::Kernel(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Kernel::~Kernel() = default;

void Kernel::run(const void* b, void* c, float alpha, float beta, void* stream) const {
  require_gpu(impl_->gpu, "run");
  impl_->gpu->run(reinterpret_cast<CUdeviceptr>(b), reinterpret_cast<CUdeviceptr>(c), alpha, beta,
                  static_cast<CUstream>(stream));
}

void Kernel::order_after(void* producer, void* stream) const {
  require_gpu(impl_->gpu, "order_after");
  cuda::stream_wait(static_cast<CUstream>(stream), static_cast<CUstream>(producer));
}

struct KernelGraph::Impl {
  std::shared_ptr<CompiledKernel> kernel;  // declared first: outlives the graph
  cuda::Graph graph;
};

KernelGraph::KernelGraph(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
KernelGraph::~KernelGraph() = default;

void KernelGraph::launch(void* stream) const {
  impl_->graph.launch(static_cast<CUstream>(stream));
}

KernelGraph Kernel::capture(const void* b, void* c, float alpha, float beta) const {
  require_gpu(impl_->gpu, "capture");
  auto g = std::make_shared<KernelGraph::Impl>();
  g->kernel = impl_->gpu;
  g->graph = impl_->gpu->graph(reinterpret_cast<CUdeviceptr>(b), reinterpret_cast<CUdeviceptr>(c),
                               alpha, beta);
  return KernelGraph(std::move(g));
}

const Problem& Kernel::problem() const {
  return impl_->gpu ? impl_->gpu->problem() : impl_->build()->problem;
}
std::string Kernel::schedule() const {
  return to_string(impl_->gpu ? impl_->gpu->schedule() : impl_->build()->schedule);
}
std::string Kernel::schedule_reason() const {
  return impl_->gpu ? impl_->gpu->schedule_reason() : impl_->build()->schedule_reason;
}
std::string Kernel::arch() const {
  return impl_->gpu ? impl_->gpu->target().arch : impl_->build()->target.arch;
}
const std::string& Kernel::cuda_source() const {
  return impl_->gpu ? impl_->gpu->source() : impl_->build()->kernel.source;
}
bool Kernel::runnable() const {
  return impl_->gpu != nullptr;
}
bool Kernel::cache_hit() const {
  return impl_->cache_hit;
}
std::optional<double> Kernel::predicted_ms() const {
  return impl_->predicted_ms;
}
std::optional<double> Kernel::measured_ms() const {
  return impl_->measured_ms;
}
std::string Kernel::cache_key() const {
  return impl_->cache_key;
}

Runtime::Runtime(int ordinal) {
  std::string why;
  if (!cuda::driver_available(&why))
    throw CudaError("no usable GPU: " + why, "cuInit", CUDA_ERROR_NO_DEVICE,
                    "CUDA_ERROR_NO_DEVICE");
  auto impl = std::make_shared<Impl>();
  impl->ctx = std::make_shared<cuda::Context>(ordinal);
  impl->target = detect_target(ordinal);
  impl_ = std::move(impl);
}

Runtime::Runtime(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Runtime Runtime::offline(const std::string& arch) {
  auto impl = std::make_shared<Impl>();
  impl->target = offline_target(arch, "Runtime::offline arch");
  impl->target.device_name = "none (offline)";
  return Runtime(std::move(impl));
}

Runtime::~Runtime() = default;

const std::string& Runtime::device_name() const {
  return impl_->target.device_name;
}

Kernel Runtime::spmm(const CsrMatrix& a, int64_t n, const SpmmOptions& options) const {
  KernelRequest req;
  req.n = n;
  req.dtype = options.dtype;
  req.io_dtype = options.io_dtype;
  req.b_layout = options.b_layout;
  req.c_layout = options.c_layout;
  req.schedule = options.schedule;
  req.schedule_flag = "schedule";
  if (options.top_k < -1)
    throw UserError(
        fmt::format("top_k: expected -1 (default), 0 or more, found {}", options.top_k));
  if (!impl_->ctx && options.top_k > 0)
    throw UserError(
        fmt::format("top_k: {} candidates cannot be measured by an offline Runtime; "
                    "use 0 (cost model only)",
                    options.top_k));
  if (options.build_memory_bytes < 0)
    throw UserError(fmt::format("build_memory_bytes: expected 0 (automatic) or more, found {}",
                                options.build_memory_bytes));
  TuneOptions o;
  o.top_k = options.top_k >= 0 ? options.top_k : (impl_->ctx ? 8 : 0);
  o.build_memory_bytes = options.build_memory_bytes;
  o.cache_dir = options.cache_dir;
  o.use_cache = options.use_cache;
  o.want_build = true;
  o.ctx = impl_->ctx;
  TuneResult r = tune(a, req, impl_->target, o);
  auto k = std::make_shared<Kernel::Impl>();
  k->cache_hit = r.cache_hit;
  k->predicted_ms = r.predicted_ms;
  k->measured_ms = r.measured_ms;
  k->cache_key = r.db_path.empty() ? std::string() : r.kernel_key;
  if (impl_->ctx) {
    impl_->ctx->make_current();
    k->gpu = std::make_shared<CompiledKernel>(impl_->ctx, std::move(*r.build));
  } else {
    k->offline = std::move(*r.build);
  }
  return Kernel(std::move(k));
}

Kernel Runtime::gated_ffn(const FfnWeights& weights, int64_t m, const FfnOptions& options) const {
  const Problem p = Problem::gated_ffn(m, weights.k, weights.n, options.dtype, weights.gated);
  check_weights(p, weights);
  auto k = std::make_shared<Kernel::Impl>();
  if (!options.schedule.empty()) {
    // The given schedule; an empty activation pattern (no statistics needed to build).
    CsrMatrix none;
    none.cols = p.n;
    std::string why;
    const Schedule s = choose_ffn_schedule(p, none, options.schedule, impl_->target, &why);
    KernelBuild b = build_ffn_kernel(p, s, weights, impl_->target, &none);
    b.schedule_reason = why;
    if (impl_->ctx) {
      impl_->ctx->make_current();
      k->gpu = std::make_shared<CompiledKernel>(impl_->ctx, std::move(b));
    } else {
      k->offline = std::move(b);
    }
    return Kernel(std::move(k));
  }
  if (options.calibration == nullptr)
    throw UserError(
        "gated_ffn: give calibration tokens (FfnOptions::calibration, M x K) to tune on, or a "
        "schedule");
  if (static_cast<int64_t>(options.calibration->size()) != m * weights.k)
    throw UserError(fmt::format("gated_ffn: calibration holds {} values, M x K = {} x {} needed",
                                options.calibration->size(), m, weights.k));
  if (!impl_->ctx)
    throw UserError("gated_ffn: an offline Runtime cannot measure; give options.schedule");
  impl_->ctx->make_current();
  std::vector<float> x(options.calibration->begin(), options.calibration->end());
  for (float& v : x) v = round_to(options.dtype, v);
  FfnTuneOptions to;
  to.per_family = options.per_family;
  to.cache_dir = options.cache_dir;
  to.use_cache = options.use_cache;
  FfnTuneResult r = tune_ffn(impl_->ctx, p, weights, x, impl_->target, to);
  k->measured_ms = r.ms;
  k->cache_hit = r.cache_hit;
  k->gpu = std::shared_ptr<CompiledKernel>(std::move(r.kernel));
  k->gpu->set_schedule_reason(r.reason);
  return Kernel(std::move(k));
}

}  // namespace sparsegen
