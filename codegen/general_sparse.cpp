// GeneralSparse emitter. The CUDA it emits, for schedule (Rows:r, Row, Nnz:z) (CSR-vector) with
// fp16 values, row-major B and C, N = 32, 2 columns per thread, 8-lane groups:
//
//   #include "sg_dtype.cuh"  ...
//   using T = __half;
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_general(
//       const T* __restrict__ values, const int* __restrict__ col_idx, const T* __restrict__ B,
//       T* __restrict__ C, float alpha, float beta, const int* __restrict__ thread_nz_begin) {
//     const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
//     const int group = lane / 8, glane = lane % 8;
//     const int bt = blockIdx.x;
//     for (int pass = 0; pass < 2; ++pass) {                  // block_cols / warp_cols passes
//       const int col0 = blockIdx.y * 32 + pass * 16 + glane * 2;
//       const int bc0 = (4 * (bt)), bc1 = (4 * (bt + 1));     // block.child_begin, compressed
//       for (int wt = bc0 + warp; wt < bc1; wt += 4) {        // warp tasks, round-robin
//         float acc[2] = {};
//         const int wc0 = ..., wc1 = ...;                     // warp.child_begin
//         for (int tt = wc0 + group; tt < wc1; tt += 4) {     // thread tasks, round-robin
//           for (int p = thread_nz_begin[tt]; p < thread_nz_begin[tt + 1]; p += VEC) {
//             ... sg::load_vec_f32<VEC, T>(values + p, a); sg::load_vec_i32<VEC>(col_idx + p, k);
//             ... acc[i] += a[j] * sg::load_f32<T>(B + k[j] * 32 + col0 + i);
//           }
//         }
//         acc[i] = sg::warp_reduce_sum_strided<4, 8>(acc[i]);  // warp Total over the groups
//         if (group == 0) sg::store_axpby<T>(C + perm(row) * 32 + col0 + i, acc[i], alpha, beta);
//       }
//     }
//   }
//
// Other shapes: (Row, Nnz, Nnz) accumulates across warp rounds and ends with
// sg::block_reduce_sum<NT, GT> (block Total); (Rows, Rows, Row|Rows) has each thread-group sum
// and store whole rows (no cross-lane reduction); (Nnz, Nnz, Nnz) runs one round per level and
// finishes rows with atomic adds (OutputMode::Atomic): warp Total -> shuffle sum, warp Bitmap ->
// sg::bitmap_reduce_sum over the stored bitmap, thread Bitmap -> the thread walks its row-start
// bits, adds finished segments, and hands its open segment to sg::segment_reduce_sum (warp
// Segment). Block-level Bitmap/Segment merging is done by those atomic adds (the rows that span
// warps meet in memory). The atomic adds are always fp32:
//
//   fp32:  sparsegen_general_scale_c(C, beta)       prologue: C = beta * C (not read if beta == 0)
//          sparsegen_general(values, col_idx, B, C, alpha, beta, ...)
//            ... sg::grid_dependency_wait();           // launched while the prologue runs
//            ... sg::atomic_add_f32<float>(C + ..., alpha * acc[i]);
//   fp16 / bf16 (a 16-bit atomicAdd would round every partial sum to the dtype and overflow where
//   partial sums exceed its range although the row's result does not), with an fp32 workspace ws
//   of M*N floats in C's layout that the caller allocates (KernelSignature::workspace_bytes):
//          sparsegen_general_init_ws(ws, C, beta)   prologue: sg::init_workspace<T>: ws = beta * C
//          sparsegen_general(values, col_idx, B, ws, alpha, beta, ...)
//            ... sg::atomic_add_f32<float>(ws + ..., alpha * acc[i]);
//          sparsegen_general_store_ws(C, ws)        epilogue: sg::store_f32<T>(C + i, ws[i]), the
//                                                   one rounding to the dtype
#include "codegen/general_sparse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "ir/diagnostics.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

// Atomic kernels up to this many stored nonzeros start while their beta·C prologue runs and wait
// on it (griddepcontrol) before the first add: the overlap saves a microsecond or two, which only
// small problems notice. Larger ones launch after the prologue and carry no wait.
constexpr int64_t kProgrammaticMaxNnz = int64_t{1} << 20;

using tmpl::f32;
using tmpl::i32;
using tmpl::IntArg;
using tmpl::targs;
using tmpl::TypeArg;
using tmpl::u32;

std::string cuda_type(DType t) {
  switch (t) {
    case DType::F32:
      return "float";
    case DType::F16:
      return "__half";
    case DType::BF16:
      return "__nv_bfloat16";
    default:
      break;
  }
  throw UserError(
      fmt::format("codegen: value dtype {} is not supported by the GeneralSparse "
                  "emitter (fp32, fp16, bf16)",
                  to_string(t)));
}

std::string ident(std::string_view name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '_';
  return s;
}

class GeneralSparseEmitter : public Emitter {
 public:
  GeneralSparseEmitter(const Problem& p, const GeneralSchedule& s, const PackedFormat& f,
                       const EmitOptions& opt)
      : p_(p), s_(s), f_(f), opt_(opt) {}

  GeneratedKernel run() {
    check_sizes();
    G_ = s_.groups_per_warp();
    GT_ = s_.group_threads;
    TC_ = s_.thread_cols;
    W_ = s_.warps_per_block;
    NT_ = s_.threads_per_block();
    atomic_ = f_.output == OutputMode::Atomic;
    programmatic_ = atomic_ && f_.stats.nnz_padded <= kProgrammaticMaxNnz;
    workspace_ = atomic_ && p_.dtype != DType::F32;
    for (const char* n : {"values", "col_idx", "B", "C", "ws", "alpha", "beta", "lane", "warp",
                          "group", "glane", "bt", "tid", "T"})
      reserve(n);
    decl(fmt::format("// sparsegen GeneralSparse kernel\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl("using T = " + cuda_type(p_.dtype) + ";");

    // The body comes first so that the parameter list knows every table the body used.
    emit_kernel_body();
    if (atomic_) emit_prologue();
    if (workspace_) emit_epilogue();
    GeneratedKernel k;
    k.source = assemble();
    k.headers = header_sources();
    k.signature = take_signature();  // last: moves the tables (a graph's are hundreds of MB)
    return k;
  }

 private:
  // ---- sizes ------------------------------------------------------------------------------
  void check_sizes() const {
    const int64_t limit = INT_MAX / 2;
    if (f_.stats.nnz_padded > limit || f_.stats.rows > limit || p_.m > limit || p_.k > limit ||
        p_.n > limit)
      throw UserError(
          fmt::format("codegen: {} with {} packed nonzeros exceeds the kernel's 32-bit positions",
                      to_string(p_), f_.stats.nnz_padded));
  }

  // ---- offsets: arithmetic for compressed arrays, a table parameter otherwise --------------
  std::string off(const OffsetArray& a, const std::string& idx) {
    const OffsetCompression& c = a.compression;
    const bool simple = idx.find_first_of(" +-*/%?:") == std::string::npos;
    const std::string i = simple ? idx : "(" + idx + ")";
    switch (c.form) {
      case OffsetForm::Linear:
        if (c.stride == 0) return fmt::format("{}", c.base);
        if (c.stride == 1 && c.base == 0) return i;
        return fmt::format("({}{}{})", c.stride == 1 ? "" : std::to_string(c.stride) + " * ", i,
                           c.base == 0 ? "" : " + " + std::to_string(c.base));
      case OffsetForm::Branch: {
        std::string e = "(";
        for (size_t j = 0; j + 1 < c.breaks.size(); ++j)
          e += fmt::format("{} < {} ? {} : ", i, c.breaks[j + 1], c.values[j]);
        return e + std::to_string(c.values.back()) + ")";
      }
      case OffsetForm::Cyclic: {
        const std::string t = ident(a.name) + "_cyc";
        if (cyclic_.insert(t).second) {
          std::string init;
          for (int64_t v : c.values) init += (init.empty() ? "" : ", ") + std::to_string(v);
          decl(fmt::format("__device__ const int {}[{}] = {{{}}};", t, c.values.size(), init));
        }
        return fmt::format("({}[{} % {}] + {} / {} * {})", t, i, c.period, i, c.period, c.stride);
      }
      case OffsetForm::Quasilinear: {
        const std::string t =
            table_param(a, c.residual_bytes == 1 ? ParamKind::I8Table : ParamKind::I16Table,
                        "_resid", c.values);
        return fmt::format("({}{}{} + {}[{}])",
                           c.stride == 1 ? "" : std::to_string(c.stride) + " * ", i,
                           c.base == 0 ? "" : " + " + std::to_string(c.base), t, idx);
      }
      case OffsetForm::Table:
        break;
    }
    return table_param(a, ParamKind::I32Table, "", a.values) + "[" + idx + "]";
  }

  std::string table_param(const OffsetArray& a, ParamKind kind, const std::string& suffix,
                          const std::vector<int64_t>& data) {
    const std::string name = ident(a.name) + suffix;
    for (const auto& prm : tables_)
      if (prm.name == name) return name;
    tables_.push_back({name, kind, a.name, data});
    reserve(name);
    return name;
  }

  std::string bitmap_param(const std::string& name, const std::string& source,
                           const std::vector<uint32_t>& bits) {
    for (const auto& prm : tables_)
      if (prm.name == name) return name;
    tables_.push_back(
        {name, ParamKind::U32Table, source, std::vector<int64_t>(bits.begin(), bits.end())});
    reserve(name);
    return name;
  }

  const LevelArrays& lv(Level l) const { return f_.at(l); }
  LevelSplit split(Level l) const { return s_.at(l); }
  ReductionKind red(Level l) const { return s_.reduction(l); }

  // ---- dense operands -----------------------------------------------------------------------
  std::string b_ptr(const std::string& k, const std::string& col) const {
    return p_.b_layout == Layout::RowMajor
               ? fmt::format("B + static_cast<long long>({}) * {} + {}", k, p_.n, col)
               : fmt::format("B + static_cast<long long>({}) * {} + {}", col, p_.k, k);
  }
  // Element (row, col) of C, or of the fp32 workspace (same layout) when base == "ws".
  std::string c_ptr(const std::string& row, const std::string& col,
                    const std::string& base = "C") const {
    return p_.c_layout == Layout::RowMajor
               ? fmt::format("{} + static_cast<long long>({}) * {} + {}", base, row, p_.n, col)
               : fmt::format("{} + static_cast<long long>({}) * {} + {}", base, col, p_.m, row);
  }
  // Row-major B with N a multiple of the thread's columns: one vector load per nonzero.
  bool b_vector() const { return p_.b_layout == Layout::RowMajor && TC_ > 1 && p_.n % TC_ == 0; }

  // acc[i] += a * B[k][col0 + i] for the thread's columns.
  void emit_fma(const std::string& a, const std::string& k) {
    if (b_vector()) {
      auto g = block(fmt::format("if ({} < {})", col0_, p_.n));
      call_stmt(tmpl::fma_vec_f32, targs(IntArg{TC_}, TypeArg{"T"}), tmpl::cptr_t(b_ptr(k, col0_)),
                f32(a), tmpl::ptr_f32(acc_));
      return;
    }
    for (int i = 0; i < TC_; ++i) {
      const std::string col = fmt::format("{} + {}", col0_, i);
      const auto b = call(tmpl::load_f32, targs(TypeArg{"T"}), tmpl::cptr_t(b_ptr(k, col)));
      line(fmt::format("if ({} < {}) {}[{}] = fmaf({}, {}, {}[{}]);", col, p_.n, acc_, i, a, b.text,
                       acc_, i));
    }
  }

  // Finishes packed row `row` with the thread's accumulators (store, or atomic add).
  // Sums each run of groups marked in `heads` (bit g: group g starts a run) and lets the run's
  // head group finish the row: the common tail of warp Bitmap and warp Segment.
  void emit_warp_run_sums(const std::string& heads) {
    for (int i = 0; i < TC_; ++i)
      line(fmt::format("{}[{}] = {};", acc_, i,
                       call(tmpl::bitmap_reduce_sum, targs(IntArg{GT_}),
                            f32(fmt::format("{}[{}]", acc_, i)), u32(heads), i32("lane"))
                           .text));
    emit_finish(
        "row",
        "has_task && " + call(tmpl::is_run_head, targs(IntArg{GT_}), u32(heads), i32("lane")).text);
  }

  void emit_finish(const std::string& row, const std::string& cond) {
    auto g = cond.empty() ? block() : block("if (" + cond + ")");
    // Atomic mode: the prologue's beta·C must be complete before the first add (this kernel may
    // start while the prologue still runs: LaunchShape::programmatic_wait).
    if (programmatic_) call_stmt(tmpl::grid_dependency_wait);
    const std::string orow = fresh("orow");
    line(fmt::format("const int {} = {};", orow, off(f_.perm, row)));
    for (int i = 0; i < TC_; ++i) {
      const std::string col = fmt::format("{} + {}", col0_, i);
      auto gi = block(fmt::format("if ({} < {})", col, p_.n));
      const std::string v = fmt::format("{}[{}]", acc_, i);
      if (atomic_) {
        // Always an fp32 atomic: into C for fp32, into the fp32 workspace for 16-bit dtypes.
        call_stmt(tmpl::atomic_add_f32, targs(TypeArg{"float"}),
                  tmpl::ptr_t(c_ptr(orow, col, workspace_ ? "ws" : "C")), f32("alpha * " + v));
      } else {
        call_stmt(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t(c_ptr(orow, col)), f32(v),
                  f32("alpha"), f32("beta"));
      }
    }
  }

  void emit_zero_acc() {
    line(fmt::format("for (int i = 0; i < {}; ++i) {}[i] = 0.0f;", TC_, acc_));
  }

  // ---- the nonzero loop of one chunk [nz0, nz1) ---------------------------------------------
  // Row-start handling for thread Bitmap: `row` advances at each row start after nz0 and the
  // finished segment is added to C.
  void emit_nonzeros(const std::string& nz0, const std::string& nz1, bool bitmap_walk,
                     const std::string& row) {
    int v = s_.vector_width;
    const std::string p = fresh("p");
    auto loop = block(fmt::format("for (int {} = {}; {} < {}; {} += {})", p, nz0, p, nz1, p, v));
    // Storage position of logical position p (interleave stores a warp round vector by vector).
    std::string sp = p;
    if (s_.interleave) {
      const int64_t zt = split(Level::Thread).amount;
      const int64_t round = G_ * zt;
      sp = fresh("sp");
      line(fmt::format("const int {} = {} / {} * {} + (({} - {}) / {} * {} + group) * {};", sp, p,
                       round, round, p, nz0, v, G_, v));
    }
    const std::string a = fresh("a"), k = fresh("k");
    line(fmt::format("float {}[{}];", a, v));
    line(fmt::format("int {}[{}];", k, v));
    if (v == 1) {
      line(fmt::format(
          "{}[0] = {};", a,
          call(tmpl::load_f32, targs(TypeArg{"T"}), tmpl::cptr_t("values + " + sp)).text));
      line(fmt::format("{}[0] = col_idx[{}];", k, sp));
    } else {
      call_stmt(tmpl::load_vec_f32, targs(IntArg{v}, TypeArg{"T"}), tmpl::cptr_t("values + " + sp),
                tmpl::ptr_f32(a));
      call_stmt(tmpl::load_vec_i32, targs(IntArg{v}), tmpl::cptr_i32("col_idx + " + sp),
                tmpl::ptr_i32(k));
    }
    line("#pragma unroll");
    auto inner = block(fmt::format("for (int j = 0; j < {}; ++j)", v));
    if (bitmap_walk) {
      const std::string bits = bitmap_param("row_start_bits", "row_start_bits", f_.row_start_bits);
      const std::string q = fresh("q");
      line(fmt::format("const int {} = {} + j;", q, p));
      auto g = block(fmt::format("if ({} != {} && (({}[{} >> 5] >> ({} & 31)) & 1u) != 0u)", q, nz0,
                                 bits, q, q));
      emit_finish(row, "");
      emit_zero_acc();
      line(fmt::format("++{};", row));
    }
    emit_fma(fmt::format("{}[j]", a), fmt::format("{}[j]", k));
  }

  // ---- levels -------------------------------------------------------------------------------
  // Thread tasks of warp task `wt` (children wc0..wc1 dealt round-robin over the G groups).
  void emit_thread_level(const std::string& wc0, const std::string& wc1) {
    const LevelSplit ts = split(Level::Thread);
    const std::string tt = fresh("tt");
    const bool one_round = split(Level::Warp).kind == WorkSplit::Nnz;
    const bool walk = red(Level::Thread) == ReductionKind::Bitmap;
    if (one_round && (walk || red(Level::Warp) == ReductionKind::Bitmap)) {
      // One round: group g takes child wc0 + g. The segment / bitmap reduction needs every lane,
      // so the task test is a condition, not a loop.
      line(fmt::format("const int {} = {} + group;", tt, wc0));
      line(fmt::format("has_task = {} < {};", tt, wc1));
      line(fmt::format("row = has_task ? {} : -1;", off(lv(Level::Thread).row_begin, tt)));
      auto g = block("if (has_task)");
      emit_nonzeros(off(lv(Level::Thread).nz_begin, tt),
                    off(lv(Level::Thread).nz_begin, tt + " + 1"), walk, "row");
      return;
    }
    auto loop = block(
        fmt::format("for (int {} = {} + group; {} < {}; {} += {})", tt, wc0, tt, wc1, tt, G_));
    if (ts.kind == WorkSplit::Nnz) {
      emit_nonzeros(off(lv(Level::Thread).nz_begin, tt),
                    off(lv(Level::Thread).nz_begin, tt + " + 1"), false, "");
      if (red(Level::Warp) == ReductionKind::None)
        emit_finish(off(lv(Level::Thread).row_begin, tt), "");
      return;
    }
    // Whole rows: the group sums and stores each row of its task.
    const std::string r = fresh("r");
    auto rows = block(fmt::format("for (int {} = {}; {} < {}; ++{})", r,
                                  off(lv(Level::Thread).row_begin, tt), r,
                                  off(lv(Level::Thread).row_begin, tt + " + 1"), r));
    line(fmt::format("float {}[{}] = {{}};", acc_, TC_));
    emit_nonzeros(off(f_.row_ptr, r), off(f_.row_ptr, r + " + 1"), false, "");
    emit_finish(r, "");
  }

  // Warp tasks of block task bt (children bc0..bc1 dealt round-robin over the W warps).
  void emit_warp_level(const std::string& bc0, const std::string& bc1) {
    const bool block_total = red(Level::Block) == ReductionKind::Total;
    const bool whole_rows_in_thread = split(Level::Thread).kind != WorkSplit::Nnz;
    const std::string wt = fresh("wt");
    auto loop =
        block(fmt::format("for (int {} = {} + warp; {} < {}; {} += {})", wt, bc0, wt, bc1, wt, W_));
    const std::string wc0 = fresh("wc0"), wc1 = fresh("wc1");
    line(fmt::format("const int {} = {};", wc0, off(lv(Level::Warp).child_begin, wt)));
    line(fmt::format("const int {} = {};", wc1, off(lv(Level::Warp).child_begin, wt + " + 1")));
    if (whole_rows_in_thread) {
      emit_thread_level(wc0, wc1);
      return;
    }
    if (!block_total) line(fmt::format("float {}[{}] = {{}};", acc_, TC_));
    const ReductionKind rw = red(Level::Warp);
    if (rw == ReductionKind::Bitmap || rw == ReductionKind::Segment) {
      line("bool has_task = false;");
      line("int row = -1;");
    }
    emit_thread_level(wc0, wc1);
    if (block_total) return;  // handed up: the block reduction sums every thread's partials
    switch (rw) {
      case ReductionKind::Total: {
        comment("warp Total: sum the groups' partials column by column");
        for (int i = 0; i < TC_; ++i)
          line(fmt::format("{}[{}] = {};", acc_, i,
                           call(tmpl::warp_reduce_sum_strided, targs(IntArg{G_}, IntArg{GT_}),
                                f32(fmt::format("{}[{}]", acc_, i)))
                               .text));
        emit_finish(off(lv(Level::Warp).row_begin, wt), "group == 0");
        break;
      }
      case ReductionKind::Bitmap: {
        comment("warp Bitmap: segmented sum over the groups, runs marked by the stored bitmap");
        const std::string bm = bitmap_param("warp_bitmap", "warp.bitmap", lv(Level::Warp).bitmap);
        const std::string heads = fresh("heads");
        line(fmt::format("const unsigned {} = {}[{}];", heads, bm, wt));
        emit_warp_run_sums(heads);
        break;
      }
      case ReductionKind::Segment: {
        comment("warp Segment: merge the groups' open segments that carry the same row");
        const std::string heads = fresh("heads");
        line(fmt::format(
            "const unsigned {} = {};", heads,
            call(tmpl::segment_heads, targs(IntArg{GT_}), i32("row"), i32("lane")).text));
        emit_warp_run_sums(heads);
        break;
      }
      case ReductionKind::None:
        break;
    }
  }

  void emit_block_level() {
    const bool block_total = red(Level::Block) == ReductionKind::Total;
    const std::string bc0 = fresh("bc0"), bc1 = fresh("bc1");
    line(fmt::format("const int {} = {};", bc0, off(lv(Level::Block).child_begin, "bt")));
    line(fmt::format("const int {} = {};", bc1, off(lv(Level::Block).child_begin, "bt + 1")));
    if (block_total) line(fmt::format("float {}[{}] = {{}};", acc_, TC_));
    emit_warp_level(bc0, bc1);
    if (!block_total) return;
    comment("block Total: every thread's partials belong to the block's one row");
    for (int i = 0; i < TC_; ++i)
      line(fmt::format(
          "{}[{}] = {};", acc_, i,
          call(tmpl::block_reduce_sum, targs(IntArg{NT_}, IntArg{GT_}),
               f32(fmt::format("{}[{}]", acc_, i)), tmpl::ptr_f32("red_smem"), i32("tid"))
              .text));
    // Threads tid < GT are group 0 of warp 0: their glane is tid, so col0 is theirs.
    emit_finish(off(lv(Level::Block).row_begin, "bt"), "tid < " + std::to_string(GT_));
  }

  void emit_kernel_body() {
    const int passes = s_.block_cols / s_.warp_cols();
    line("const int tid = threadIdx.x;");
    line("const int lane = tid % 32;");
    line("const int warp = tid / 32;");
    line(fmt::format("const int group = lane / {};", GT_));
    line(fmt::format("const int glane = lane % {};", GT_));
    line("const int bt = blockIdx.x;");
    line("(void)warp; (void)group; (void)glane;");
    if (red(Level::Block) == ReductionKind::Total) {
      line(fmt::format("__shared__ float red_smem[{}];", NT_));
      shared_bytes_ = NT_ * 4;
    }
    const std::string pass = fresh("pass");
    auto loop = block(fmt::format("for (int {} = 0; {} < {}; ++{})", pass, pass, passes, pass));
    col0_ = fresh("col0");
    acc_ = fresh("acc");
    line(fmt::format("const int {} = blockIdx.y * {} + {} * {} + glane * {};", col0_, s_.block_cols,
                     pass, s_.warp_cols(), TC_));
    emit_block_level();
  }

  // ---- assembly -----------------------------------------------------------------------------
  static KernelParam c_param() { return {"C", ParamKind::C, "C", {}}; }
  static KernelParam ws_param() { return {"ws", ParamKind::Workspace, "workspace", {}}; }
  static KernelParam beta_param() { return {"beta", ParamKind::Beta, "beta", {}}; }

  // The parameters before the tables.
  std::vector<KernelParam> fixed_params() const {
    return {{"values", ParamKind::Values, "values", {}},
            {"col_idx", ParamKind::ColIdx, "col_idx", {}},
            {"B", ParamKind::B, "B", {}},
            workspace_ ? ws_param() : c_param(),
            {"alpha", ParamKind::Alpha, "alpha", {}},
            beta_param()};
  }

  static std::string param_decl(const KernelParam& prm) {
    switch (prm.kind) {
      case ParamKind::Values:
      case ParamKind::B:
        return "const T* __restrict__ " + prm.name;
      case ParamKind::C:
        return "T* __restrict__ " + prm.name;
      case ParamKind::ColIdx:
      case ParamKind::I32Table:
        return "const int* __restrict__ " + prm.name;
      case ParamKind::Alpha:
      case ParamKind::Beta:
        return "float " + prm.name;
      case ParamKind::I16Table:
        return "const short* __restrict__ " + prm.name;
      case ParamKind::I8Table:
        return "const signed char* __restrict__ " + prm.name;
      case ParamKind::U32Table:
        return "const unsigned* __restrict__ " + prm.name;
      case ParamKind::Workspace:
      case ParamKind::TokenScales:
        return "float* __restrict__ " + prm.name;
      case ParamKind::F32Table:
        return "const float* __restrict__ " + prm.name;
      case ParamKind::BWork:  // the family that transforms B declares its element type
        return "void* __restrict__ " + prm.name;
      case ParamKind::BTensorMap:
        return "const __grid_constant__ sg::TensorMap " + prm.name;
    }
    return "";
  }

  std::string prologue_name() const {
    return opt_.kernel_name + (workspace_ ? "_init_ws" : "_scale_c");
  }
  std::string epilogue_name() const { return opt_.kernel_name + "_store_ws"; }
  std::vector<KernelParam> prologue_params() const {
    if (workspace_) return {ws_param(), c_param(), beta_param()};
    return {c_param(), beta_param()};
  }
  std::vector<KernelParam> epilogue_params() const { return {c_param(), ws_param()}; }

  // Rows split across blocks are finished with atomic adds, so the output is initialised to
  // beta * C first: C itself for fp32, the fp32 workspace for 16-bit dtypes.
  void emit_prologue() {
    if (!workspace_) {
      elementwise_kernel(
          "// Prologue (launch first): C = beta * C; C is not read when beta == 0.",
          prologue_name(), "T* C, float beta", p_.m * p_.n,
          call(tmpl::scale_f32, targs(TypeArg{"T"}), tmpl::ptr_t("C + i"), f32("beta")).text);
      return;
    }
    elementwise_kernel(
        "// Prologue (launch first): ws = beta * C in fp32; C is not read when beta == 0.",
        prologue_name(), "float* ws, const T* C, float beta", p_.m * p_.n,
        call(tmpl::init_workspace, targs(TypeArg{"T"}), tmpl::ptr_f32("ws + i"),
             tmpl::cptr_t("C + i"), f32("beta"))
            .text);
  }

  // 16-bit dtypes: the workspace holds the finished fp32 sums; round them to T once.
  void emit_epilogue() {
    elementwise_kernel(
        "// Epilogue (launch last): C = ws, rounded once to T.", epilogue_name(),
        "T* C, const float* ws", p_.m * p_.n,
        call(tmpl::store_f32, targs(TypeArg{"T"}), tmpl::ptr_t("C + i"), f32("ws[i]")).text);
  }

  std::string assemble() {
    std::string head = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n", NT_,
                                   opt_.kernel_name);
    std::vector<const KernelParam*> ps;  // the tables by reference: no copy of their data
    const std::vector<KernelParam> fixed = fixed_params();
    for (const KernelParam& prm : fixed) ps.push_back(&prm);
    for (const KernelParam& prm : tables_) ps.push_back(&prm);
    for (size_t i = 0; i < ps.size(); ++i)
      head += "    " + param_decl(*ps[i]) + (i + 1 < ps.size() ? ",\n" : ") {\n");
    return kernel_source(head);
  }

  // The signature; moves the tables out of the emitter (call once, last).
  KernelSignature take_signature() {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = fixed_params();
    std::move(tables_.begin(), tables_.end(), std::back_inserter(sig.params));
    tables_.clear();
    sig.launch.grid_x = f_.stats.block_tasks;
    sig.launch.grid_y = f_.stats.col_tiles;
    sig.launch.block_threads = NT_;
    sig.launch.shared_bytes = shared_bytes_;
    sig.launch.programmatic_wait = programmatic_;  // emit_finish waits before the first add
    const LaunchShape elementwise = elementwise_launch(p_.m * p_.n);
    if (atomic_) sig.prologue = {prologue_name(), prologue_params(), elementwise, false};
    if (workspace_) {
      sig.epilogue = {epilogue_name(), epilogue_params(), elementwise, false};
      sig.workspace_bytes = p_.m * p_.n * static_cast<int64_t>(sizeof(float));
    }
    return sig;
  }

  const Problem& p_;
  const GeneralSchedule& s_;
  const PackedFormat& f_;
  const EmitOptions& opt_;
  int G_ = 1, GT_ = 1, TC_ = 1, W_ = 1, NT_ = 32;
  bool atomic_ = false;
  // Launched programmatically after its prologue (atomic output, small problem): waits on the
  // prologue before the first add.
  bool programmatic_ = false;
  bool workspace_ = false;  // Atomic with a 16-bit dtype: fp32 workspace, prologue + epilogue
  int64_t shared_bytes_ = 0;
  std::string col0_, acc_;
  std::vector<KernelParam> tables_;
  std::set<std::string> cyclic_;
};

}  // namespace

GeneratedKernel emit_general_sparse(const Problem& problem, const Schedule& schedule,
                                    const PackedFormat& f, const EmitOptions& opt) {
  // The schedule's own accessor asserts its family.
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_general";
  GeneralSparseEmitter e(problem, schedule.as<GeneralSchedule>(), f, o);
  return e.run();
}

const CodegenFamily& general_codegen_family() {
  static const EmitFunction<GeneralSchedule, PackedFormat, emit_general_sparse> f;
  return f;
}

}  // namespace sparsegen::codegen
