#include "codegen/family.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"

namespace sparsegen::codegen {

#define SPARSEGEN_CODEGEN_FAMILY(fn) const CodegenFamily& fn();
#include "codegen/families.def"
#undef SPARSEGEN_CODEGEN_FAMILY

const std::vector<const CodegenFamily*>& codegen_families() {
  static const std::vector<const CodegenFamily*> all = {
#define SPARSEGEN_CODEGEN_FAMILY(fn) &fn(),
#include "codegen/families.def"
#undef SPARSEGEN_CODEGEN_FAMILY
  };
  return all;
}

const CodegenFamily& codegen_family(const Schedule& s) {
  for (const CodegenFamily* f : codegen_families())
    if (f->name() == s.family_name()) return *f;
  throw UserError(fmt::format("schedule family '{}' has no code generator", s.family_name()));
}

GeneratedKernel emit_kernel(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                            const EmitOptions& opt) {
  return codegen_family(s).emit(p, s, packed, opt);
}

}  // namespace sparsegen::codegen
