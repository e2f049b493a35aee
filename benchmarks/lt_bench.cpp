// sparsegen-lt-bench: dense cuBLASLt against cuSPARSELt (2:4) on LLM linear-layer shapes.
//
// For every weight shape (M x K) in {4096x4096, 14336x4096, 4096x14336} (--shapes takes others,
// e.g. 11008x4096 4096x11008), N (tokens) in {16, 64, 256, 1024, 4096, 16384} and input type in
// {fp16, int8, fp8} (fp16 output for all three; bf16 can be asked for with --types):
//   - a random 2:4 weight (every group of 4 along K keeps 2 random positions; seeded), random B;
//   - dense: cuBLASLt on the same matrix (zeros included), its top-8 heuristic algorithms timed
//     and the fastest kept (benchmarks/lt_dense.h); int8 also reports the int32 GEMM without the
//     conversion to fp16 (dense_gemm_only_ms);
//   - sparse: cuSPARSELt with the algorithm id / split-K found by SparseGemm::search()
//     (runtime/cusparselt.h): the first --alg-ids ids (default 1), cusparseLtMatmulSearch's pick
//     (which tries every id) and, for N <= 256, split-K 2/4/8 of the best; the Choice is recorded.
//     Each candidate costs ~0.3 s of planning on an H100 (cuSPARSELt 0.8), so --alg-ids 64 (every
//     id) makes a case ~20 s;
//   - both timed with the L2 flushed before every run (runtime/timing.h): 2 warm-up and --reps
//     (10) timed runs, medians; speedup = dense_ms / sparse_ms;
//   - a sanity figure: the largest difference between the two outputs over the first 4 tokens,
//     relative to the largest dense output (both compute the same product).
// --shapes, --n and --types restrict the grid; no new case starts after --time-limit seconds
// (default 240, under the 300 s that tools/gpu_run.sh allows; the JSON then says truncated).
// Output: JSON (--out, default $BENCH_DIR/lt.json) with device, date, library versions and every
// case, rewritten after each case (complete: false until the end). Exit codes: 0 done, 1 a case
// failed, 3 no GPU. Expected run time of the default grid (54 cases) on an H100: ~2-3 minutes,
// estimated from ~0.3 s per sparse candidate (not yet measured end to end); host-side random
// data for up to 235M-element activations is generated once per type and K.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks/baselines.h"
#include "benchmarks/lt_dense.h"
#include "benchmarks/report.h"
#include "ir/dtype.h"
#include "runtime/cuda_driver.h"
#include "runtime/cusparselt.h"
#include "runtime/timing.h"

