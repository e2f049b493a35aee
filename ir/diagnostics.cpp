#include "ir/diagnostics.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace sparsegen {

std::string SourceLoc::str() const {
  if (line > 0) return fmt::format("{}:{}", file, line);
  if (byte_offset >= 0) return fmt::format("{} (byte {})", file, byte_offset);
  return file;
}

UserError::UserError(const SourceLoc& loc, const std::string& what)
    : std::runtime_error(loc.str().empty() ? what : loc.str() + ": " + what), loc_(loc) {}

UserError::UserError(const std::string& what) : std::runtime_error(what) {}

std::string_view to_string(WarningKind kind) {
  switch (kind) {
    case WarningKind::DuplicateEntry: return "duplicate_entries";
    case WarningKind::NonFinite: return "non_finite_values";
    case WarningKind::OutOfRange: return "out_of_range_values";
    case WarningKind::PrecisionLoss: return "inexact_integer_values";
    case WarningKind::PatternValues: return "synthesized_values";
  }
  return "unknown";
}

void Diagnostics::warn(WarningKind kind, const SourceLoc& loc, std::string detail) {
  warn_n(kind, 1, loc, std::move(detail));
}

void Diagnostics::warn_n(WarningKind kind, int64_t count, const SourceLoc& first,
                         std::string detail) {
  if (count <= 0) return;
  Tally& t = tallies_[kind];
  if (t.count == 0) {
    t.first = first;
    t.first_detail = std::move(detail);
  }
  t.count += count;
}

int64_t Diagnostics::count(WarningKind kind) const {
  auto it = tallies_.find(kind);
  return it == tallies_.end() ? 0 : it->second.count;
}

std::string Diagnostics::format() const {
  std::string out;
  for (const auto& [kind, t] : tallies_) {
    out += fmt::format("warning: {}: {} x {} (first: {})\n", t.first.str(), t.count,
                       to_string(kind), t.first_detail);
  }
  return out;
}

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "sparsegen internal error: %s:%d: assertion `%s` failed: %s\n", file, line,
               expr, msg.c_str());
  std::abort();
}

}  // namespace sparsegen
