// The bitmap_tc family's compiler/ layer: one emitted kernel, built by the default steps.
#include "compiler/family.h"
#include "ir/bitmap_tc_schedule.h"

namespace sparsegen {

const CompilerFamily& bitmap_tc_compiler_family() {
  static const DefaultBuild<BitmapTcSchedule> f;
  return f;
}

}  // namespace sparsegen