namespace sparsegen {
namespace {

using cusparselt::Type;
using json = nlohmann::json;

struct Options {
  std::vector<std::string> shapes{"4096x4096", "14336x4096", "4096x14336"};
  std::vector<int64_t> ns{16, 64, 256, 1024, 4096, 16384};
  std::vector<std::string> types{"fp16", "int8", "fp8"};
  std::string out_path;
  int reps = 10;
  int alg_ids = 1;  // SearchOptions::max_alg_ids (the library's own search covers every id)
  double time_limit_s = 240;  // no new case starts after this (the JSON then says truncated)
  bool library_search = true;
  uint64_t seed = 42;
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Type parse_type(const std::string& name) {
  if (name == "fp16") return Type::F16;
  if (name == "bf16") return Type::BF16;
  if (name == "int8") return Type::I8;
  if (name == "fp8" || name == "fp8_e4m3" || name == "e4m3") return Type::E4M3;
  throw std::invalid_argument("--types: unknown type '" + name + "' (fp16, bf16, int8, fp8)");
}

std::pair<int64_t, int64_t> parse_shape(const std::string& s) {
  const size_t x = s.find('x');
  if (x == std::string::npos) throw std::invalid_argument("--shapes: '" + s + "' is not MxK");
  return {std::stoll(s.substr(0, x)), std::stoll(s.substr(x + 1))};
}

// A fast seeded generator (xorshift64*); the benchmark needs plausible values, not statistics.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
};

// 4096 encoded random values of `t` (uniform in [-1, 1], int8 uniform in [-127, 127]).
std::vector<uint16_t> value_table(Type t, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> table(4096);
  for (auto& v : table) {
    const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    const float f = static_cast<float>(u);
    switch (t) {
      case Type::F16:
        v = float_to_half_bits(f);
        break;
      case Type::BF16:
        v = float_to_bf16_bits(f);
        break;
      case Type::I8:
        v = static_cast<uint8_t>(float_to_int8(f * 127.0f));
        break;
      case Type::E4M3:
        v = float_to_e4m3_bits(f);
        break;
      case Type::I32:
      case Type::F32:
        throw std::invalid_argument("value_table: int32 / fp32 are outputs only");
    }
  }
  return table;
}

// count values of `t` drawn from the table; keep_24: zero 2 random positions of every group of 4.
std::vector<char> random_values(Type t, size_t count, uint64_t seed, bool keep_24) {
  const std::vector<uint16_t> table = value_table(t, seed);
  const int w = cusparselt::type_bytes(t);
  std::vector<char> out(count * static_cast<size_t>(w), 0);
  Rng rng(seed ^ 0xABCDEF);
  // The six ways to keep 2 of 4, as bit masks.
  static constexpr unsigned kPatterns[6] = {0x3, 0x5, 0x9, 0x6, 0xA, 0xC};
  for (size_t g = 0; g < count; g += 4) {
    const uint64_t r = rng.next();
    const unsigned keep = keep_24 ? kPatterns[(r >> 60) % 6] : 0xF;
    for (size_t j = 0; j < 4 && g + j < count; ++j) {
      if (!(keep >> j & 1u)) continue;
      const uint16_t v = table[(r >> (12 * j)) & 4095];
      std::memcpy(out.data() + (g + j) * static_cast<size_t>(w), &v, static_cast<size_t>(w));
    }
  }
  return out;
}

float out_to_float(Type out, uint16_t bits) {
  return out == Type::BF16 ? bf16_bits_to_float(bits) : half_bits_to_float(bits);
}

int run(const Options& o, const std::string& command) {
  const auto t_start = std::chrono::steady_clock::now();
  std::string why;
  if (!cuda::driver_available(&why)) {
    std::fprintf(stderr, "sparsegen-lt-bench: no GPU: %s\n", why.c_str());
    return 3;
  }
  cuda::Context ctx(0);
  bench::attach_cudart(0);
  const cuda::DeviceInfo& info = ctx.info();
  cuda::Stream stream;
  L2Flusher flusher(info);
  TimingOptions topt;
  topt.warmup = 2;
  topt.repetitions = std::max(o.reps, 1);
  topt.min_repetitions = topt.repetitions;
  topt.stream = stream.get();
  topt.flusher = &flusher;

  std::string lt_why;
  const bool have_lt = cusparselt::available(&lt_why);
  if (!have_lt) std::fprintf(stderr, "[lt-bench] cuSPARSELt unavailable: %s\n", lt_why.c_str());

  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const auto& s : o.shapes) shapes.push_back(parse_shape(s));
  std::vector<int64_t> ns = o.ns;
  std::sort(ns.begin(), ns.end());
  const int64_t n_max = ns.back();
  int64_t m_max = 0;
  for (const auto& [m, k] : shapes) m_max = std::max(m_max, m);

