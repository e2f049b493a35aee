// The data contract of ../shared/data (README.md there), driven by its MANIFEST.tsv files alone:
// one test per listed matrix file, named after it.
//
//   expect = load            load_matrix() succeeds; the shape is the manifest's; the entry count
//                            is checked exactly:
//                              .mtx  the manifest's `nnz_stored` counts entries (coordinate) or
//                                    values (array) as written in the file. The reader reports the
//                                    same count, and the CSR holds
//                                      stored + mirrored + implied - duplicates
//                                    entries, where `mirrored` is the off-diagonal stored entries
//                                    of a symmetric/skew/hermitian file, `implied` the zero
//                                    diagonal of an array skew-symmetric file, and `duplicates`
//                                    equals the reported DuplicateEntry count.
//                              .smtx `nnz` is the CSR's nnz; `empty_rows` is checked too.
//   expect = reject          a UserError whose message names the file and a line ("f.mtx:12:").
//   expect = load-or-reject  never a crash. sparsegen's Matrix Market reader is strict, so where
//                            the manifest's `strict_reader` column says "reject" (or an overflow
//                            error), a rejection naming the file and line is required.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/io/load.h"
#include "ir/io/matrix_market.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

struct Entry {
  fs::path path;      // absolute
  std::string label;  // folder/file as in the manifest, for messages
  std::map<std::string, std::string> cols;
  std::string get(const std::string& key) const {
    auto it = cols.find(key);
    return it == cols.end() ? "" : it->second;
  }
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, '\t')) out.push_back(cur);
  if (!line.empty() && line.back() == '\t') out.emplace_back();
  return out;
}

std::vector<fs::path> manifests() {
  std::vector<fs::path> out;
  const fs::path root = testing::data_dir();
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() == "MANIFEST.tsv") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Entry> all_entries() {
  std::vector<Entry> out;
  for (const fs::path& m : manifests()) {
    std::ifstream in(m);
    std::string line;
    if (!std::getline(in, line)) continue;
    const std::vector<std::string> header = split_tabs(line);
    const std::string folder = fs::relative(m.parent_path(), testing::data_dir()).string();
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      std::vector<std::string> fields = split_tabs(line);
      Entry e;
      for (size_t i = 0; i < header.size() && i < fields.size(); ++i) e.cols[header[i]] = fields[i];
      e.path = m.parent_path() / e.get("file");
      e.label = folder + "/" + e.get("file");
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::string test_name(const Entry& e, size_t index) {
  std::string s;
  for (char c : e.label) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s + "_" + std::to_string(index);  // the index keeps names unique
}

class DataContract : public ::testing::TestWithParam<Entry> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DataContract);

bool is_mtx(const fs::path& p) { return p.extension() == ".mtx"; }

void check_load(const Entry& e) {
  LoadedMatrix lm;
  try {
    lm = load_matrix(e.path.string());
  } catch (const UserError& err) {
    FAIL() << e.label << " must load, but: " << err.what();
  }
  const CsrMatrix& m = lm.matrix;
  EXPECT_NO_THROW(m.check_canonical());
  EXPECT_EQ(std::to_string(m.rows), e.get("nrows"));
  EXPECT_EQ(std::to_string(m.cols), e.get("ncols"));

  if (is_mtx(e.path)) {
    ASSERT_FALSE(e.get("nnz_stored").empty()) << "manifest lacks nnz_stored";
    MatrixMarketInfo info;
    Diagnostics diag;
    read_matrix_market(e.path.string(), MatrixMarketOptions{}, diag, &info);
    EXPECT_EQ(std::to_string(info.stored_entries), e.get("nnz_stored"));
    EXPECT_EQ(m.nnz(), info.stored_entries + info.mirrored_entries + info.implied_entries -
                           info.duplicates_merged);
    EXPECT_EQ(info.duplicates_merged, lm.diag.count(WarningKind::DuplicateEntry));
    if (info.symmetry == MmSymmetry::General) {
      EXPECT_EQ(info.mirrored_entries, 0);
    }
  } else {
    EXPECT_EQ(std::to_string(m.nnz()), e.get("nnz"));
    if (!e.get("empty_rows").empty()) {
      int64_t empty = 0;
      for (int64_t r = 0; r < m.rows; ++r) empty += m.row_length(r) == 0;
      EXPECT_EQ(std::to_string(empty), e.get("empty_rows"));
    }
    EXPECT_TRUE(m.pattern_only);
  }
}

// Returns the error, or "" when the file loaded.
std::string try_load(const Entry& e, int64_t* line) {
  try {
    LoadedMatrix lm = load_matrix(e.path.string());
    lm.matrix.check_canonical();
  } catch (const UserError& err) {
    *line = err.loc().line;
    return err.what();
  }
  return "";
}

void expect_located_rejection(const Entry& e, const std::string& err, int64_t line) {
  ASSERT_FALSE(err.empty()) << e.label << " must be rejected, but it loaded";
  EXPECT_NE(err.find(e.path.filename().string()), std::string::npos) << err;
  // Every defect in these text files sits on a line (EOF defects on the last one).
  EXPECT_GT(line, 0) << err;
  const std::string at = e.path.filename().string() + ":" + std::to_string(line) + ":";
  EXPECT_NE(err.find(at), std::string::npos) << err;
}

TEST_P(DataContract, File) {
  const Entry& e = GetParam();
  ASSERT_TRUE(fs::is_regular_file(e.path)) << "listed but missing: " << e.path;
  const std::string expect = e.get("expect");
  if (expect == "load") {
    check_load(e);
  } else if (expect == "reject") {
    int64_t line = 0;
    std::string err = try_load(e, &line);
    expect_located_rejection(e, err, line);
  } else if (expect == "load-or-reject") {
    int64_t line = 0;
    std::string err = try_load(e, &line);  // never a crash: reaching the next line is the test
    const std::string strict = e.get("strict_reader");
    const bool strict_rejects =
        strict.rfind("reject", 0) == 0 || strict.find("overflow error") != std::string::npos;
    if (strict_rejects) {
      expect_located_rejection(e, err, line);
    } else if (!err.empty()) {
      EXPECT_NE(err.find(e.path.filename().string()), std::string::npos) << err;
    }
  } else {
    FAIL() << "unknown expect value '" << expect << "' for " << e.label;
  }
}

INSTANTIATE_TEST_SUITE_P(Manifest, DataContract, ::testing::ValuesIn(all_entries()),
                         [](const ::testing::TestParamInfo<Entry>& p) {
                           return test_name(p.param, p.index);
                         });

TEST(DataContractManifests, EveryMatrixFileIsListed) {
  if (!fs::is_directory(testing::data_dir()))
    GTEST_SKIP() << "no test data at " << testing::data_dir();
  std::set<fs::path> listed;
  for (const Entry& e : all_entries()) listed.insert(fs::weakly_canonical(e.path));
  ASSERT_GT(listed.size(), 300u);  // 324 matrices when this was written
  for (const fs::path& m : manifests()) {
    for (const auto& f : fs::recursive_directory_iterator(m.parent_path())) {
      const auto ext = f.path().extension();
      if (!f.is_regular_file() || (ext != ".mtx" && ext != ".smtx")) continue;
      EXPECT_TRUE(listed.count(fs::weakly_canonical(f.path())))
          << f.path() << " is not in " << m;
    }
  }
}

}  // namespace
}  // namespace sparsegen
