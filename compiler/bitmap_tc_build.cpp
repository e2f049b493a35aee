// The bitmap_tc family's compiler/ layer: one emitted kernel, built by the shared steps.
#include "compiler/family.h"
#include "ir/bitmap_tc_schedule.h"

namespace sparsegen {
namespace {

class BitmapTcCompiler final : public CompilerFamily {
 public:
  std::string_view name() const override { return BitmapTcSchedule::kFamily; }
};

}  // namespace

const CompilerFamily& bitmap_tc_compiler_family() {
  static const BitmapTcCompiler f;
  return f;
}

}  // namespace sparsegen
