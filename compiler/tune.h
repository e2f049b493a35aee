// The search: the best kernel for (matrix structure, N, dtype, device), tuned once and cached.
//
//   enumerate  every legal schedule for the problem (ir/enumerate.h), verified for the target
//   rank       by the cost model (costmodel/: the model shipped for the device, else roofline)
//   compile    the top max(k, 1): emit + NVRTC, on a thread pool (a candidate that fails to
//              compile is skipped and reported; when all fail the first error is thrown and
//              nothing is cached)
//   measure    k > 0: each on the GPU (runtime/timing.h: L2 flushed before every run, median),
//              while the pool builds and uploads the next ones (at most build_window() builds
//              in progress; a candidate's host arrays are dropped after its upload, so one
//              waiting for its timing holds no place)
//   refine     k > 0: compile and measure up to k / 2 more, near the fastest so far
//              (refine_for_measurement), then the fastest that passes gpu_check
//              (compiler/gpu_check.h) wins
//   record     every compiled candidate (schedule, source, cubin, times, prediction) and the
//              tuning decision, in one database transaction (runtime/kernel_db.h)
//
// k = 0 is model-only: no GPU is touched, the top-ranked schedule is compiled for the target
// arch (PTX or a cubin for "sm_XY", which NVRTC builds without a GPU) and cached.
//
// A later tune of the same (structure, problem, dtype, device, NVRTC, generator) returns the
// cached decision in milliseconds, unless it asks for more measurement (a larger k) than the
// cached tuning had, or force is set.
//
//   TuneOptions o;  o.top_k = 8;
//   TuneResult r = tune(a, {.n = 32, .dtype = DType::F16}, detect_target(), o);
//   fmt::print("{} ({} ms measured, search {} ms)\n", r.schedule, *r.measured_ms, r.search_ms);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fingerprint.h"
#include "compiler/pipeline.h"
#include "costmodel/schedule_features.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_db.h"