  json cases = json::array();
  json errors = json::array();
  int failures = 0;
  int skipped = 0;  // cases not started because of --time-limit
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json versions = {{"cublaslt", bench::cublaslt_version()},
                   {"cudart", bench::cudart_version()},
                   {"driver", cuda::driver_version()}};
  versions["cusparselt"] = have_lt ? cusparselt::version() : "unavailable: " + lt_why;
  // Written after every case (complete: false until the end), so that a run killed from outside
  // still leaves the cases it finished.
  auto write_json = [&](bool complete) {
    const json j = {
        {"device", info.name},
        {"cc", fmt::format("{}.{}", info.cc_major, info.cc_minor)},
        {"date", date},
        {"command", command},
        {"git_commit", bench::git_commit()},
        {"versions", versions},
        {"timing", fmt::format("L2 flushed before every run, 2 warm-up + {} timed, median",
                               topt.repetitions)},
        {"complete", complete},
        {"truncated", skipped > 0},
        {"cases_skipped_time_limit", skipped},
        {"time_limit_s", o.time_limit_s},
        {"cases", cases},
        {"errors", errors},
        {"wall_s", since(t_start)}};
    std::ofstream(o.out_path) << j.dump(2) << "\n";
  };
  for (const std::string& type_name : o.types) {
    const Type in = parse_type(type_name);
    const Type out = in == Type::BF16 ? Type::BF16 : Type::F16;
    const size_t out_w = 2;
    cuda::DeviceBuffer c_dense(static_cast<size_t>(m_max * n_max) * out_w);
    cuda::DeviceBuffer c_sparse(static_cast<size_t>(m_max * n_max) * out_w);
    std::map<int64_t, cuda::DeviceBuffer> b_by_k;  // N_max x K activations per K
    for (const auto& [m, k] : shapes) {
      if (o.time_limit_s > 0 && since(t_start) > o.time_limit_s) {
        skipped += static_cast<int>(ns.size());
        continue;
      }
      auto bit = b_by_k.find(k);
      if (bit == b_by_k.end()) {
        const std::vector<char> hb = random_values(in, static_cast<size_t>(n_max * k),
                                                   o.seed + static_cast<uint64_t>(k), false);
        cuda::DeviceBuffer db(hb.size());
        db.upload(hb.data(), hb.size());
        bit = b_by_k.emplace(k, std::move(db)).first;
      }
      const CUdeviceptr b = bit->second.ptr();
      const std::vector<char> ha = random_values(
          in, static_cast<size_t>(m * k), o.seed * 31 + static_cast<uint64_t>(m * 7 + k), true);
      cuda::DeviceBuffer a(ha.size());
      a.upload(ha.data(), ha.size());
      for (const int64_t n : ns) {
        if (o.time_limit_s > 0 && since(t_start) > o.time_limit_s) {
          ++skipped;
          continue;
        }
        json row = {{"type", cusparselt::to_string(in)},
                    {"out", cusparselt::to_string(out)},
                    {"m", m},
                    {"k", k},
                    {"n", n}};
        const cusparselt::Shape shape{m, k, n, in, out};
        const double flops =
            2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
        const auto t_case = std::chrono::steady_clock::now();
        std::optional<double> dense_ms, sparse_ms;
        try {
          bench::LtDenseGemm dense(a.ptr(), shape);
          row["dense_algo"] = dense.search(b, c_dense.ptr(), stream.get(), 8, 3);
          const CUdeviceptr cd = c_dense.ptr();
          dense_ms = measure([&](CUstream s) { dense.run(b, cd, 1.0f, 0.0f, s); }, topt).median_ms;
          row["dense_ms"] = *dense_ms;
          row["dense_tflops"] = flops / (*dense_ms * 1e9);
          if (dense.has_conversion()) {
            row["dense_gemm_only_ms"] =
                measure([&](CUstream s) { dense.run_gemm_only(b, cd, s); }, topt).median_ms;
          }
          dense.run(b, cd, 1.0f, 0.0f, stream.get());
        } catch (const std::exception& e) {
          row["dense_error"] = e.what();
          errors.push_back(fmt::format("{} {}x{} N={} dense: {}", type_name, m, k, n, e.what()));
          ++failures;
        }
        if (have_lt) {
          try {
            cusparselt::SparseGemm sparse(a.ptr(), shape, stream.get());
            cusparselt::SearchOptions so;
            so.repetitions = 3;
            so.max_alg_ids = o.alg_ids;
            so.try_split_k = n <= 256;
            so.library_search = o.library_search;
            const cusparselt::Choice choice = sparse.search(b, c_sparse.ptr(), stream.get(), so);
            row["sparse_choice"] = choice.to_string();
            row["sparse_max_alg_id"] = sparse.max_alg_id();
            row["sparse_padded_n"] = sparse.padded_n();
            row["compressed_bytes"] = sparse.compressed_bytes();
            const CUdeviceptr cs = c_sparse.ptr();
            sparse_ms =
                measure([&](CUstream s) { sparse.run(b, cs, 1.0f, 0.0f, s); }, topt).median_ms;
            row["sparse_ms"] = *sparse_ms;
            row["sparse_tflops_effective"] = flops / (*sparse_ms * 1e9);
            sparse.run(b, cs, 1.0f, 0.0f, stream.get());
          } catch (const std::exception& e) {
            row["sparse_error"] = e.what();
            errors.push_back(fmt::format("{} {}x{} N={} sparse: {}", type_name, m, k, n, e.what()));
            ++failures;
          }
        }
        if (dense_ms && sparse_ms) {
          row["speedup"] = *dense_ms / *sparse_ms;
          stream.synchronize();
          const size_t count = static_cast<size_t>(m * std::min<int64_t>(n, 4));
          std::vector<uint16_t> hd(count), hs(count);
          c_dense.download(hd.data(), count * out_w);
          c_sparse.download(hs.data(), count * out_w);
          double max_ref = 0, max_diff = 0;
          for (size_t i = 0; i < count; ++i) {
            const double d = out_to_float(out, hd[i]), sp = out_to_float(out, hs[i]);
            max_ref = std::max(max_ref, std::fabs(d));
            max_diff = std::max(max_diff, std::fabs(d - sp));
          }
          row["max_rel_diff"] = max_ref > 0 ? max_diff / max_ref : max_diff;
        }
        row["case_s"] = since(t_case);
        std::printf(
            "[lt-bench] %-8s %5lldx%-5lld N=%-5lld dense %8.4f ms  sparse %8.4f ms  x%.2f  %s  "
            "(%.1f s)\n",
            type_name.c_str(), static_cast<long long>(m), static_cast<long long>(k),
            static_cast<long long>(n), dense_ms.value_or(NAN), sparse_ms.value_or(NAN),
            dense_ms && sparse_ms ? *dense_ms / *sparse_ms : NAN,
            row.value("sparse_choice", std::string("-")).c_str(), since(t_case));
        std::fflush(stdout);
        cases.push_back(std::move(row));
        write_json(false);
      }
    }
  }

