#include "codegen/slide.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "codegen/emitter.h"
#include "codegen/template_types.h"
#include "ir/diagnostics.h"
#include "ir/slide_schedule.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

using tmpl::cptr_f32;
using tmpl::cptr_t;
using tmpl::cptr_u32;
using tmpl::f32;
using tmpl::i32;
using tmpl::IntArg;
using tmpl::ptr_f32;
using tmpl::ptr_t;
using tmpl::ptr_u32;
using tmpl::targs;
using tmpl::TypeArg;

constexpr int kLiftThreads = 128;  // measured best of 128 / 256 / 512 for the lift (H200)

// The templates' KIND (templates/sg_slide.cuh): 4 is e4m3 in the kernel form (ir/slide_schedule.h,
// SlideForm: on the fp16 mma.sp), 3 e4m3 in its own m16n8k64 form.
int kind_of(DType t, SlideForm form) {
  switch (t) {
    case DType::F16:
      return 0;
    case DType::BF16:
      return 1;
    case DType::I8:
      return 2;
    default:
      return form == SlideForm::Kernel ? 4 : 3;
  }
}

// The lift's staging plan: tokens per block, chunks and columns per staged segment, and the
// blocks that share a token's segments.
struct LiftPlan {
  int tokens = 1;      // TOK: tokens per block (1 for column-major B, 8 for row-major)
  int seg_chunks = 0;  // chunks per staged segment (>= chunks: all of K at once)
  int seg_cols = 0;    // staged columns per token (a multiple of 8)
  int64_t smem = 0;    // dynamic shared bytes: tokens x seg_cols values of T
  int64_t grid_y = 1;  // blocks per token group, each taking every grid_y-th segment
};

// Shared memory the lift may stage per block: all of K up to about 48k columns per token
// (column-major B; 6k for the 8 tokens of row-major B), segments beyond that.
constexpr int64_t kLiftSmemBudget = 96 * 1024;
// At decode-sized N the token groups alone are a few blocks, each walking all of K: K is then cut
// into segments of their own blocks until the grid has about this many (two per multiprocessor
// of an H100 / H200), each segment at least kLiftMinSegChunks chunks.
constexpr int64_t kLiftBlocks = 264;
constexpr int64_t kLiftMinSegChunks = 4;

LiftPlan lift_plan(const Problem& p, int pattern, int64_t chunks, SlideForm form) {
  const SlideMma m = slide_mma(p.dtype, form);
  const int64_t chunk = m.chunk, two_p = 2 * pattern, w = 4 * (pattern - 1);
  LiftPlan l;
  l.tokens = p.b_layout == Layout::RowMajor ? 8 : 1;
  // Columns a segment of c chunks stages, at most: whole groups at both ends, lo rounded
  // down to 8 for the 16-byte copies, the last piece rounded up.
  auto cols_for = [&](int64_t c) { return ((c * chunk + w - 1) / w + 2) * two_p + 16; };
  const int64_t per_token = kLiftSmemBudget / (2 * l.tokens);
  int64_t seg = chunks;
  if (cols_for(seg) > per_token)
    seg = std::max<int64_t>(1, ((per_token - 16) / two_p - 3) * w / chunk);
  const int64_t groups = slide_col_tiles(p) * 8 / l.tokens;
  if (groups < kLiftBlocks) {
    const int64_t per_group = (kLiftBlocks + groups - 1) / groups;
    seg = std::min(seg, std::max(kLiftMinSegChunks, (chunks + per_group - 1) / per_group));
  }
  l.grid_y = std::min<int64_t>((chunks + seg - 1) / seg, 65535);
  SG_ASSERT(cols_for(std::min<int64_t>(seg, chunks)) <= per_token, "slide lift: segment too wide");
  l.seg_chunks = static_cast<int>(seg);
  l.seg_cols = static_cast<int>((cols_for(std::min<int64_t>(seg, chunks)) + 7) / 8 * 8);
  l.smem = int64_t{l.tokens} * l.seg_cols * 2;
  return l;
}

}  // namespace

bool slide_vec_b(const Problem& p) {
  return p.b_layout == Layout::ColMajor && p.k % 8 == 0;
}

