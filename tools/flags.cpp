#include "tools/flags.h"

#include <fmt/format.h>

#include <charconv>

#include "ir/diagnostics.h"

namespace sparsegen::cli {

DType dtype_flag(const std::string& value, const char* flag) {
  const auto dt = parse_dtype(value);
  if (!dt) throw UserError(fmt::format("{}: expected fp32, fp16 or bf16, found '{}'", flag, value));
  if (is_quantized(*dt))
    throw UserError(fmt::format(
        "{}: {} needs per-row and per-token scales (Problem::quantized_spmm); no registered "
        "schedule family runs quantized problems yet: use fp32, fp16 or bf16",
        flag, value));
  return *dt;
}

Layout layout_flag(const std::string& value, const char* flag) {
  const auto l = parse_layout(value);
  if (!l) throw UserError(fmt::format("{}: expected row or col, found '{}'", flag, value));
  return *l;
}

std::pair<int64_t, int64_t> shape_flag(const std::string& value, const char* flag) {
  const size_t x = value.find_first_of("xX");
  int64_t r = 0, c = 0;
  bool ok = x != std::string::npos && x > 0;
  if (ok) {
    const char* b = value.data();
    const char* e = b + value.size();
    const auto [p1, ec1] = std::from_chars(b, b + x, r);
    const auto [p2, ec2] = std::from_chars(b + x + 1, e, c);
    ok = ec1 == std::errc() && p1 == b + x && ec2 == std::errc() && p2 == e && r >= 1 && c >= 1;
  }
  if (!ok) throw UserError(fmt::format("{} {}: expected ROWSxCOLS, e.g. 4096x11008", flag, value));
  return {r, c};
}

}  // namespace sparsegen::cli
