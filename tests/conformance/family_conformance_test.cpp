// The family conformance suite: every registered schedule family (ir/families.def) runs through
// the same checks, with no family-specific code here. A new family joins by registering.
//
// Each matrix serves its SpMM/SpMV problems and, in fp16/bf16, a gated FFN that reads it as the
// activation pattern (tokens x hidden width): there the interpreter's down projection is checked
// as an SpMM of the matrix, and on the device a generated FFN of that shape and sparsity.
//
//   Registered     every layer has the family (codegen, costmodel, compiler)
//   SpecRoundTrip  every enumerated schedule prints and parses back to itself; a family that says
//                  why it has no schedule (why_not) enumerates none
//   Reasons        illegal schedules (bad SPEC fields, unsupported problems, a tiny device) are
//                  refused with non-empty reasons, never accepted silently or crashed on
//   Interpreter    the family's CPU interpreter of its packed format equals the CSR reference
//                  within the tight bound (ir/error_bound.h) for fp32/fp16/bf16, beta 0 (C
//                  poisoned) and beta != 0, N in {1, 2, 7, 8, 32, 64}, on generated matrices and
//                  the shared ones (edge, suitesparse, dlmc)
//   Compiles       a sample of every family's kernels compiles with NVRTC for sm_80 and sm_90
//                  (no GPU needed)
//   Features       cost features of every enumerated schedule are finite
//   KeySensitive   the kernel database key changes when any schedule field changes
//   Gpu            (GpuFamilyConformance, skipped without a GPU) every family's best few
//                  schedules by the tuner's ranking run on the device within the same tight
//                  bound, beta 0 (C poisoned) and beta != 0
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "codegen/family.h"
#include "compiler/family.h"
#include "compiler/ffn.h"
#include "compiler/gpu_check.h"
#include "compiler/tune.h"
#include "costmodel/family.h"
#include "costmodel/features.h"
#include "costmodel/schedule_features.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/activations.h"
#include "ir/io/load.h"
#include "ir/verifier.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_db.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/ir/tight_bound_check.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const IrFamily* f : ir_families()) out.emplace_back(f->name());
  return out;
}

struct NamedMatrix {
  std::string name;
  CsrMatrix a;
};

// Generated shapes that stress the divisions (empty rows, one long row, power law, LLM-like),
// then every shared matrix the manifests expect to load, up to a size that keeps the suite fast.
const std::vector<NamedMatrix>& matrices() {
  static const std::vector<NamedMatrix> all = [] {
    std::vector<NamedMatrix> out;
    std::mt19937_64 rng(11);
    {
      std::vector<int64_t> lens;
      for (int i = 0; i < 40; ++i) lens.push_back(i % 3 == 0 ? 0 : int64_t(rng() % 6));
      out.push_back({"gen/empty_rows", testing::matrix_with_lengths(72, lens, 1)});
    }
    {
      std::vector<int64_t> lens(48, 1);
      lens[5] = 300;
      lens[6] = 0;
      out.push_back({"gen/one_long_row", testing::matrix_with_lengths(300, lens, 2)});
    }
    {
      std::lognormal_distribution<double> ln(std::log(25.6), 0.5);
      std::vector<int64_t> lens;
      for (int i = 0; i < 96; ++i) lens.push_back(std::min<int64_t>(256, int64_t(ln(rng))));
      out.push_back({"gen/llm_96x256", testing::matrix_with_lengths(256, lens, 3)});
    }
    for (const char* folder : {"edge", "suitesparse", "dlmc"}) {
      const fs::path manifest = testing::data_dir() / folder / "MANIFEST.tsv";
      std::ifstream in(manifest);
      std::string line, header;
      std::getline(in, header);
      std::vector<std::string> cols;
      {
        std::stringstream ss(header);
        for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
      }
      int taken = 0;
      while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ss(line);
        for (std::string c; std::getline(ss, c, '\t');) f.push_back(c);
        std::map<std::string, std::string> row;
        for (size_t i = 0; i < cols.size() && i < f.size(); ++i) row[cols[i]] = f[i];
        if (row["expect"] != "load") continue;
        // Small ones only (the interpreter runs them hundreds of times): a few per folder.
        const std::string nnz = row.count("nnz_stored") ? row["nnz_stored"] : row["nnz"];
        if (nnz.empty() || std::stoll(nnz) > 6000 || taken >= 12) continue;
        try {
          CsrMatrix a = load_matrix((testing::data_dir() / folder / row["file"]).string()).matrix;
          if (a.field == ValueField::Complex || a.rows == 0 || a.cols == 0) continue;
          bool finite = true;
          for (float v : a.values) finite = finite && std::isfinite(v) && std::fabs(v) < 6e4f;
          if (!finite) continue;  // non-finite / fp16-overflowing values: other suites cover them
          out.push_back({std::string(folder) + "/" + row["file"], std::move(a)});
          ++taken;
        } catch (const UserError&) {
        }
      }
    }
    return out;
  }();
  return all;
}

