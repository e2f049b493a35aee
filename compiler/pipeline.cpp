#include "compiler/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/parallel.h"
#include "ir/verifier.h"
#include "runtime/cublaslt.h"
#include "runtime/cusparse.h"
#include "runtime/cusparselt.h"

namespace sparsegen {
namespace {

// Row of nonzero `e` in CSR (binary search over row_ptr).
int64_t row_of(const CsrMatrix& a, int64_t e) {
  const auto it = std::upper_bound(a.row_ptr.begin(), a.row_ptr.end(), e);
  return static_cast<int64_t>(it - a.row_ptr.begin()) - 1;
}

// A table's int64 host data in the kind's width, for the upload (in parallel: tables of the
// MACKO and bitmap kernels hold one entry per 32-bit word of the matrix's deltas or masks).
template <class T>
std::vector<T> narrow_table(const std::vector<int64_t>& data) {
  std::vector<T> out;
  resize_prefaulted(out, data.size());
  const auto n = static_cast<int64_t>(data.size());
  parallel_for(n, n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[static_cast<size_t>(i)] = static_cast<T>(data[static_cast<size_t>(i)]);
  });
  return out;
}

}  // namespace

bool debug_logging() {
  static const bool on = [] {
    const char* v = std::getenv("SPARSEGEN_DEBUG");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

DeviceLimits device_limits(const cuda::DeviceInfo& info) {
  DeviceLimits d;
  d.name = fmt::format("sm_{}{}", info.cc_major, info.cc_minor);
  if (info.max_threads_per_block > 0) d.max_threads_per_block = info.max_threads_per_block;
  if (info.max_shared_memory_per_block_optin > 0)
    d.max_shared_per_block = info.max_shared_memory_per_block_optin;
  if (info.max_registers_per_block > 0) d.registers_per_block = info.max_registers_per_block;
  if (info.max_grid_dim_x > 0) d.max_grid_x = info.max_grid_dim_x;
  if (info.max_grid_dim_y > 0) d.max_grid_y = info.max_grid_dim_y;
  if (info.sm_count > 0) d.multiprocessors = info.sm_count;
  if (info.max_threads_per_sm > 0) d.max_threads_per_multiprocessor = info.max_threads_per_sm;
  if (info.max_shared_memory_per_sm > 0)
    d.max_shared_per_multiprocessor = info.max_shared_memory_per_sm;
  if (info.max_registers_per_sm > 0) d.registers_per_multiprocessor = info.max_registers_per_sm;
  d.wgmma = info.cc_major == 9 && info.cc_minor == 0;  // the sm_90a target only
  return d;
}

CompileTarget detect_target(int ordinal) {
  CompileTarget t;
  try {
    if (!cuda::driver_available()) return t;
    const cuda::DeviceInfo info = cuda::query_device(ordinal);
    t.has_gpu = true;
    t.device_name = info.name;
    t.limits = device_limits(info);
    const int cc = info.cc_major * 10 + info.cc_minor;
    const std::vector<int> archs = nvrtc::supported_archs();
    if (std::find(archs.begin(), archs.end(), cc) != archs.end()) {
      t.arch = nvrtc::sm_arch_for(info.cc_major, info.cc_minor);
    } else {
      // A device newer than this NVRTC: PTX of the newest older architecture; the driver JITs it.
      int best = 0;
      for (int a : archs)
        if (a <= cc) best = std::max(best, a);
      if (best == 0) best = 90;
      t.arch = nvrtc::compute_arch_for(best / 10, best % 10);
    }
  } catch (const CudaError&) {
    return CompileTarget{};
  }
  return t;
}

Problem make_problem(const CsrMatrix& a, const KernelRequest& req) {
  if (req.n < 0) throw UserError(fmt::format("n: expected a non-negative count, found {}", req.n));
  if (is_quantized(req.dtype))
    return Problem::quantized_spmm(a.rows, a.cols, req.n, req.dtype, req.io_dtype, req.b_layout,
                                   req.c_layout);
  if (req.n == 1 && req.b_layout == Layout::RowMajor && req.c_layout == Layout::RowMajor)
    return Problem::spmv(a.rows, a.cols, req.dtype);
  return Problem::spmm(a.rows, a.cols, req.n, req.dtype, req.b_layout, req.c_layout);
}

Schedule choose_schedule(const Problem& p, const CsrMatrix& a, const KernelRequest& req,
                         const CompileTarget& target, std::string* why) {
  Schedule s;
  std::string reason;
  if (!req.schedule.empty()) {
    try {
      s = parse_schedule(req.schedule);
    } catch (const UserError& e) {
      // parse_schedule names "--schedule"; API callers may use another name for the flag.
      std::string msg = e.what();
      if (req.schedule_flag != "--schedule" && msg.rfind("--schedule", 0) == 0)
        msg = req.schedule_flag + msg.substr(std::strlen("--schedule"));
      throw UserError(msg);
    }
    reason = fmt::format("given by {}", req.schedule_flag);
  } else {
    // No cost model here (`sparsegen tune` ranks and measures): the enumeration order decides
    // (each family lists its preferred schedules first).
    EnumerateOptions o;
    o.device = target.limits;
    const auto all = enumerate_schedules(p, a, o);
    if (all.empty())
      throw UserError(fmt::format("{}: no valid schedule for {} on {}",
                                  a.source.empty() ? "matrix" : a.source, to_string(p),
                                  target.limits.name));
    s = all.front();
    reason = fmt::format(
        "first of {} enumerated schedules ({}'s preferred order, not ranked: `sparsegen tune` "
        "ranks and measures)",
        all.size(), s.family_name());
  }
  const auto illegal = validate(p, s);
  if (!illegal.empty())
    throw UserError(fmt::format("{}: schedule '{}' is illegal for {}: {}", req.schedule_flag,
                                to_string(s), to_string(p), fmt::join(illegal, "; ")));
  if (why != nullptr) *why = std::move(reason);
  return s;
}

void check_value_range(const CsrMatrix& a, DType dtype) {
  if (dtype == DType::F32 || a.values.empty()) return;
  const ConversionReport rep = check_range(a.values, dtype);
  if (rep.out_of_range == 0) return;
  const int64_t r = row_of(a, rep.first_index);
  const int64_t c = a.col_idx[static_cast<size_t>(rep.first_index)];
  throw UserError(fmt::format(
      "{}: {} value{} outside the {} range (largest finite {:g}); first at ({}, {}) = {:g}. Use "
      "--dtype fp32, or a precision whose range holds the matrix",
      a.source.empty() ? "matrix" : a.source, rep.out_of_range, rep.out_of_range == 1 ? "" : "s",
      to_string(dtype), dtype_max(dtype), r + 1, c + 1, rep.first_value));
}

KernelBuild build_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                         const CompileTarget& target, const BuildOptions& opt) {
  return compiler_family(s).build(a, p, s, target, opt);
}

KernelBuild build_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                         const CompileTarget& target, bool line_info) {
  BuildOptions o;
  o.line_info = line_info;
  return build_kernel(a, p, s, target, o);
}

