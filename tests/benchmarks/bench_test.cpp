// sparsegen-bench: the summary statistics (BenchReport.*, pure host code) and the executable's
// command line (BenchCli.*): bad flags exit 2, bad values exit 1 naming the flag, and without a
// GPU it exits 3 saying so (on a GPU machine that test checks a tiny real run instead).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "benchmarks/report.h"
#include "runtime/cuda_driver.h"
#include "tests/benchmarks/xml_check.h"
#include "tests/test_support.h"

namespace sparsegen::bench {
namespace {

namespace fs = std::filesystem;

MethodResult timed(double ms, double bytes = 1e6) {
  MethodResult m;
  m.impl = "x";
  m.checked = true;
  m.median_ms = m.p10_ms = m.p90_ms = m.min_ms = ms;
  m.runs = 20;
  m.bytes = bytes;
  return m;
}

CaseResult make_case(double sparsity, int64_t n, double ours, double cublas, double cusparse) {
  CaseResult c;
  c.suite = "llm";
  c.sparsity = sparsity;
  c.n = n;
  c.ours = timed(ours);
  c.cublas = timed(cublas);
  c.cusparse = timed(cusparse);
  return c;
}

TEST(BenchReport, GeomeanOfKnownValues) {
  EXPECT_DOUBLE_EQ(geomean({4.0}), 4.0);
  EXPECT_NEAR(geomean({1.0, 4.0}), 2.0, 1e-12);
  EXPECT_NEAR(geomean({0.5, 2.0, 8.0}), 2.0, 1e-12);
  EXPECT_THROW(geomean({}), std::invalid_argument);
  EXPECT_THROW(geomean({1.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(geomean({1.0, -2.0}), std::invalid_argument);
  EXPECT_THROW(geomean({NAN}), std::invalid_argument);
}

// The case key: sparsity from the shape, and the same flat JSON fields for every record kind.
// What a benchmark's JSON records of how it ran: the command line as typed (argv joined by
// spaces) and the commit from $SPARSEGEN_GIT_COMMIT ("unknown" when unset or empty).
TEST(BenchReport, CommandLineAndCommit) {
  const char* argv[] = {"tools/sparsegen-slide-bench", "--n", "64", "--schedule", "slide;nt=8"};
  EXPECT_EQ(command_line(5, argv), "tools/sparsegen-slide-bench --n 64 --schedule slide;nt=8");
  EXPECT_EQ(command_line(0, argv), "");
  const char* saved = std::getenv("SPARSEGEN_GIT_COMMIT");
  const std::string keep = saved != nullptr ? saved : "";
  ::setenv("SPARSEGEN_GIT_COMMIT", "6eb72d2", 1);
  EXPECT_EQ(git_commit(), "6eb72d2");
  ::setenv("SPARSEGEN_GIT_COMMIT", "", 1);
  EXPECT_EQ(git_commit(), "unknown");
  ::unsetenv("SPARSEGEN_GIT_COMMIT");
  EXPECT_EQ(git_commit(), "unknown");
  if (saved != nullptr) ::setenv("SPARSEGEN_GIT_COMMIT", keep.c_str(), 1);
}

TEST(BenchReport, CaseKeyFieldsAndJson) {
  const CaseKey k = case_key("llm", "llm 8x10 random 50%", 8, 10, 20, "random", 8, "fp16");
  EXPECT_DOUBLE_EQ(k.sparsity, 0.75);
  EXPECT_EQ(case_key("file", "empty", 0, 5, 0, "", 1, "fp32").sparsity, 0.0);
  nlohmann::json j;
  put_case_key(j, k);
  EXPECT_EQ(j["matrix"], "llm 8x10 random 50%");
  EXPECT_EQ(j["nnz"], 20);
  EXPECT_EQ(j["n"], 8);
  EXPECT_EQ(j["dtype"], "fp16");
  CaseResult c;
  static_cast<CaseKey&>(c) = k;
  EXPECT_EQ(to_json(c)["pruning"], "random");
}

TEST(BenchReport, SpeedupIsBaselineOverOurs) {
  const CaseResult c = make_case(0.5, 8, 0.01, 0.02, 0.2);
  ASSERT_TRUE(c.speedup_vs_cublas());
  EXPECT_NEAR(*c.speedup_vs_cublas(), 2.0, 1e-12);
  EXPECT_NEAR(*c.speedup_vs_cusparse(), 20.0, 1e-12);
  CaseResult missing = c;
  missing.cublas = MethodResult{};
  missing.cublas.error = "skipped: too large";
  EXPECT_FALSE(missing.speedup_vs_cublas());
  EXPECT_EQ(missing.cublas.gbps(), 0.0);
}

TEST(BenchReport, BandwidthIsBytesOverMedian) {
  EXPECT_NEAR(timed(0.5, 1e9).gbps(), 2000.0, 1e-9);  // 1 GB in 0.5 ms = 2 TB/s
}

TEST(BenchReport, GroupsBySparsityAndN) {
  std::vector<CaseResult> cases = {make_case(0.5, 8, 1, 2, 10), make_case(0.5, 8, 1, 8, 40),
                                   make_case(0.7, 8, 1, 3, 30), make_case(0.5, 32, 1, 1, 1)};
  cases[2].sparsity = 0.7000001;  // rounding to 2 digits
  CaseResult ss = make_case(0.99, 32, 2, 1, 8);
  ss.suite = "suitesparse";
  cases.push_back(ss);
  CaseResult no_dense = make_case(0.5, 8, 1, 1, 90);
  no_dense.cublas.error = "skipped";
  cases.push_back(no_dense);
  const std::vector<GroupSummary> g = summarize_groups(cases);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].group, "llm s=0.50 N=8");
  EXPECT_EQ(g[0].cases, 3);
  EXPECT_EQ(g[0].with_cublas, 2);
  EXPECT_NEAR(g[0].geomean_vs_cublas, 4.0, 1e-9);  // sqrt(2 * 8)
  EXPECT_NEAR(g[0].geomean_vs_cusparse, std::cbrt(10.0 * 40.0 * 90.0), 1e-9);
  EXPECT_EQ(g[1].group, "llm s=0.70 N=8");
  EXPECT_EQ(g[2].group, "llm s=0.50 N=32");
  EXPECT_EQ(g[3].group, "suitesparse N=32");
  EXPECT_NEAR(g[3].geomean_vs_cublas, 0.5, 1e-12);
  EXPECT_NEAR(g[3].median_ours_gbps, 1e6 / 2e6, 1e-12);
  const std::string table = format_summary(g);
  EXPECT_NE(table.find("llm s=0.50 N=8"), std::string::npos) << table;
  EXPECT_NE(table.find("4.00x (2/3)"), std::string::npos) << table;
}

// The small suite's count: cases where ours is at least as fast as cuSPARSE (a tie counts).
TEST(BenchReport, CountsCasesAtLeastAsFastAsCusparse) {
  std::vector<CaseResult> cases = {make_case(0.5, 8, 1, 2, 0.9), make_case(0.5, 8, 1, 2, 1.0),
                                   make_case(0.5, 8, 1, 2, 2.0)};
  for (CaseResult& c : cases) c.suite = "small";
  CaseResult no_cusparse = make_case(0.5, 8, 1, 2, 1);
  no_cusparse.suite = "small";
  no_cusparse.cusparse.error = "no configuration passed";
  cases.push_back(no_cusparse);
  const std::vector<GroupSummary> g = summarize_groups(cases);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].group, "small N=8");
  EXPECT_EQ(g[0].with_cusparse, 3);
  EXPECT_EQ(g[0].not_slower_than_cusparse, 2);
  EXPECT_NE(format_summary(g).find(" 2/3 "), std::string::npos) << format_summary(g);
}

// Which family ours was, per group: the tuner may return a library candidate.
TEST(BenchReport, CountsWhatTheTunerPicked) {
  std::vector<CaseResult> cases = {make_case(0.5, 8, 1, 2, 10), make_case(0.5, 8, 1, 8, 40),
                                   make_case(0.5, 8, 1, 3, 30), make_case(0.5, 8, 1, 3, 30)};
  cases[0].ours.impl = "general;block=nnz:128;warp=nnz:32";
  cases[1].ours.impl = "dense;lib=cublaslt";
  cases[2].ours.impl = "general;block=rows:4";
  cases[3].ours.error = "check failed";  // no time: not counted
  const std::vector<GroupSummary> g = summarize_groups(cases);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].picks, (std::map<std::string, int>{{"general", 2}, {"dense", 1}}));
  EXPECT_EQ(format_picks(g[0].picks), "general 2, dense 1");
  EXPECT_NE(format_summary(g).find("general 2, dense 1"), std::string::npos);
  EXPECT_EQ(family_of_impl("macko;delta=8"), "macko");
  EXPECT_EQ(family_of_impl(""), "");
}

