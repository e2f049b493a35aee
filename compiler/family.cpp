#include "compiler/family.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "codegen/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/diagnostics.h"
#include "ir/parallel.h"

namespace sparsegen {

#define SPARSEGEN_COMPILER_FAMILY(fn) const CompilerFamily& fn();
#include "compiler/families.def"
#undef SPARSEGEN_COMPILER_FAMILY

const std::vector<const CompilerFamily*>& compiler_families() {
  static const std::vector<const CompilerFamily*> all = {
#define SPARSEGEN_COMPILER_FAMILY(fn) &fn(),
#include "compiler/families.def"
#undef SPARSEGEN_COMPILER_FAMILY
  };
  return all;
}

const CompilerFamily& compiler_family(const Schedule& s) {
  return registered_for(compiler_families(), s.family_name(), "build registered");
}

PreparedPack prepare_pack(const CsrMatrix& a, const Problem& p, const Schedule& s) {
  const IrFamily& fam = s.family();
  PreparedPack pk;
  pk.family = std::string(fam.name());
  pk.key = fam.pack_key(s).value_or(to_string(s));
  pk.dtype = p.dtype;
  pk.rows = a.rows;
  pk.cols = a.cols;
  check_value_range(a, p.dtype);
  pk.packed = fam.pack(a, p, s);
  pk.values = to_device_values(pk.packed->master_values(), p.dtype);
  return pk;
}

namespace {

// Copies a byte array on all cores (hundreds of MB for a large weight), pages faulted in first.
template <class T>
void parallel_copy(std::vector<T>& dst, const std::vector<T>& src) {
  dst.clear();
  resize_prefaulted(dst, src.size());
  const auto n = static_cast<int64_t>(src.size());
  parallel_for(n, n / 8, [&](int64_t i0, int64_t i1) {
    std::memcpy(dst.data() + i0, src.data() + i0, static_cast<size_t>(i1 - i0) * sizeof(T));
  });
}

}  // namespace

KernelBuild CompilerFamily::build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                  const CompileTarget& target, const BuildOptions& opt) const {
  const IrFamily& fam = s.family();
  KernelBuild b = start_build(a, p, s, target);
  const PreparedPack* shared = opt.pack;
  if (shared != nullptr) {
    const std::optional<std::string> key = fam.pack_key(s);
    bool fits = shared->family == fam.name() && shared->key == key.value_or(to_string(s)) &&
                shared->rows == a.rows && shared->cols == a.cols;
    if (fits && !key) {
      // A schedule's own packing may depend on the problem (N's column tiles): compare figures.
      const FormatStats want = fam.format_stats(a, p, s), got = shared->packed->stats();
      fits = want.rows == got.rows && want.nnz_padded == got.nnz_padded &&
             want.block_tasks == got.block_tasks && want.col_tiles == got.col_tiles;
    }
    if (!fits)
      throw UserError(fmt::format(
          "build_kernel: the given pack ({} {}, {}x{}) is not one of schedule '{}' for {}",
          shared->family, shared->key, shared->rows, shared->cols, to_string(s), to_string(p)));
  }
  {
    PipelineStep st(3, "verify", &b.step_log);
    const auto illegal = validate(p, s);
    if (!illegal.empty())
      throw UserError(fmt::format("schedule '{}' is illegal for {}: {}", to_string(s), to_string(p),
                                  fmt::join(illegal, "; ")));
    // With a shared pack its figures are at hand; without, the family's walk of the matrix.
    const FormatStats stats =
        shared != nullptr ? fam.restat(shared->packed->stats(), p, s) : fam.format_stats(a, p, s);
    const auto reasons = fam.verify(p, s, stats, target.limits);
    if (!reasons.empty())
      throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                  target.limits.name, to_string(p), fmt::join(reasons, "; ")));
    st.finish(target.limits.name);
  }
  std::shared_ptr<const PackedMatrix> packed;
  std::shared_ptr<PackedMatrix> own;  // this build's pack: its column indices are moved out
  if (shared != nullptr) {
    {
      PipelineStep st(4, "pack", &b.step_log);
      packed = shared->packed;
      st.finish("shared: " + packed->describe());
    }
    if (shared->dtype == p.dtype && !shared->values.empty()) {
      PipelineStep st(5, "values", &b.step_log);
      if (opt.pack_owner.get() == shared) {
        b.borrowed = opt.pack_owner;
        st.finish(
            fmt::format("borrowed: {} bytes of {}", shared->values.size(), to_string(p.dtype)));
      } else {
        parallel_copy(b.values, shared->values);
        st.finish(fmt::format("shared: {} bytes of {}", b.values.size(), to_string(p.dtype)));
      }
    } else {
      values_step(b, a, packed->master_values());
    }
  } else {
    {
      PipelineStep st(4, "pack", &b.step_log);
      own = fam.pack(a, p, s);
      packed = own;
      st.finish(packed->describe());
    }
    // fp32: the device values are the master values themselves, adopted after the emit.
    if (p.dtype != DType::F32) values_step(b, a, packed->master_values());
  }
  emit_step(b, [&] { return codegen::emit_kernel(p, s, *packed); });
  // After the emit (which may read them: baked writes them into its source), kernels that index
  // a plain column array take it as a parameter: moved out of this build's own pack, copied from
  // a shared one, or borrowed with the values.
  if (own != nullptr) {
    b.col_idx = own->take_column_indices();
    if (p.dtype == DType::F32) {
      std::vector<float> v = own->take_master_values();
      if (v.empty() && !own->master_values().empty()) {
        values_step(b, a, own->master_values());  // the family keeps them: a converted copy
      } else {
        PipelineStep st(5, "values", &b.step_log);
        b.adopted_values = std::move(v);
        st.finish(
            fmt::format("{} bytes of fp32, adopted from the pack", b.adopted_values.size() * 4));
      }
    }
  } else if (b.borrowed == nullptr) {
    parallel_copy(b.col_idx, packed->column_indices());
  }
  if (opt.source_hook) opt.source_hook(b.kernel.source);
  if (opt.compile)
    compile_step(b, target, fmt::format("sparsegen_{}.cu", fam.name()), opt.line_info);
  return b;
}

}  // namespace sparsegen
