#include "compiler/model_tune.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <variant>

#include <fmt/format.h>

#include "compiler/fingerprint.h"
#include "compiler/tensor_index.h"
#include "ir/diagnostics.h"
#include "ir/io/dense_to_csr.h"
#include "ir/parallel.h"
#include "runtime/kernel_db.h"

namespace sparsegen {
namespace {

using Clock = std::chrono::steady_clock;

// In the ranking text of a shared search, before the representative's name.
constexpr std::string_view kSharedFrom = " of similar tensor ";

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A tensor read and converted, or why it could not be; or, when every job of it is stored
// already (found through the tensor index), those jobs' items and no matrix.
struct LoadedTensor {
  std::vector<ModelTuneItem> cached;
  std::optional<CsrMatrix> matrix;
  std::optional<MatrixFeatures> features;
  std::string error;
  double load_ms = 0;
};

// A group of similar tensors: the first one searched in full and its measured schedules,
// fastest first.
struct ShareGroup {
  int64_t rows = 0, cols = 0, n = 0;
  DType dtype = DType::F16;
  MatrixFeatures features;
  std::string tensor;
  std::vector<std::string> fastest;
  double best_ms = 0;  // the representative's winner, measured
};

// A shared pick slower than this times its group's best says the tensor was not as alike as its
// features: it is searched in full instead (tensors of one shape and nnz run in about one time).
constexpr double kShareSlack = 1.15;

// A stored shared search says so in its ranking text (TuneOptions::restrict_note): the
// representative's name, or "" for a full search.
std::string shared_from_ranking(const std::string& ranking) {
  const size_t at = ranking.find(kSharedFrom);
  if (at == std::string::npos) return "";
  const std::string rest = ranking.substr(at + kSharedFrom.size());
  return rest.substr(0, rest.find(')'));
}

bool close_rel(double a, double b, double rel, double abs) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)) + abs;
}

