// The slide family's compiler/ layer: one module (the b_transform lift and the mma.sp kernel),
// built by the default steps.
#include "compiler/family.h"
#include "ir/slide_schedule.h"

namespace sparsegen {

const CompilerFamily& slide_compiler_family() {
  static const DefaultBuild<SlideSchedule> f;
  return f;
}

}  // namespace sparsegen
