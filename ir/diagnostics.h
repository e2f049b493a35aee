// User-facing errors and warnings for everything sparsegen reads from the user.
//
// Three channels (ARCHITECTURE.md "Errors"): UserError for bad input (names the file and line or
// the flag and exits non-zero at the CLI), Diagnostics for legal-but-suspicious input (counted per
// kind, with the first location), and SG_ASSERT for internal invariants.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sparsegen {

// Where in the user's input something was found. line == 0 means "not line-oriented" (a binary
// file, a flag); byte_offset is used by binary readers instead of a line.
struct SourceLoc {
  std::string file;
  int64_t line = 0;
  int64_t byte_offset = -1;

  // "file:line", "file (byte 123)" or "file".
  std::string str() const;
};

// An error caused by what the user gave us. The message is complete and user-readable:
// "FILE:LINE: expected X, found Y".
class UserError : public std::runtime_error {
 public:
  UserError(const SourceLoc& loc, const std::string& what);
  explicit UserError(const std::string& what);  // for flags and combinations with no file
  const SourceLoc& loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

// Kinds of legal but suspicious input. The name table is reused by `inspect` and its JSON.
enum class WarningKind {
  DuplicateEntry,  // the same (row, col) listed more than once; summed
  NonFinite,       // NaN or Inf value
  OutOfRange,      // a value outside the range of the precision it was converted to
  PrecisionLoss,   // an integer value that the fp32 master copy cannot hold exactly
  PatternValues,   // values synthesized for a pattern-only matrix
};
std::string_view to_string(WarningKind kind);

// Per-kind tally of warnings: a count and the first location, so a 100M-entry file with a million
// NaNs produces one line, not a million.
class Diagnostics {
 public:
  struct Tally {
    int64_t count = 0;
    SourceLoc first;
    std::string first_detail;
  };

  void warn(WarningKind kind, const SourceLoc& loc, std::string detail);
  // Adds `count` occurrences at once (first location given by the caller).
  void warn_n(WarningKind kind, int64_t count, const SourceLoc& first, std::string detail);
  int64_t count(WarningKind kind) const;
  const std::map<WarningKind, Tally>& tallies() const { return tallies_; }
  bool empty() const { return tallies_.empty(); }
  // One line per kind: "warning: FILE:LINE: 3 x duplicate_entries (first: ...)".
  std::string format() const;

 private:
  std::map<WarningKind, Tally> tallies_;
};

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace sparsegen

// Internal invariant: aborts with context. Never used for user input.
#define SG_ASSERT(cond, msg)                                                 \
  do {                                                                       \
    if (!(cond)) ::sparsegen::assert_fail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
