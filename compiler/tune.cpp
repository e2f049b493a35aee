#include "compiler/tune.h"

#include "compiler/pipeline_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "codegen/template_library.h"
#include "compiler/device_check_inputs.h"
#include "compiler/family.h"
#include "compiler/fingerprint.h"
#include "compiler/gpu_check.h"
#include "costmodel/features.h"
#include "costmodel/linear_model.h"
#include "costmodel/model_registry.h"
#include "costmodel/schedule_features.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/parallel.h"
#include "ir/verifier.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/process_memory.h"
#include "runtime/sha256.h"
#include "runtime/timing.h"

namespace sparsegen {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Database failures reach users as UserError (exit code 1) with the file's name in the message.
template <class F>
auto with_db(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const kdb::KernelDbError& e) {
    throw UserError(std::string("kernel cache ") + e.what());
  }
}

// Ranking by the cost model (costmodel/): the fitted model shipped for the device (or the
// roofline model when none matches; default_model's note says which). Offline (no GPU) there is no
// device to match: offline_model picks the model shipped for the target's compute capability and
// says so, without a device-mismatch warning; the profile is costmodel/'s H100 SXM default with
// that compute capability (the limits of the offline arch still bound the enumeration).
const ModelChoice& model_for(const DeviceProfile& d, bool offline) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ModelChoice>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[(offline ? "offline/" : d.name + "/") + d.arch()];
  if (!slot) slot = std::make_unique<ModelChoice>(offline ? offline_model(d) : default_model(d));
  return *slot;
}

// The number of an "sm_XY" / "compute_XY" (2 or 3 digits, an optional "a" suffix), or nothing.
// Parsed by hand: std::regex crashed inside the Python extension on a GPU host (its bracket
// matcher reached a locale facet that was not there), and a fixed spelling needs no regex.
std::optional<int> arch_number(std::string_view arch) {
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (arch.substr(0, prefix.size()) != prefix) continue;
    std::string_view digits = arch.substr(prefix.size());
    if (!digits.empty() && digits.back() == 'a') digits.remove_suffix(1);
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    int v = 0;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return std::nullopt;
      v = v * 10 + (ch - '0');
    }
    return v;
  }
  return std::nullopt;
}

// The compute capability of an offline "sm_XY" / "compute_XY" (offline_target's spellings);
// sm_90 for anything else.
std::pair<int, int> offline_cc(const std::string& arch) {
  const std::optional<int> v = arch_number(arch);
  if (!v) return {9, 0};
  return {*v / 10, *v % 10};
}

// Values made once per key by the first caller that needs one; later callers wait for it. A
// failure reaches every caller of that key.
template <class K, class V>
class OnceMap {
 public:
  template <class Make>
  std::shared_ptr<const V> get(const K& key, Make&& make) {
    std::promise<std::shared_ptr<const V>> mine;
    std::shared_future<std::shared_ptr<const V>> f;
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      first = it == map_.end();
      f = first ? (map_[key] = mine.get_future().share()) : it->second;
    }
    if (first) {
      try {
        mine.set_value(std::make_shared<const V>(make()));
      } catch (...) {
        mine.set_exception(std::current_exception());
      }
    }
    return f.get();
  }

  // Forgets `key` (its value lives on in the callers that hold it); a later get() makes it anew.
  void erase(const K& key) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.erase(key);
  }

 private:
  std::mutex mu_;
  std::map<K, std::shared_future<std::shared_ptr<const V>>> map_;
};

struct Candidate {
  size_t index = 0;  // into the enumeration
  Schedule schedule;
  std::optional<double> predicted_ms;
  std::optional<KernelBuild> build;
  std::exception_ptr failure;
  std::string error;
  std::optional<double> measured_ms;
  std::vector<double> times_ms;
  int round = 1;  // CandidateReport::round
};

// What the fastest measured library candidate (IrFamily::library) says about the pick, for the
// reason: "; 1.31x faster than the library (dense;lib=cublaslt, 0.0310 ms)", or, when a library
// won, "; the library was fastest (cusparse;alg=alg2): the best generated kernel (...) took 1.18x
// its time". When no library family can run the problem at all: "; not compared with a library
// (dense: ...)". Empty when a library could have run but none was measured.
std::string library_note(const std::vector<Candidate>& cands, const Candidate& winner,
                         const Problem& p, const CsrMatrix& a) {
  const Candidate* lib = nullptr;
  const Candidate* gen = nullptr;
  for (const Candidate& c : cands) {
    if (!c.measured_ms) continue;
    const Candidate*& slot = c.schedule.family().library() ? lib : gen;
    if (slot == nullptr || *c.measured_ms < *slot->measured_ms) slot = &c;
  }
  if (!winner.measured_ms) return "";
  if (lib == nullptr) {
    const std::vector<std::string> why = library_why_not(p, a);
    return why.empty() ? ""
                       : fmt::format("; not compared with a library ({})", fmt::join(why, "; "));
  }
  if (&winner == lib)
    return gen == nullptr
               ? "; only library candidates ran"
               : fmt::format(
                     "; the library was fastest ({}): the best generated kernel ({}) took {:.2f}x "
                     "its time",
                     to_string(lib->schedule), to_string(gen->schedule),
                     *gen->measured_ms / *lib->measured_ms);
  return fmt::format("; {:.2f}x faster than the library ({}, {:.4f} ms)",
                     *lib->measured_ms / *winner.measured_ms, to_string(lib->schedule),
                     *lib->measured_ms);
}

// A library candidate that searched its algorithm when it was loaded becomes the schedule of the
// choice it found (IrFamily::with_library_choices), its build planning that choice: the cache
// keeps the choice with the kernel and a later load does not search again.
void keep_library_choices(Candidate& c, const CompiledKernel& k) {
  const auto& found = k.signature().sparse_gemms;
  if (found.empty()) return;
  std::vector<std::string> choices;
  for (const codegen::LibrarySparseGemm& g : found) choices.push_back(g.choice);
  const std::optional<Schedule> s = c.schedule.family().with_library_choices(c.schedule, choices);
  if (!s) return;
  if (debug_logging())
    std::fprintf(stderr, "[sparsegen] %s: the library's search chose %s\n",
                 to_string(c.schedule).c_str(), to_string(*s).c_str());
  c.schedule = *s;
  c.build->schedule = *s;
  c.build->kernel.signature.sparse_gemms = found;
}