KernelBuild build_kernel(const CsrMatrix& a, const KernelRequest& req,
                         const CompileTarget& target) {
  std::vector<std::string> log;
  Problem p;
  {
    PipelineStep st(1, "problem", &log);
    p = make_problem(a, req);
    st.finish(to_string(p));
  }
  Schedule s;
  std::string why;
  {
    PipelineStep st(2, "schedule", &log);
    s = choose_schedule(p, a, req, target, &why);
    st.finish(to_string(s));
  }
  KernelBuild b = build_kernel(a, p, s, target, req.line_info);
  b.schedule_reason = std::move(why);
  log.insert(log.end(), b.step_log.begin(), b.step_log.end());
  b.step_log = std::move(log);
  return b;
}

// ---- CompiledKernel ------------------------------------------------------------------------

KernelBuild KernelBuild::without_host_arrays() const {
  const nvrtc::CompileResult& c = compiled;
  return {problem,
          schedule,
          schedule_reason,
          target,
          {kernel.source, kernel.headers, kernel.signature.without_table_data()},
          {},
          {},
          {},
          {{}, c.is_cubin, c.arch, c.log, c.lowered_names, c.options, c.compile_ms},
          nnz,
          step_log,
          nullptr};
}

void KernelBuild::drop_device_arrays() {
  std::vector<char>().swap(values);
  std::vector<int32_t>().swap(col_idx);
  std::vector<float>().swap(adopted_values);
  borrowed.reset();
  kernel.signature = kernel.signature.without_table_data();
}