std::string error_text(const CheckpointTensor& t, const Checkpoint& ck, const std::string& what) {
  return fmt::format("{}: tensor '{}': {}", ck.shards[t.shard].source, t.name, what);
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

std::vector<std::string> select_tensors(const Checkpoint& ck,
                                        const std::vector<std::string>& include,
                                        const std::vector<std::string>& exclude) {
  std::vector<std::string> out;
  std::vector<bool> used(include.size(), false);
  for (const CheckpointTensor& t : ck.tensors) {
    if (t.tensor->shape.size() != 2) continue;
    bool in = include.empty();
    for (size_t i = 0; i < include.size(); ++i)
      if (glob_match(include[i], t.name)) {
        in = true;
        used[i] = true;
      }
    if (!in) continue;
    bool ex = false;
    for (const std::string& e : exclude) ex = ex || glob_match(e, t.name);
    if (!ex) out.push_back(t.name);
  }
  for (size_t i = 0; i < include.size(); ++i)
    if (!used[i])
      throw UserError(
          fmt::format("--include '{}': matches no 2-D tensor of {} (names look like "
                      "'{}')",
                      include[i], ck.source, ck.tensors.empty() ? "" : ck.tensors.front().name));
  if (out.empty())
    throw UserError(fmt::format("--include / --exclude select no 2-D tensor of {}", ck.source));
  return out;
}

bool similar_features(const MatrixFeatures& a, const MatrixFeatures& b) {
  if (a.rows != b.rows || a.cols != b.cols) return false;
  const double er_a =
      a.rows > 0 ? static_cast<double>(a.empty_rows) / static_cast<double>(a.rows) : 0;
  const double er_b =
      b.rows > 0 ? static_cast<double>(b.empty_rows) / static_cast<double>(b.rows) : 0;
  return std::fabs(a.density - b.density) <= 0.01 && close_rel(a.row_cv, b.row_cv, 0.1, 0.02) &&
         close_rel(a.col_cv, b.col_cv, 0.1, 0.02) && a.nm_string() == b.nm_string() &&
         std::fabs(er_a - er_b) <= 0.01;
}

nlohmann::json to_json(const ModelTuneItem& it) {
  return {{"tensor", it.tensor},
          {"shard", it.shard},
          {"shape", {it.rows, it.cols}},
          {"nnz", it.nnz},
          {"density", it.rows * it.cols > 0
                          ? static_cast<double>(it.nnz) / static_cast<double>(it.rows * it.cols)
                          : 0.0},
          {"n", it.n},
          {"dtype", to_string(it.dtype)},
          {"status", it.status},
          {"schedule", it.schedule},
          {"predicted_ms", opt_json(it.predicted_ms)},
          {"measured_ms", opt_json(it.measured_ms)},
          {"search_ms", it.search_ms},
          {"load_ms", it.load_ms},
          {"enumerated", it.enumerated},
          {"measured", it.measured},
          {"shared_from", it.shared_from},
          {"kernel_key", it.kernel_key},
          {"reason", it.reason},
          {"note", it.note},
          {"error", it.error}};
}

nlohmann::json to_json(const ModelTuneCheck& c) {
  return {{"tensor", c.tensor},
          {"n", c.n},
          {"dtype", to_string(c.dtype)},
          {"status", c.status},
          {"pick", c.pick},
          {"pick_ms", c.pick_ms},
          {"best", c.best},
          {"best_ms", c.best_ms},
          {"ratio", c.ratio},
          {"error", c.error}};
}

std::vector<std::string> fastest_measured(const std::vector<CandidateReport>& candidates, int k) {
  std::vector<const CandidateReport*> m;
  for (const CandidateReport& c : candidates)
    if (c.measured_ms && c.error.empty()) m.push_back(&c);
  std::stable_sort(m.begin(), m.end(),
                   [](const auto* a, const auto* b) { return *a->measured_ms < *b->measured_ms; });
  std::vector<std::string> out;
  for (size_t i = 0; i < m.size() && i < static_cast<size_t>(std::max(k, 0)); ++i)
    out.push_back(m[i]->schedule);
  return out;
}

int ModelTuneReport::errors() const {
  return static_cast<int>(
      std::count_if(items.begin(), items.end(), [](const auto& i) { return i.status == "error"; }));
}

ModelTuneReport tune_model(const Checkpoint& ck, const std::vector<std::string>& tensors,
                           const CompileTarget& target, const ModelTuneOptions& o) {
  if (o.ns.empty()) throw UserError("-n: expected at least one N");
  if (o.dtypes.empty()) throw UserError("--dtype: expected at least one dtype");
  for (int64_t n : o.ns)
    if (n < 1) throw UserError(fmt::format("-n {}: expected 1 or more", n));
  std::vector<const CheckpointTensor*> refs;
  for (const std::string& name : tensors) {
    const CheckpointTensor* t = ck.find(name);
    if (t == nullptr) throw UserError(fmt::format("{}: no tensor named '{}'", ck.source, name));
    refs.push_back(t);
  }
  const auto t0 = Clock::now();
  TuneOptions base = o.tune;
  base.progress = nullptr;
  const bool measuring = base.top_k > 0;
  if (measuring && !base.ctx) base.ctx = std::make_shared<cuda::Context>(0);
  const bool share = o.share && measuring && o.share_candidates > 0;

  ModelTuneReport rep;
  std::vector<ShareGroup> groups;
  const int total = static_cast<int>(refs.size() * o.ns.size() * o.dtypes.size());
  int done = 0;

  // The stored-tensor shortcut: the tensor index (content -> structure) and the database, both
  // used only on the loader thread.
  const bool shortcut = base.use_cache && !base.force;
  std::optional<TensorIndex> index;
  if (shortcut) index.emplace(tensor_index_path(base.cache_dir));
  std::unique_ptr<kdb::KernelDb> lookup_db;
  // Every job of tensor i from the database, or nothing when one of them is not stored.
  auto stored_items = [&](size_t i, const MatrixFingerprint& f) {
    std::vector<ModelTuneItem> items;
    const auto tl = Clock::now();
    if (!lookup_db) {
      if (!std::filesystem::exists(kdb::db_path(base.cache_dir))) return items;
      lookup_db = std::make_unique<kdb::KernelDb>(kdb::db_path(base.cache_dir));
    }
    CsrMatrix shape_only;  // make_problem reads the dimensions only
    shape_only.rows = f.rows;
    shape_only.cols = f.cols;
    for (int64_t n : o.ns)
      for (DType dt : o.dtypes) {
        KernelRequest req;
        req.n = n;
        req.dtype = dt;
        const kdb::KeyParts parts = key_parts(f, make_problem(shape_only, req), target, "");
        const auto tr = lookup_db->tuning(kdb::tuning_key(parts));
        if (!tr || tr->top_k < base.top_k) return std::vector<ModelTuneItem>{};
        const auto rec = lookup_db->kernel(tr->best_key);
        if (!rec) return std::vector<ModelTuneItem>{};
        ModelTuneItem it;
        it.tensor = refs[i]->name;
        it.shard = ck.shards[refs[i]->shard].source;
        it.rows = f.rows;
        it.cols = f.cols;
        it.nnz = f.nnz;
        it.n = n;
        it.dtype = dt;
        it.status = "cached";
        it.schedule = rec->schedule;
        it.predicted_ms = rec->predicted_ms;
        it.measured_ms = rec->measured_ms;
        it.enumerated = tr->candidates;
        it.kernel_key = rec->key;
        it.reason = fmt::format("cached tuning ({}; {} of {} candidates measured)", tr->ranking,
                                tr->top_k, tr->candidates);
        it.shared_from = shared_from_ranking(tr->ranking);
        items.push_back(std::move(it));
      }
    const double ms = ms_since(tl) / static_cast<double>(items.size());
    for (ModelTuneItem& it : items) it.search_ms = ms;
    return items;
  };

  // The tensor as a CSR matrix, or the error naming it.
  auto read_tensor = [&](size_t i, LoadedTensor& l) {
    try {
      const DenseMatrix d = tensor_to_dense(ck.shards[refs[i]->shard], *refs[i]->tensor);
      Diagnostics diag;
      l.matrix = dense_to_csr(d, diag);
    } catch (const std::bad_alloc&) {
      l.error = error_text(*refs[i], ck, "out of memory while reading it");
    } catch (const std::exception& e) {
      l.error = error_text(*refs[i], ck, e.what());
    }
  };
  auto load = [&](size_t i) {
    LoadedTensor l;
    const auto tl = Clock::now();
    std::string content_key;
    try {
      if (index) {
        content_key = TensorIndex::content_key(*refs[i]->tensor);
        if (const auto f = index->find(content_key)) {
          l.cached = stored_items(i, *f);
          if (!l.cached.empty()) {
            l.load_ms = ms_since(tl);
            return l;
          }
        }
      }
    } catch (const std::exception&) {
      l.cached.clear();  // the shortcut failed: load the tensor as usual (tune() reports errors)
    }
    read_tensor(i, l);
    if (l.matrix) {
      if (index && !content_key.empty()) index->add(content_key, fingerprint(*l.matrix));
      if (share) l.features = compute_features(*l.matrix);
    }
    l.load_ms = ms_since(tl);
    return l;
  };
  auto consume = [&](size_t i, LoadedTensor&& l) {
    const CheckpointTensor& ref = *refs[i];
    if (!l.cached.empty()) {
      l.cached.front().load_ms = l.load_ms;
      for (ModelTuneItem& it : l.cached) {
        rep.items.push_back(std::move(it));
        ++done;
        if (o.on_item) o.on_item(rep.items.back(), done, total);
      }
      return true;
    }
    bool first_job = true;
    for (int64_t n : o.ns)
      for (DType dt : o.dtypes) {
        ModelTuneItem it;
        it.tensor = ref.name;
        it.shard = ck.shards[ref.shard].source;
        it.rows = ref.tensor->shape[0];
        it.cols = ref.tensor->shape[1];
        it.n = n;
        it.dtype = dt;
        if (first_job) it.load_ms = l.load_ms;
        first_job = false;
        if (!l.matrix) {
          it.status = "error";
          it.error = l.error;
        } else {
          it.nnz = l.matrix->nnz();
          KernelRequest req;
          req.n = n;
          req.dtype = dt;
          TuneOptions to = base;
          ShareGroup* group = nullptr;
          if (share)
            for (ShareGroup& g : groups)
              if (g.n == n && g.dtype == dt && similar_features(g.features, *l.features)) {
                group = &g;
                break;
              }
          if (group != nullptr) {
            to.restrict_to = group->fastest;
            to.restrict_note = fmt::format("the {} fastest{}{}", group->fastest.size(), kSharedFrom,
                                           group->tensor);
          }
          try {
            TuneResult r = tune(*l.matrix, req, target, to);
            bool shared = !r.cache_hit && group != nullptr &&
                          r.ranking.find(to.restrict_note) != std::string::npos;
            bool fallback = false;
            if (shared && group->best_ms > 0 && r.measured_ms &&
                *r.measured_ms > kShareSlack * group->best_ms) {
              it.note = fmt::format(
                  "shared pick {:.4f} ms > {}x its group's {:.4f} ms ({}): searched in full",
                  *r.measured_ms, kShareSlack, group->best_ms, group->tensor);
              TuneOptions full = base;
              full.force = true;  // replaces the stored shared decision
              r = tune(*l.matrix, req, target, full);
              shared = false;
              fallback = true;
            }
            it.schedule = r.schedule;
            it.predicted_ms = r.predicted_ms;
            it.measured_ms = r.measured_ms;
            it.search_ms = r.search_ms;
            it.enumerated = r.enumerated;
            it.kernel_key = r.kernel_key;
            it.reason = r.reason;
            for (const CandidateReport& c : r.candidates) it.measured += c.measured_ms.has_value();
            if (r.cache_hit) {
              it.status = "cached";
              it.shared_from = shared_from_ranking(r.ranking);
            } else if (shared) {
              it.status = "shared";
              it.shared_from = group->tensor;
            } else {
              it.status = "tuned";
              // This tensor now stands for its group (a new one, or one whose representative was
              // a cache hit); an outlier searched in full after its shared pick leaves it as is.
              if (share && !fallback) {
                ShareGroup g{it.rows,
                             it.cols,
                             n,
                             dt,
                             *l.features,
                             ref.name,
                             fastest_measured(r.candidates, o.share_candidates),
                             r.measured_ms.value_or(0)};
                if (!g.fastest.empty()) {
                  if (group != nullptr)
                    *group = std::move(g);
                  else
                    groups.push_back(std::move(g));
                }
              }
            }
          } catch (const CudaError& e) {
            if (e.sticky()) throw;  // the context is lost: nothing after this could run
            it.status = "error";
            it.error = error_text(ref, ck, e.what());
          } catch (const std::exception& e) {
            it.status = "error";
            it.error = error_text(ref, ck, e.what());
          }
        }
        rep.items.push_back(it);
        ++done;
        if (o.on_item) o.on_item(rep.items.back(), done, total);
      }
    return true;
  };
  produce_in_order(refs.size(), 1, 2, load, consume);

  // Picks against a deeper search: evenly spaced over the tuned and shared items.
  if (measuring && o.verify_sample > 0) {
    std::vector<size_t> pool;
    for (size_t i = 0; i < rep.items.size(); ++i)
      if (rep.items[i].status != "error") pool.push_back(i);
    const size_t k = std::min(pool.size(), static_cast<size_t>(o.verify_sample));
    for (size_t s = 0; s < k; ++s) {
      const ModelTuneItem& it = rep.items[pool[s * pool.size() / k]];
      ModelTuneCheck c;
      c.tensor = it.tensor;
      c.n = it.n;
      c.dtype = it.dtype;
      c.status = it.shared_from.empty() ? "full search" : "shared";
      c.pick = it.schedule;
      try {
        const size_t idx = static_cast<size_t>(
            std::find(tensors.begin(), tensors.end(), it.tensor) - tensors.begin());
        LoadedTensor l;
        read_tensor(idx, l);
        if (!l.matrix) throw UserError(l.error);
        TuneOptions deep = base;
        deep.use_cache = false;
        deep.top_k = base.top_k * 4;
        deep.refine = base.top_k * 2;
        KernelRequest req;
        req.n = it.n;
        req.dtype = it.dtype;
        const TuneResult best = tune(*l.matrix, req, target, deep);
        TuneOptions one = base;
        one.use_cache = false;
        one.top_k = 1;
        req.schedule = it.schedule;
        const TuneResult pick = tune(*l.matrix, req, target, one);
        c.best = best.schedule;
        c.best_ms = best.measured_ms.value_or(0);
        c.pick_ms = pick.measured_ms.value_or(0);
        // When the deeper search measured the pick too, its own figure compares like with like.
        for (const CandidateReport& cr : best.candidates)
          if (cr.schedule == it.schedule && cr.measured_ms && cr.error.empty())
            c.pick_ms = *cr.measured_ms;
        c.ratio = c.pick_ms > 0 ? c.best_ms / c.pick_ms : 0;
      } catch (const CudaError& e) {
        if (e.sticky()) throw;
        c.error = e.what();
      } catch (const std::exception& e) {
        c.error = e.what();
      }
      rep.checks.push_back(c);
    }
  }
  rep.wall_s = ms_since(t0) / 1000.0;
  return rep;
}

}  // namespace sparsegen
