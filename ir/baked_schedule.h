// baked schedule family: a small matrix compiled into the kernel itself. Every nonzero becomes an
// instruction whose immediates are its value and its column's offset into B, so the kernel loads
// nothing of A: no row offsets, no column indices, no values. On a matrix of a few hundred
// nonzeros a call's time is the launch plus its chain of dependent memory reads, and reading A
// from (cold) memory is two of the three links; baked, only B's gather is left. The kernel is
// specific to the values, so it is re-emitted and recompiled for every matrix (the kernel
// database still keys the tuned schedule by structure; a cached image whose source differs is
// rebuilt). Its IrFamily is in ir/baked_family.cpp.
//
//   baked;warps=4
//     warps  warps per block (1, 2, 4, 8, 16 or 32); one warp per row of A
//
// Work split: a warp owns one row; its lanes own the dense columns (lane, lane + 32, ...; up to
// kMaxBakedColumns). No reduction between threads: each lane sums its row's products in fp32 in
// column order and stores alpha·acc + beta·C once, so one launch suffices for any beta.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// The sizes the family bakes. The kernel's code grows with every product (a load and an FMA per
// nonzero and 32-column pass, about 32 bytes of instructions) and NVRTC's time with it: about
// 1.2 ms a product (3 s for 2500, 10 s for 5000 on the 2-core CI machine). Beyond a thousand
// products or a hundred-odd rows (a compare per row finds the warp's row) reading A costs less.
inline constexpr int64_t kMaxBakedRows = 128;
inline constexpr int64_t kMaxBakedProducts = 1024;  // nonzeros x ceil(N / 32)
inline constexpr int64_t kMaxBakedColumns = 128;    // N: at most 4 columns per lane

struct BakedSchedule {
  static constexpr std::string_view kFamily = "baked";
  int warps_per_block = 4;
  int threads_per_block() const { return warps_per_block * kWarpSize; }
  bool operator==(const BakedSchedule&) const = default;
};

// Problem-independent legality (warps a power of two in 1..32); empty = legal.
std::vector<std::string> validate_baked(const BakedSchedule& s);
// Reasons the family cannot run the problem (op, dtype, N, sizes beyond 32-bit offsets).
std::vector<std::string> validate_baked(const Problem& p);
// The same plus the matrix's own limits (rows, nonzeros).
std::vector<std::string> why_not_baked(const Problem& p, const CsrMatrix& a);
std::string baked_spec(const BakedSchedule& s);
std::string print_baked(const BakedSchedule& s);
BakedSchedule parse_baked_fields(std::string_view spec, const std::vector<std::string_view>& parts);
// Blocks of the launch: one warp per row.
int64_t baked_blocks(int64_t rows, const BakedSchedule& s);
// 32-column passes a lane makes over N (one accumulator and one load per nonzero each).
inline int64_t baked_passes(const Problem& p) {
  return (p.n + kWarpSize - 1) / kWarpSize;
}
// Per-thread registers: an accumulator, a loaded value and an offset per pass.
inline int baked_registers(const Problem& p) {
  return 24 + 8 * static_cast<int>(baked_passes(p));
}
// Hardware limits: threads per block, grid size.
std::vector<std::string> verify_baked(const Problem& p, const BakedSchedule& s,
                                      const DeviceLimits& dev);
// warps = 1, 2, 4, 8 (those not more than twice the rows) when the matrix fits, else none.
std::vector<Schedule> enumerate_baked_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev);

}  // namespace sparsegen