std::span<const char> KernelBuild::device_values() const {
  if (!adopted_values.empty())
    return {reinterpret_cast<const char*>(adopted_values.data()), adopted_values.size() * 4};
  return borrowed != nullptr && values.empty() ? std::span<const char>(borrowed->values)
                                               : std::span<const char>(values);
}

std::span<const int32_t> KernelBuild::device_col_idx() const {
  return borrowed != nullptr && col_idx.empty()
             ? std::span<const int32_t>(borrowed->packed->column_indices())
             : std::span<const int32_t>(col_idx);
}

struct CompiledKernel::Impl {
  // Declaration order = reverse destruction order: the context outlives module and buffers.
  std::shared_ptr<cuda::Context> ctx;
  // The build without its host arrays (values, column indices, image, tables' data), which are
  // on the device: problem, schedule, source and signature for the queries and run().
  KernelBuild build;
  std::unique_ptr<cuda::Module> module;
  CUfunction kernel = nullptr;
  CUfunction prologue = nullptr;
  CUfunction epilogue = nullptr;
  CUfunction b_transform = nullptr;
  DeviceArrays arrays;              // values, column indices, tables
  cuda::DeviceBuffer workspace;     // fp32 accumulation (Atomic output, 16-bit dtypes)
  cuda::DeviceBuffer b_work;        // B transformed by b_transform
  cuda::DeviceBuffer token_scales;  // one fp32 per column of B, written by b_transform
  // The signature's library GEMMs, planned at load (gemms_before, then gemms_after).
  std::vector<std::unique_ptr<cublaslt::Gemm>> gemms;
  // Per GEMM: its plan with an fp32 C (LibraryGemm::beta_in_workspace), else null.
  std::vector<std::unique_ptr<cublaslt::Gemm>> gemms_fp32;
  // The signature's library SpMMs, planned after the upload (they read A's device buffers).
  std::vector<std::unique_ptr<cusparse::Spmm>> spmms;
  // The signature's 2:4 library GEMMs, planned after the upload (they compress A's values).
  std::vector<std::unique_ptr<cusparselt::SparseGemm>> sparse_gemms;
  int registers = 0;

  // Steps 8-9 from `src` (k.build when the build was moved in, else the caller's build); steps
  // are logged into build.step_log. `uploaded`: src's arrays, on the device already.
  void load_and_upload(const KernelBuild& src, DeviceArrays* uploaded = nullptr);
  void plan_sparse_gemms(const KernelBuild& src);
};

namespace {

// Above the default 48 KiB of dynamic and static shared memory together, a function must opt in
// to its dynamic shared memory.
void opt_in_shared_memory(CUfunction f, int64_t dynamic_bytes) {
  if (dynamic_bytes + cuda::function_attribute(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) > 48 * 1024)
    cuda::set_max_dynamic_shared_memory(f, static_cast<int>(dynamic_bytes));
}

cuda::DeviceBuffer upload_bytes(const void* data, size_t bytes) {
  if (bytes == 0) return {};
  cuda::DeviceBuffer buf(bytes);
  buf.upload(data, bytes);
  return buf;
}

template <class T>
cuda::DeviceBuffer upload_vector(std::span<const T> v) {
  return upload_bytes(v.data(), v.size() * sizeof(T));
}
template <class T>
cuda::DeviceBuffer upload_vector(const std::vector<T>& v) {
  return upload_vector(std::span<const T>(v));
}

cuda::LaunchConfig config_of(const codegen::LaunchShape& s, CUstream stream) {
  cuda::LaunchConfig c;
  // programmatic stays off here: launch_bound decides it from the kernel before (see there).
  c.grid.x = static_cast<unsigned>(s.grid_x);
  c.grid.y = static_cast<unsigned>(s.grid_y);
  c.block.x = static_cast<unsigned>(s.block_threads);
  c.shared_bytes = static_cast<unsigned>(s.dynamic_shared_bytes);
  c.cluster_x = static_cast<unsigned>(s.cluster_x);
  c.stream = stream;
  return c;
}

}  // namespace

size_t DeviceArrays::bytes() const {
  size_t n = values.bytes() + col_idx.bytes();
  for (const cuda::DeviceBuffer& t : tables) n += t.bytes();
  return n;
}

