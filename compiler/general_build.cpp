// The general family's compiler/ layer: one emitted kernel, built by the default steps.
#include "compiler/family.h"
#include "ir/general_schedule.h"

namespace sparsegen {

const CompilerFamily& general_compiler_family() {
  static const DefaultBuild<GeneralSchedule> f;
  return f;
}

}  // namespace sparsegen