kdb::KernelRecord record_of(const Candidate& c, const kdb::KeyParts& base) {
  kdb::KeyParts parts = base;
  parts.schedule = to_string(c.schedule);
  kdb::KernelRecord r;
  r.key = kdb::kernel_key(parts);
  r.tuning_key = kdb::tuning_key(parts);
  r.key_text = kdb::describe(parts);
  r.schedule = parts.schedule;
  r.source = c.build->kernel.source;
  r.arch = c.build->compiled.arch;
  r.image = c.build->compiled.image;
  r.image_is_cubin = c.build->compiled.is_cubin;
  r.compile_ms = c.build->compiled.compile_ms;
  r.predicted_ms = c.predicted_ms;
  r.measured_ms = c.measured_ms;
  r.times_ms = c.times_ms;
  return r;
}

// The cached kernel `rec` for this matrix: re-packs and re-emits (values and tables are the
// matrix's own), and takes the stored image only when the emitted source is the stored one.
std::optional<KernelBuild> build_from_record(const CsrMatrix& a, const Problem& p,
                                             const kdb::KernelRecord& rec,
                                             const CompileTarget& target) {
  KernelBuild b = prepare_kernel(a, p, parse_schedule(rec.schedule), target);
  if (b.kernel.source != rec.source || rec.arch != target.arch) {
    if (debug_logging())
      std::fprintf(stderr,
                   "sparsegen: [tune] cached kernel %.12s differs from the current emitter; "
                   "recompiling\n",
                   rec.key.c_str());
    return std::nullopt;
  }
  b.compiled.image = rec.image;
  b.compiled.is_cubin = rec.image_is_cubin;
  b.compiled.arch = rec.arch;
  b.compiled.compile_ms = 0;
  b.step_log.push_back(
      fmt::format("7/9 nvrtc     cached {} ({} bytes)", rec.key.substr(0, 12), rec.image.size()));
  return b;
}

// The position in `order` of the candidate not chosen yet, of the strategy of `picked` (positions
// already chosen, at least one), farthest in SPEC from its nearest in `picked`; ties to the
// better-ranked. nullopt when the strategy has no candidate left.
std::optional<size_t> farthest_unchosen(const std::vector<size_t>& order,
                                        const std::vector<Schedule>& all,
                                        const std::vector<std::string>& unmodelled,
                                        const std::vector<bool>& chosen,
                                        const std::vector<size_t>& picked) {
  const std::string& strategy = unmodelled[order[picked.front()]];
  std::optional<size_t> best;
  int best_d = -1;
  for (size_t j = 0; j < order.size(); ++j) {
    if (chosen[j] || unmodelled[order[j]] != strategy) continue;
    int d = std::numeric_limits<int>::max();
    for (size_t c : picked) d = std::min(d, spec_distance(all[order[c]], all[order[j]]));
    if (d > best_d) best = j, best_d = d;
  }
  return best;
}

}  // namespace

DeviceProfile profile_of(const cuda::DeviceInfo& info, bool* bandwidth_guessed) {
  return device_profile(info.name, info.cc_major, info.cc_minor, info.sm_count, info.l2_cache_bytes,
                        info.clock_rate_khz, info.max_threads_per_sm, info.max_registers_per_sm,
                        bandwidth_guessed);
}

RankedSpace rank_space(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                       std::vector<Schedule> all, const cuda::DeviceInfo* info) {
  DeviceProfile d = DeviceProfile::h100_sxm();
  const bool offline = !(target.has_gpu && info != nullptr);
  if (!offline)
    d = profile_of(*info);
  else
    std::tie(d.cc_major, d.cc_minor) = offline_cc(target.arch);
  const ModelChoice& mc = model_for(d, offline);
  // The matrix's features and row profile once, then every schedule's features and prediction.
  auto t = Clock::now();
  const MatrixFeatures mf = compute_features(a);
  const double features_ms = ms_since(t);
  t = Clock::now();
  const RowProfile rows = row_profile(a);
  const double rows_ms = ms_since(t);
  t = Clock::now();
  const std::vector<Ranked> ranked = rank_schedules(p, all, a, mf, rows, mc.model);
  if (debug_logging())
    std::fprintf(stderr,
                 "sparsegen: [tune] rank: matrix features %.2f ms, row profile %.2f ms, %zu "
                 "schedules %.2f ms\n",
                 features_ms, rows_ms, all.size(), ms_since(t));
  RankedSpace r;
  r.predicted_ms.assign(all.size(), std::nullopt);
  r.unmodelled.assign(all.size(), std::string());
  for (const Ranked& x : ranked) {
    r.order.push_back(x.index);
    r.predicted_ms[x.index] = x.predicted_us / 1000.0;
    if (mc.model.fitted() && x.source != "family") r.unmodelled[x.index] = x.family;
  }
  if (debug_logging()) {
    std::set<std::string> strategies(r.unmodelled.begin(), r.unmodelled.end());
    strategies.erase(std::string());
    for (const std::string& st : strategies)
      std::fprintf(stderr, "sparsegen: [tune] rank: no formula fitted on '%s'\n", st.c_str());
  }
  SG_ASSERT(r.order.size() == all.size(), "rank_schedules dropped candidates");
  // Offline the note names the model and says that no GPU is present.
  r.how = offline ? mc.note : "cost model: " + mc.note;
  r.warning = mc.warning;
  r.all = std::move(all);
  return r;
}

RankedSpace rank_space(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                       const cuda::DeviceInfo* info) {
  EnumerateOptions eo;
  eo.device = target.limits;
  eo.include_specialised = true;  // the tuner is family-aware: every family competes
  return rank_space(a, p, target, enumerate_schedules(p, a, eo), info);
}