AuxKernel emit_slide_lift(Emitter& e, const Problem& p, int pattern, int64_t chunks,
                          LiftOrder order, const std::string& name) {
  const bool row_b = p.b_layout == Layout::RowMajor, quant = is_quantized(p.dtype);
  const bool plain = order == LiftOrder::Plain;
  // A plain lift feeds a library GEMM, which reads its own form of the type.
  const SlideForm form = plain ? SlideForm::Library : SlideForm::Kernel;
  const LiftPlan l = lift_plan(p, pattern, chunks, form);
  const auto c = e.call(tmpl::slide_lift,
                        targs(TypeArg{"T"}, IntArg{kind_of(p.dtype, form)}, IntArg{pattern},
                              IntArg{kLiftThreads}, IntArg{quant ? 1 : 0}, IntArg{l.tokens},
                              IntArg{slide_vec_b(p) ? 1 : 0}, IntArg{static_cast<int>(order)}),
                        cptr_t("B"), ptr_u32("bw"),
                        ptr_f32(quant ? "token_scales" : "static_cast<float*>(nullptr)"),
                        ptr_t("reinterpret_cast<T*>(sg_lift_smem)"), i32(std::to_string(p.k)),
                        i32(std::to_string(p.n)), i32(row_b ? std::to_string(p.n) : "1"),
                        i32(row_b ? "1" : std::to_string(p.k)), i32(std::to_string(chunks)),
                        i32(std::to_string(slide_col_tiles(p))), i32(std::to_string(l.seg_chunks)),
                        i32(std::to_string(l.seg_cols)));
  e.decl(fmt::format(
      "// b_transform: B lifted into the sliding windows{}, {}; {} token(s) per block, {}\n"
      "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
      "    const T* __restrict__ B,\n    unsigned* __restrict__ bw{}) {{\n"
      "  extern __shared__ __align__(16) unsigned char sg_lift_smem[];\n  {};\n}}",
      quant ? " and quantized per token" : "",
      plain                           ? "lifted K x N column-major"
      : order == LiftOrder::Fragments ? "in mma.sp B fragment order"
                                      : "in wgmma.sp K-major core matrices",
      l.tokens,
      l.seg_chunks >= chunks
          ? "all of K staged at once"
          : fmt::format("{} chunks staged at a time, {} block(s) per token group", l.seg_chunks,
                        l.grid_y),
      kLiftThreads, name, quant ? ",\n    float* __restrict__ token_scales" : "", c.text));
  // One block per TOK tokens of the whole column tiles (tokens >= N get zeros, or no writes).
  AuxKernel t;
  t.name = name;
  t.params = {{"B", ParamKind::B, "B", {}}, {"bw", ParamKind::BWork, "lifted B", {}}};
  if (quant) t.params.push_back({"token_scales", ParamKind::TokenScales, "token scales", {}});
  t.launch.grid_x = slide_col_tiles(p) * 8 / l.tokens;
  t.launch.grid_y = l.grid_y;
  t.launch.dynamic_shared_bytes = l.smem;
  t.launch.block_threads = kLiftThreads;
  return t;
}

std::string emit_quant_scale(Emitter& e, const Problem& p, const char* acc,
                             const std::vector<float>& row_scales, const std::string& table,
                             const std::string& name, KernelSignature& sig) {
  constexpr int kThreads = 256;
  e.comment("C = alpha · acc · (row scale · token scale) + beta · C, one thread per element");
  e.call_stmt(tmpl::slide_lt_scale, targs(TypeArg{"T"}, TypeArg{acc}), cptr_t("acc"),
              cptr_f32("row_scales"), cptr_f32("token_scales"), ptr_t("C"), f32("alpha"),
              f32("beta"), i32(std::to_string(p.m)), i32(std::to_string(p.n)));
  sig.kernel_name = name;
  sig.params = {{"acc", ParamKind::Workspace, "the library's raw accumulators", {}},
                {"row_scales", ParamKind::F32Table, table, f32_table(row_scales)},
                {"token_scales", ParamKind::TokenScales, "token scales", {}},
                {"C", ParamKind::C, "C", {}},
                {"alpha", ParamKind::Alpha, "alpha", {}},
                {"beta", ParamKind::Beta, "beta", {}}};
  sig.launch.grid_x = (p.m * p.n + kThreads - 1) / kThreads;
  sig.launch.grid_y = 1;
  sig.launch.block_threads = kThreads;
  sig.workspace_bytes = p.m * p.n * 4;
  sig.token_scales = p.n;
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}) {}(const {}* __restrict__ acc,\n"
      "    const float* __restrict__ row_scales, const float* __restrict__ token_scales,\n"
      "    T* __restrict__ C, float alpha, float beta) {{\n",
      kThreads, name, acc);
}

