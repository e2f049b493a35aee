#include "codegen/twell.h"

#include <fmt/format.h>

#include "codegen/emitter.h"
#include "codegen/template_types.h"
#include "ir/diagnostics.h"
#include "ir/twell_schedule.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

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

std::string num(int64_t v) {
  return std::to_string(v);
}

class TwellEmitter : public Emitter {
 public:
  TwellEmitter(const Problem& p, const TwellSchedule& s, const EmitOptions& opt)
      : p_(p), s_(s), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_twell(p_, s_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: twell cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    if (twell_buffer(p_, s_).bytes / 4 > INT32_MAX || p_.m * p_.k > INT32_MAX ||
        twell_weights_layout(p_).elements > INT32_MAX)
      throw UserError(
          fmt::format("codegen: {} exceeds the twell kernels' 32-bit offsets", to_string(p_)));
    for (const char* n : {"values", "B", "C", "alpha", "beta", "bw", "ws", "T", "sg_smem"})
      reserve(n);
    decl(fmt::format("// sparsegen twell kernels\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl(fmt::format("using T = {};", p_.dtype == DType::F16 ? "__half" : "__nv_bfloat16"));
    if (s_.gate == TwellGate::Mma)
      emit_gate();
    else
      emit_pack();
    emit_down();
    GeneratedKernel k;
    k.source = kernel_source(fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const T* __restrict__ values,\n    const T* __restrict__ B,\n"
        "    const unsigned* __restrict__ bw,\n    T* __restrict__ C,\n    float alpha,\n"
        "    float beta{}) {{\n",
        // balance=even's grid counts on kTwellEvenBlocksPerSm blocks resident per multiprocessor
        even() ? fmt::format("{}, {}", s_.warps * 32, kTwellEvenBlocksPerSm)
               : std::to_string(s_.warps * 32),
        opt_.kernel_name, uses_workspace() ? ",\n    float* __restrict__ ws" : ""));
    k.headers = header_sources();
    k.signature = signature();
    return k;
  }

 private:
  bool vec_x() const { return p_.k % 8 == 0; }
  // G's rows (N values, the backup region 256-byte aligned) are 16-byte aligned: the row pack.
  bool vec_g() const { return p_.n % 8 == 0; }
  // The row pack's 16-byte loads in flight per lane.
  static constexpr int kPackLoads = 4;
  bool queue() const { return s_.balance == TwellBalance::Queue; }
  bool even() const { return s_.balance == TwellBalance::Even; }
  bool mask() const { return s_.pack == TwellPack::Mask; }
  bool uses_workspace() const { return s_.split > 1 || queue() || even(); }
  std::string gate_name() const { return opt_.kernel_name + "_gate"; }
  std::string pack_name() const { return opt_.kernel_name + "_pack"; }
  int groups() const { return twell_groups(p_, s_); }

  // Kernel 1 in its own extern "C" function, declared before the main kernel.
  void emit_gate() {
    const TwellWeights w = twell_weights_layout(p_);
    const TwellBuffer b = twell_buffer(p_, s_);
    const auto c =
        call(tmpl::twell_gate_gemm,
             targs(TypeArg{"T"}, IntArg{s_.tile}, IntArg{s_.cap()}, IntArg{vec_x() ? 8 : 1}),
             cptr_t("B"), cptr_t(fmt::format("values + {}", p_.gated ? w.gate_t : w.up_t)),
             ptr_u32("bw"), ptr_f32("sg_smem"), i32(num(p_.m)), i32(num(p_.k)),
             i32(num(twell_k_padded(p_))), i32(num(p_.n)), i32(num(twell_tiles(p_, s_))),
             i32(num(b.entries / 4)), i32(num(b.backup / 4)));
    decl(fmt::format(
        "// kernel 1: {} = x · W in {} x {} tiles on the tensor cores, ReLU, TwELL epilogue\n"
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const T* __restrict__ values,\n    const T* __restrict__ B,\n"
        "    unsigned* __restrict__ bw) {{\n"
        "  extern __shared__ __align__(16) float sg_smem[];\n  {};\n}}",
        p_.gated ? "gate" : "up", kTwellGemmRows, s_.tile, kTwellGemmThreads, gate_name(), c.text));
  }

  // gate=lib: the pack kernel over the library GEMM's dense G (a prologue before kernel 2):
  //   sg::twell_pack_mask<T, TILE, CAP>(bw, M, N, tiles, entries, backup, tokens, mask,
  //                                     mask words a row);                               pack=mask
  //   sg::twell_pack_rows<T, TILE, CAP, 4>(bw, M, N, tiles, entries, backup, tokens);  N % 8 == 0
  //   sg::twell_pack<T, TILE, CAP>(bw, M, N, tiles, entries, backup);                  otherwise
  // (tokens: balance=even's per-token counts, -1 for none).
  void emit_pack() {
    const TwellBuffer b = twell_buffer(p_, s_);
    const auto tiles = i32(num(twell_tiles(p_, s_)));
    const auto tokens = i32(num(even() ? b.tokens / 4 : -1));
    const auto c =
        mask()
            ? call(tmpl::twell_pack_mask, targs(TypeArg{"T"}, IntArg{s_.tile}, IntArg{s_.cap()}),
                   ptr_u32("bw"), i32(num(p_.m)), i32(num(p_.n)), tiles, i32(num(b.entries / 4)),
                   i32(num(b.backup / 4)), tokens, i32(num(b.mask / 4)), i32(num(b.mask_bits / 32)))
        : vec_g() ? call(tmpl::twell_pack_rows,
                         targs(TypeArg{"T"}, IntArg{s_.tile}, IntArg{s_.cap()}, IntArg{kPackLoads}),
                         ptr_u32("bw"), i32(num(p_.m)), i32(num(p_.n)), tiles,
                         i32(num(b.entries / 4)), i32(num(b.backup / 4)), tokens)
                  : call(tmpl::twell_pack, targs(TypeArg{"T"}, IntArg{s_.tile}, IntArg{s_.cap()}),
                         ptr_u32("bw"), i32(num(p_.m)), i32(num(p_.n)), tiles,
                         i32(num(b.entries / 4)), i32(num(b.backup / 4)));
    decl(fmt::format(
        "// G = ReLU(x · W_g) comes from the BLAS library; this packs it as TwELL{}\n"
        "extern \"C\" __global__ void __launch_bounds__(256) {}(unsigned* __restrict__ bw) {{\n"
        "  {};\n}}",
        mask() ? " from its bit-mask" : "", pack_name(), c.text));
  }

  // Kernel 2: the main kernel's body.
  //   sg::twell_down<T, WARPS, TEAMS, TILE, CAP, GATED, G, KP, SPLIT, BALANCE, PART, MAX_PARTS,
  //                  EVEN_TOKEN_COST, EVEN_PIECE_COST>(
  //       B, W_u^T, W_d, bw, C, sg_smem, ws rows, counters, queue control, queue items, pool,
  //       alpha, beta, M, K, N, tiles, entries, backup, tokens);
  void emit_down() {
    const TwellWeights w = twell_weights_layout(p_);
    const TwellBuffer b = twell_buffer(p_, s_);
    const TwellWorkspace ws = twell_workspace(p_, s_);
    line("extern __shared__ __align__(16) float sg_smem[];");
    comment(fmt::format(
        "kernel 2: {}; {} warps{}; batches of {} entries; {} x 8 output columns per thread",
        queue()  ? fmt::format("{} persistent blocks taking tokens and parts of "
                                "{} batches from a queue",
                               twell_down_grid(p_, s_), kTwellPartBatches)
        : even() ? fmt::format("{} blocks, each worker an equal share of the tokens' batches",
                               twell_down_grid(p_, s_))
                 : std::string("one block per token"),
        s_.warps,
        s_.teams == 1 ? std::string()
                      : fmt::format(" in {} workers of {}", s_.teams, s_.team_warps()),
        kTwellBatch, groups()));
    const bool work = uses_workspace();
    auto ws_ptr = [&](const char* type, int64_t offset) {
      return fmt::format("reinterpret_cast<{}*>(ws + {})", type, offset);
    };
    call_stmt(tmpl::twell_down,
              targs(TypeArg{"T"}, IntArg{s_.warps}, IntArg{s_.teams}, IntArg{s_.tile},
                    IntArg{s_.cap()}, IntArg{p_.gated ? 1 : 0}, IntArg{groups()},
                    IntArg{twell_k_padded(p_)}, IntArg{s_.split},
                    IntArg{queue()  ? 1
                           : even() ? 2
                                    : 0},
                    IntArg{kTwellPartBatches}, IntArg{kTwellMaxParts}, IntArg{kTwellEvenTokenCost},
                    IntArg{kTwellEvenPieceCost}),
              cptr_t("B"), cptr_t(fmt::format("values + {}", w.up_t)),
              cptr_t(fmt::format("values + {}", w.down)), cptr_u32("bw"), ptr_t("C"),
              ptr_f32("sg_smem"), ptr_f32(work ? "ws" : "static_cast<float*>(nullptr)"),
              tmpl::ptr_i32(work ? ws_ptr("int", ws.counters) : "static_cast<int*>(nullptr)"),
              tmpl::ptr_i32(queue() ? ws_ptr("int", ws.control) : "static_cast<int*>(nullptr)"),
              ptr_u32(queue() ? ws_ptr("unsigned", ws.items) : "static_cast<unsigned*>(nullptr)"),
              i32(num(queue() ? ws.rows : 0)), f32("alpha"), f32("beta"), i32(num(p_.m)),
              i32(num(p_.k)), i32(num(p_.n)), i32(num(twell_tiles(p_, s_))),
              i32(num(b.entries / 4)), i32(num(b.backup / 4)),
              i32(num(even() ? b.tokens / 4 : -1)));
  }

  KernelSignature signature() const {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = {
        {"values", ParamKind::Values, "twell.weights", {}}, {"B", ParamKind::B, "x", {}},
        {"bw", ParamKind::BWork, "TwELL activations", {}},  {"C", ParamKind::C, "y", {}},
        {"alpha", ParamKind::Alpha, "alpha", {}},           {"beta", ParamKind::Beta, "beta", {}}};
    sig.launch.grid_x = twell_down_grid(p_, s_);
    sig.launch.grid_y = s_.split;
    if (uses_workspace()) {
      sig.params.push_back({"ws",
                            ParamKind::Workspace,
                            queue()  ? "split tokens' partial rows, counters and the work queue"
                            : even() ? "shared tokens' partial rows and counters, one per worker"
                                     : "partial rows and per-token counters",
                            {}});
      sig.workspace_bytes = twell_workspace_bytes(p_, s_);
      sig.workspace_zeroed = true;
    }
    sig.launch.block_threads = s_.warps * 32;
    sig.launch.dynamic_shared_bytes = twell_down_shared_bytes(p_, s_);
    sig.b_alignment = vec_x() ? 16 : 2;
    sig.b_work_bytes = twell_buffer(p_, s_).bytes;
    if (s_.gate == TwellGate::Lib) {
      // G = ReLU(x · W_g^T') into the backup region, then the pack kernel.
      const TwellWeights w = twell_weights_layout(p_);
      LibraryGemm g;
      g.name = p_.gated ? "gate" : "up";
      g.a = {ParamKind::B, 0, p_.k};
      g.b = {ParamKind::Values, p_.gated ? w.gate_t : w.up_t, twell_k_padded(p_)};
      g.c = {ParamKind::BWork, twell_buffer(p_, s_).backup / 2, p_.n};
      g.m = p_.m;
      g.n = p_.n;
      g.k = p_.k;
      g.b_transposed = true;
      g.relu = true;
      if (mask()) {
        g.relu_mask_ld = twell_buffer(p_, s_).mask_bits;
        g.relu_mask = {ParamKind::BWork, twell_buffer(p_, s_).mask, 0};
      }
      sig.gemms_before.push_back(g);
      sig.b_alignment = 2;
      AuxKernel& pk = sig.prologue;
      pk.name = pack_name();
      pk.params = {{"bw", ParamKind::BWork, "TwELL activations", {}}};
      // 8 warps per block: a warp per token row (row pack) or per (row, tile).
      const bool rows = vec_g() || mask();
      pk.launch.grid_x = rows ? (p_.m + 7) / 8 : twell_tiles(p_, s_);
      pk.launch.grid_y = rows ? 1 : (p_.m + 7) / 8;
      pk.launch.block_threads = 256;
      return sig;
    }
    AuxKernel& t = sig.b_transform;
    t.name = gate_name();
    t.params = {{"values", ParamKind::Values, "twell.weights", {}},
                {"B", ParamKind::B, "x", {}},
                {"bw", ParamKind::BWork, "TwELL activations", {}}};
    t.launch.grid_x = twell_tiles(p_, s_);
    t.launch.grid_y = (p_.m + kTwellGemmRows - 1) / kTwellGemmRows;
    t.launch.block_threads = kTwellGemmThreads;
    t.launch.dynamic_shared_bytes = twell_gemm_shared_bytes(s_);
    return sig;
  }

  const Problem& p_;
  const TwellSchedule& s_;
  const EmitOptions& opt_;
};

// The emitter needs no packed activations (they appear at run time): `packed` is ignored.
class TwellCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return TwellSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix&,
                       const EmitOptions& opt) const override {
    return emit_twell(p, s, opt);
  }
};

}  // namespace

GeneratedKernel emit_twell(const Problem& problem, const Schedule& schedule,
                           const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_twell";
  TwellEmitter e(problem, schedule.as<TwellSchedule>(), o);
  return e.run();
}

const CodegenFamily& twell_codegen_family() {
  static const TwellCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