DeviceArrays upload_arrays(const KernelBuild& src) {
  DeviceArrays d;
  d.values = upload_vector(src.device_values());
  d.col_idx = upload_vector(src.device_col_idx());
  const std::vector<codegen::KernelParam>& params = src.kernel.signature.params;
  d.tables.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const codegen::KernelParam& prm = params[i];
    switch (prm.kind) {
      case codegen::ParamKind::I32Table:
        d.tables[i] = upload_vector(narrow_table<int32_t>(prm.data));
        break;
      case codegen::ParamKind::I16Table:
        d.tables[i] = upload_vector(narrow_table<int16_t>(prm.data));
        break;
      case codegen::ParamKind::I8Table:
        d.tables[i] = upload_vector(narrow_table<int8_t>(prm.data));
        break;
      case codegen::ParamKind::U32Table:
      case codegen::ParamKind::F32Table:  // float bit patterns
        d.tables[i] = upload_vector(narrow_table<uint32_t>(prm.data));
        break;
      default:
        break;
    }
  }
  return d;
}

void CompiledKernel::Impl::load_and_upload(const KernelBuild& src, DeviceArrays* uploaded) {
  const codegen::KernelSignature& sig = src.kernel.signature;
  {
    PipelineStep st(8, "load", &build.step_log);
    module = std::make_unique<cuda::Module>(src.compiled.image);
    kernel = module->function(sig.kernel_name);
    if (sig.prologue.present()) prologue = module->function(sig.prologue.name);
    if (sig.epilogue.present()) epilogue = module->function(sig.epilogue.name);
    if (sig.b_transform.present()) b_transform = module->function(sig.b_transform.name);
    registers = cuda::function_attribute(kernel, CU_FUNC_ATTRIBUTE_NUM_REGS);
    opt_in_shared_memory(kernel, sig.launch.dynamic_shared_bytes);
    for (const auto* list : {&sig.gemms_before, &sig.gemms_after})
      for (const codegen::LibraryGemm& g : *list) {
        cublaslt::GemmShape sh;
        sh.m = g.m;
        sh.n = g.n;
        sh.k = g.k;
        sh.lda = g.a.ld;
        sh.ldb = g.b.ld;
        sh.ldc = g.c.ld;
        sh.half = src.problem.dtype == DType::F16;
        sh.b_transposed = g.b_transposed;
        sh.relu = g.relu;
        sh.relu_mask_ld = g.relu_mask_ld;
        sh.operands = g.operands == codegen::GemmOperands::Int8  ? cublaslt::Operands::Int8
                      : g.operands == codegen::GemmOperands::Fp8 ? cublaslt::Operands::Fp8
                                                                 : cublaslt::Operands::Io16;
        gemms.push_back(std::make_unique<cublaslt::Gemm>(sh));
        sh.c_fp32 = true;  // the twin for beta != 0 never runs with its plan: one workspace
        gemms_fp32.push_back(g.beta_in_workspace
                                 ? std::make_unique<cublaslt::Gemm>(sh, gemms.back().get())
                                 : nullptr);
      }
    if (b_transform != nullptr)
      opt_in_shared_memory(b_transform, sig.b_transform.launch.dynamic_shared_bytes);
    st.finish(fmt::format("{} registers/thread", registers));
  }
  {
    PipelineStep st(9, "upload", &build.step_log);
    const bool before = uploaded != nullptr;
    arrays = before ? std::move(*uploaded) : upload_arrays(src);
    size_t bytes = arrays.bytes();
    // Allocated once: every run re-initialises it in the prologue, or (workspace_zeroed) the
    // kernel returns it to zero itself, so it is zeroed here once.
    if (sig.workspace_bytes > 0) {
      workspace = cuda::DeviceBuffer(static_cast<size_t>(sig.workspace_bytes));
      if (sig.workspace_zeroed) workspace.fill_bytes(0);
    }
    if (sig.b_work_bytes > 0) b_work = cuda::DeviceBuffer(static_cast<size_t>(sig.b_work_bytes));
    if (sig.token_scales > 0)
      token_scales = cuda::DeviceBuffer(static_cast<size_t>(sig.token_scales) * sizeof(float));
    // Library SpMMs are planned here: they read A's buffers at their device addresses.
    for (const codegen::LibrarySpmm& m : sig.spmms) {
      SG_ASSERT(m.row_offsets_param < arrays.tables.size() &&
                    sig.params[m.row_offsets_param].kind == codegen::ParamKind::I32Table,
                "library SpMM row offsets are not an I32 table");
      cusparse::SpmmShape sh;
      sh.m = m.m;
      sh.k = m.k;
      sh.n = m.n;
      sh.nnz = m.nnz;
      sh.value_bytes = static_cast<int>(dtype_bytes(src.problem.dtype));
      sh.half = src.problem.dtype == DType::F16;
      sh.row_major = m.row_major;
      sh.algorithm = m.algorithm;
      spmms.push_back(std::make_unique<cusparse::Spmm>(sh, arrays.tables[m.row_offsets_param].ptr(),
                                                       arrays.col_idx.ptr(), arrays.values.ptr()));
      bytes += static_cast<size_t>(spmms.back()->workspace_bytes());
    }
    plan_sparse_gemms(src);
    for (const auto& g : sparse_gemms) bytes += g->compressed_bytes() + g->workspace_bytes();
    st.finish(fmt::format("{} bytes{}, workspace {} bytes", bytes,
                          before ? " (arrays uploaded before the compile)" : "",
                          sig.workspace_bytes));
  }
}