constexpr DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};

// SpMV for N = 1 (row-major B and C), else SpMM.
Problem problem_for(const CsrMatrix& a, DType dt, int64_t n) {
  return n == 1 ? Problem::spmv(a.rows, a.cols, dt) : Problem::spmm(a.rows, a.cols, n, dt);
}
// The problems a matrix serves in the suite: the SpMM/SpMV above and, in fp16/bf16, the SpMM in
// the LLM layout (B and C column-major: each token's values contiguous, what a library GEMM
// writes) and a gated FFN reading the matrix as its activation pattern (tokens x hidden width;
// model width K = n).
std::vector<Problem> problems_for(const CsrMatrix& a, DType dt, int64_t n) {
  std::vector<Problem> out = {problem_for(a, dt, n)};
  if ((dt == DType::F16 || dt == DType::BF16) && n > 1)
    out.push_back(Problem::spmm(a.rows, a.cols, n, dt, Layout::ColMajor, Layout::ColMajor));
  if (dt == DType::F16 || dt == DType::BF16)
    out.push_back(Problem::gated_ffn(a.rows, n, a.cols, dt));
  return out;
}
// What the interpreter of a problem computes, as an SpMM of the matrix: itself, or for a gated
// FFN the down projection over the activations (H: M x N times W_d: N x K).
Problem interpreted_product(const Problem& p) {
  return p.op == Op::GatedFfn ? Problem::spmm(p.m, p.n, p.k, p.dtype) : p;
}
constexpr int64_t kNs[] = {1, 2, 7, 8, 32, 64};

// At most `most` schedules spread over the enumeration (first, last, evenly in between).
std::vector<Schedule> sample(const std::vector<Schedule>& all, size_t most) {
  if (all.size() <= most) return all;
  std::vector<Schedule> out;
  for (size_t i = 0; i < most; ++i) out.push_back(all[i * (all.size() - 1) / (most - 1)]);
  return out;
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
  return v;
}

class FamilyConformance : public ::testing::TestWithParam<std::string> {
 protected:
  const IrFamily& family() const { return *find_ir_family(GetParam()); }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const DeviceLimits& dev = DeviceLimits::sm90()) const {
    EnumerateOptions o;
    o.device = dev;
    o.include_specialised = true;
    return family().enumerate(p, a, o);
  }
  // The LLM-shaped matrix, or for a family that has no schedule for it at N = 8 (one for small
  // matrices only) the first matrix of the suite it has schedules for.
  const NamedMatrix& representative() const {
    auto serves = [&](const CsrMatrix& a) {
      for (DType dt : {DType::F32, DType::F16})
        for (const Problem& p : problems_for(a, dt, 8))
          if (!enumerate(p, a).empty()) return true;
      return false;
    };
    if (serves(matrices()[2].a)) return matrices()[2];
    for (const NamedMatrix& m : matrices())
      if (serves(m.a)) return m;
    return matrices()[2];
  }
};

