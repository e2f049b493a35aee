// Runs the built `sparsegen` binary (SPARSEGEN_CLI) on temporary files: exit codes, messages that
// name the file/line or the flag, `inspect --json` content, and gen -> inspect round trips.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;

using CliRun = sparsegen::testing::CommandRun;

// Runs `sparsegen ARGS` with stderr merged into stdout (or dropped when `keep_stderr` is false,
// so JSON parses cleanly).
CliRun run(const std::string& args, bool keep_stderr = true) {
  return sparsegen::testing::run_command(std::string("'") + SPARSEGEN_CLI + "' " + args +
                                         (keep_stderr ? " 2>&1" : " 2>/dev/null"));
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("sparsegen_cli_test_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
  }
  static nlohmann::json parse(const CliRun& r) {
    EXPECT_EQ(r.rc, 0) << r.out;
    try {
      return nlohmann::json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out;
      return {};
    }
  }

  static nlohmann::json parse_file(const std::string& p) {
    try {
      return nlohmann::json::parse(read(p));
    } catch (const std::exception& e) {
      ADD_FAILURE() << p << ": not JSON: " << e.what();
      return {};
    }
  }

  fs::path dir_;
};

TEST_F(Cli, GenToMtxThenInspectJson) {
  const std::string out = path("w.mtx");
  CliRun g = run("gen --shape 64x96 --method nm --nm 2:4 --seed 3 -o " + out);
  ASSERT_EQ(g.rc, 0) << g.out;
  EXPECT_NE(g.out.find("64 x 96, nnz 3072"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("sparsity 0.5000"), std::string::npos) << g.out;

  nlohmann::json j = parse(run("inspect --json " + out, false));
  EXPECT_EQ(j["rows"], 64);
  EXPECT_EQ(j["cols"], 96);
  EXPECT_EQ(j["nnz"], 3072);
  EXPECT_DOUBLE_EQ(j["density"].get<double>(), 0.5);
  EXPECT_EQ(j["format"], "matrix-market");
  EXPECT_EQ(j["field"], "real");
  EXPECT_EQ(j["pattern_only"], false);
  EXPECT_EQ(j["features"]["nm"], "2:4");
  EXPECT_EQ(j["features"]["row_uniform"], true);
  EXPECT_EQ(j["features"]["row_min"], 48);
  for (const char* k : {"duplicate_entries", "non_finite_values", "out_of_range_values",
                        "inexact_integer_values", "synthesized_values"})
    EXPECT_EQ(j["warnings"][k]["count"], 0) << k;
  EXPECT_EQ(j["conversion"]["fp16"]["out_of_range"], 0);
  EXPECT_EQ(j["conversion"]["bf16"]["out_of_range"], 0);
}

TEST_F(Cli, GenToContainerRoundTripAndDeterminism) {
  const std::string a = path("a.safetensors"), b = path("b.safetensors"), c = path("c.safetensors");
  const std::string flags = " --rows 128 --cols 64 --method magnitude --sparsity 0.7 --seed 5 -o ";
  ASSERT_EQ(run("gen" + flags + a).rc, 0);
  ASSERT_EQ(run("gen" + flags + b).rc, 0);
  ASSERT_EQ(run("gen --rows 128 --cols 64 --method magnitude --sparsity 0.7 --seed 6 -o " + c).rc,
            0);
  EXPECT_EQ(read(a), read(b));
  EXPECT_NE(read(a), read(c));
  nlohmann::json j = parse(run("inspect --json " + a, false));
  EXPECT_EQ(j["format"], "sparsegen-csr");
  EXPECT_EQ(j["nnz"], 2458);  // round(0.3 * 128 * 64)
  EXPECT_EQ(j["features"]["nm"], "none");
  // Text report too.
  CliRun t = run("inspect " + a);
  ASSERT_EQ(t.rc, 0) << t.out;
  EXPECT_NE(t.out.find("128 x 64"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("N:M structure"), std::string::npos) << t.out;
}

TEST_F(Cli, GenMethods) {
  struct Case {
    std::string flags;
    int64_t nnz;
  };
  for (const Case& c : std::vector<Case>{
           {"--method random --sparsity 0.5", 2048},
           {"--method row-magnitude --sparsity 0.75", 1024},
           {"--method nm --nm 6:8", 3072},
           {"--method block --block 8 --sparsity 0.5", 2048},
       }) {
    const std::string out = path("m.mtx");
    CliRun g = run("gen --shape 64x64 " + c.flags + " -o " + out);
    ASSERT_EQ(g.rc, 0) << c.flags << "\n" << g.out;
    EXPECT_NE(g.out.find("nnz " + std::to_string(c.nnz) + ","), std::string::npos)
        << c.flags << "\n"
        << g.out;
  }
}

TEST_F(Cli, BadFlagValuesAreUserErrorsNamingTheFlag) {
  const std::string out = " -o " + path("x.mtx");
  struct Case {
    std::string args, needle;
  };
  for (const Case& c : std::vector<Case>{
           {"gen --shape 8x8 --method magnitude --sparsity 1.5", "--sparsity 1.5"},
           {"gen --shape 8x8 --method magnitude --sparsity -0.5", "--sparsity -0.5"},
           {"gen --shape 8x8 --method nope --sparsity 0.5", "--method nope"},
           {"gen --shape 8x8 --method nm --nm 5:4", "--nm 5:4"},
           {"gen --shape 8x8 --method nm --nm 2:4 --sparsity 0.3", "--sparsity 0.3"},
           {"gen --shape 8x --method nm --nm 2:4", "--shape 8x"},
           {"gen --shape 0x8 --method nm --nm 2:4", "--shape 0x8"},
           {"gen --shape 8x12 --method block --block 8 --sparsity 0.5", "--block 8"},
           {"gen --shape 8x8 --method magnitude --sparsity 0.5 --nm 2:4", "--nm 2:4"},
       }) {
    CliRun r = run(c.args + out);
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.args << "\n" << r.out;
  }
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  for (const Case& c : std::vector<Case>{
           {"tune " + ex + " -n 8 --refine -2", "--refine"},
           {"calibrate --large-shapes 12x3", "--large-shapes"},
           {"calibrate --large-shapes 4096x", "--large-shapes"},
           {"calibrate --from-samples " + path("none.json"), "none.json"},
       }) {
    CliRun r = run(c.args);
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.args << "\n" << r.out;
  }
  CliRun r = run("gen --shape 8x8 --method nm --nm 2:4 -o " + path("x.bin"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("x.bin"), std::string::npos) << r.out;
  r = run("gen --shape 8x8 --method nm --nm 2:4 -o " + path("no/such/dir/x.mtx"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
}

// calibrate --from-timings: times measured elsewhere become samples (features computed here) and
// join the fit; a bad row names the file and the row.
TEST_F(Cli, CalibrateFromTimingsAddsSamples) {
  const std::string src = SPARSEGEN_SOURCE_DIR;
  const std::string ex = src + "/examples/llm_512x128_magnitude80.mtx";
  // The device of the times: the shipped H200 model's profile, as a calibrate samples file holds
  // it.
  const std::string samples =
      write("samples.json",
            "{\"model_device\": " + read(src + "/costmodel/models/NVIDIA_H200_sm_90.json") +
                ", \"samples\": []}");
  const std::string s1 =
      "general;block=rows:1;warp=row;thread=nnz:1;warps=1;group=1;tcols=1;bcols=4;"
      "red=total,total,none;sort=0;pad=1;interleave=0;vec=1";
  const std::string s2 =
      "general;block=rows:4;warp=row;thread=nnz:1;warps=1;group=1;tcols=1;bcols=4;"
      "red=total,total,none;sort=0;pad=1;interleave=0;vec=1";
  const std::string timings =
      write("timings.json", "{\"dtype\": \"fp32\", \"rows\": [[\"" + ex + "\", 8, \"" + s1 +
                                "\", 5.5], [\"" + ex + "\", 8, \"" + s2 + "\", 4.25]]}");
  const std::string model = path("model.json");
  CliRun r = run("calibrate --from-samples " + samples + " --from-timings " + timings + " --out " +
                 model + " --samples " + path("merged.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("2 samples from the timings"), std::string::npos) << r.out;
  const std::string merged = read(path("merged.json"));
  EXPECT_NE(merged.find("@small"), std::string::npos);  // 13107 nonzeros: the small regime
  EXPECT_NE(merged.find("4.25"), std::string::npos);

  const std::string bad = write(
      "bad.json", "{\"rows\": [[\"" + ex + "\", 8, \"" + s1 + "\", 5.5], [\"" + ex + "\", 8, 3]]}");
  r = run("calibrate --from-samples " + samples + " --from-timings " + bad + " --out " + model);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("bad.json: row 1"), std::string::npos) << r.out;
  r = run("calibrate --from-timings " + timings + " --out " + model);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("--from-timings: needs --from-samples"), std::string::npos) << r.out;
}

TEST_F(Cli, UsageErrorsExitTwo) {
  const std::string out = " -o " + path("x.mtx");
  for (const std::string& args : std::vector<std::string>{
           "", "inspect", "inspect a.mtx --bogus",
           "gen --shape 8x8 --method magnitude" + out,  // --sparsity missing
           "gen --shape 8x8 --method nm" + out,         // --nm missing
           "gen --shape 8x8 --rows 8 --method nm --nm 2:4" + out,
           "gen --rows 8 --method nm --nm 2:4" + out,  // --cols missing
           "gen --shape 8x8 --sparsity 0.5",           // --method and -o missing
       }) {
    CliRun r = run(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
  }
}

TEST_F(Cli, InspectMissingFile) {
  const std::string missing = path("missing.mtx");
  CliRun r = run("inspect " + missing);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(missing), std::string::npos) << r.out;
}

TEST_F(Cli, InspectBadMtxNamesFileAndLine) {
  const std::string f = write("bad.mtx",
                              "%%MatrixMarket matrix coordinate real general\n"
                              "3 3 2\n"
                              "1 1 1.0\n"
                              "4 1 2.0\n");  // row 4 > 3 on line 4
  CliRun r = run("inspect " + f);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(f + ":4"), std::string::npos) << r.out;
}

TEST_F(Cli, InspectReportsWarningsAndStrict) {
  const std::string f = write("dup.mtx",
                              "%%MatrixMarket matrix coordinate real general\n"
                              "2 3 4\n"
                              "1 1 1.0\n"
                              "2 3 70000\n"  // > fp16 max 65504
                              "1 1 2.0\n"    // duplicate of line 3
                              "2 2 nan\n");
  nlohmann::json j = parse(run("inspect --json " + f, false));
  EXPECT_EQ(j["nnz"], 3);
  EXPECT_EQ(j["warnings"]["duplicate_entries"]["count"], 1);
  EXPECT_NE(j["warnings"]["duplicate_entries"]["first"].get<std::string>().find(f + ":5"),
            std::string::npos)
      << j.dump(2);
  EXPECT_EQ(j["warnings"]["non_finite_values"]["count"], 1);
  EXPECT_EQ(j["conversion"]["fp16"]["out_of_range"], 1);
  EXPECT_EQ(j["conversion"]["fp16"]["first"]["row"], 2);
  EXPECT_EQ(j["conversion"]["fp16"]["first"]["col"], 3);
  EXPECT_EQ(j["conversion"]["bf16"]["out_of_range"], 0);

  CliRun text = run("inspect " + f);
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("duplicate_entries      1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("first at (2, 3)"), std::string::npos) << text.out;

  CliRun strict = run("inspect --strict " + f);
  EXPECT_EQ(strict.rc, 1);
  EXPECT_NE(strict.out.find(f + ":5"), std::string::npos) << strict.out;
}

TEST_F(Cli, InspectComplex) {
  const std::string f = write("c.mtx",
                              "%%MatrixMarket matrix coordinate complex general\n"
                              "2 2 2\n"
                              "1 1 1.0 2.0\n"
                              "2 2 3.0 1e6\n");
  nlohmann::json j = parse(run("inspect --json " + f, false));
  EXPECT_EQ(j["field"], "complex");
  EXPECT_EQ(j["nnz"], 2);
  EXPECT_EQ(j["conversion"]["fp16"]["out_of_range"], 1);
  EXPECT_EQ(j["conversion"]["fp16"]["first"]["imaginary"], true);
}

// A float32 .npy written by hand (format 1.0: magic, version, header length, padded dict).
std::string npy_f32(int rows, int cols, const std::vector<float>& data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return out;
}

TEST_F(Cli, PruneNpy) {
  std::vector<float> w(8 * 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  const std::string npy = write("w.npy", npy_f32(8, 8, w));
  const std::string out = path("p.mtx");
  CliRun r = run("prune " + npy + " --method nm --nm 2:4 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("8 x 8, nnz 32"), std::string::npos) << r.out;
  nlohmann::json j = parse(run("inspect --json " + out, false));
  EXPECT_EQ(j["features"]["nm"], "2:4");
  // The file records how it was made.
  EXPECT_NE(read(out).find("sparsegen prune"), std::string::npos);

  r = run("prune " + npy + " --method magnitude --sparsity 2 -o " + out);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--sparsity 2"), std::string::npos) << r.out;
  r = run("prune " + path("none.npy") + " --method nm --nm 2:4 -o " + out);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("none.npy"), std::string::npos) << r.out;
}

// A two-tensor .safetensors written by hand: "a" F32 [4, 8], "b" F32 [2, 4].
std::string safetensors_two_tensors() {
  std::vector<float> a(32), b(8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 13) % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) + 1.0f;
  std::string header = R"({"a":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]},)"
                       R"("b":{"dtype":"F32","shape":[2,4],"data_offsets":[128,160]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(float));
  return out;
}

TEST_F(Cli, PruneSafetensorsByTensorName) {
  const std::string st = write("w.safetensors", safetensors_two_tensors());
  const std::string out = path("p.safetensors");
  CliRun r = run("prune " + st + " --tensor a --method row-magnitude --sparsity 0.5 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("4 x 8, nnz 16"), std::string::npos) << r.out;
  nlohmann::json j = parse(run("inspect --json " + out, false));
  EXPECT_EQ(j["features"]["row_uniform"], true);
  EXPECT_EQ(j["features"]["row_min"], 4);

  r = run("prune " + st + " --tensor b --method magnitude --sparsity 0.25 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("2 x 4, nnz 6"), std::string::npos) << r.out;

  r = run("prune " + st + " --tensor nope --method magnitude --sparsity 0.5 -o " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("nope"), std::string::npos) << r.out;
}

TEST_F(Cli, BundledExampleInspects) {
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  ASSERT_TRUE(fs::exists(ex)) << ex;
  nlohmann::json j = parse(run("inspect --json " + ex, false));
  EXPECT_EQ(j["rows"], 512);
  EXPECT_EQ(j["cols"], 128);
  EXPECT_EQ(j["nnz"], 13107);  // round(0.2 * 512 * 128)
}

// --ranked: the cost model's order with its predictions, ascending, numbered; the library
// candidate (not ranked by the model) left out; a bad --arch names the flag.
TEST_F(Cli, SchedulesRankedByTheCostModel) {
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  const CliRun r = run("schedules " + ex + " -n 8 --dtype fp16 --ranked --limit 5");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("# ranked by the cost model"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("dense;lib="), std::string::npos) << r.out;
  std::vector<double> ms;
  for (size_t at = 0; (at = r.out.find(" ms  ", at)) != std::string::npos; at += 5) {
    const size_t start = r.out.rfind("  ", at - 1);
    ms.push_back(std::stod(r.out.substr(start, at - start)));
  }
  ASSERT_EQ(ms.size(), 5u) << r.out;
  EXPECT_TRUE(std::is_sorted(ms.begin(), ms.end())) << r.out;
  EXPECT_NE(r.out.find("\n   1  "), std::string::npos) << r.out;
  const CliRun bad = run("schedules " + ex + " -n 8 --ranked --arch gfx90a");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--arch"), std::string::npos) << bad.out;
}

// `sparsegen schedules` lists the space the tuner searches: for fp16 and N = 8 the general family,
// MACKO and bitmap_tc; for fp32 the general family only.
TEST_F(Cli, SchedulesListEveryFamily) {
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  const CliRun h = run("schedules " + ex + " -n 8 --dtype fp16");
  ASSERT_EQ(h.rc, 0) << h.out;
  for (const char* family : {"\ngeneral;", "\nmacko;", "\nbitmap_tc;"})
    EXPECT_NE(h.out.find(family), std::string::npos) << family << "\n" << h.out.substr(0, 400);
  const CliRun f = run("schedules " + ex + " -n 8 --dtype fp32");
  ASSERT_EQ(f.rc, 0) << f.out;
  EXPECT_EQ(f.out.find("bitmap_tc;"), std::string::npos);
  EXPECT_EQ(f.out.find("macko;"), std::string::npos);
  // The missing families say why.
  EXPECT_NE(f.out.find("# macko: none (MACKO needs fp16 or bf16 values, not fp32"),
            std::string::npos)
      << f.out.substr(0, 400);
  EXPECT_NE(f.out.find("# bitmap_tc: none (bitmap_tc runs on fp16/bf16 tensor cores, not fp32"),
            std::string::npos)
      << f.out.substr(0, 400);
}

// SlideSparse through the CLI: `gen --method nm --nm 6:8` writes a 6:8 weight; `inspect` shows the
// pattern; `schedules` offers slide in fp16 and in int8 (B and C in --io) and says why not for a
// matrix without a pattern; a bad --io is refused naming the flag.
TEST_F(Cli, SlideSixEightInt8AndWhyNot) {
  const std::string w = path("w68.mtx"), d = path("w50.mtx");
  ASSERT_EQ(run("gen --shape 64x200 --method nm --nm 6:8 -o " + w).rc, 0);
  ASSERT_EQ(run("gen --shape 64x200 --method magnitude --sparsity 0.5 -o " + d).rc, 0);
  const CliRun in = run("inspect " + w);
  ASSERT_EQ(in.rc, 0) << in.out;
  EXPECT_NE(in.out.find("pattern 6:8 (gamma 1.500"), std::string::npos) << in.out;
  for (const char* args :
       {" -n 16 --dtype fp16", " -n 16 --dtype int8 --io bf16", " -n 1 --dtype fp8_e4m3"}) {
    const CliRun h = run("schedules " + w + args);
    ASSERT_EQ(h.rc, 0) << args << "\n" << h.out;
    EXPECT_NE(h.out.find("\nslide;pattern=6:8;"), std::string::npos) << args << "\n"
                                                                     << h.out.substr(0, 400);
  }
  const CliRun q = run("schedules " + w + " -n 16 --dtype int8");
  EXPECT_EQ(q.out.find("\ngeneral;"), std::string::npos) << "general runs no quantized problem";
  const CliRun n = run("schedules " + d + " -n 16 --dtype fp16");
  EXPECT_NE(n.out.find("# slide: none (not (2N-2):2N for any N up to 8 (14:16): row "),
            std::string::npos)
      << n.out.substr(0, 600);
  const CliRun bad = run("schedules " + w + " -n 16 --dtype int8 --io fp32");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--io: expected fp16 or bf16"), std::string::npos) << bad.out;
}

// `gen --method rmat`: a Graph500 R-MAT matrix of 2^scale rows; shape and pruning flags are
// refused.
TEST_F(Cli, GenRmat) {
  const std::string out = path("rmat.mtx");
  const CliRun g = run("gen --method rmat --scale 8 --edge-factor 4 --seed 3 -o " + out);
  ASSERT_EQ(g.rc, 0) << g.out;
  EXPECT_NE(g.out.find("256 x 256"), std::string::npos) << g.out;
  nlohmann::json j = parse(run("inspect --json " + out, false));
  EXPECT_EQ(j["rows"], 256);
  EXPECT_LE(j["nnz"].get<int64_t>(), 1024);
  const CliRun s = run("gen --method rmat --scale 8 --sparsity 0.5 -o " + out);
  EXPECT_NE(s.rc, 0);
  EXPECT_NE(s.out.find("not --sparsity"), std::string::npos) << s.out;
  const CliRun r = run("gen --method rmat --scale 8 --rmat 0.6,0.3,0.3 -o " + out);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("exceeds 1"), std::string::npos) << r.out;
  const CliRun m = run("gen --shape 8x8 --method magnitude --sparsity 0.5 --scale 3 -o " + out);
  EXPECT_NE(m.rc, 0);
  EXPECT_NE(m.out.find("are for --method rmat"), std::string::npos) << m.out;
}

// Offline (an explicit --arch: no GPU is used even where one exists) the ranking says that no GPU
// is present and which device's shipped model ranks; nothing claims "this device is" some GPU.
TEST_F(Cli, OfflineTuneClaimsNoDevice) {
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  const CliRun r =
      run("tune " + ex + " -n 8 --dtype fp16 --arch sm_90 --cache-dir " + path("kcache"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("no GPU present"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("this device is"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

// `sparsegen bench ARGS` runs the sparsegen-bench next to sparsegen with ARGS unchanged.
TEST_F(Cli, BenchRunsTheSiblingBinary) {
#ifndef SPARSEGEN_HAS_BENCH
  GTEST_SKIP() << "sparsegen-bench is not built here (no cuBLAS/cuSPARSE)";
#else
  CliRun r = run("bench --help");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("sparsegen-bench"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--exhaustive"), std::string::npos) << r.out;
  // The benchmark's own validation and exit codes come through.
  r = run("bench --suite nope");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("--suite"), std::string::npos) << r.out;
  r = run("bench --no-such-flag");
  EXPECT_EQ(r.rc, 2) << r.out;
  // A positional first, then flags (with = and separate values), all passed through in order.
  const std::string m = write("t.mtx",
                              "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n"
                              "2 2 2\n3 3 3\n");
  const std::string json = path("dry.json");
  r = run("bench " + m + " -n 1,8 --dry-run --json=" + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(parse_file(json)["cases"].size(), 2u);
#endif
}

// Without sparsegen-bench beside it, `sparsegen bench` says where it looked.
TEST_F(Cli, BenchWithoutTheBinaryNamesThePath) {
  const fs::path alone = dir_ / "alone";
  fs::create_directories(alone);
  fs::copy_file(SPARSEGEN_CLI, alone / "sparsegen");
  fs::permissions(alone / "sparsegen", fs::perms::owner_all);
  std::string cmd = (alone / "sparsegen").string();  // appends: GCC 12's -Wrestrict misfires
  cmd.insert(0, 1, '\'');
  cmd.append("' bench --help 2>&1");
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find((alone / "sparsegen-bench").string()), std::string::npos) << out;
  EXPECT_NE(out.find("does not exist"), std::string::npos) << out;
}

// `calibrate` draws its progress bar only on a terminal, and clears it before every line it
// prints. SPARSEGEN_CALIBRATE_DRY=1: no GPU (kernels are built, not run); a 2 s budget keeps it
// short (whether anything gets measured in it does not matter here).
TEST_F(Cli, CalibrateProgressBarOnlyOnATerminal) {
  const std::string no_data = path("no-data"), model = path("model.json");
  const CliRun tty = sparsegen::testing::run_on_terminal(
      {SPARSEGEN_CLI, "calibrate", "--budget-seconds", "2", "--large-shapes", "",
       "--schedules-per-case", "2", "--out", model},
      {{"SPARSEGEN_CALIBRATE_DRY", "1"}, {"SPARSEGEN_DATA", no_data}});
  EXPECT_NE(tty.out.find("calibrate: "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r\033[K[........................] 0/40 matrices"), std::string::npos)
      << tty.out;
  EXPECT_EQ(sparsegen::testing::lines_keeping_a_progress_bar(tty.out), std::vector<std::string>{})
      << tty.out;

  const CliRun piped = sparsegen::testing::run_command(
      "SPARSEGEN_CALIBRATE_DRY=1 SPARSEGEN_DATA='" + no_data + "' '" + SPARSEGEN_CLI +
      "' calibrate --budget-seconds 2 --large-shapes '' --schedules-per-case 2 --out '" + model +
      "' 2>&1");
  EXPECT_NE(piped.out.find("calibrate: "), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\033'), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
}

// `tune` draws one bar per search phase on a terminal (ProgressLine) and clears it before its
// report; piped, it prints no control characters.
TEST_F(Cli, TuneProgressBarOnlyOnATerminal) {
  const std::string ex =
      std::string(SPARSEGEN_SOURCE_DIR) + "/examples/llm_512x128_magnitude80.mtx";
  const CliRun tty = sparsegen::testing::run_on_terminal(
      {SPARSEGEN_CLI, "tune", ex, "-n", "8", "--top-k", "0", "--no-cache"}, {});
  EXPECT_NE(tty.out.find("schedule"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("tune enumerate"), std::string::npos) << tty.out;
  EXPECT_EQ(sparsegen::testing::lines_keeping_a_progress_bar(tty.out), std::vector<std::string>{})
      << tty.out;
  std::string cmd = "'";
  cmd.append(SPARSEGEN_CLI)
      .append("' tune '")
      .append(ex)
      .append("' -n 8 --top-k 0 --no-cache 2>&1");
  const CliRun piped = sparsegen::testing::run_command(cmd);
  EXPECT_NE(piped.out.find("schedule"), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\033'), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
}

}  // namespace

namespace {

// `sparsegen ffn`: a synthetic gated FFN built offline (no GPU here; --arch forces it on a GPU
// machine too), the schedule it would use and why, JSON, and the user errors naming the flag.
TEST_F(Cli, FfnBuildsOfflineAndNamesBadFlags) {
  CliRun r = run("ffn --gen 256x700 -m 32 --mean-nnz 10 --arch compute_90");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("schedule: twell;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations: mean"), std::string::npos) << r.out;
  const nlohmann::json j =
      parse(run("ffn --gen 256x700 -m 32 --schedule dense_ffn --arch compute_90 --json", false));
  EXPECT_EQ(j.value("schedule", ""), "dense_ffn;threads=256");
  EXPECT_EQ(j.value("reason", ""), "given by --schedule");
  struct Case {
    std::string args, needle;
  };
  for (const Case& c : std::vector<Case>{
           {"ffn -m 4", "--gen"},
           {"ffn --gen 8x -m 4", "--gen"},
           {"ffn --gen 64x100 -m 0", "-m"},
           {"ffn --gen 64x100 -m 4 --mean-nnz 500", "--mean-nnz"},
           {"ffn --gen 64x100 -m 4 --dtype fp32", "--dtype"},
           {"ffn --gen 64x100 -m 4 --schedule 'twell;tile=96' --arch compute_90", "tile"},
           {"ffn --weights " + path("none.safetensors") + " --layer 0 -m 4", "none.safetensors"},
       }) {
    CliRun e = run(c.args);
    EXPECT_EQ(e.rc, 1) << c.args << "\n" << e.out;
    EXPECT_NE(e.out.find(c.needle), std::string::npos) << c.args << "\n" << e.out;
  }
}

}  // namespace