namespace {

cusparselt::Type lt_type(DType t) {
  switch (t) {
    case DType::F16:
      return cusparselt::Type::F16;
    case DType::BF16:
      return cusparselt::Type::BF16;
    case DType::I8:
      return cusparselt::Type::I8;
    case DType::F8E4M3:
      return cusparselt::Type::E4M3;
    default:
      throw UserError(fmt::format("the 2:4 library GEMM has no {} inputs", to_string(t)));
  }
}

}  // namespace

// The 2:4 library GEMMs read A's device values (each keeps its own compressed copy). A step
// without a choice is searched here, once, on the kernel's own buffers (B work zeroed; C a
// scratch copy), and the choice found is written into this kernel's signature.
void CompiledKernel::Impl::plan_sparse_gemms(const KernelBuild& src) {
  const codegen::KernelSignature& sig = src.kernel.signature;
  const Problem& p = src.problem;
  for (size_t i = 0; i < sig.sparse_gemms.size(); ++i) {
    const codegen::LibrarySparseGemm& g = sig.sparse_gemms[i];
    cusparselt::Shape sh;
    sh.m = g.m;
    sh.k = g.k;
    sh.n = g.n;
    sh.in = lt_type(p.dtype);
    sh.out = !g.to_workspace        ? lt_type(p.b_dtype())
             : p.dtype == DType::I8 ? cusparselt::Type::I32
                                    : cusparselt::Type::F32;
    SG_ASSERT(!g.to_workspace || workspace.bytes() >= static_cast<size_t>(g.m * g.n * 4),
              "2:4 library GEMM: the workspace is smaller than its accumulators");
    SG_ASSERT(b_work.bytes() >= static_cast<size_t>(g.n * g.k * dtype_bytes(p.dtype)),
              "2:4 library GEMM: the B work buffer is smaller than its operand");
    auto gemm = std::make_unique<cusparselt::SparseGemm>(arrays.values.ptr(), sh, nullptr);
    if (g.choice.empty()) {
      b_work.fill_bytes(0);
      cuda::DeviceBuffer scratch;
      if (!g.to_workspace)
        scratch =
            cuda::DeviceBuffer(static_cast<size_t>(g.m * g.n * cusparselt::type_bytes(sh.out)));
      cusparselt::SearchOptions so;
      so.max_alg_ids = 1;  // with the library's own search: one plan for every id
      gemm->search(b_work.ptr(), g.to_workspace ? workspace.ptr() : scratch.ptr(), nullptr, so);
    } else {
      gemm->set_choice(cusparselt::Choice::parse(g.choice));
    }
    build.kernel.signature.sparse_gemms[i].choice = gemm->choice().to_string();
    sparse_gemms.push_back(std::move(gemm));
  }
}

CompiledKernel::CompiledKernel(std::shared_ptr<cuda::Context> ctx, KernelBuild&& build)
    : impl_(std::make_unique<Impl>()) {
  Impl& k = *impl_;
  k.ctx = std::move(ctx);
  k.build = std::move(build);
  k.load_and_upload(k.build);
  // The host copies are on the device now; keep the rest for queries.
  k.build.values = {};
  k.build.adopted_values = {};
  k.build.col_idx = {};
  k.build.borrowed = nullptr;
  k.build.compiled.image = {};
  for (codegen::KernelParam& prm : k.build.kernel.signature.params)
    if (codegen::is_table(prm.kind)) prm.data = {};
}