TEST(BenchReport, JsonHasTimesRatiosAndErrors) {
  CaseResult c = make_case(0.9, 1, 0.01, 0.04, 0.02);
  c.cusparse = MethodResult{};
  c.cusparse.error = "no configuration passed or was supported";
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["group"], "llm s=0.90 N=1");
  EXPECT_DOUBLE_EQ(j["ours"]["median_ms"].get<double>(), 0.01);
  EXPECT_NEAR(j["speedup_vs_cublas"].get<double>(), 4.0, 1e-12);
  EXPECT_TRUE(j["speedup_vs_cusparse"].is_null());
  EXPECT_EQ(j["cusparse"]["error"], "no configuration passed or was supported");
  EXPECT_FALSE(j["cusparse"].contains("median_ms"));
}

// ---------------------------------------------------------------- the executable

using BenchRun = sparsegen::testing::CommandRun;

BenchRun bench(const std::string& args) {
  return sparsegen::testing::run_command(std::string("'") + SPARSEGEN_BENCH + "' " + args +
                                         " 2>&1");
}

std::string tiny_matrix() {
  const fs::path p =
      fs::temp_directory_path() / ("sparsegen_bench_test_" + std::to_string(getpid()) + ".mtx");
  std::ofstream(p) << "%%MatrixMarket matrix coordinate real general\n"
                      "4 5 6\n1 1 1.5\n1 3 -2\n2 2 0.5\n3 5 1\n4 1 -1\n4 4 2.25\n";
  return p.string();
}

