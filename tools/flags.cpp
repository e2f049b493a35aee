#include "tools/flags.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"

namespace sparsegen::cli {

DType dtype_flag(const std::string& value, const char* flag) {
  const auto dt = parse_dtype(value);
  if (!dt) throw UserError(fmt::format("{}: expected fp32, fp16 or bf16, found '{}'", flag, value));
  return *dt;
}

Layout layout_flag(const std::string& value, const char* flag) {
  const auto l = parse_layout(value);
  if (!l) throw UserError(fmt::format("{}: expected row or col, found '{}'", flag, value));
  return *l;
}

}  // namespace sparsegen::cli
