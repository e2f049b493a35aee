// The baked family's compiler/ layer: one emitted kernel, built by the default steps.
#include "compiler/family.h"
#include "ir/baked_schedule.h"

namespace sparsegen {

const CompilerFamily& baked_compiler_family() {
  static const DefaultBuild<BakedSchedule> f;
  return f;
}

}  // namespace sparsegen