TEST(BenchCli, BadFlagsExit2) {
  for (const char* args : {"--no-such-flag", "", "--suite llm --schedule x", "m.mtx --suite llm",
                           "--repeats abc --suite llm", "--family nope --suite llm"}) {
    const BenchRun r = bench(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
  }
  EXPECT_NE(bench("").out.find("give a matrix FILE"), std::string::npos);
}

TEST(BenchCli, BadValuesExit1NamingTheFlag) {
  const std::string m = tiny_matrix();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--suite nope", "--suite"},
      {m + " -n 0", "-n"},
      {m + " -n 8 --dtype fp8", "--dtype"},
      {m + " -n 8 --best-of -1", "--best-of"},
      {m + " -n 8 --repeats 0", "--repeats"},
      {m + " -n 8 --warmup -2", "--warmup"},
      {m + " -n 8 --max-dense-gib 0", "--max-dense-gib"},
      {m + " -n 8 --time-limit -1", "--time-limit"},
      {m, "-n"},
      {m + " -n 8 --schedule not-a-schedule", "--schedule"},
      {m + " -n 8 --json /nonexistent-dir/x.json", "--json"},
      {"--suite suitesparse --data /nonexistent-dir", "--data"},
      {"--suite small --data /nonexistent-dir", "--data"},
      {"--suite small --max-nnz 0", "--max-nnz"},
      {"/nonexistent-dir/a.mtx -n 8", "/nonexistent-dir/a.mtx"},
  };
  for (const auto& [args, flag] : cases) {
    const BenchRun r = bench(args);
    EXPECT_EQ(r.rc, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(flag), std::string::npos) << args << "\n" << r.out;
  }
  fs::remove(m);
}

