// User-facing errors and warnings for everything sparsegen reads from the user.
//
// Three channels (ARCHITECTURE.md "Errors"): UserError for bad input (names the file and line or
// the flag and exits non-zero at the CLI), Diagnostics for legal-but-suspicious input (counted per
// kind, with the first location), and SG_ASSERT for internal invariants.
#pragma once

#include <string>

#include "sparsegen/errors.h"  // SourceLoc, UserError, WarningKind, Diagnostics (public)

namespace sparsegen {

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace sparsegen

// Internal invariant: aborts with context. Never used for user input.
#define SG_ASSERT(cond, msg)                                                 \
  do {                                                                       \
    if (!(cond)) ::sparsegen::assert_fail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