CompiledKernel::CompiledKernel(std::shared_ptr<cuda::Context> ctx, const KernelBuild& build)
    : impl_(std::make_unique<Impl>()) {
  Impl& k = *impl_;
  k.ctx = std::move(ctx);
  k.build = build.without_host_arrays();
  k.load_and_upload(build);
}

CompiledKernel::CompiledKernel(std::shared_ptr<cuda::Context> ctx, const KernelBuild& build,
                               DeviceArrays&& arrays)
    : impl_(std::make_unique<Impl>()) {
  Impl& k = *impl_;
  k.ctx = std::move(ctx);
  k.build = build.without_host_arrays();
  k.load_and_upload(build, &arrays);
}

CompiledKernel::~CompiledKernel() = default;
CompiledKernel::CompiledKernel(CompiledKernel&&) noexcept = default;
CompiledKernel& CompiledKernel::operator=(CompiledKernel&&) noexcept = default;

namespace {

// What a run binds to parameters by kind.
struct RunArgs {
  CUdeviceptr values = 0, col_idx = 0, workspace = 0, b = 0, c = 0, b_work = 0, token_scales = 0;
  float alpha = 1.0f, beta = 0.0f;
  const std::vector<cuda::DeviceBuffer>* tables = nullptr;  // main kernel's, by parameter index
};

// The device address of a library GEMM operand (its buffer bound by kind, plus the offset in
// elements of elem_bytes).
CUdeviceptr operand_ptr(const codegen::GemmOperand& o, const RunArgs& a, int64_t elem_bytes) {
  CUdeviceptr base = 0;
  switch (o.buffer) {
    case codegen::ParamKind::Workspace:
      base = a.workspace;
      break;
    case codegen::ParamKind::B:
      base = a.b;
      break;
    case codegen::ParamKind::C:
      base = a.c;
      break;
    case codegen::ParamKind::Values:
      base = a.values;
      break;
    case codegen::ParamKind::BWork:
      base = a.b_work;
      break;
    default:
      SG_ASSERT(false, "library GEMM operand in a " + std::string(codegen::to_string(o.buffer)) +
                           " buffer");
  }
  return base + static_cast<CUdeviceptr>(o.offset * elem_bytes);
}

using GemmPlans = std::vector<std::unique_ptr<cublaslt::Gemm>>;

// Runs `list` (planned in `plans` / `plans_fp32` from index `first`) on the stream. A GEMM that
// adds beta·C with beta != 0 through the workspace (beta_in_workspace) accumulates into it in fp32
// with beta 1: the prologue put beta·C there and the epilogue rounds it into C.
void run_gemms(const std::vector<codegen::LibraryGemm>& list, const GemmPlans& plans,
               const GemmPlans& plans_fp32, size_t first, const RunArgs& a, int64_t elem_bytes,
               CUstream stream) {
  for (size_t i = 0; i < list.size(); ++i) {
    const codegen::LibraryGemm& g = list[i];
    // 8-bit GEMMs: 1-byte a and b, a 4-byte (int32 or fp32) c.
    const int64_t ab_bytes = g.eight_bit() ? 1 : elem_bytes;
    const CUdeviceptr pa = operand_ptr(g.a, a, ab_bytes);
    const CUdeviceptr pb = operand_ptr(g.b, a, ab_bytes);
    const float alpha = g.run_alpha_beta ? a.alpha : 1.0f;
    const float beta = g.run_alpha_beta ? a.beta : 0.0f;
    if (g.beta_in_workspace && beta != 0.0f) {
      const CUdeviceptr ws = a.workspace + static_cast<CUdeviceptr>(g.c.offset * sizeof(float));
      plans_fp32[first + i]->run(pa, pb, ws, alpha, 1.0f, stream);
    } else {
      plans[first + i]->run(pa, pb, operand_ptr(g.c, a, g.eight_bit() ? 4 : elem_bytes), alpha,
                            beta, stream, g.relu_mask_ld != 0 ? operand_ptr(g.relu_mask, a, 1) : 0);
    }
  }
}

// Whether an aux kernel runs for this beta (beta_only ones only when beta != 0).
bool aux_runs(CUfunction f, const codegen::AuxKernel& k, float beta) {
  return f != nullptr && (!k.beta_only || beta != 0.0f);
}

// Whether programmatic dependent launch is allowed: on unless SPARSEGEN_PDL=0 (an A/B switch
// for measurements; read once).
bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SPARSEGEN_PDL");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

// Launches `f` with `params` bound by kind (the main kernel, prologue and epilogue alike).
// `with_tables`: `params` are the main kernel's (tables are uploaded per parameter index).
// `after_own_kernel`: the launch before this one on the stream is a kernel of this run's own
// sequence (not the caller's work, not a library call), which it may overlap when its shape
// waits programmatically; the caller's B is complete by then, since that earlier kernel was
// launched in full stream order.
void launch_bound(CUfunction f, const std::vector<codegen::KernelParam>& params,
                  const codegen::LaunchShape& shape, RunArgs& a, bool with_tables,
                  bool after_own_kernel, CUstream stream) {
  std::vector<CUdeviceptr> ptrs(params.size(), 0);
  std::vector<void*> args(params.size() + 1, nullptr);
  std::vector<cuda::TensorMap> maps;  // by value: args point into it (reserved, never moved)
  maps.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    switch (params[i].kind) {
      case codegen::ParamKind::BTensorMap: {
        // Encoded from this run's B pointer (B's address may change from run to run).
        const auto s = codegen::TensorMapShape::from_data(params[i].data);
        cuda::TensorMapRequest r;
        r.inner = s.inner;
        r.outer = s.outer;
        r.row_elems = s.row_elems;
        r.box_inner = s.box_inner;
        r.box_outer = s.box_outer;
        r.elem_bytes = static_cast<int>(s.elem_bytes);
        r.swizzle_bytes = static_cast<int>(s.swizzle_bytes);
        maps.push_back(cuda::encode_tensor_map_2d(a.b, r));
        args[i] = &maps.back();
        continue;
      }
      case codegen::ParamKind::Values:
        ptrs[i] = a.values;
        break;
      case codegen::ParamKind::ColIdx:
        ptrs[i] = a.col_idx;
        break;
      case codegen::ParamKind::B:
        ptrs[i] = a.b;
        break;
      case codegen::ParamKind::C:
        ptrs[i] = a.c;
        break;
      case codegen::ParamKind::Workspace:
      case codegen::ParamKind::BWork:
      case codegen::ParamKind::TokenScales: {
        // Runtime-owned buffers, allocated at upload when the signature asks for them.
        const CUdeviceptr buf = params[i].kind == codegen::ParamKind::Workspace ? a.workspace
                                : params[i].kind == codegen::ParamKind::BWork   ? a.b_work
                                                                                : a.token_scales;
        SG_ASSERT(buf != 0, "kernel parameter " + params[i].name + " needs a " +
                                std::string(codegen::to_string(params[i].kind)) +
                                " buffer that was not allocated");
        ptrs[i] = buf;
        break;
      }
      case codegen::ParamKind::Alpha:
        args[i] = &a.alpha;
        continue;
      case codegen::ParamKind::Beta:
        args[i] = &a.beta;
        continue;
      case codegen::ParamKind::I32Table:
      case codegen::ParamKind::I16Table:
      case codegen::ParamKind::I8Table:
      case codegen::ParamKind::U32Table:
      case codegen::ParamKind::F32Table:
        // Tables belong to the main kernel: its parameter i has its upload at tables[i].
        SG_ASSERT(with_tables && a.tables != nullptr && i < a.tables->size(),
                  "table parameter " + params[i].name + " outside the main kernel");
        ptrs[i] = (*a.tables)[i].ptr();
        break;
    }
    args[i] = &ptrs[i];
  }
  cuda::LaunchConfig config = config_of(shape, stream);
  config.programmatic = after_own_kernel && shape.programmatic_wait && pdl_enabled();
  cuda::launch(f, config, args.data());
}

}  // namespace

