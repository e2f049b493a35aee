// Shared helpers for the test suites: where the data lives, and the GPU gate.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sparsegen::testing {

// The third-party matrix folder (../shared/data), or $SPARSEGEN_DATA when set.
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("SPARSEGEN_DATA")) return env;
  return SPARSEGEN_DATA_DIR;
}

inline std::filesystem::path source_dir() { return SPARSEGEN_SOURCE_DIR; }

}  // namespace sparsegen::testing
