// The compiler/ layer of a schedule family: how a schedule becomes a KernelBuild. The default
// build runs the shared pipeline steps (verify, pack, values, emit, NVRTC) through the family's
// ir/ and codegen/ interfaces, which is all a family whose kernel is one emitted source needs; a
// family with run-time needs (a library plan, several kernels) overrides build(). A family
// registers with one line in compiler/families.def.
//
//   PreparedPack pk = prepare_pack(a, p, s);               // steps 4-5, shareable by pack_key
//   KernelBuild b = compiler_family(s).build(a, p, s, target, {.pack = &pk});
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/family.h"
#include "ir/ffn.h"

namespace sparsegen {

// A matrix packed for a family and its values converted to a dtype (steps 4-5): what every
// schedule of that family with the same pack_key shares (the values only for the same dtype;
// other dtypes convert the pack's master values).
// Packing and converting a 100M-nonzero weight takes seconds, so the tuner packs once per key.
struct PreparedPack {
  std::string family;  // IrFamily::name()
  std::string key;     // IrFamily::pack_key()
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;  // the matrix's shape
  std::shared_ptr<const PackedMatrix> packed;
  std::vector<char> values;  // packed->master_values() in dtype, or empty
};

// Steps 4-5 for schedule s: its family's pack, then the range check and the conversion of the
// values. Throws UserError for a matrix that does not fit the problem or values outside the
// dtype's range.
PreparedPack prepare_pack(const CsrMatrix& a, const Problem& p, const Schedule& s);

struct BuildOptions {
  bool line_info = false;  // -lineinfo, for compute-sanitizer and profilers
  // A pack of the same family and pack key for this matrix and dtype (checked); null: pack here.
  const PreparedPack* pack = nullptr;
  // The owner of `pack`, when the caller shares it: the build then borrows the pack's converted
  // values and column indices (KernelBuild::borrowed) instead of copying them. Null: copies.
  std::shared_ptr<const PreparedPack> pack_owner;
  // false: steps 3-6 only, KernelBuild::compiled left empty (a cached image is loaded instead).
  bool compile = true;
  // The weights of a gated FFN problem (ir/ffn.h), which its family lays out as the kernel's
  // values; null: a build for its source and image only (nothing to run).
  const FfnWeights* ffn_weights = nullptr;
  // Test hook: edits the emitted CUDA source before NVRTC.
  std::function<void(std::string&)> source_hook;
};

class CompilerFamily {
 public:
  virtual ~CompilerFamily() = default;
  // The IrFamily::name() this build serves.
  virtual std::string_view name() const = 0;
  // Steps 3-7 for a given schedule. Default: the shared steps (see the top comment).
  virtual KernelBuild build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                            const CompileTarget& target, const BuildOptions& opt) const;
};

// The CompilerFamily of a family whose build is the default one (one emitted kernel): what
// `const CompilerFamily& foo_compiler_family()` returns for such a family.
template <class Body>
class DefaultBuild final : public CompilerFamily {
 public:
  std::string_view name() const override { return Body::kFamily; }
};

// The registered builds (compiler/families.def).
const std::vector<const CompilerFamily*>& compiler_families();
// The build of s's family; throws UserError when none is registered.
const CompilerFamily& compiler_family(const Schedule& s);

}  // namespace sparsegen
