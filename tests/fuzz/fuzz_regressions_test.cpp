// Replays every file in tests/fuzz/regressions/ (inputs that once crashed a reader) and in the
// seed corpora through both fuzz entry points: each must load or be rejected with a UserError.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_entry_points.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs() {
  std::vector<fs::path> out;
  for (const char* sub : {"regressions", "corpus_mm", "corpus_st"}) {
    const fs::path dir = fs::path(SPARSEGEN_FUZZ_DIR) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzRegressions, EveryInputLoadsOrIsRejected) {
  const std::vector<fs::path> files = inputs();
  ASSERT_FALSE(files.empty()) << "no inputs under " << SPARSEGEN_FUZZ_DIR;
  int mm_loaded = 0;
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    std::ifstream in(p, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    mm_loaded += fuzz::matrix_market_one(bytes.data(), bytes.size());
    fuzz::safetensors_one(bytes.data(), bytes.size());
  }
  EXPECT_GT(mm_loaded, 0);  // the seed corpus holds valid matrices
}

}  // namespace
}  // namespace sparsegen
