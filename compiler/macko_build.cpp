// The macko family's compiler/ layer: one emitted kernel, built by the shared steps.
#include "compiler/family.h"
#include "ir/macko_schedule.h"

namespace sparsegen {
namespace {

class MackoCompiler final : public CompilerFamily {
 public:
  std::string_view name() const override { return MackoSchedule::kFamily; }
};

}  // namespace

const CompilerFamily& macko_compiler_family() {
  static const MackoCompiler f;
  return f;
}

}  // namespace sparsegen
