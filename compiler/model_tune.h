// Whole-model tuning: every selected 2-D weight of a checkpoint (io/checkpoint.h) through the
// tuner (tune.h), for several N and dtypes, sharing one kernel database.
//
//   Checkpoint ck = open_checkpoint("model.safetensors.index.json");
//   auto names = select_tensors(ck, {"*.mlp.*"}, {});
//   ModelTuneOptions o;  o.ns = {1, 8};  o.tune.top_k = 8;
//   ModelTuneReport r = tune_model(ck, names, detect_target(), o);
//
// - Resumable: each (tensor, N, dtype) is stored in the database as soon as it is tuned, and a
//   stored one is a cache hit (the tuner's own lookup), so a run killed midway and run again
//   redoes nothing already stored.
// - Shared searches (`share`, only when measuring): tensors of one shape whose matrix features
//   are near-identical (density, row- and column-length variation, N:M pattern, empty rows; see
//   similar_features) get the same ranking from the cost model, and their measured winners come
//   from the same few schedules. So the first such tensor of a group is searched in full (top k
//   and the refinement round) and every later one measures only the group's `share_candidates`
//   fastest schedules (TuneOptions::restrict_to): 3 builds and measurements instead of 12, and
//   no ranking of the whole space (hundreds of schedules). A shared pick that measures more
//   than 1.15x its group's best is taken as a sign that the tensors were less alike than their
//   features say, and that tensor is searched in full after all. Whether sharing costs quality is
//   measured, not assumed: `verify_sample` re-searches a sample of the picks (stored ones too)
//   deeper (4x top k, no sharing, no cache) and reports each pick's speed against that search's
//   best.
// - Errors are per tensor: a tensor that cannot be loaded or tuned is reported (naming the shard
//   and the tensor) and the others go on; only a GPU fault that poisons the context stops the run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "costmodel/features.h"
#include "ir/dtype.h"
#include "ir/io/checkpoint.h"

namespace sparsegen {

// Shell-style glob over the whole name: '*' any run of characters (dots included), '?' one
// character, [abc] / [a-z] / [!abc] a class. "model.layers.*.mlp.*" selects the MLP weights.
bool glob_match(std::string_view pattern, std::string_view name);

// Excluded unless the caller gives its own --exclude: embeddings are lookups, not matrix
// products, and lm_head is normally left dense by pruning methods.
inline const std::vector<std::string> kDefaultModelExcludes = {"*embed_tokens*", "*lm_head*"};

// The names of the checkpoint's 2-D tensors that match some include pattern (none given: all)
// and no exclude pattern, sorted by name. Throws UserError naming the flag when a pattern matches
// nothing at all, or when the selection is empty.
std::vector<std::string> select_tensors(const Checkpoint& ck,
                                        const std::vector<std::string>& include,
                                        const std::vector<std::string>& exclude);

// Whether two matrices of one shape are alike enough to share a search (see the header comment):
// density within 0.01, row and column coefficients of variation within 10 % (+0.02), the same N:M
// pattern, empty-row fractions within 1 %.
bool similar_features(const MatrixFeatures& a, const MatrixFeatures& b);

// The SPECs of the k fastest measured candidates of a search (failed ones left out), fastest
// first: what a shared search of a similar tensor measures.
std::vector<std::string> fastest_measured(const std::vector<CandidateReport>& candidates, int k);

struct ModelTuneOptions {
  std::vector<int64_t> ns{1};
  std::vector<DType> dtypes{DType::F16};
  // The tuner's options for every tensor (top_k, refine, cache_dir, use_cache, force, ...);
  // progress and restrict_to are set per tensor. ctx: null makes one context for the whole run.
  TuneOptions tune;
  bool share = true;         // shared searches for similar tensors (only when tune.top_k > 0)
  int share_candidates = 3;  // a group's fastest schedules a later member measures
  int verify_sample = 0;     // tuned tensors re-searched deeper to check the picks (top_k > 0)
  // Called after each (tensor, N, dtype), on the calling thread: done so far, of `total`.
  std::function<void(const struct ModelTuneItem&, int done, int total)> on_item;
};

struct ModelTuneItem {
  std::string tensor;
  std::string shard;  // file holding it
  int64_t rows = 0, cols = 0, nnz = 0;
  int64_t n = 0;
  DType dtype = DType::F16;
  // "tuned" (a full search), "shared" (a similar tensor's fastest schedules measured), "cached"
  // (in the database already), "error".
  std::string status;
  std::string schedule;
  std::optional<double> predicted_ms, measured_ms;
  double search_ms = 0;  // the tuner's wall time (a hit: the lookup)
  double load_ms = 0;    // reading and converting the tensor (once per tensor, on the first job)
  int enumerated = 0;
  int measured = 0;  // candidates measured on the GPU by this search
  // The tensor whose search this one's was restricted to (also for a cached shared search).
  std::string shared_from;
  std::string kernel_key;
  std::string reason;
  // Set when a shared pick measured more than 1.15x its group's best and the tensor was then
  // searched in full (status "tuned").
  std::string note;
  std::string error;  // "SHARD: tensor 'NAME': what" when status is "error"
};
nlohmann::json to_json(const ModelTuneItem& item);

// A pick checked against a deeper search of the same tensor (same process, same context).
struct ModelTuneCheck {
  std::string tensor;
  int64_t n = 0;
  DType dtype = DType::F16;
  std::string status;  // how the pick was made: "full search" or "shared"
  std::string pick, best;
  double pick_ms = 0, best_ms = 0;
  double ratio = 0;  // best_ms / pick_ms: 1 = the pick is as fast as the deeper search's best
  std::string error;
};
nlohmann::json to_json(const ModelTuneCheck& check);

struct ModelTuneReport {
  std::vector<ModelTuneItem> items;  // tensor-major, then N, then dtype
  std::vector<ModelTuneCheck> checks;
  double wall_s = 0;
  int errors() const;
};

// Tunes `tensors` (names in `ck`) for every N and dtype of `o`. Tensors are read on a second
// thread while the first tunes, at most two in memory. Throws UserError for bad options (empty
// ns / dtypes, N < 1) and CudaError when the GPU context is lost; every per-tensor failure is an
// item with status "error" instead.
ModelTuneReport tune_model(const Checkpoint& ck, const std::vector<std::string>& tensors,
                           const CompileTarget& target, const ModelTuneOptions& o);

}  // namespace sparsegen