TEST_P(FamilyConformance, RegisteredInEveryLayer) {
  const std::string name = GetParam();
  bool codegen = false, cost = false, compiler = false;
  for (const auto* f : codegen::codegen_families()) codegen |= f->name() == name;
  for (const auto* f : cost_families()) cost |= f->name() == name;
  for (const auto* f : compiler_families()) compiler |= f->name() == name;
  EXPECT_TRUE(codegen) << name << " has no codegen/families.def entry";
  EXPECT_TRUE(cost) << name << " has no costmodel/families.def entry";
  EXPECT_TRUE(compiler) << name << " has no compiler/families.def entry";
}

TEST_P(FamilyConformance, EnumeratesSomewhereAndSpecRoundTrips) {
  int64_t total = 0;
  for (const NamedMatrix& m : matrices()) {
    for (DType dt : kDtypes) {
      for (int64_t n : kNs)
        for (const Problem& p : problems_for(m.a, dt, n)) {
          const auto all = enumerate(p, m.a);
          // A family that says why it has nothing has nothing; a reason is never empty.
          const auto why_not = family().why_not(p, m.a);
          for (const std::string& w : why_not) ASSERT_FALSE(w.empty()) << to_string(p);
          if (!why_not.empty()) {
            ASSERT_TRUE(all.empty()) << GetParam() << " enumerates for " << to_string(p)
                                     << " although: " << why_not.front();
          }
          for (const Schedule& s : all) {
            ++total;
            ASSERT_EQ(s.family_name(), GetParam());
            const std::string spec = to_string(s);
            ASSERT_EQ(spec.rfind(GetParam() + ";", 0), 0u) << spec;
            const Schedule back = parse_schedule(spec);
            ASSERT_EQ(back, s) << spec;
            ASSERT_EQ(to_string(back), spec);
            ASSERT_FALSE(print_schedule(s).empty()) << spec;
            ASSERT_TRUE(validate(p, s).empty()) << spec << " enumerated for " << to_string(p);
          }
        }
    }
  }
  EXPECT_GT(total, 0) << GetParam() << " enumerated nothing on any matrix and problem";
  std::printf("%s: %lld schedules over %zu matrices\n", GetParam().c_str(),
              static_cast<long long>(total), matrices().size());
}

// `spec` with field `key`'s value replaced by `value` (unchanged when it has no such field).
std::string with_field(const std::string& spec, const std::string& key, const std::string& value) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string p; std::getline(ss, p, ';');) parts.push_back(p);
  std::string t = parts[0];
  for (size_t i = 1; i < parts.size(); ++i)
    t += ";" + (parts[i].rfind(key + "=", 0) == 0 ? key + "=" + value : parts[i]);
  return t;
}

// Every "KEY=VALUE" field of a SPEC with its value replaced by `value`.
std::vector<std::string> with_field_values(const std::string& spec, const std::string& value) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string p; std::getline(ss, p, ';');) parts.push_back(p);
  std::vector<std::string> out;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos) continue;
    std::vector<std::string> q = parts;
    q[i] = parts[i].substr(0, eq + 1) + value;
    std::string t = q[0];
    for (size_t j = 1; j < q.size(); ++j) t += ";" + q[j];
    out.push_back(t);
  }
  return out;
}