// Runs `exe ARGS` for each (ARGS, text) case: it must exit with `rc` and print `text`.
void expect_cli_errors(const char* exe,
                       const std::vector<std::pair<std::string, std::string>>& cases, int rc) {
  for (const auto& [args, text] : cases) {
    const BenchRun r =
        sparsegen::testing::run_command(std::string("'") + exe + "' " + args + " 2>&1");
    EXPECT_EQ(r.rc, rc) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(text), std::string::npos) << args << "\n" << r.out;
  }
}

// sparsegen-macko-bench checks its case flags before it looks for a GPU: a bad value exits 1 and
// names the flag on any machine.
TEST(MackoBenchCli, BadCaseFlagsExit1NamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--shapes 4096", "--shapes"},
      {"--shapes 4096x", "--shapes"},
      {"--shapes 0x4096", "--shapes"},
      {"--methods nm", "--methods"},
      {"--schedule not-a-schedule", "not-a-schedule"},
      {"--schedule 'bitmap_tc;warps=4;mt=1;kt=1;ksplit=1;stages=2'", "--schedule"},
  };
  expect_cli_errors(SPARSEGEN_MACKO_BENCH, cases, 1);
  // CLI11 range check: a sparsity of 1 is a usage error (exit 2, the flag named).
  const BenchRun r = sparsegen::testing::run_command(std::string("'") + SPARSEGEN_MACKO_BENCH +
                                                     "' --sparsities 1 2>&1");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("--sparsities"), std::string::npos) << r.out;
}

// sparsegen-slide-bench checks its type and pattern lists before it looks for a GPU: an unknown
// type (bf16 once fell through to fp8) or a pattern that is not (2N-2):2N exits 2 naming the
// flag and the value, on any machine.
TEST(SlideBenchCli, BadTypesAndPatternsExit2NamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--types fp32", "--types: 'fp32'"},
      {"--types fp16 e5m2", "--types: 'e5m2'"},
      {"--patterns 6:9", "--patterns: '6:9'"},
      {"--patterns 2:4x", "--patterns: '2:4x'"},
      {"--patterns 16:18", "--patterns: '16:18'"},
      {"--patterns eight", "--patterns: 'eight'"},
      {"--schedule not-a-schedule", "not-a-schedule"},
  };
  expect_cli_errors(SPARSEGEN_SLIDE_BENCH, cases, 2);
}

TEST(BenchCli, WithoutGpuExits3WithAClearMessage) {
  std::string why;
  if (cuda::driver_available(&why)) GTEST_SKIP() << "a GPU is present (GpuBench covers it)";
  const std::string m = tiny_matrix();
  const BenchRun r = bench(m + " -n 8");
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_NE(r.out.find("no usable GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing measured"), std::string::npos) << r.out;
  fs::remove(m);
}