CompileTarget offline_target(const std::string& arch, const std::string& flag) {
  const std::optional<int> number = arch_number(arch);
  if (!number)
    throw UserError(
        fmt::format("{}: expected sm_XY or compute_XY (e.g. sm_90), found '{}'", flag, arch));
  CompileTarget t;
  t.arch = arch;
  t.has_gpu = false;
  t.device_name = "offline";
  t.limits = *number == 80 ? DeviceLimits::sm80() : DeviceLimits::sm90();
  t.limits.name = fmt::format("sm_{}", *number);
  return t;
}

kdb::KeyParts key_parts(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                        const std::string& schedule) {
  return key_parts(fingerprint(a), p, target, schedule);
}

kdb::KeyParts key_parts(const MatrixFingerprint& f, const Problem& p, const CompileTarget& target,
                        const std::string& schedule) {
  kdb::KeyParts k;
  k.operation =
      fmt::format("{} b={} c={}", to_string(p.op), to_string(p.b_layout), to_string(p.c_layout));
  k.matrix = to_string(f, p.dtype);
  k.n = p.n;
  // Floating problems: "a=fp16 b=fp16 c=fp16 acc=fp32"; quantized ones name the io type, the
  // integer accumulator of int8 and the scales.
  k.dtypes = fmt::format("a={} b={} c={} acc={}{}", to_string(p.dtype), to_string(p.b_dtype()),
                         to_string(p.c_dtype()), p.dtype == DType::I8 ? "int32" : "fp32",
                         is_quantized(p.dtype) ? " scales=row_token" : "");
  k.schedule = schedule;
  // The arch is part of the device: an offline sm_90 cubin and PTX are different kernels.
  k.device = target.has_gpu
                 ? fmt::format("{} {} arch={}", target.device_name, target.limits.name, target.arch)
                 : fmt::format("offline arch={}", target.arch);
  k.nvrtc_version = nvrtc::version_string();
  k.generator_version = generator_version();
  return k;
}

const std::string& generator_version() {
  static const std::string v = [] {
    std::string all;
    for (const EmbeddedHeader& h : embedded_template_headers())
      all.append(h.name).append(1, '\0').append(h.content).append(1, '\0');
    return std::string(kGeneratorVersion) + "/templates-" + sha256_hex(all).substr(0, 16);
  }();
  return v;
}

KernelBuild prepare_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                           const CompileTarget& target) {
  BuildOptions o;
  o.compile = false;
  return build_kernel(a, p, s, target, o);
}

size_t build_window(int64_t nnz, int64_t rows, DType dtype, int threads, int64_t budget_bytes,
                    bool freed_memory_reused) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A build at its peak: the pack's fp32 values and column indices, and the converted values.
  const int64_t per_build = std::max<int64_t>(1, nnz) * (4 + 4 + dtype_bytes(dtype));
  const int64_t csr_bytes = nnz * 8 + (rows + 1) * 8;
  const int64_t automatic = freed_memory_reused ? std::max(kBuildWindowMinBytes, 2 * csr_bytes)
                                                : std::max(kBuildWindowBytesFresh, csr_bytes);
  const int64_t budget = budget_bytes > 0 ? budget_bytes : automatic;
  return static_cast<size_t>(std::clamp<int64_t>(budget / per_build, 1, threads));
}