TEST_P(FamilyConformance, IllegalSchedulesGetReasons) {
  const NamedMatrix& m = representative();  // LLM-shaped where the family serves it
  std::set<std::string> seen;
  int64_t refused = 0, problem_reasons = 0, device_reasons = 0;
  DeviceLimits tiny = DeviceLimits::sm90();
  tiny.name = "tiny";
  tiny.max_threads_per_block = 16;  // below one warp: nothing can run
  tiny.max_shared_per_block = 0;
  for (DType dt : kDtypes) {
    for (int64_t n : kNs)
      for (const Problem& p : problems_for(m.a, dt, n)) {
        for (const Schedule& s : sample(enumerate(p, m.a), 4)) {
          const std::string spec = to_string(s);
          if (!seen.insert(spec).second) continue;
          // Bad field values: refused with a message naming the field, or a legal schedule.
          for (const char* bad : {"0", "-3", "999999", "x", ""}) {
            for (const std::string& t : with_field_values(spec, bad)) {
              try {
                const Schedule u = parse_schedule(t);
                EXPECT_TRUE(validate(u).empty()) << t;
              } catch (const UserError& e) {
                EXPECT_NE(std::string(e.what()).find("--schedule"), std::string::npos) << t;
                ++refused;
              }
            }
          }
          // Other problems (dtypes, N, layouts, quantized types, a gated FFN): either legal or
          // refused with non-empty reasons.
          std::vector<Problem> others;
          for (DType other : kDtypes)
            for (int64_t n2 : {int64_t{1}, int64_t{3}, int64_t{200}})
              others.push_back(
                  Problem::spmm(m.a.rows, m.a.cols, n2, other, Layout::ColMajor, Layout::RowMajor));
          for (DType q : {DType::I8, DType::F8E4M3})
            others.push_back(Problem::quantized_spmm(m.a.rows, m.a.cols, 16, q, DType::F16));
          others.push_back(Problem::gated_ffn(m.a.rows, m.a.cols, 64, DType::BF16));
          for (const Problem& q : others) {
            for (const std::string& why : validate(q, s)) {
              EXPECT_FALSE(why.empty()) << spec << " for " << to_string(q);
              ++problem_reasons;
            }
          }
          // A device too small for any kernel.
          const auto why = verify(p, s, family().format_stats(m.a, p, s), tiny);
          EXPECT_FALSE(why.empty()) << spec << " accepted on a 16-thread device";
          for (const std::string& w : why) EXPECT_FALSE(w.empty()) << spec;
          device_reasons += static_cast<int64_t>(why.size());
        }
      }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(problem_reasons, 0) << GetParam() << ": no problem refused any schedule";
  EXPECT_GT(device_reasons, 0);
  const std::string unknown = GetParam() + ";nosuchfield=1";
  EXPECT_NE(testing::error_of([&] { parse_schedule(unknown); }).find("nosuchfield"),
            std::string::npos);
}

TEST_P(FamilyConformance, InterpreterMatchesReferenceWithinTightBound) {
  int64_t checked = 0;
  uint64_t seed = 100;
  for (const NamedMatrix& m : matrices()) {
    for (DType dt : kDtypes) {
      for (int64_t n : kNs)
        for (const Problem& p : problems_for(m.a, dt, n)) {
          const auto all = enumerate(p, m.a);
          if (all.empty()) continue;
          const Problem ref = interpreted_product(p);
          // Inputs rounded to the dtype, as the kernels read them.
          std::vector<float> b = random_values(ref.k * ref.n, ++seed);
          std::vector<float> c0 = random_values(ref.m * ref.n, ++seed);
          for (float& x : b) x = round_to(dt, x);
          for (float& x : c0) x = round_to(dt, x);
          std::map<std::string, std::shared_ptr<const PackedMatrix>> packs;
          for (const Schedule& s : sample(all, 3)) {
            const auto key = family().pack_key(s);
            auto& packed = packs[key.value_or(to_string(s))];
            if (!packed) packed = family().pack(m.a, p, s);
            for (const auto& [alpha, beta] : {std::pair{0.75f, 0.0f}, std::pair{1.0f, 0.5f}}) {
              std::vector<float> got = c0;
              if (beta == 0.0f)  // poisoned: beta == 0 must never read C
                std::fill(got.begin(), got.end(), std::numeric_limits<float>::quiet_NaN());
              family().interpret(p, s, *packed, b, got, alpha, beta);
              for (float& x : got) x = round_to(dt, x);  // the kernel's one output rounding
              const std::string err = testing::tight_bound_violation(
                  ref, m.a, b, c0, alpha, beta, got,
                  [&](int64_t r) { return family().output_adds(p, s, m.a.row_length(r)); });
              ASSERT_EQ(err, "") << m.name << " " << to_string(s) << " alpha " << alpha << " beta "
                                 << beta;
              ++checked;
            }
          }
        }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST_P(FamilyConformance, KernelsCompileForSm80AndSm90) {
  // One LLM-shaped matrix (representative()) and the problems each family serves: N 1, 8 and 64 in
  // fp16 and fp32.
  const NamedMatrix& m = representative();
  int64_t compiled = 0;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const CompileTarget target = offline_target(arch);
    for (DType dt : {DType::F16, DType::F32}) {
      for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{64}})
        for (const Problem& p : problems_for(m.a, dt, n)) {
          for (const Schedule& s : sample(enumerate(p, m.a, target.limits), 2)) {
            const KernelBuild b = build_kernel(m.a, p, s, target);
            EXPECT_FALSE(b.compiled.image.empty()) << to_string(s) << " " << arch;
            EXPECT_TRUE(b.compiled.is_cubin) << arch;
            ++compiled;
          }
        }
    }
  }
  EXPECT_GT(compiled, 0);
}

TEST_P(FamilyConformance, CostFeaturesAreFinite) {
  int64_t scored = 0;
  for (const NamedMatrix& m : matrices()) {
    const MatrixFeatures mf = compute_features(m.a);
    const RowProfile rows = row_profile(m.a);
    std::map<std::string, FormatStats> cache;
    for (DType dt : {DType::F32, DType::F16}) {
      for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{64}})
        for (const Problem& p : problems_for(m.a, dt, n)) {
          for (const Schedule& s : enumerate(p, m.a)) {
            const FormatStats fs = candidate_format_stats(m.a, p, s, &cache);
            const ScheduleFeatures f =
                schedule_features(p, s, fs, mf, rows, DeviceProfile::h100_sxm());
            ASSERT_EQ(f.values.size(), ScheduleFeatures::names().size());
            for (size_t i = 0; i < f.values.size(); ++i)
              ASSERT_TRUE(std::isfinite(f.values[i]))
                  << ScheduleFeatures::names()[i] << " of " << to_string(s) << " on " << m.name;
            ASSERT_TRUE(std::isfinite(f.roofline_us) && f.roofline_us > 0) << to_string(s);
            ASSERT_FALSE(f.family.empty());
            ++scored;
          }
        }
    }
  }
  EXPECT_GT(scored, 0);
}