TEST(BenchCli, DryRunBuildsOurKernelWithoutGpu) {
  const std::string m = tiny_matrix();
  const fs::path json =
      fs::temp_directory_path() / ("sparsegen_bench_dry_" + std::to_string(getpid()) + ".json");
  const BenchRun r = bench(m + " -n 1,8 --dry-run --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["n"], 1);
  EXPECT_EQ(j["cases"][1]["n"], 8);
  EXPECT_EQ(j["cases"][0]["nnz"], 6);
  EXPECT_FALSE(j["cases"][1]["ours"]["impl"].get<std::string>().empty()) << j.dump(1);
  EXPECT_EQ(j["cases"][1]["ours"]["error"], "dry run: not measured") << j.dump(1);
  fs::remove(json);
  fs::remove(m);
}

// The small suite: SuiteSparse and edge matrices under --max-nnz nonzeros, N = 1, 8, 32; empty
// shapes and larger matrices are listed as skipped with the reason; --filter takes any of a list.
TEST(BenchCli, SmallSuiteTakesBothFoldersUnderMaxNnz) {
  const fs::path data =
      fs::temp_directory_path() / ("sparsegen_bench_small_" + std::to_string(getpid()));
  fs::create_directories(data / "suitesparse" / "A");
  fs::create_directories(data / "edge" / "B");
  std::ofstream(data / "suitesparse" / "A" / "two.mtx")
      << "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2\n";
  std::ofstream(data / "suitesparse" / "A" / "four.mtx")
      << "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 1\n1 2 2\n2 1 3\n2 2 4\n";
  std::ofstream(data / "edge" / "B" / "empty.mtx")
      << "%%MatrixMarket matrix coordinate real general\n4 4 0\n";
  std::ofstream(data / "edge" / "B" / "nocols.mtx")
      << "%%MatrixMarket matrix array real general\n3 0\n";
  const fs::path json = data / "small.json";
  const BenchRun r = bench("--suite small --max-nnz 4 --dry-run --no-plot --data " + data.string() +
                           " --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  std::vector<std::string> names;
  for (const auto& c : j["cases"]) {
    names.push_back(c["matrix"].get<std::string>() + " N=" + std::to_string(c["n"].get<int>()));
    EXPECT_EQ(c["group"], "small N=" + std::to_string(c["n"].get<int>()));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"edge/B/empty.mtx N=1", "edge/B/empty.mtx N=32",
                                      "edge/B/empty.mtx N=8", "suitesparse/A/two.mtx N=1",
                                      "suitesparse/A/two.mtx N=32", "suitesparse/A/two.mtx N=8"}))
      << j.dump(1);
  const std::string skipped = j["skipped"].dump();
  EXPECT_NE(skipped.find("nnz 4 >= --max-nnz 4"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("no product to time"), std::string::npos) << skipped;
  const BenchRun f = bench("--suite small --max-nnz 4 --dry-run --no-plot -n 8 --data " +
                           data.string() + " --filter two.mtx,empty --json " + json.string());
  ASSERT_EQ(f.rc, 0) << f.out;
  j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["cases"].size(), 2u) << j.dump(1);
  fs::remove_all(data);
}

// As tune: a measuring run builds the model's top k, then the library candidates (cuSPARSE's
// algorithms for fp32); --generated-only leaves them out and says so in the JSON.
TEST(BenchCli, LibraryCandidatesFollowTheRankedOnesUnlessGeneratedOnly) {
  const std::string m = tiny_matrix();
  const fs::path json =
      fs::temp_directory_path() / ("sparsegen_bench_gen_" + std::to_string(getpid()) + ".json");
  auto candidates = [&](const std::string& extra, nlohmann::json* doc) {
    const BenchRun r = bench(m + " -n 8 --dtype fp32 --best-of 2 --dry-run --no-plot " + extra +
                             " --json " + json.string());
    EXPECT_EQ(r.rc, 0) << r.out;
    std::ifstream f(json);
    *doc = nlohmann::json::parse(f);
    std::vector<std::string> out;
    for (const auto& t : (*doc)["cases"][0]["ours"]["details"]["candidates"])
      out.push_back(t["schedule"].get<std::string>());
    return out;
  };
  nlohmann::json doc;
  const std::vector<std::string> all = candidates("", &doc);
  ASSERT_EQ(all.size(), 6u) << doc.dump(1);
  // The model's two best generated schedules (general or, on this tiny matrix, baked) first.
  EXPECT_NE(all[0].rfind("cusparse;", 0), 0u) << all[0];
  EXPECT_NE(all[1].rfind("cusparse;", 0), 0u) << all[1];
  EXPECT_EQ(all[2], "cusparse;alg=default");
  EXPECT_EQ(all[5], "cusparse;alg=alg3");
  const std::vector<std::string> generated = candidates("--generated-only", &doc);
  ASSERT_EQ(generated.size(), 2u) << doc.dump(1);
  EXPECT_NE(doc["ours_selection"].get<std::string>().find("generated kernels only"),
            std::string::npos)
      << doc.dump(1);
  fs::remove(json);
  fs::remove(m);
}

