#include "ir/family.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"

namespace sparsegen {

#define SPARSEGEN_IR_FAMILY(fn) const IrFamily& fn();
#include "ir/families.def"
#undef SPARSEGEN_IR_FAMILY

const std::vector<const IrFamily*>& ir_families() {
  static const std::vector<const IrFamily*> all = {
#define SPARSEGEN_IR_FAMILY(fn) &fn(),
#include "ir/families.def"
#undef SPARSEGEN_IR_FAMILY
  };
  return all;
}

void throw_unregistered(std::string_view family, std::string_view what) {
  throw UserError(fmt::format("schedule family '{}' has no {}", family, what));
}

const IrFamily* find_ir_family(std::string_view name) {
  for (const IrFamily* f : ir_families())
    if (f->name() == name) return f;
  return nullptr;
}

std::string ir_family_names() {
  const auto& all = ir_families();
  std::string out;
  for (size_t i = 0; i < all.size(); ++i)
    out += (i ? (i + 1 == all.size() ? " or " : ", ") : "") + std::string(all[i]->name());
  return out;
}

std::vector<Schedule> enumerate_schedules(const Problem& p, const CsrMatrix& a,
                                          const EnumerateOptions& opt) {
  std::vector<Schedule> out;
  for (bool general : {true, false}) {
    for (const IrFamily* f : ir_families()) {
      if (f->general_purpose() != general || (!general && !opt.include_specialised)) continue;
      for (Schedule& s : f->enumerate(p, a, opt)) out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace sparsegen