TEST_P(FamilyConformance, DatabaseKeyChangesWithEveryScheduleField) {
  const NamedMatrix& m = representative();
  const CompileTarget target = offline_target("sm_90");
  int64_t edits = 0, varied = 0;
  for (DType dt : {DType::F32, DType::F16}) {
    for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{64}})
      for (const Problem& p : problems_for(m.a, dt, n)) {
        const auto all = enumerate(p, m.a);
        std::map<std::string, std::string> key_of;  // kernel key -> spec
        for (const Schedule& s : all) {
          const std::string spec = to_string(s);
          const std::string key = kdb::kernel_key(key_parts(m.a, p, target, spec));
          const auto [it, fresh] = key_of.emplace(key, spec);
          ASSERT_TRUE(fresh) << spec << " and " << it->second << " share a kernel key";
        }
        // Each field edited to every value another enumerated schedule uses for it.
        std::map<std::string, std::set<std::string>> values;  // field -> values
        for (const Schedule& s : all) {
          std::stringstream ss(to_string(s));
          std::string part;
          std::getline(ss, part, ';');
          while (std::getline(ss, part, ';'))
            if (auto eq = part.find('='); eq != std::string::npos)
              values[part.substr(0, eq)].insert(part.substr(eq + 1));
        }
        for (const Schedule& s : sample(all, 3)) {
          const std::string spec = to_string(s);
          const std::string key = kdb::kernel_key(key_parts(m.a, p, target, spec));
          for (const auto& [field, vals] : values) {
            for (const std::string& v : vals) {
              const std::string t = with_field(spec, field, v);
              if (t == spec) continue;
              Schedule u;
              try {
                u = parse_schedule(t);
              } catch (const UserError&) {
                continue;  // an illegal combination: nothing to key
              }
              EXPECT_NE(u, s) << spec << " -> " << t;
              EXPECT_NE(kdb::kernel_key(key_parts(m.a, p, target, to_string(u))), key)
                  << spec << " -> " << t;
              ++edits;
            }
          }
        }
        for (const auto& [field, vals] : values) varied += vals.size() > 1;
      }
  }
  // A family with a single schedule (the dense library candidate) has no field to edit.
  EXPECT_TRUE(edits > 0 || varied == 0) << GetParam();
}