  write_json(true);
  if (skipped > 0) {
    std::printf("[lt-bench] --time-limit %.0f s reached: %d cases not run\n", o.time_limit_s,
                skipped);
  }
  std::printf("[lt-bench] wrote %s (%.1f s, %d failures)\n", o.out_path.c_str(), since(t_start),
              failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace sparsegen

int main(int argc, char** argv) {
  CLI::App app{"dense cuBLASLt vs cuSPARSELt (2:4) GEMMs on LLM shapes"};
  const char* bench_dir = std::getenv("BENCH_DIR");
  sparsegen::Options o;
  o.out_path = std::string(bench_dir != nullptr ? bench_dir : ".") + "/lt.json";
  app.add_option("--out", o.out_path, "JSON output (default $BENCH_DIR/lt.json)");
  app.add_option("--shapes", o.shapes,
                 "weight shapes MxK (default 4096x4096 14336x4096 4096x14336; also e.g. "
                 "11008x4096 4096x11008)");
  app.add_option("--n", o.ns, "token counts N (default 16 64 256 1024 4096 16384)")
      ->check(CLI::PositiveNumber);
  app.add_option("--types", o.types, "input types: fp16 bf16 int8 fp8 (default fp16 int8 fp8)");
  app.add_option("--reps", o.reps, "timed runs per measurement (default 10)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--alg-ids", o.alg_ids,
                 "cuSPARSELt algorithm ids timed one by one besides the library's search pick "
                 "(default 1; each costs ~0.3 s of planning)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--time-limit", o.time_limit_s,
                 "seconds after which no new case starts (default 240; 0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("!--no-library-search", o.library_search,
               "skip cusparseLtMatmulSearch's pick among the sparse candidates");
  app.add_option("--seed", o.seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  try {
    return sparsegen::run(o, sparsegen::bench::command_line(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsegen-lt-bench: %s\n", e.what());
    return 1;
  }
}