namespace sparsegen {

// Version of the code generator's output, part of every key. Bump it when emitted kernels change
// meaning, or when the search space changes so that a cached decision may no longer be the one a
// new search would make (macko-2: staged-B MACKO schedules, and the per-family measured set;
// bitmap_tc-1: the tensor-core bitmap-tile family joins the search for N a multiple of 8;
// bitmap_tc-2: values in fragment order (every bitmap_tc kernel changed);
// bitmap_tc-3: copies issued from 32-bit shared addresses, one scan per two k tiles (faster
// steps, so the best bitmap_tc schedule may differ);
// bitmap_tc-4: the bulk wgmma kernels also at N = 128; bitmap_tc-5: copy=step mask tables carry
// each tile's lane starts (the kernels load them instead of a warp scan), and four-warp copy=step
// schedules are also searched in clusters that share B by multicast;
// refine-1: a second measured round near the first round's best, and the model refitted with
// full-size weights; refine-2: a larger, nearest-first second round around an unmodelled winner;
// refine-3: an unmodelled strategy's first-round places spread over its SPEC space, and a
// library winner's second round given to the fastest candidate with neighbours;
// macko-3: staged kernels take work items, long rows cut into segments; macko-4: the row sums of N
// > 1 columns by one reduce-scatter, stored by N lanes; macko-5: cheaper edge masks, one scan for
// two u with 8-bit deltas where K allows); general-2: atomic kernels wait for their prologue
// programmatically (may start while it runs); general-3: elementwise prologues/epilogues stride
// over one wave of blocks (large atomic kernels take 16-25 % less time, so a cached choice between
// atomic and store schedules may change); the cache also re-emits on use and compares sources, so a
// forgotten bump costs a recompile, never a wrong kernel. The device helpers (templates/*.cuh) are
// keyed by their digest instead (generator_version()): an emitted source only #includes them, so a
// changed helper behind the same source must not find the old kernel.
inline constexpr const char* kGeneratorVersion =
    "sparsegen-0.2.0/general-3/macko-5/bitmap_tc-5/refine-3";

// kGeneratorVersion, then "/templates-" and the first 16 hex digits of the SHA-256 of every
// embedded template header (name and bytes, templates/CMakeLists.txt order): the key part
// `generator_version` of every kernel and tuning.
const std::string& generator_version();

struct TuneProgress {
  std::string phase;  // "enumerate", "rank", "compile", "measure", "check", "store"
  int done = 0;
  int total = 0;
};

struct TuneOptions {
  int top_k = 0;            // candidates measured on the GPU; 0: model only (no GPU needed)
  int refine = -1;          // second-round candidates near the winner; -1: top_k / 2
  std::string cache_dir;    // empty: kdb::default_cache_dir()
  bool use_cache = true;    // false: neither read nor write the database
  bool force = false;       // ignore a cached tuning (the new one replaces it)
  bool want_build = false;  // fill TuneResult::build (the winner, ready for CompiledKernel)
  // Context for measuring (k > 0); null: tune() makes one for device 0.
  std::shared_ptr<cuda::Context> ctx;
  int repetitions = 20;     // timed runs per candidate
  int compile_threads = 0;  // 0: hardware concurrency
  // Host bytes the candidates being built may hold at once in a measuring search; 0: automatic
  // (build_window: twice the CSR's bytes where the process reuses freed memory).
  int64_t build_memory_bytes = 0;
  uint64_t seed = 7;  // inputs of the timing runs and the check
  std::function<void(const TuneProgress&)> progress;
  // Non-empty: search only these schedules (SPECs) of the enumerated space, every one of them
  // measured when top_k > 0, with no refinement round: for a matrix whose search is known to end
  // among them (tune-model: a tensor of the same shape and near-identical features as one already
  // searched in full). SPECs not in this matrix's space are dropped; when none is left the full
  // search runs. The tuning is recorded as a top-k search (the search it stands in for) with
  // `restrict_note` added to its ranking text, so the database says how it was decided.
  std::vector<std::string> restrict_to;
  std::string restrict_note;
  // Test hook: edits every candidate's CUDA source before NVRTC (to inject a compile failure).
  std::function<void(std::string&)> source_hook;
};

struct CandidateReport {
  std::string schedule;
  std::optional<double> predicted_ms;
  std::optional<double> measured_ms;  // median
  double compile_ms = 0;
  std::string error;  // why it was skipped (compile or check failure); empty otherwise
  int round = 1;      // 1: the model's top k; 2: the second round (second_round)
};

struct TuneResult {
  bool cache_hit = false;
  Problem problem;
  std::string schedule;  // the winner's SPEC
  std::string reason;    // why it won
  std::string ranking;   // how candidates were ordered
  std::optional<double> predicted_ms;
  std::optional<double> measured_ms;
  int enumerated = 0;                       // schedules in the space
  int top_k = 0;                            // candidates measured (0: model only)
  int refined = 0;                          // of them, second-round candidates
  std::vector<CandidateReport> candidates;  // compiled ones, in rank order (empty on a hit)
  double search_ms = 0;                     // wall time of this call
  // Wall time of each phase of the search, in order (lookup, enumerate, rank, compile, measure,
  // refine, check, store; phases that did not run are absent); logged with SPARSEGEN_DEBUG=1.
  // A measuring search compiles while it measures: its "measure" and "refine" include the
  // compiles, and there is no "compile" phase.
  std::vector<std::pair<std::string, double>> phases_ms;
  // The process's peak resident set (VmHWM, runtime/process_memory.h) at the end of each phase,
  // in the same order: the phase where it grows is the one that raised the search's peak. Empty
  // where /proc is not readable.
  std::vector<std::pair<std::string, int64_t>> phases_peak_rss_bytes;
  int build_window = 0;  // k > 0: candidates built at once while measuring (tune.h: build_window)
  double original_search_ms = 0;     // on a hit: what the cached search took
  std::optional<bool> check_passed;  // gpu_check of the winner (k > 0)
  std::string kernel_key;
  std::string tuning_key;
  std::string db_path;  // empty when use_cache is false
  std::string arch;
  std::string device;
  std::vector<std::string> warnings;  // e.g. the cost model was fitted on another device
  std::optional<KernelBuild> build;   // with want_build: the winner, image included
};

// Runs the search (or returns the cached decision). req.schedule non-empty skips the search: that
// schedule is compiled (or taken from the cache by its kernel key), measured when k > 0, and no
// tuning decision is recorded. Throws UserError for bad input and for a damaged or foreign
// database file (naming it), CudaError for k > 0 without a GPU, NvrtcError when no candidate
// compiles.
TuneResult tune(const CsrMatrix& a, const KernelRequest& req, const CompileTarget& target,
                const TuneOptions& opt);

// Candidates a measuring search holds between the start of their pack and the upload of their
// arrays (compiles come after the upload and run on every thread) for a matrix of `nnz`
// nonzeros and `rows` rows in `dtype`. As many as `threads` (<= 0: hardware concurrency) while
// their peak bytes (12 per nonzero in fp32) fit `budget_bytes`, at least 1. Budget <= 0 is
// automatic, and depends on `freed_memory_reused` (runtime/process_memory.h,
// freed_memory_is_reused):
//   - reused (the CLI): twice the CSR's bytes, at least kBuildWindowMinBytes. The packs of a graph
//     of 16M nonzeros or more then hold less than twice its CSR, one at a time; a weight of 1M
//     packs on all cores.
//   - not reused (a library host with glibc's defaults): the CSR's bytes, at least
//     kBuildWindowBytesFresh (five packs of a 65M-nonzero graph). Every pack's arrays are then
//     faulted in afresh, and one at a time would be the slow way.
// On an H200 host (16 cores) at 65M nonzeros: reused, one at a time 6.7 s against 4.5 s for five,
// at a peak of 3.3 GB against 6.1 GB; not reused, 12.2 s against 6.8 s.
inline constexpr int64_t kBuildWindowMinBytes = int64_t{256} << 20;
inline constexpr int64_t kBuildWindowBytesFresh = int64_t{4} << 30;
size_t build_window(int64_t nnz, int64_t rows, DType dtype, int threads, int64_t budget_bytes = 0,
                    bool freed_memory_reused = true);

// Why no library family (IrFamily::library: the dense BLAS GEMM, cuSPARSE) can run problem p on
// matrix a: each library family's first reason, prefixed by its name ("dense: dense int8 needs C
// column-major ..."); empty when one of them can. A measured search
// whose candidates hold no library says so in its reason, with these, so that a pick is never
// read as compared with a library when none ran.
std::vector<std::string> library_why_not(const Problem& p, const CsrMatrix& a);

// Which candidates to measure: indices into `all`, given the model's ranking `order` (best
// first), at most max(k, 1) of them, in ranking order. For k >= 4 every schedule family present
// (GeneralSparse, MACKO) gets at least k / 4 of the places, its best-ranked ones: the model's
// error across families is larger than within one (on the H200 the top 8 of 4096x11008-like
// weights held no MACKO kernel, while MACKO was 1.7x faster), so the measurement, not the
// model, decides between families.
// `spread` > 0 adds that many more, spread evenly over the rest of the ranking (see
// fixed_cost_spread). `unmodelled` (by index into `all`; empty, or RankedSpace::unmodelled) names
// the strategy of each candidate the model ranked with a formula fitted on other kernels: for
// k >= 4 each such strategy is topped up to max(k / 4, 1) chosen candidates beyond the k, so
// kernels the model has never seen are measured instead of never (on the H200 the shipped model
// put every bitmap_tc pipe=bulk schedule of a 7168x2048 weight below 37 others, while on
// 28672x7168 one was 1.32x faster than the mma.sync one picked before). The first added place goes
// to the strategy's best-ranked candidate, each further one to the candidate farthest in SPEC from
// those of the strategy already chosen: the model's order inside such a strategy means little (on
// the H200 the two best-ranked bulk kernels of 28672x7168 at N = 64 differed in the copy kind only,
// and both were 1.8x slower than the strategy's best, which differed from them in four fields).
// The result stays in ranking order.
std::vector<size_t> select_for_measurement(const std::vector<size_t>& order,
                                           const std::vector<Schedule>& all, int k, int spread = 0,
                                           const std::vector<std::string>& unmodelled = {});

// The second round of the search: schedules near the measured winner `winner` (same family,
// SPEC differing in at most kRefineFields fields), not in `measured`, in the model's order
// `order`, at most max(extra, 0). The model ranks well inside a region of the space but can
// misplace a whole region it has seen little of (on the H200: staged MACKO grids of 16 warps with
// one wave of blocks, on 28672-row weights), so one round around the measured best corrects the
// first round's bet at the price of `extra` more builds. When the winner's strategy is one the
// model has no formula for (`unmodelled`, as select_for_measurement), its order inside that
// strategy means little: every candidate of the strategy counts as near, nearest SPEC first
// (model order among equals), and the round takes up to kUnmodelledRefineFactor · extra of them.
// On the H200 the bulk bitmap_tc kernels' times are rough in warps, split and copy kind (the
// fastest of 28672x7168 at N = 64 differed from the first round's bulk winner in four fields and
// was 1.25x faster than the refinement's pick); simulated on 12 measured LLM cases, 8 refinement
// builds instead of 4 raise the mean pick/best from 0.95 to 0.98.
inline constexpr int kUnmodelledRefineFactor = 2;
inline constexpr int kRefineFields = 2;
std::vector<size_t> refine_for_measurement(const std::vector<size_t>& order,
                                           const std::vector<Schedule>& all, size_t winner,
                                           const std::vector<size_t>& measured, int extra,
                                           const std::vector<std::string>& unmodelled = {});

// The second round as a whole: refine_for_measurement around the first round's winner, then
// around the fastest candidate of each other unmodelled strategy whose time is within
// kUnmodelledAnchorRatio of the winner's, each with its own budget and without repeats; then
// around each unmodelled strategy's second-fastest candidate within that ratio, with the budget of
// a modelled winner (`extra`). When
// none of these has a neighbour left (the winner a library baseline, which is never refined), the
// round goes around the fastest first-round candidate that has some.
// `first_round`: (index into `all`, measured ms), fastest first. The first round's places of an
// unmodelled strategy are a blind pick inside it, so a near-tie there hides its best: on the H200,
// 28672x7168 magnitude 70 % at N = 32, the mma.sync winner and the first round's bulk kernel
// screened alike (128 µs) while the bulk kernel of 8 warps, unsplit, takes 88. The runner-up:
// 28672x7168 magnitude 90 % at N = 64, the first round's bulk kernels of 4 warps in clusters
// (107 µs) and of 8 warps unsplit (112 µs) screened alike; the refinement around the first found
// nothing faster, while the second's copy=step neighbour takes 77 µs (its SPEC differs from the
// winner's in four fields).
inline constexpr double kUnmodelledAnchorRatio = 1.25;
std::vector<size_t> second_round(const std::vector<size_t>& order, const std::vector<Schedule>& all,
                                 const std::vector<std::pair<size_t, double>>& first_round,
                                 std::vector<size_t> measured, int extra,
                                 const std::vector<std::string>& unmodelled = {});

// How many SPEC fields of a and b differ (a field only one of them prints counts); -1 when they
// are of different families.
int spec_distance(const Schedule& a, const Schedule& b);

// The database key parts of a kernel for this matrix and problem on `target`.
kdb::KeyParts key_parts(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                        const std::string& schedule);
// The same from the matrix's structure fingerprint (compiler/fingerprint.h), for a lookup that
// does not need the matrix itself (tune-model's stored tensors).
kdb::KeyParts key_parts(const MatrixFingerprint& f, const Problem& p, const CompileTarget& target,
                        const std::string& schedule);

// Pipeline steps 3-6 (verify, pack, values, emit) without NVRTC: what a cached image needs to be
// loaded (KernelBuild::compiled is left empty).
KernelBuild prepare_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                           const CompileTarget& target);

