// The macko family's compiler/ layer: one emitted kernel, built by the default steps.
#include "compiler/family.h"
#include "ir/macko_schedule.h"

namespace sparsegen {

const CompilerFamily& macko_compiler_family() {
  static const DefaultBuild<MackoSchedule> f;
  return f;
}

}  // namespace sparsegen