void CompiledKernel::run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta,
                         CUstream stream) const {
  const Impl& k = *impl_;
  const Problem& p = k.build.problem;
  const codegen::KernelSignature& sig = k.build.kernel.signature;
  if (p.m == 0 || p.n == 0) return;  // C has no elements
  // A weight without nonzeros: C = beta·C, which for beta 0 is a fill of zeros (the stream's
  // cheapest operation; a kernel launch costs more). Other betas run the sequence (it scales C).
  if (p.sparse_weight() && k.build.nnz == 0 && beta == 0.0f) {
    cuda::fill_bytes_async(c, static_cast<size_t>(p.m * p.n * dtype_bytes(p.c_dtype())), 0, stream);
    return;
  }
  if (sig.b_alignment > 1 && b % static_cast<CUdeviceptr>(sig.b_alignment) != 0)
    throw UserError(
        fmt::format("B at device address 0x{:x} is not {}-byte aligned, which the "
                    "kernel '{}' needs (its loads of B are {}-byte copies)",
                    static_cast<unsigned long long>(b), sig.b_alignment,
                    to_string(k.build.schedule), sig.b_alignment));
  RunArgs a;
  a.values = k.arrays.values.ptr();
  a.col_idx = k.arrays.col_idx.ptr();
  a.workspace = k.workspace.ptr();
  a.b = b;
  a.c = c;
  a.alpha = alpha;
  a.beta = beta;
  a.tables = &k.arrays.tables;
  a.b_work = k.b_work.ptr();
  a.token_scales = k.token_scales.ptr();
  // after_own: the last launch on the stream is one of this sequence's kernels (launch_bound).
  bool after_own = false;
  if (k.b_transform != nullptr) {
    launch_bound(k.b_transform, sig.b_transform.params, sig.b_transform.launch, a, false, false,
                 stream);
    after_own = true;
  }
  const int64_t elem = dtype_bytes(p.b_dtype());
  run_gemms(sig.gemms_before, k.gemms, k.gemms_fp32, 0, a, elem, stream);
  if (!sig.gemms_before.empty()) after_own = false;
  for (size_t i = 0; i < k.sparse_gemms.size(); ++i) {
    const bool raw = sig.sparse_gemms[i].to_workspace;
    k.sparse_gemms[i]->run(a.b_work, raw ? a.workspace : c, raw ? 1.0f : alpha, raw ? 0.0f : beta,
                           stream);
    after_own = false;
  }
  if (aux_runs(k.prologue, sig.prologue, beta)) {
    launch_bound(k.prologue, sig.prologue.params, sig.prologue.launch, a, false, after_own, stream);
    after_own = true;
  }
  if (sig.empty_grid()) {
    // With M*N > 0 only the Atomic output mode (rows split across blocks) can leave no block
    // task (nnz == 0): its prologue (and epilogue) apply C = beta*C. A Store kernel always has a
    // task per row; a library candidate's launch sequence is its library steps alone.
    SG_ASSERT(k.prologue != nullptr || !sig.gemms_before.empty() || !sig.gemms_after.empty() ||
                  !sig.spmms.empty() || !sig.sparse_gemms.empty(),
              "empty grid without a prologue or a library step for " + to_string(p));
  } else {
    launch_bound(k.kernel, sig.params, sig.launch, a, true, after_own, stream);
    after_own = true;
  }
  run_gemms(sig.gemms_after, k.gemms, k.gemms_fp32, sig.gemms_before.size(), a, elem, stream);
  if (!sig.gemms_after.empty()) after_own = false;
  for (const auto& m : k.spmms) {
    m->run(b, c, alpha, beta, stream);
    after_own = false;
  }
  if (aux_runs(k.epilogue, sig.epilogue, beta))
    launch_bound(k.epilogue, sig.epilogue.params, sig.epilogue.launch, a, false, after_own, stream);
}

cuda::Graph CompiledKernel::graph(CUdeviceptr b, CUdeviceptr c, float alpha, float beta) const {
  impl_->ctx->make_current();
  const cuda::Stream capture;  // the legacy default stream cannot be captured
  return cuda::Graph::capture(capture.get(), [&](CUstream s) { run(b, c, alpha, beta, s); });
}

const Problem& CompiledKernel::problem() const {
  return impl_->build.problem;
}
const Schedule& CompiledKernel::schedule() const {
  return impl_->build.schedule;
}
const std::string& CompiledKernel::schedule_reason() const {
  return impl_->build.schedule_reason;
}
void CompiledKernel::set_schedule_reason(std::string reason) {
  impl_->build.schedule_reason = std::move(reason);
}
const codegen::KernelSignature& CompiledKernel::signature() const {
  return impl_->build.kernel.signature;
}
const std::string& CompiledKernel::source() const {
  return impl_->build.kernel.source;
}
const CompileTarget& CompiledKernel::target() const {
  return impl_->build.target;
}
double CompiledKernel::compile_ms() const {
  return impl_->build.compiled.compile_ms;
}
int CompiledKernel::registers() const {
  return impl_->registers;
}

}  // namespace sparsegen
