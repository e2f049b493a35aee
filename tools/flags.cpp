#include "tools/flags.h"

#include <fmt/format.h>

#include <charconv>

#include "ir/diagnostics.h"

namespace sparsegen::cli {

DType dtype_flag(const std::string& value, const char* flag) {
  const auto dt = parse_dtype(value);
  if (!dt)
    throw UserError(
        fmt::format("{}: expected fp32, fp16, bf16, int8 or fp8_e4m3, found '{}'", flag, value));
  return *dt;
}

DType io_flag(const std::string& value, const char* flag) {
  const auto dt = parse_dtype(value);
  if (!dt || (*dt != DType::F16 && *dt != DType::BF16))
    throw UserError(
        fmt::format("{}: expected fp16 or bf16 (the type of B and C of an int8 / "
                    "fp8_e4m3 problem), found '{}'",
                    flag, value));
  return *dt;
}

Layout layout_flag(const std::string& value, const char* flag) {
  const auto l = parse_layout(value);
  if (!l) throw UserError(fmt::format("{}: expected row or col, found '{}'", flag, value));
  return *l;
}

std::pair<int64_t, int64_t> shape_flag(const std::string& value, const char* flag) {
  const auto shape = parse_shape(value);
  if (!shape)
    throw UserError(fmt::format("{} {}: expected ROWSxCOLS, e.g. 4096x11008", flag, value));
  return *shape;
}

}  // namespace sparsegen::cli
