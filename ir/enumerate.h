// Schedule-space enumeration: every registered family's legal schedules for a Problem and matrix
// (IrFamily::enumerate), general-purpose families first, in a deterministic order. Hundreds for
// a typical matrix.
//
//   auto all = enumerate_schedules(p, a);                 // legal and verified for sm_90
//   for (const Schedule& s : all) std::cout << to_string(s) << "\n";
#pragma once

#include <cstdint>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct EnumerateOptions {
  DeviceLimits device = DeviceLimits::sm90();
  bool verify = true;               // drop candidates the verifier rejects
  double max_pad_overhead = 1.0;    // drop candidates whose padding adds more than this x nnz
  int max_warps_per_block = 8;      // warps per block tried: 1, 4, 16, ... up to this bound
  // Also the specialised families' schedules (those whose IrFamily::general_purpose() is false)
  // where the problem fits them; off: only the general-purpose space.
  bool include_specialised = false;
};

// Every registered family's schedules (ir/family.h), general-purpose families first, each in
// its own order; the specialised ones only with opt.include_specialised.
std::vector<Schedule> enumerate_schedules(const Problem& p, const CsrMatrix& a,
                                          const EnumerateOptions& opt = {});

}  // namespace sparsegen
