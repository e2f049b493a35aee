#include "codegen/kernel_signature.h"

#include <fmt/format.h>

#include <cstring>

#include "ir/diagnostics.h"

namespace sparsegen::codegen {

std::string_view to_string(ParamKind k) {
  switch (k) {
    case ParamKind::Values:
      return "values";
    case ParamKind::ColIdx:
      return "col_idx";
    case ParamKind::B:
      return "B";
    case ParamKind::C:
      return "C";
    case ParamKind::Alpha:
      return "alpha";
    case ParamKind::Beta:
      return "beta";
    case ParamKind::I32Table:
      return "i32[]";
    case ParamKind::I16Table:
      return "i16[]";
    case ParamKind::I8Table:
      return "i8[]";
    case ParamKind::U32Table:
      return "u32[]";
    case ParamKind::Workspace:
      return "f32 ws";
    case ParamKind::BWork:
      return "B work";
    case ParamKind::TokenScales:
      return "f32 token scales";
    case ParamKind::F32Table:
      return "f32[]";
    case ParamKind::BTensorMap:
      return "B tensor map";
  }
  return "?";
}

std::vector<int64_t> TensorMapShape::to_data() const {
  return {inner, outer, row_elems, box_inner, box_outer, elem_bytes, swizzle_bytes};
}

TensorMapShape TensorMapShape::from_data(const std::vector<int64_t>& d) {
  SG_ASSERT(d.size() == 7, "a B tensor map parameter holds 7 shape values");
  TensorMapShape s;
  s.inner = d[0];
  s.outer = d[1];
  s.row_elems = d[2];
  s.box_inner = d[3];
  s.box_outer = d[4];
  s.elem_bytes = d[5];
  s.swizzle_bytes = d[6];
  return s;
}

namespace {

std::string describe_aux(const char* what, const AuxKernel& k) {
  if (!k.present()) return "";
  std::string names;
  for (const KernelParam& p : k.params) names += (names.empty() ? "" : ", ") + p.name;
  return fmt::format("{} {}({}) grid=({},{}) block={}{}{}\n", what, k.name, names, k.launch.grid_x,
                     k.launch.grid_y, k.launch.block_threads,
                     k.launch.programmatic_wait ? " programmatic-wait" : "",
                     k.beta_only ? " (beta != 0 only)" : "");
}

std::string describe_gemm(const LibraryGemm& g) {
  return fmt::format("library gemm {} {}x{}x{}{}{}{}\n", g.name, g.m, g.n, g.k,
                     g.operands == GemmOperands::Int8  ? " int8 -> int32"
                     : g.operands == GemmOperands::Fp8 ? " fp8_e4m3 -> fp32"
                                                       : "",
                     g.relu_mask_ld != 0
                         ? fmt::format(" relu + bit-mask ({} bits a row)", g.relu_mask_ld)
                     : g.relu ? std::string(" relu")
                              : std::string(),
                     g.beta_in_workspace ? " (beta != 0: into the fp32 workspace)" : "");
}

std::string describe_spmm(const LibrarySpmm& m) {
  return fmt::format("library spmm {}x{}x{} nnz {} alg {} ({}-major B and C)\n", m.m, m.n, m.k,
                     m.nnz, m.algorithm, m.row_major ? "row" : "column");
}

std::string describe_sparse_gemm(const LibrarySparseGemm& g) {
  return fmt::format("library 2:4 gemm {}x{}x{} ({}) into {}\n", g.m, g.n, g.k,
                     g.choice.empty() ? "algorithm searched at load" : g.choice,
                     g.to_workspace ? "the workspace (raw accumulators)" : "C");
}

}  // namespace

std::vector<int64_t> f32_table(const std::vector<float>& v) {
  std::vector<int64_t> bits;
  bits.reserve(v.size());
  for (float x : v) {
    uint32_t u = 0;
    std::memcpy(&u, &x, 4);
    bits.push_back(u);
  }
  return bits;
}

bool is_table(ParamKind k) {
  return k == ParamKind::I32Table || k == ParamKind::I16Table || k == ParamKind::I8Table ||
         k == ParamKind::U32Table || k == ParamKind::F32Table;
}

KernelSignature KernelSignature::without_table_data() const {
  std::vector<KernelParam> light;
  light.reserve(params.size());
  for (const KernelParam& p : params)
    light.push_back({p.name, p.kind, p.source, is_table(p.kind) ? std::vector<int64_t>{} : p.data});
  return {kernel_name,     std::move(light), launch,           prologue,    epilogue,
          workspace_bytes, b_alignment,      workspace_zeroed, b_transform, b_work_bytes,
          token_scales,    gemms_before,     gemms_after,      spmms,       sparse_gemms};
}

std::string describe(const KernelSignature& sig) {
  std::string s = describe_aux("b_transform", sig.b_transform);
  if (sig.b_work_bytes > 0) s += fmt::format("B work {} bytes\n", sig.b_work_bytes);
  if (sig.token_scales > 0) s += fmt::format("token scales {} floats\n", sig.token_scales);
  for (const LibraryGemm& g : sig.gemms_before) s += describe_gemm(g);
  for (const LibrarySparseGemm& g : sig.sparse_gemms) s += describe_sparse_gemm(g);
  s += describe_aux("prologue", sig.prologue);
  if (sig.workspace_bytes > 0)
    s += fmt::format("workspace {} bytes (fp32 accumulation, C's layout)\n", sig.workspace_bytes);
  s += fmt::format("kernel {} grid=({},{}) block={} shared={}B", sig.kernel_name, sig.launch.grid_x,
                   sig.launch.grid_y, sig.launch.block_threads, sig.launch.shared_bytes);
  if (sig.launch.dynamic_shared_bytes > 0)
    s += fmt::format(" dynamic_shared={}B", sig.launch.dynamic_shared_bytes);
  if (sig.launch.programmatic_wait) s += " programmatic-wait";
  if (sig.launch.cluster_x > 1) s += fmt::format(" cluster={}", sig.launch.cluster_x);
  s += "\n";
  if (sig.empty_grid())
    s += sig.gemms_before.empty() && sig.gemms_after.empty() && sig.spmms.empty() &&
                 sig.sparse_gemms.empty()
             ? "  (empty grid: do not launch; C = beta * C is the whole result)\n"
             : "  (empty grid: do not launch; the library steps are the whole run)\n";
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const KernelParam& p = sig.params[i];
    s += fmt::format("  {:2} {:<22} {:<8} {}", i, p.name, to_string(p.kind), p.source);
    if (!p.data.empty()) s += fmt::format(" ({} entries)", p.data.size());
    s += '\n';
  }
  for (const LibraryGemm& g : sig.gemms_after) s += describe_gemm(g);
  for (const LibrarySpmm& m : sig.spmms) s += describe_spmm(m);
  s += describe_aux("epilogue", sig.epilogue);
  return s;
}

}  // namespace sparsegen::codegen
