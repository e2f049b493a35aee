// Public error and warning types of sparsegen: what the API throws (UserError for bad input,
// CudaError for the GPU stack) and the per-kind warning tally a matrix load returns.
// Self-contained: part of the installed API (the internal ir/diagnostics.h adds SG_ASSERT).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

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

// An error from the CUDA stack. For driver calls: code() is the CUresult, code_name() its name
// (cuGetErrorName) and call() the failing function, e.g. "cuLaunchKernel". NvrtcError
// (runtime/nvrtc_compiler.h) derives from it with an nvrtcResult code. When the driver cannot be
// loaded at all, call() is "dlopen" and code() is CUDA_ERROR_SHARED_OBJECT_INIT_FAILED. The CLI
// maps this whole family to exit code 3.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& message, std::string call, int code, std::string code_name)
      : std::runtime_error(message),
        call_(std::move(call)),
        code_(code),
        code_name_(std::move(code_name)) {}

  const std::string& call() const { return call_; }
  int code() const { return code_; }
  const std::string& code_name() const { return code_name_; }
  // A fault inside a kernel (illegal address, launch failure, ...) is sticky: the context cannot
  // run anything after it, so callers stop instead of trying the next kernel.
  bool sticky() const;

 private:
  std::string call_;
  int code_;
  std::string code_name_;
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

}  // namespace sparsegen
