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
  return registered_for(codegen_families(), s.family_name(), "code generator");
}

GeneratedKernel emit_kernel(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                            const EmitOptions& opt) {
  return codegen_family(s).emit(p, s, packed, opt);
}

}  // namespace sparsegen::codegen
