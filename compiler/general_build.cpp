// The general family's compiler/ layer: one emitted kernel, built by the shared steps.
#include "compiler/family.h"
#include "ir/general_schedule.h"

namespace sparsegen {
namespace {

class GeneralCompiler final : public CompilerFamily {
 public:
  std::string_view name() const override { return GeneralSchedule::kFamily; }
};

}  // namespace

const CompilerFamily& general_compiler_family() {
  static const GeneralCompiler f;
  return f;
}

}  // namespace sparsegen