// On the device: for every registered family, its 3 best schedules by the tuner's ranking
// (compiler/tune.h rank_space) on three generated matrices, fp32/fp16/bf16 and N = 1, 8, 64,
// checked by gpu_check (the tight bound; beta 0 with C poisoned and beta != 0).
TEST(GpuFamilyConformance, BestSchedulesOfEveryFamilyWithinTightBound) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  const cuda::DeviceInfo info = ctx->info();
  std::map<std::string, int> checked;
  uint64_t seed = 500;
  for (const IrFamily* fam : ir_families()) {
    for (size_t mi : {size_t{0}, size_t{1}, size_t{2}}) {
      const NamedMatrix& m = matrices()[mi];
      for (DType dt : kDtypes) {
        for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{64}})
          for (const Problem& p : problems_for(m.a, dt, n)) {
            EnumerateOptions o;
            o.device = target.limits;
            o.include_specialised = true;
            std::vector<Schedule> all = fam->enumerate(p, m.a, o);
            if (all.empty()) continue;
            const RankedSpace ranked = rank_space(m.a, p, target, std::move(all), &info);
            for (size_t i = 0; i < std::min<size_t>(3, ranked.order.size()); ++i) {
              const Schedule& s = ranked.all[ranked.order[i]];
              SCOPED_TRACE(m.name + " " + to_string(p) + " " + to_string(s));
              if (p.op == Op::GatedFfn) {
                // Weights and tokens of the problem's shape whose activations are about as
                // sparse as the matrix (K >= 2 for the generator).
                if (p.k < 2) continue;
                const FfnCase c = make_ffn_case(
                    {.m = p.m,
                     .k = p.k,
                     .n = p.n,
                     .dtype = p.dtype,
                     .mean_nnz =
                         std::max(1.0, double(m.a.nnz()) / double(std::max<int64_t>(m.a.rows, 1))),
                     .seed = ++seed});
                const CompiledKernel k(ctx,
                                       build_ffn_kernel(c.problem, s, c.weights, target, &m.a));
                const FfnCheckResult r = check_ffn(k, c.weights, c.x, ++seed);
                EXPECT_TRUE(r.passed) << r.error;
              } else {
                const CompiledKernel k(ctx, build_kernel(m.a, p, s, target));
                const GpuCheckPair r = gpu_check(k, m.a, ++seed);
                EXPECT_TRUE(r.passed()) << r.error();
              }
              ++checked[std::string(fam->name())];
            }
          }
      }
    }
    EXPECT_GT(checked[std::string(fam->name())], 0) << fam->name() << " ran nothing on the GPU";
  }
  ctx->synchronize();
  for (const auto& [name, count] : checked)
    std::printf("%s: %d kernels checked on %s\n", name.c_str(), count, info.name.c_str());
}

INSTANTIATE_TEST_SUITE_P(Registered, FamilyConformance, ::testing::ValuesIn(family_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace sparsegen
