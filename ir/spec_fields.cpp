#include "ir/spec_fields.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "ir/diagnostics.h"

namespace sparsegen::spec_fields {

void error(std::string_view field, std::string_view expected, std::string_view found) {
  throw UserError(
      fmt::format("--schedule: field '{}': expected {}, found '{}'", field, expected, found));
}

int64_t parse_int(std::string_view field, std::string_view v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || ptr != v.data() + v.size() || x < lo || x > hi)
    error(field, fmt::format("an integer in {}..{}", lo, hi), v);
  return x;
}

void for_each_field(const std::vector<std::string_view>& parts,
                    const std::function<void(std::string_view, std::string_view)>& on_field) {
  std::set<std::string_view> seen;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.empty()) continue;  // tolerate a trailing ';'
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) error(part, "KEY=VALUE", part);
    const std::string_view key = part.substr(0, eq);
    if (!seen.insert(key).second) error(key, "the field once", "a second occurrence");
    on_field(key, part.substr(eq + 1));
  }
}

void check_legal(std::string_view spec, const std::vector<std::string>& why) {
  if (why.empty()) return;
  std::string msg = fmt::format("--schedule '{}' is illegal:", spec);
  for (const auto& w : why) msg += "\n  " + w;
  throw UserError(msg);
}

}  // namespace sparsegen::spec_fields
