// The costmodel/ layer of a schedule family: the family's own feature quantities (bytes, work,
// reductions, threads and registers) and the launch shape the shared occupancy, roofline and
// regression code (costmodel/schedule_features.h) finishes them with. A family implements
// CostFamily in its own files and registers it with one line in costmodel/families.def.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "costmodel/features.h"
#include "ir/family.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen {

struct ScheduleFeatures;
struct RowProfile;

// Family-neutral description of a launch: what the occupancy / roofline terms and the shared
// entries of the regression vector read.
struct KernelShape {
  int warps_per_block = 1;
  int thread_cols = 1;    // dense columns a thread accumulates (issue cost per iteration)
  int vector_width = 1;   // values per load
  int group_threads = 1;  // lanes sharing the same nonzeros
  bool interleave = false;
  bool sort_rows = false;
  bool prologue = false;  // an extra launch before the kernel (e.g. C = beta*C for atomics)
};

class CostFamily {
 public:
  virtual ~CostFamily() = default;
  // The IrFamily::name() this cost description serves.
  virtual std::string_view name() const = 0;
  // The strategy family the per-strategy regression groups by (e.g. "macko/shared",
  // "rows/row/nnz red=total>total>none").
  virtual std::string strategy(const Schedule& s) const = 0;
  // Fills f's raw quantities (everything before occupancy: nnz, bytes, warp iterations, lane and
  // column efficiency, atomics, shuffles, syncs, blocks, threads and registers) and returns the
  // launch shape. fs = the family's format_stats of the matrix `rows` and `mf` describe.
  virtual KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& s,
                               const FormatStats& fs, const MatrixFeatures& mf,
                               const RowProfile& rows) const = 0;
  // Whether the global formula (fitted on every family's sparse products together) may predict
  // this family where the model has no formula of its own. False for operations unlike that
  // corpus (the gated FFN), which the roofline then ranks.
  virtual bool global_formula() const { return true; }
};

// The registered cost descriptions (costmodel/families.def).
const std::vector<const CostFamily*>& cost_families();
// The cost description of s's family; throws UserError when none is registered.
const CostFamily& cost_family(const Schedule& s);

}  // namespace sparsegen