// --json FILE.json also writes the plot FILE.svg (one category per case); --no-plot writes none.
// Off a terminal there is no progress bar: no control characters in the output.
TEST(BenchCli, DryRunWritesThePlotNextToTheJson) {
  const std::string m = tiny_matrix();
  const fs::path dir =
      fs::temp_directory_path() / ("sparsegen_bench_plot_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "run.json", svg = dir / "run.svg";
  const BenchRun r = bench(m + " -n 1,8 --dry-run --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("plot: " + svg.string()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  std::ifstream f(svg);
  ASSERT_TRUE(f) << svg;
  const std::string text{std::istreambuf_iterator<char>(f), {}};
  EXPECT_EQ(sparsegen::testing::xml_problem(text), "") << text;
  EXPECT_NE(text.find(m + " N=1</text>"), std::string::npos) << text;
  EXPECT_NE(text.find(m + " N=8</text>"), std::string::npos) << text;
  EXPECT_NE(text.find(">file N=8</text>"), std::string::npos) << text;  // its summary group
  fs::remove(svg);

  const BenchRun none = bench(m + " -n 8 --dry-run --no-plot --json " + json.string());
  ASSERT_EQ(none.rc, 0) << none.out;
  EXPECT_TRUE(fs::exists(json));
  EXPECT_FALSE(fs::exists(svg));
  EXPECT_EQ(none.out.find("plot:"), std::string::npos) << none.out;
  fs::remove_all(dir);
  fs::remove(m);
}

// On a terminal the progress bar is drawn on stderr (cut to the terminal's width) and cleared
// before every line of output, so no line keeps it.
TEST(BenchCli, ProgressBarOnATerminalIsClearedBeforeEveryLine) {
  const std::string m = tiny_matrix();
  for (const char* mode : {"", "--exhaustive"}) {
    std::vector<std::string> argv = {SPARSEGEN_BENCH, m,      "-n",       "1,8",
                                     "--dtype",       "fp16", "--dry-run"};
    if (*mode) argv.push_back(mode);
    const BenchRun r = sparsegen::testing::run_on_terminal(argv, {}, 60);
    ASSERT_EQ(r.rc, 0) << mode << "\n" << r.out;
    EXPECT_NE(r.out.find("\r\033[K[........................] 0/2 cases"), std::string::npos)
        << mode << "\n"
        << r.out;
    for (size_t at = r.out.find("\033[K["); at != std::string::npos;
         at = r.out.find("\033[K[", at + 1)) {
      if (r.out[at + 4] != '#' && r.out[at + 4] != '.') continue;  // a line of output, not a bar
      const size_t end = std::min(r.out.find_first_of("\r\n", at), r.out.size());
      EXPECT_LE(end - at - 3, 59u) << r.out.substr(at, end - at);
    }
    EXPECT_EQ(sparsegen::testing::lines_keeping_a_progress_bar(r.out), std::vector<std::string>{})
        << mode << "\n"
        << r.out;
    EXPECT_NE(r.out.find("[  2/2]"), std::string::npos) << mode << "\n" << r.out;
  }
  fs::remove(m);
}

TEST(BenchCli, ExhaustiveFlagsAreValidated) {
  const std::string m = tiny_matrix();
  for (const char* args : {" -n 8 --top-k 3", " -n 8 --exhaustive-limit 5",
                           " -n 8 --exhaustive --best-of 2", " -n 8 --exhaustive --schedule x"}) {
    const BenchRun r = bench(m + args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" -n 8 --exhaustive --exhaustive-limit 0", "--exhaustive-limit"},
      {" -n 8 --exhaustive --exhaustive-limit 100001", "--exhaustive-limit"},
      {" -n 8 --exhaustive --top-k -1", "--top-k"},
      {" -n 8 --exhaustive --top-k 1001", "--top-k"},
      {" -n 8 --best-of 4 --refine -2", "--refine"},
  };
  for (const auto& [args, flag] : cases) {
    const BenchRun r = bench(m + args);
    EXPECT_EQ(r.rc, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(flag), std::string::npos) << args << "\n" << r.out;
  }
  fs::remove(m);
}

// --exhaustive --dry-run: enumerates what the tuner would search and says how many schedules a
// GPU run would measure (capped when the enumeration exceeds the limit), measuring nothing.
TEST(BenchCli, ExhaustiveDryRunReportsTheComparisonSet) {
  const std::string m = tiny_matrix();
  const fs::path json =
      fs::temp_directory_path() / ("sparsegen_bench_exh_" + std::to_string(getpid()) + ".json");
  const BenchRun r = bench(m +
                           " -n 1,8 --dtype fp16 --exhaustive --exhaustive-limit 3 --dry-run "
                           "--json " +
                           json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("search quality"), std::string::npos) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["mode"], "exhaustive");
  EXPECT_FALSE(j["date"].get<std::string>().empty());
  EXPECT_NE(j["command"].get<std::string>().find("--exhaustive"), std::string::npos);
  const auto& sq = j["search_quality"];
  EXPECT_EQ(sq["top_k"], 8);
  EXPECT_EQ(sq["exhaustive_limit"], 3);
  ASSERT_EQ(sq["cases"].size(), 2u);
  for (const auto& c : sq["cases"]) {
    const int enumerated = c["comparison"]["enumerated"].get<int>();
    EXPECT_GT(enumerated, 3) << c.dump(1);
    EXPECT_TRUE(c["comparison"]["capped"].get<bool>()) << c.dump(1);
    EXPECT_FALSE(c["comparison"]["exhaustive"].get<bool>()) << c.dump(1);
    EXPECT_EQ(c["comparison"]["selected"], 3) << c.dump(1);
    EXPECT_TRUE(c["ratio"].is_null());
  }
  EXPECT_EQ(sq["summary"]["cases"], 2);
  EXPECT_FALSE(sq["summary"]["target_met"].get<bool>());
  fs::remove(json);
  fs::remove(m);
}

// On the GPU machine: a tiny real run, every method checked and timed.
TEST(GpuBench, TinyMatrixAllMethodsMeasured) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const std::string m = tiny_matrix();
  const fs::path json =
      fs::temp_directory_path() / ("sparsegen_bench_gpu_" + std::to_string(getpid()) + ".json");
  const BenchRun r =
      bench(m + " -n 1,8 --dtype fp16 --best-of 2 --repeats 5 --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["cases"].size(), 2u);
  for (const auto& c : j["cases"]) {
    for (const char* method : {"ours", "cublas", "cusparse"}) {
      EXPECT_TRUE(c[method]["checked"].get<bool>()) << method << " " << c.dump(1);
      EXPECT_GT(c[method].value("median_ms", 0.0), 0.0) << method << " " << c.dump(1);
    }
  }
  EXPECT_FALSE(j["versions"]["cublas"].get<std::string>().empty());
  fs::remove(json);
  fs::remove(m);
}

// On the GPU machine: --exhaustive on a tiny matrix measures every enumerated schedule (no cap)
// and the search's pick is among them, so the ratio exists and is at most ~1.
TEST(GpuBench, ExhaustiveTinyMatrix) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const std::string m = tiny_matrix();
  const fs::path json =
      fs::temp_directory_path() / ("sparsegen_bench_gexh_" + std::to_string(getpid()) + ".json");
  const BenchRun r = bench(m +
                           " -n 8 --dtype fp16 --exhaustive --top-k 2 --exhaustive-limit "
                           "100000 --repeats 5 --json " +
                           json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  const auto& c = j["search_quality"]["cases"].at(0);
  EXPECT_TRUE(c["comparison"]["exhaustive"].get<bool>()) << c.dump(1);
  EXPECT_GT(c["comparison"]["measured"].get<int>(), 2) << c.dump(1);
  ASSERT_FALSE(c["ratio"].is_null()) << c.dump(1);
  EXPECT_GT(c["ratio"].get<double>(), 0.0);
  EXPECT_LE(c["ratio"].get<double>(), 1.0 + 1e-9);
  EXPECT_GT(c["search"]["seconds"].get<double>(), 0.0);
  fs::remove(json);
  fs::remove(m);
}

}  // namespace
}  // namespace sparsegen::bench