std::vector<size_t> select_for_measurement(const std::vector<size_t>& order,
                                           const std::vector<Schedule>& all, int k, int spread,
                                           const std::vector<std::string>& unmodelled) {
  const size_t take = std::min(order.size(), static_cast<size_t>(std::max(k, 1)));
  std::vector<bool> chosen(order.size(), false);  // by position in `order`
  size_t n = 0;
  if (k >= 4) {
    const int per_family = k / 4;
    std::map<std::string_view, int> seen;
    for (size_t i = 0; i < order.size(); ++i)
      if (seen[all[order[i]].family_name()]++ < per_family) chosen[i] = true, ++n;
  }
  for (size_t i = 0; i < order.size() && n < take; ++i)
    if (!chosen[i]) chosen[i] = true, ++n;
  // Keep the first `take` chosen positions, then spread `spread` more over the positions left.
  size_t kept = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (chosen[i] && kept++ >= take) chosen[i] = false;
  std::vector<size_t> rest;
  for (size_t i = 0; i < order.size(); ++i)
    if (!chosen[i]) rest.push_back(i);
  const size_t extra = std::min(rest.size(), static_cast<size_t>(std::max(spread, 0)));
  for (size_t j = 0; j < extra; ++j) chosen[rest[j * rest.size() / extra]] = true;
  if (k >= 4 && !unmodelled.empty()) {
    const int places = std::max(k / 4, 1);
    std::map<std::string_view, int> added;  // chosen candidates per unmodelled strategy
    for (size_t i = 0; i < order.size(); ++i)
      if (chosen[i] && !unmodelled[order[i]].empty()) ++added[unmodelled[order[i]]];
    // Each added place goes to the candidate of the strategy farthest in SPEC from those of it
    // already chosen (ties, and the first place, to the best-ranked).
    for (size_t i = 0; i < order.size(); ++i) {
      const std::string& strategy = unmodelled[order[i]];
      if (chosen[i] || strategy.empty() || added[strategy] >= places) continue;
      std::vector<size_t> picked;  // positions of the strategy's chosen candidates
      for (size_t c = 0; c < order.size(); ++c)
        if (chosen[c] && unmodelled[order[c]] == strategy) picked.push_back(c);
      while (added[strategy] < places) {
        // the first place of a strategy none of whose candidates is chosen: its best-ranked, i
        const std::optional<size_t> next =
            picked.empty() ? std::optional<size_t>(i)
                           : farthest_unchosen(order, all, unmodelled, chosen, picked);
        if (!next) break;
        chosen[*next] = true;
        picked.push_back(*next);
        ++added[strategy];
      }
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < order.size(); ++i)
    if (chosen[i]) out.push_back(order[i]);
  return out;
}

int fixed_cost_spread(const RankedSpace& r, int64_t nnz, int k) {
  if (k < 4 || r.order.empty() || nnz >= kFixedCostRegimeNnz) return 0;
  const std::optional<double>& best = r.predicted_ms[r.order.front()];
  return best && *best < kFixedCostRegimeMs ? kFixedCostSpread * k : 0;
}

int spec_distance(const Schedule& a, const Schedule& b) {
  if (a.family_name() != b.family_name()) return -1;
  // SPEC fields as key -> value; a field left at its default is not printed, so a field that
  // only one of the two prints counts as one that differs.
  auto fields = [](const Schedule& s) {
    std::map<std::string, std::string> out;
    const std::string text = to_string(s);
    size_t start = text.find(';');  // past the family name
    while (start != std::string::npos) {
      const size_t end = text.find(';', start + 1);
      const std::string f =
          text.substr(start + 1, end == std::string::npos ? end : end - start - 1);
      const size_t eq = f.find('=');
      out[f.substr(0, eq)] = eq == std::string::npos ? std::string() : f.substr(eq + 1);
      start = end;
    }
    return out;
  };
  const std::map<std::string, std::string> x = fields(a), y = fields(b);
  int d = 0;
  for (const auto& [key, value] : x) {
    const auto it = y.find(key);
    d += it == y.end() || it->second != value;
  }
  for (const auto& [key, value] : y) d += x.find(key) == x.end();
  return d;
}

std::vector<size_t> refine_for_measurement(const std::vector<size_t>& order,
                                           const std::vector<Schedule>& all, size_t winner,
                                           const std::vector<size_t>& measured, int extra,
                                           const std::vector<std::string>& unmodelled) {
  const std::string none;
  const std::string& strategy = winner < unmodelled.size() ? unmodelled[winner] : none;
  const int budget = strategy.empty() ? extra : extra * kUnmodelledRefineFactor;
  std::vector<std::pair<int, size_t>> near;  // (SPEC distance, index), in the model's order
  for (size_t i : order) {
    if (std::find(measured.begin(), measured.end(), i) != measured.end()) continue;
    const int d = spec_distance(all[winner], all[i]);
    const bool same_unmodelled =
        !strategy.empty() && i < unmodelled.size() && unmodelled[i] == strategy;
    if (d >= 1 && (d <= kRefineFields || same_unmodelled)) near.emplace_back(d, i);
  }
  if (!strategy.empty())
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<size_t> out;
  for (const auto& [d, i] : near) {
    if (static_cast<int>(out.size()) >= budget) break;
    out.push_back(i);
  }
  return out;
}

std::vector<size_t> second_round(const std::vector<size_t>& order, const std::vector<Schedule>& all,
                                 const std::vector<std::pair<size_t, double>>& first_round,
                                 std::vector<size_t> measured, int extra,
                                 const std::vector<std::string>& unmodelled) {
  std::vector<size_t> out;
  if (first_round.empty() || extra <= 0) return out;
  auto strategy_of = [&](size_t i) {
    return i < unmodelled.size() ? unmodelled[i] : std::string();
  };
  std::vector<size_t> anchors = {first_round.front().first};
  std::set<std::string> anchored = {strategy_of(anchors.front())};
  const double limit = first_round.front().second * kUnmodelledAnchorRatio;
  for (const auto& [i, ms] : first_round) {
    const std::string s = strategy_of(i);
    if (ms > limit) break;
    if (!s.empty() && anchored.insert(s).second) anchors.push_back(i);
  }
  // Each unmodelled strategy's runner-up within the ratio, with a modelled budget: its first-round
  // place is as blind as the winner's.
  std::vector<size_t> runners_up;
  std::set<std::string> seen;
  for (const auto& [i, ms] : first_round) {
    const std::string s = strategy_of(i);
    if (ms > limit) break;
    if (s.empty()) continue;
    if (!seen.insert(s).second && std::find(anchors.begin(), anchors.end(), i) == anchors.end() &&
        std::none_of(runners_up.begin(), runners_up.end(),
                     [&](size_t r) { return strategy_of(r) == s; }))
      runners_up.push_back(i);
  }
  const int runner_extra = std::max(1, extra / kUnmodelledRefineFactor);
  for (size_t a = 0; a < anchors.size() + runners_up.size(); ++a) {
    const bool runner = a >= anchors.size();
    const size_t anchor = runner ? runners_up[a - anchors.size()] : anchors[a];
    for (size_t i : refine_for_measurement(order, all, anchor, measured,
                                           runner ? runner_extra : extra, unmodelled)) {
      out.push_back(i);
      measured.push_back(i);
    }
  }
  // A winner with no neighbours (a library baseline, never refined) leaves the round to the
  // fastest candidate that has some.
  for (size_t r = 1; r < first_round.size() && out.empty(); ++r)
    out = refine_for_measurement(order, all, first_round[r].first, measured, extra, unmodelled);
  return out;
}

std::vector<std::string> library_why_not(const Problem& p, const CsrMatrix& a) {
  std::vector<std::string> why;
  for (const IrFamily* f : ir_families()) {
    if (!f->library()) continue;
    const std::vector<std::string> w = f->why_not(p, a);
    if (w.empty()) return {};
    why.push_back(fmt::format("{}: {}", f->name(), w.front()));
  }
  return why;
}

TuneResult tune(const CsrMatrix& a, const KernelRequest& req, const CompileTarget& target,
                const TuneOptions& opt) {
  const auto t0 = Clock::now();
  auto progress = [&](const char* phase, int done, int total) {
    if (opt.progress) opt.progress(TuneProgress{phase, done, total});
  };
  if (opt.top_k < 0)
    throw UserError(fmt::format("top-k: expected 0 (model only) or more, found {}", opt.top_k));
  TuneResult res;
  // Closes the phase that began at the previous mark: recorded in res.phases_ms, and logged.
  auto mark = t0;
  auto phase_done = [&](const char* name) {
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
    res.phases_ms.emplace_back(name, ms);
    const std::optional<ProcessMemory> mem = process_memory();
    if (mem) res.phases_peak_rss_bytes.emplace_back(name, mem->peak_rss_bytes);
    if (debug_logging()) {
      if (mem)
        std::fprintf(stderr, "sparsegen: [tune] %-9s %10.2f ms  rss %.2f GB  peak %.2f GB\n", name,
                     ms, double(mem->rss_bytes) * 1e-9, double(mem->peak_rss_bytes) * 1e-9);
      else
        std::fprintf(stderr, "sparsegen: [tune] %-9s %10.2f ms\n", name, ms);
    }
  };
  res.problem = make_problem(a, req);
  const Problem& p = res.problem;
  check_value_range(a, p.dtype);
  res.arch = target.arch;
  res.device = target.has_gpu ? target.device_name : "offline";
  res.top_k = opt.top_k;

  if (opt.top_k > 0) {  // before any work: measuring needs the target's own GPU
    std::string why;
    const bool driver = cuda::driver_available(&why);
    if (!driver || !target.has_gpu)
      throw CudaError(
          fmt::format("top-k {} measures on the GPU, but {}; use --top-k 0 (model only)", opt.top_k,
                      driver ? "the target is an offline architecture" : "there is none: " + why),
          "cuInit", CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
  }
  // An explicit schedule: validate it up front (a user error before any GPU or DB work).
  std::optional<Schedule> given;
  std::string given_reason;
  if (!req.schedule.empty()) given = choose_schedule(p, a, req, target, &given_reason);

  const kdb::KeyParts base = key_parts(a, p, target, "");
  res.tuning_key = kdb::tuning_key(base);
  std::unique_ptr<kdb::KernelDb> db;
  if (opt.use_cache) {
    db = with_db([&] { return std::make_unique<kdb::KernelDb>(kdb::db_path(opt.cache_dir)); });
    res.db_path = db->path().string();
  }

  // ---- cache lookup --------------------------------------------------------------------------
  if (db && !opt.force) {
    std::optional<kdb::KernelRecord> rec;
    std::optional<kdb::TuningRecord> tr;
    if (given) {
      kdb::KeyParts parts = base;
      parts.schedule = to_string(*given);
      rec = with_db([&] { return db->kernel(kdb::kernel_key(parts)); });
      if (rec && opt.top_k > 0 && !rec->measured_ms) rec.reset();  // wants a measurement
    } else {
      tr = with_db([&] { return db->tuning(res.tuning_key); });
      if (tr && tr->top_k >= opt.top_k) rec = with_db([&] { return db->kernel(tr->best_key); });
    }
    if (rec) {
      std::optional<KernelBuild> b;
      if (opt.want_build) b = build_from_record(a, p, *rec, target);
      if (!opt.want_build || b) {
        res.cache_hit = true;
        res.schedule = rec->schedule;
        res.kernel_key = rec->key;
        res.predicted_ms = rec->predicted_ms;
        res.measured_ms = rec->measured_ms;
        res.arch = rec->arch;
        if (tr) {
          res.ranking = tr->ranking;
          res.enumerated = tr->candidates;
          res.top_k = tr->top_k;
          res.original_search_ms = tr->search_ms;
          res.reason = fmt::format("cached tuning ({}; {} of {} candidates measured)", tr->ranking,
                                   tr->top_k, tr->candidates);
        } else {
          res.reason = given_reason + " (cached kernel)";
        }
        if (b) {
          b->schedule_reason = res.reason;
          res.build = std::move(b);
        }
        phase_done("lookup");
        res.search_ms = ms_since(t0);
        return res;
      }
    }
    phase_done("lookup");
  }

  // ---- enumerate and rank --------------------------------------------------------------------
  std::vector<Candidate> cands;
  std::vector<Schedule> all;  // the search space (empty for an explicit schedule)
  RankedSpace r;
  bool restricted = false;  // opt.restrict_to applied
  if (given) {
    Candidate c;
    c.schedule = *given;
    cands.push_back(std::move(c));
    res.enumerated = 1;
    res.ranking = given_reason;
  } else {
    progress("enumerate", 0, 1);
    EnumerateOptions eo;
    eo.device = target.limits;
    eo.include_specialised = true;  // the tuner is family-aware: every family competes
    all = enumerate_schedules(p, a, eo);
    const size_t space = all.size();
    if (!opt.restrict_to.empty() && !all.empty()) {
      std::vector<Schedule> kept;
      for (const std::string& spec : opt.restrict_to)
        for (const Schedule& sch : all)
          if (to_string(sch) == spec) {
            kept.push_back(sch);
            break;
          }
      if (!kept.empty()) {
        all = std::move(kept);
        restricted = true;
      }
    }
    // Library candidates (IrFamily::library) are not ranked by the model: a measuring
    // search times them next to the ranked candidates, a model-only one never picks them. A
    // restricted search keeps what it was given.
    std::vector<Schedule> baselines;
    if (!restricted) {
      std::vector<Schedule> ranked;
      for (Schedule& sch : all)
        (sch.family().library() ? baselines : ranked).push_back(std::move(sch));
      if (ranked.empty()) std::swap(ranked, baselines);  // nothing else fits: the library is all
      all = std::move(ranked);
    }
    progress("enumerate", 1, 1);
    phase_done("enumerate");
    if (all.empty())
      throw UserError(fmt::format("{}: no valid schedule for {} on {}",
                                  a.source.empty() ? "matrix" : a.source, to_string(p),
                                  target.limits.name));
    res.enumerated = static_cast<int>(space);
    progress("rank", 0, 1);
    std::optional<cuda::DeviceInfo> info;
    if (target.has_gpu) info = opt.ctx ? opt.ctx->info() : cuda::query_device(0);
    r = rank_space(a, p, target, all, info ? &*info : nullptr);
    progress("rank", 1, 1);
    phase_done("rank");
    res.ranking = r.how;
    if (restricted)
      res.ranking += fmt::format(" over {} schedule{} ({})", all.size(), all.size() == 1 ? "" : "s",
                                 opt.restrict_note.empty() ? "restricted" : opt.restrict_note);
    if (!r.warning.empty()) res.warnings.push_back(r.warning);
    const int measure_k = restricted && opt.top_k > 0 ? static_cast<int>(all.size()) : opt.top_k;
    const int spread = restricted ? 0 : fixed_cost_spread(r, a.nnz(), opt.top_k);
    if (spread > 0)
      res.ranking += fmt::format(
          "; fixed-cost regime (best prediction {:.4f} ms): {} more spread "
          "over the ranking",
          *r.predicted_ms[r.order.front()], spread);
    for (size_t idx : select_for_measurement(r.order, all, measure_k, spread, r.unmodelled)) {
      Candidate c;
      c.index = idx;
      c.schedule = all[c.index];
      c.predicted_ms = r.predicted_ms[c.index];
      cands.push_back(std::move(c));
    }
    if (opt.top_k > 0)
      for (Schedule& sch : baselines) {  // after the ranked space: never refined around
        Candidate c;
        c.index = all.size();
        c.schedule = sch;
        all.push_back(std::move(sch));
        r.predicted_ms.push_back(std::nullopt);
        r.unmodelled.emplace_back();
        cands.push_back(std::move(c));
      }
  }

  // ---- compile, and for k > 0 measure --------------------------------------------------------
  // Candidates that pack alike (IrFamily::pack_key: MACKO per delta width, bitmap_tc one) share
  // one prepared pack: the first worker to need it packs, the others wait for it. A measuring
  // search drops a shared pack after its last candidate's upload.
  OnceMap<std::string, PreparedPack> packs;
  auto shared_pack_key = [&](const Candidate& c) -> std::optional<std::string> {
    const auto key = c.schedule.family().pack_key(c.schedule);
    if (!key) return std::nullopt;
    return std::string(c.schedule.family_name()) + ";" + *key;
  };
  // Builds one candidate (steps 3-7; without step 7 when !compile); a failure is recorded in
  // it, never thrown.
  auto build_candidate = [&](Candidate& c, bool compile) {
    try {
      BuildOptions o;
      o.compile = compile;
      o.line_info = req.line_info;
      o.source_hook = opt.source_hook;
      std::shared_ptr<const PreparedPack> shared;
      if (const auto key = shared_pack_key(c)) {
        shared = packs.get(*key, [&] { return prepare_pack(a, p, c.schedule); });
        o.pack = shared.get();
        o.pack_owner = shared;  // the build borrows the pack's arrays
      }
      c.build = build_kernel(a, p, c.schedule, target, o);
    } catch (const std::exception& e) {
      c.failure = std::current_exception();
      c.error = e.what();
    }
  };
  auto compiled = [&] {
    std::vector<size_t> ok;  // into cands
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].build) ok.push_back(i);
    return ok;
  };
  Candidate* winner = nullptr;

  if (opt.top_k == 0) {  // model only: compile on the pool, nothing to measure
    std::atomic<int> done{0};
    std::mutex progress_mu;
    const int count = static_cast<int>(cands.size());
    progress("compile", 0, count);
    for_each_task(cands.size(), opt.compile_threads, [&](size_t i) {
      build_candidate(cands[i], true);
      const int d = ++done;
      std::lock_guard<std::mutex> lock(progress_mu);
      progress("compile", d, count);
    });
    phase_done("compile");
    if (compiled().empty()) std::rethrow_exception(cands.front().failure);  // nothing is cached
    winner = &cands[compiled().front()];
  } else {
    // ---- measure, refine, check -------------------------------------------------------------
    // Candidates are built and uploaded on a pool while this thread times them, in one pipeline
    // (ir/parallel.h: produce_in_order). A candidate's host arrays live from the start of its
    // pack to their upload, which comes before the compile; then they are dropped
    // (KernelBuild::drop_device_arrays). The slots (build_window) bound the candidates in that
    // stretch, and so the search's memory on a graph-sized matrix; compiles run on every
    // thread.
    std::shared_ptr<cuda::Context> ctx = opt.ctx ? opt.ctx : std::make_shared<cuda::Context>(0);
    ctx->make_current();
    const size_t w = static_cast<size_t>(dtype_bytes(p.c_dtype()));
    cuda::DeviceBuffer db_b, db_c(static_cast<size_t>(p.m * p.n) * w + w);
    if (check_inputs_on_device(p)) {  // the check's B, drawn where it is used
      db_b = cuda::DeviceBuffer(static_cast<size_t>(p.k * p.n) * w + w);
      fill_check_values(target.arch, db_b.ptr(), p.k * p.n, opt.seed, 0, p.b_dtype(), nullptr);
      ctx->synchronize();  // the timing stream is non-blocking: it would not wait for the fill
    } else {
      const std::vector<char> hb = to_device_values(make_check_b(p, opt.seed), p.b_dtype());
      db_b = cuda::DeviceBuffer(hb.size() + w);
      if (!hb.empty()) db_b.upload(hb.data(), hb.size());
    }
    db_c.fill_bytes(0);
    cuda::Stream stream;
    L2Flusher flusher(ctx->info());
    TimingOptions to;
    to.warmup = 2;
    to.repetitions = std::max(opt.repetitions, 1);
    to.min_repetitions = std::min(to.repetitions, 5);
    to.max_total_ms = 200;  // bounds the search on a slow candidate
    to.stream = stream.get();
    to.flusher = &flusher;
    std::vector<std::unique_ptr<CompiledKernel>> loaded;  // by candidate
    const int threads = opt.compile_threads > 0
                            ? opt.compile_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const size_t window = build_window(a.nnz(), a.rows, p.dtype, threads, opt.build_memory_bytes,
                                       freed_memory_is_reused());
    res.build_window = static_cast<int>(window);
    // Records why cands[i] was not measured; called from a catch block: a sticky CUDA error is
    // rethrown (the context cannot run anything after a fault).
    auto measurement_failed = [](Candidate& c, const std::exception& e) {
      c.error = fmt::format("measurement failed: {}", e.what());
      if (const auto* cuda_error = dynamic_cast<const CudaError*>(&e);
          cuda_error && cuda_error->sticky())
        throw;
    };
    // Uploads the arrays of cands[i] (built, not compiled) and drops its host arrays; on a pool
    // thread, so that the uploads (pageable copies of 0.5-0.7 GB each for a 65M-nonzero graph)
    // overlap each other and the timing. A sticky CUDA error is rethrown (the pipeline rethrows
    // it at the candidate's turn).
    auto upload_candidate = [&](size_t i) -> std::optional<DeviceArrays> {
      Candidate& c = cands[i];
      if (!c.build) return std::nullopt;
      std::optional<DeviceArrays> arrays;
      try {
        const auto t_up = Clock::now();
        ctx->make_current();
        arrays = upload_arrays(*c.build);
        if (debug_logging())
          std::fprintf(stderr, "sparsegen: [tune] upload %8.2f ms  %s\n", ms_since(t_up),
                       to_string(c.schedule).c_str());
      } catch (const std::exception& e) {
        measurement_failed(c, e);
      }
      c.build->drop_device_arrays();  // uploaded, or not to be measured
      return arrays;
    };
    // Compiles cands[i] (uploaded) and loads it with its arrays; a failure is recorded in it.
    auto compile_and_load = [&](size_t i, std::optional<DeviceArrays>& arrays) {
      Candidate& c = cands[i];
      if (!c.build || !arrays) return;
      try {
        compile_step(*c.build, target, fmt::format("sparsegen_{}.cu", c.schedule.family_name()),
                     req.line_info);
      } catch (const std::exception& e) {
        c.build.reset();
        c.failure = std::current_exception();
        c.error = e.what();
        return;
      }
      try {
        ctx->make_current();
        loaded[i] = std::make_unique<CompiledKernel>(ctx, *c.build, std::move(*arrays));
      } catch (const std::exception& e) {
        measurement_failed(c, e);
      }
    };
    // Times cands[i] (uploaded) on the search's stream, on the calling thread.
    auto measure_candidate = [&](size_t i) {
      Candidate& c = cands[i];
      try {
        const auto t_measure = Clock::now();
        const CompiledKernel& k = *loaded[i];
        // A candidate 4x slower than the best so far stops after its second warm-up run: its
        // one sample says enough (at prefill sizes a slow kernel's runs take seconds).
        TimingOptions tc = to;
        for (const Candidate& o : cands)
          if (o.measured_ms &&
              (tc.abandon_above_ms == 0 || 4.0 * *o.measured_ms < tc.abandon_above_ms))
            tc.abandon_above_ms = 4.0 * *o.measured_ms;
        const TimingResult t =
            measure([&](CUstream s) { k.run(db_b.ptr(), db_c.ptr(), 1.0f, 0.0f, s); }, tc);
        c.measured_ms = t.median_ms;
        c.times_ms = t.samples_ms;
        keep_library_choices(c, k);
        if (debug_logging())
          std::fprintf(stderr, "sparsegen: [tune] timing %8.2f ms  %s\n", ms_since(t_measure),
                       to_string(c.schedule).c_str());
      } catch (const std::exception& e) {  // e.g. a non-finite event time from timing.h
        measurement_failed(c, e);
      }
    };
    auto compile_and_measure_from = [&](size_t from) {
      loaded.resize(cands.size());
      // Library candidates first: their plans are near the best wherever the problem is large
      // (dense at prefill N), so their time bounds the generated candidates' (abandon_above_ms)
      // before a slow one spends seconds per run.
      std::vector<size_t> todo;
      for (size_t i = from; i < cands.size(); ++i) todo.push_back(i);
      std::stable_partition(todo.begin(), todo.end(),
                            [&](size_t i) { return cands[i].schedule.family().library(); });
      // The candidates of one shared pack next to each other (at the place of the first), so
      // that the pack is alive across as few other builds as possible.
      std::map<std::string, size_t> first_user;  // shared pack -> position of its first user
      std::vector<size_t> group(todo.size());
      for (size_t t = 0; t < todo.size(); ++t) {
        const auto key = shared_pack_key(cands[todo[t]]);
        group[t] = key ? first_user.try_emplace(*key, t).first->second : t;
      }
      std::vector<size_t> order(todo.size());
      for (size_t t = 0; t < order.size(); ++t) order[t] = t;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return group[x] < group[y]; });
      for (size_t& t : order) t = todo[t];
      todo = std::move(order);
      std::mutex users_mu;
      std::map<std::string, int> users;  // candidates per shared pack not uploaded yet
      for (size_t i : todo)
        if (const auto key = shared_pack_key(cands[i])) ++users[*key];
      const int total = static_cast<int>(todo.size());
      int measured = 0;
      progress("measure", 0, total);
      OrderedSlots slots(window);  // the candidates between the start of a pack and its upload
      produce_in_order(
          todo.size(), threads, threads,
          [&](size_t t) {
            std::optional<DeviceArrays> arrays;
            {
              const OrderedSlots::Hold hold = slots.acquire(t);
              build_candidate(cands[todo[t]], false);
              arrays = upload_candidate(todo[t]);
              // The last user of a shared pack has uploaded: its host arrays go.
              if (const auto key = shared_pack_key(cands[todo[t]])) {
                std::lock_guard<std::mutex> lock(users_mu);
                if (--users[*key] == 0) packs.erase(*key);
              }
            }
            compile_and_load(todo[t], arrays);
            return true;  // the build lives in the candidate
          },
          [&](size_t t, bool&&) {
            const size_t i = todo[t];
            if (loaded[i]) measure_candidate(i);
            progress("measure", ++measured, total);
            return true;
          },
          ConsumeOrder::index, {},
          // A made candidate is on the device and its host arrays are dropped: one waiting to
          // be timed (a slow library candidate's turn) does not hold up the next build.
          WindowSpan::until_made);
    };
    auto by_time = [&] {
      std::vector<size_t> order;
      for (size_t i : compiled())
        if (cands[i].measured_ms) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return *cands[x].measured_ms < *cands[y].measured_ms;
      });
      return order;
    };
    compile_and_measure_from(0);
    phase_done("measure");
    if (compiled().empty()) std::rethrow_exception(cands.front().failure);  // nothing is cached
    const int extra = restricted ? 0 : (opt.refine >= 0 ? opt.refine : opt.top_k / 2);
    const std::vector<size_t> first_round = by_time();
    const bool refine = !given && extra > 0 && !first_round.empty();
    // The check's host side (its inputs and fp64 references: about a second and 1 GB at 65M
    // nonzeros) does not depend on the winner, so a large problem's is computed while the
    // refinement runs, also with a one-build window: at 65M nonzeros on an H200 host the check
    // then takes 0.35 s instead of 1.0-1.1 s, and the search's peak grows from 3.3-3.5 GB to
    // 3.7-4.2 GB (the references overlap the refinement's pack instead of following it).
    std::future<PairedReferences> references;
    if (refine && check_inputs_on_device(p))
      references = std::async(std::launch::async,
                              [&] { return paired_references(p, a, opt.seed, check_columns(p)); });
    if (refine) {
      std::vector<size_t> measured;
      for (const Candidate& c : cands) measured.push_back(c.index);
      const size_t first_new = cands.size();
      std::vector<std::pair<size_t, double>> timed;
      for (size_t i : first_round) timed.emplace_back(cands[i].index, *cands[i].measured_ms);
      for (size_t idx : second_round(r.order, all, timed, measured, extra, r.unmodelled)) {
        Candidate c;
        c.index = idx;
        c.schedule = all[idx];
        c.predicted_ms = r.predicted_ms[idx];
        c.round = 2;
        cands.push_back(std::move(c));
      }
      res.refined = static_cast<int>(cands.size() - first_new);
      compile_and_measure_from(first_new);
      phase_done("refine");
    }
    winner = nullptr;
    progress("check", 0, 1);
    std::optional<PairedReferences> prepared;
    if (references.valid()) {
      try {
        prepared = references.get();
      } catch (const std::exception& e) {  // e.g. out of memory: the check computes its own
        if (debug_logging())
          std::fprintf(stderr, "sparsegen: [tune] references not prepared: %s\n", e.what());
      }
    }
    for (size_t i : by_time()) {
      const GpuCheckPair chk =
          gpu_check(*loaded[i], a, opt.seed, check_columns(p), prepared ? &*prepared : nullptr);
      if (chk.passed()) {
        winner = &cands[i];
        res.check_passed = true;
        break;
      }
      cands[i].error = "failed the correctness check: " + chk.error();
      cands[i].measured_ms.reset();  // never cache a wrong kernel as measured-best
      res.check_passed = false;
    }
    progress("check", 1, 1);
    phase_done("check");
    if (winner == nullptr)
      throw UserError(fmt::format(
          "{}: no measured candidate for {} passed the correctness check (first failure: {})",
          a.source.empty() ? "matrix" : a.source, to_string(p), cands[compiled().front()].error));
  }

  for (const Candidate& c : cands)
    res.candidates.push_back(CandidateReport{to_string(c.schedule), c.predicted_ms, c.measured_ms,
                                             c.build ? c.build->compiled.compile_ms : 0.0, c.error,
                                             c.round});
  res.schedule = to_string(winner->schedule);
  res.predicted_ms = winner->predicted_ms;
  res.measured_ms = winner->measured_ms;
  if (given)
    res.reason = given_reason;
  else if (opt.top_k > 0)
    res.reason = fmt::format(
        "fastest of {} measured ({} of them in a second round around the first round's fastest; "
        "of {} enumerated; ranked by {}), checked against the CPU reference{}{}",
        compiled().size(), res.refined, res.enumerated, res.ranking,
        check_columns(p) < p.n ? fmt::format(" ({} of the {} columns)", check_columns(p), p.n) : "",
        library_note(cands, *winner, p, a));
  else
    res.reason = fmt::format("top of {} enumerated, ranked by {} (not measured: top-k 0)",
                             res.enumerated, res.ranking);

  // ---- record --------------------------------------------------------------------------------
  kdb::KeyParts wparts = base;
  wparts.schedule = res.schedule;
  res.kernel_key = kdb::kernel_key(wparts);
  res.search_ms = ms_since(t0);
  if (db) {
    progress("store", 0, 1);
    std::vector<kdb::KernelRecord> recs;
    for (size_t i : compiled())
      // A candidate whose check failed is not stored: the cache holds only kernels we trust.
      if (cands[i].error.empty()) recs.push_back(record_of(cands[i], base));
    std::optional<kdb::TuningRecord> tr;
    if (!given) {
      tr.emplace();
      tr->tuning_key = res.tuning_key;
      tr->key_text = kdb::describe(base, false);
      tr->best_key = res.kernel_key;
      tr->top_k = opt.top_k;
      tr->candidates = res.enumerated;
      tr->ranking = res.ranking;
      tr->search_ms = res.search_ms;
    }
    with_db([&] { db->put(recs, tr); });
    progress("store", 1, 1);
    phase_done("store");
  }
  if (opt.want_build) {
    if (opt.top_k > 0) {
      // A measured candidate's host arrays went after its upload: packed and emitted again, with
      // the measured image (and the library plans it chose) when the source is the same.
      KernelBuild b = prepare_kernel(a, p, winner->schedule, target);
      b.kernel.signature.sparse_gemms = winner->build->kernel.signature.sparse_gemms;
      if (b.kernel.source == winner->build->kernel.source)
        b.compiled = winner->build->compiled;
      else
        compile_step(b, target, fmt::format("sparsegen_{}.cu", winner->schedule.family_name()),
                     req.line_info);
      // The log says how the measured build was made (e.g. from a shared pack), then the repack.
      std::vector<std::string> log = winner->build->step_log;
      for (const std::string& line : b.step_log) log.push_back("after the measurement: " + line);
      b.step_log = std::move(log);
      winner->build = std::move(b);
    }
    winner->build->schedule_reason = res.reason;
    res.build = std::move(winner->build);
  }
  res.search_ms = ms_since(t0);
  return res;
}

}  // namespace sparsegen
