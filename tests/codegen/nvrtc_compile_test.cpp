// Every schedule the enumerator produces for a set of small matrices compiles with NVRTC to PTX
// for compute_80 and compute_90 (no GPU needed). The full space is sampled deterministically to
// keep the suite fast; SPARSEGEN_NVRTC_ALL=1 compiles every schedule.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "codegen/general_sparse.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/codegen/codegen_test_matrices.h"

namespace sparsegen::codegen {
namespace {

struct Case {
  std::string matrix;
  Problem problem;
  Schedule schedule;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  const auto mats = testing::codegen_matrices();
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
  int which = 0;
  for (const auto& m : mats) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{32}}) {
      const DType dt = dtypes[which++ % 3];
      const Layout bl = (which % 2 == 0) ? Layout::RowMajor : Layout::ColMajor;
      const Problem p = n == 1 ? Problem::spmv(m.a.rows, m.a.cols, dt)
                               : Problem::spmm(m.a.rows, m.a.cols, n, dt, bl, Layout::RowMajor);
      for (const Schedule& s : enumerate_schedules(p, m.a)) out.push_back({m.name, p, s});
    }
  }
  return out;
}

// Structural key: the parts of a schedule that change the emitted code's shape.
std::string shape_key(const Case& c) {
  const GeneralSchedule& g = c.schedule.as<GeneralSchedule>();
  std::string k;
  for (int l = 0; l < 3; ++l)
    k += std::string(to_string(g.split[static_cast<size_t>(l)].kind)) + "/" +
         std::string(to_string(g.reduce[static_cast<size_t>(l)])) + ";";
  k += g.interleave ? "il;" : "";
  k += g.vector_width > 1 ? "vec;" : "";
  k += g.thread_cols > 1 ? "tcols;" : "";
  k += g.group_threads > 1 ? "group;" : "";
  return k;
}

const CsrMatrix& matrix_named(const std::string& name) {
  static const auto mats = testing::codegen_matrices();
  for (const auto& m : mats)
    if (m.name == name) return m.a;
  return mats.front().a;
}

TEST(NvrtcCompile, EveryEnumeratedScheduleCompiles) {
  const auto cases = all_cases();
  ASSERT_GT(cases.size(), 100u);
  // Default run: one schedule of every structural shape, then an even stride through the rest,
  // about 100 schedules; SPARSEGEN_NVRTC_ALL=1 compiles all of them.
  const bool all = std::getenv("SPARSEGEN_NVRTC_ALL") != nullptr;
  std::vector<size_t> pick;
  if (all) {
    for (size_t i = 0; i < cases.size(); ++i) pick.push_back(i);
  } else {
    std::set<std::string> seen;
    std::vector<char> taken(cases.size(), 0);
    for (size_t i = 0; i < cases.size(); ++i)
      if (seen.insert(shape_key(cases[i])).second) {
        pick.push_back(i);
        taken[i] = 1;
      }
    const size_t budget = 100;
    const size_t rest = budget > pick.size() ? budget - pick.size() : 1;
    const size_t step = std::max<size_t>(1, cases.size() / rest);
    for (size_t i = 0; i < cases.size() && pick.size() < budget; i += step)
      if (taken[i] == 0) pick.push_back(i);
  }
  size_t compiled = 0, failed = 0;
  for (size_t i : pick) {
    const Case& c = cases[i];
    const PackedFormat f = pack_format(matrix_named(c.matrix), c.problem, c.schedule);
    const GeneratedKernel k = emit_general_sparse(c.problem, c.schedule, f);
    for (const char* arch : {"compute_80", "compute_90"}) {
      nvrtc::CompileOptions o;
      o.arch = arch;
      o.headers = k.headers;
      try {
        const auto r = nvrtc::compile(k.source, o);
        EXPECT_FALSE(r.is_cubin);
        EXPECT_NE(std::string(r.image.data()).find(k.signature.kernel_name), std::string::npos);
        ++compiled;
      } catch (const std::exception& e) {
        if (++failed <= 3)
          ADD_FAILURE() << c.matrix << " " << to_string(c.problem) << "\n"
                        << to_string(c.schedule) << "\n"
                        << e.what();
      }
    }
  }
  EXPECT_EQ(failed, 0u);
  std::printf(
      "[ NVRTC    ] %zu kernels compiled, %zu failed (%zu schedules x compute_80/90) of "
      "%zu enumerated schedules\n",
      compiled, failed, pick.size(), cases.size());
}

}  // namespace
}  // namespace sparsegen::codegen