namespace {

class SlideEmitter : public Emitter {
 public:
  SlideEmitter(const Problem& p, const SlideSchedule& s, const SlideTcFormat& f,
               const EmitOptions& opt)
      : p_(p), s_(s), f_(f), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_slide(p_, s_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: slide cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    SG_ASSERT(f_.rows == p_.m && f_.cols == p_.k && f_.n == s_.pattern && f_.dtype == p_.dtype &&
                  f_.form == SlideForm::Kernel && f_.group == slide_pack_group(s_) &&
                  f_.order == slide_pack_order(s_) && f_.chunks == slide_chunks(p_, s_),
              "emit_slide: the format does not match the problem and schedule");
    if (f_.stored_row_tiles() * f_.chunks * 32 * 4 > INT32_MAX || p_.m * p_.n > INT32_MAX ||
        p_.k * p_.n > INT32_MAX || slide_b_work_bytes(p_, s_.pattern) / 4 > INT32_MAX)
      throw UserError(
          fmt::format("codegen: {} exceeds the slide kernel's 32-bit offsets", to_string(p_)));
    quant_ = is_quantized(p_.dtype);
    for (const char* n : {"values", "B", "C", "alpha", "beta", "meta", "row_scales", "bw",
                          "token_scales", "ws", "T", "sg_smem"})
      reserve(n);
    decl(fmt::format("// sparsegen slide kernel\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl(fmt::format("using T = {};", p_.b_dtype() == DType::F16 ? "__half" : "__nv_bfloat16"));
    fused_ = s_.lift == SlideLift::Fused;
    if (!fused_)
      lift_ = emit_slide_lift(
          *this, p_, s_.pattern, f_.chunks,
          s_.split == SlideSplit::Group ? LiftOrder::Cores : LiftOrder::Fragments, lift_name());
    emit_main();
    GeneratedKernel k;
    k.source = assemble();
    k.headers = header_sources();
    k.signature = signature();
    k.arch_specific = s_.split == SlideSplit::Group;  // wgmma.sp exists on sm_90a only
    return k;
  }

 private:
  bool vec_b() const { return slide_vec_b(p_); }
  std::string lift_name() const { return opt_.kernel_name + "_lift"; }

  void emit_main() {
    line("extern __shared__ __align__(16) float sg_smem[];");
    if (s_.split == SlideSplit::K)
      comment(
          fmt::format("{} row tile(s) x {} column tile(s) per block; {} warps split the {} chunks",
                      s_.m_tiles, s_.n_tiles, s_.warps, f_.chunks));
    else if (s_.split == SlideSplit::Rows)
      comment(
          fmt::format("{} warps x {} row tile(s), {} column tile(s) per block; B staged in "
                      "shared memory, {} chunks",
                      s_.warps, s_.m_tiles, s_.n_tiles, f_.chunks));
    else
      comment(fmt::format(
          "{} warpgroup(s) x 64 rows, {} column tile(s) per block; {} staged by bulk copies, "
          "one wgmma.sp m64n{} per chunk and warpgroup, {} chunks",
          s_.warps / 4, s_.n_tiles, wg_fused() ? "A and metadata" : "A, metadata and B",
          8 * s_.n_tiles, f_.chunks));
    if (s_.producer > 0)
      comment(
          "warp-specialised: the last warp stages the steps; the warpgroups release each buffer "
          "through its empty barrier");
    if (wg_fused())
      comment(fmt::format(
          "lift fused: {} producer warps, one per buffer, copy A and stage B's original columns "
          "(raw-first windows), building the overlapping windows in shared memory",
          s_.producer_warps()));
    if (s_.cluster > 1)
      comment(fmt::format(
          "clusters of {} row blocks (launch attribute); {} into all of them by multicast",
          s_.cluster,
          s_.fused_wg() ? "each stages a slice of the tokens of each B box"
                        : "the first stages B"));
    if (s_.spread > 0)
      comment(fmt::format(
          "spread: {} blocks share {} row blocks x {} runs equally; the blocks on a row block "
          "store their partial sums in slots of ws and its last block adds them into C",
          s_.spread, (f_.row_tiles + s_.wg_tiles() - 1) / s_.wg_tiles(), f_.chunks / 3));
    else if (split_k_parts())
      comment(fmt::format(
          "grid.y = {} column block(s) x {} K parts of {} chunks; the parts add into ws and the "
          "last of each output tile rounds it into C",
          slide_col_blocks(p_, s_), s_.ksplit, slide_part_chunks(p_, s_)));
    const bool row_c = p_.c_layout == Layout::RowMajor;
    const auto targ =
        targs(TypeArg{"T"}, IntArg{kind_of(p_.dtype, SlideForm::Kernel)}, IntArg{s_.m_tiles},
              IntArg{s_.n_tiles}, IntArg{s_.unroll}, IntArg{s_.warps}, IntArg{quant_ ? 1 : 0},
              IntArg{s_.ksplit}, IntArg{s_.stages}, IntArg{s_.prefetch});
    // The K parts' workspace and its counters (one per output tile of a block), or none.
    const auto ws = ptr_f32(split_k_parts() ? "ws" : "static_cast<float*>(nullptr)");
    const auto counters =
        ptr_u32(split_k_parts() ? fmt::format("reinterpret_cast<unsigned*>(ws + {})",
                                              slide_counters_offset(p_, s_))
                                : "static_cast<unsigned*>(nullptr)");
    const auto col_blocks = i32(std::to_string(slide_col_blocks(p_, s_)));
    const auto args = std::make_tuple(
        cptr_u32("values"), cptr_u32("meta"),
        cptr_u32(wg_fused() ? "static_cast<const unsigned*>(nullptr)" : "bw"), ptr_t("C"),
        cptr_f32(quant_ ? "row_scales" : "static_cast<const float*>(nullptr)"),
        cptr_f32(quant_ ? "token_scales" : "static_cast<const float*>(nullptr)"),
        ptr_f32("sg_smem"), f32("alpha"), f32("beta"), i32(std::to_string(p_.m)),
        i32(std::to_string(p_.n)), i32(std::to_string(f_.row_tiles)),
        i32(std::to_string(slide_col_tiles(p_))), i32(std::to_string(f_.chunks)),
        i32(row_c ? std::to_string(p_.n) : "1"), i32(row_c ? "1" : std::to_string(p_.m)), ws,
        counters, col_blocks);
    if (fused_ && !wg_fused()) {
      const bool row_b = p_.b_layout == Layout::RowMajor;
      call_stmt(tmpl::slide_spmm_fused,
                targs(TypeArg{"T"}, IntArg{kind_of(p_.dtype, SlideForm::Kernel)},
                      IntArg{s_.pattern}, IntArg{s_.m_tiles}, IntArg{s_.n_tiles}, IntArg{s_.unroll},
                      IntArg{s_.warps}, IntArg{s_.ksplit}, IntArg{s_.stages}),
                cptr_u32("values"), cptr_u32("meta"), cptr_t("B"), ptr_t("C"), ptr_f32("sg_smem"),
                f32("alpha"), f32("beta"), i32(std::to_string(p_.m)), i32(std::to_string(p_.n)),
                i32(std::to_string(p_.k)), i32(row_b ? std::to_string(p_.n) : "1"),
                i32(row_b ? "1" : std::to_string(p_.k)), i32(std::to_string(f_.row_tiles)),
                i32(std::to_string(slide_col_tiles(p_))), i32(std::to_string(f_.chunks)),
                i32(row_c ? std::to_string(p_.n) : "1"), i32(row_c ? "1" : std::to_string(p_.m)),
                ws, counters, col_blocks);
      return;
    }
    if (s_.split == SlideSplit::Group) {
      // No mt (one row tile per warp) and no prefetch; U counts chunks, with lift=fused whole
      // runs; lift=fused reads the column-major B itself.
      const auto targ_wg =
          targs(TypeArg{"T"}, IntArg{kind_of(p_.dtype, SlideForm::Kernel)}, IntArg{s_.n_tiles},
                IntArg{slide_step_chunks(s_)}, IntArg{s_.warps}, IntArg{quant_ ? 1 : 0},
                IntArg{s_.ksplit}, IntArg{s_.stages}, IntArg{s_.cluster}, IntArg{s_.producer},
                IntArg{wg_fused() ? 1 : 0}, IntArg{s_.pattern}, IntArg{s_.spread > 0 ? 1 : 0},
                IntArg{s_.wg_tiles()});
      const auto args_wg = std::tuple_cat(
          args, std::make_tuple(tmpl::cptr_tmap(
                    wg_fused() ? "&b_map" : "static_cast<const sg::TensorMap*>(nullptr)")));
      std::apply([&](const auto&... a) { call_stmt(tmpl::slide_spmm_wg, targ_wg, a...); }, args_wg);
      return;
    }
    std::apply(
        [&](const auto&... a) {
          if (s_.split == SlideSplit::K)
            call_stmt(tmpl::slide_spmm, targ, a...);
          else
            call_stmt(tmpl::slide_spmm_rows, targ, a...);
        },
        args);
  }

  std::string assemble() const {
    return kernel_source(fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const unsigned* __restrict__ values,\n    T* __restrict__ C,\n    float alpha,\n"
        "    float beta,\n    const unsigned* __restrict__ meta,\n{}"
        "    {}{}{}) {{\n",
        s_.threads_per_block(), opt_.kernel_name,
        quant_ ? "    const float* __restrict__ row_scales,\n" : "",
        wg_fused() ? "const __grid_constant__ sg::TensorMap b_map"
        : fused_   ? "const T* __restrict__ B"
                   : "const unsigned* __restrict__ bw",
        quant_ ? ",\n    const float* __restrict__ token_scales" : "",
        split_k_parts() ? ",\n    float* __restrict__ ws" : ""));
  }

  // K parts, or spread: partial sums meet in an fp32 workspace.
  bool split_k_parts() const { return s_.ksplit > 1 || s_.spread > 0; }
  // split=wg with lift=fused: its producer warps stage B from the original columns.
  bool wg_fused() const { return s_.fused_wg(); }

  KernelSignature signature() const {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    std::vector<int64_t> meta(f_.meta.begin(), f_.meta.end());
    sig.params = {{"values", ParamKind::Values, "slide.values", {}},
                  {"C", ParamKind::C, "C", {}},
                  {"alpha", ParamKind::Alpha, "alpha", {}},
                  {"beta", ParamKind::Beta, "beta", {}},
                  {"meta", ParamKind::U32Table, "slide.meta", std::move(meta)}};
    if (quant_) {
      sig.params.push_back(
          {"row_scales", ParamKind::F32Table, "slide.row_scales", f32_table(f_.row_scales)});
    }
    if (wg_fused()) {
      // B's original columns, copied per run by TMA: boxes of 64 columns x the block's tokens,
      // in the 128-byte swizzle wgmma.sp reads (column-major B: a token's K elements per row).
      TensorMapShape m;
      m.inner = p_.k;
      m.outer = p_.n;
      m.row_elems = p_.k;
      m.box_inner = 64;
      m.box_outer = 8 * s_.n_tiles / s_.cluster;  // clusters: each block's slice of the tokens
      m.elem_bytes = 2;
      m.swizzle_bytes = 128;
      sig.params.push_back({"b_map", ParamKind::BTensorMap, "B", m.to_data()});
    } else if (fused_) {
      sig.params.push_back({"B", ParamKind::B, "B", {}});
    } else {
      sig.params.push_back({"bw", ParamKind::BWork, "lifted B", {}});
    }
    if (quant_) sig.params.push_back({"token_scales", ParamKind::TokenScales, "token scales", {}});
    sig.launch.grid_x = slide_grid_x(p_, s_);
    sig.launch.grid_y = slide_grid_y(p_, s_);
    sig.launch.block_threads = s_.threads_per_block();
    sig.launch.dynamic_shared_bytes = slide_shared_bytes(p_, s_);
    sig.launch.cluster_x = s_.cluster;
    // After the lift, the kernel may start early: it waits before its first read of bw.
    sig.launch.programmatic_wait = !fused_;
    // split=wg with lift=fused: B's tensor map needs a 16-byte aligned base.
    sig.b_alignment = wg_fused() ? 16 : fused_ ? 2 : quant_ && vec_b() ? 16 : 4;
    sig.b_work_bytes = slide_b_work_bytes(p_, s_);
    if (quant_) sig.token_scales = p_.n;
    if (split_k_parts()) {
      sig.params.push_back({"ws", ParamKind::Workspace, "workspace", {}});
      // M·N fp32 sums, then a counter per output tile (slide_split_finish); zero between runs.
      sig.workspace_bytes = slide_workspace_bytes(p_, s_);
      sig.workspace_zeroed = true;
    }
    if (fused_) return sig;
    sig.b_transform = lift_;
    return sig;
  }

  const Problem& p_;
  const SlideSchedule& s_;
  const SlideTcFormat& f_;
  const EmitOptions& opt_;
  bool quant_ = false;
  bool fused_ = false;
  AuxKernel lift_;
};

}  // namespace

GeneratedKernel emit_slide(const Problem& problem, const Schedule& schedule, const SlideTcFormat& f,
                           const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_slide";
  SlideEmitter e(problem, schedule.as<SlideSchedule>(), f, o);
  return e.run();
}

const CodegenFamily& slide_codegen_family() {
  static const EmitFunction<SlideSchedule, SlideTcFormat, emit_slide> f;
  return f;
}

}  // namespace sparsegen::codegen