// The cost model's profile of a queried device (costmodel/ does not depend on runtime/).
DeviceProfile profile_of(const cuda::DeviceInfo& info, bool* bandwidth_guessed = nullptr);

// The search space as tune() ranks it: every registered family's schedules (specialised ones
// included) for the target, ordered by the cost model for the device (`info`: its query; null:
// offline, the model of the target's compute capability). `how` says which model ranked.
struct RankedSpace {
  std::vector<Schedule> all;
  std::vector<size_t> order;                        // ranking, into all
  std::vector<std::optional<double>> predicted_ms;  // by index into all
  // by index into all: the candidate's cost strategy when the model has formulas but none fitted
  // on that strategy (it was predicted by the global formula or the roofline), else empty
  std::vector<std::string> unmodelled;
  std::string how;
  std::string warning;
};
RankedSpace rank_space(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                       const cuda::DeviceInfo* info);

// The fixed-cost regime: a matrix under kFixedCostRegimeNnz nonzeros whose best predicted time is
// under kFixedCostRegimeMs, so launches, dependent loads from a cold L2 and a prologue decide the
// time. The linear model, fitted mostly on weights of megabytes, ranks that regime worst (on the
// H200 the fastest of the 260-390 schedules of six small SuiteSparse matrices ranked 130th to
// 340th, and the top 8 held none within 5 % of it), while one build and measurement there is
// cheap. So a measuring search (k >= 4) adds kFixedCostSpread * k schedules spread evenly over
// the rest of the ranking to its first round; the refinement then searches near whichever wins.
// Returns that count (0 outside the regime). LLM weights, which the model was fitted on, stay
// outside even where their predictions are short (decode).
inline constexpr double kFixedCostRegimeMs = 0.02;
inline constexpr int64_t kFixedCostRegimeNnz = kSmallRegimeNnz;  // the model's small regime
inline constexpr int kFixedCostSpread = 3;
int fixed_cost_spread(const RankedSpace& r, int64_t nnz, int k);
// The same over a given candidate list.
RankedSpace rank_space(const CsrMatrix& a, const Problem& p, const CompileTarget& target,
                       std::vector<Schedule> all, const cuda::DeviceInfo* info);

// The compile target for an explicit --arch without a GPU: "sm_80" -> sm_80 limits, any other
// sm_XY / compute_XY -> sm_90 limits named after it. Throws UserError naming `flag` for another
// spelling.
CompileTarget offline_target(const std::string& arch, const std::string& flag = "--arch");

}  // namespace sparsegen
