#include "ir/baked_schedule.h"

#include <fmt/format.h>

#include <climits>

#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/spec_fields.h"

namespace sparsegen {

std::vector<std::string> validate_baked(const BakedSchedule& s) {
  std::vector<std::string> why;
  const int w = s.warps_per_block;
  if (w < 1 || w > 32 || (w & (w - 1)) != 0)
    why.push_back(fmt::format("baked: warps must be a power of two in 1..32, not {}", w));
  return why;
}

std::vector<std::string> validate_baked(const Problem& p) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("baked multiplies a sparse weight, not a {}", to_string(p.op)));
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(fmt::format("baked takes fp32, fp16 or bf16 values, not {} (no scales)",
                              to_string(p.dtype)));
  if (p.degenerate())
    why.push_back(fmt::format("baked needs M, K, N > 0 (got M={}, K={}, N={})", p.m, p.k, p.n));
  if (p.n > kMaxBakedColumns)
    why.push_back(
        fmt::format("baked runs N <= {} (4 columns per lane), not N = {}", kMaxBakedColumns, p.n));
  if (p.m > kMaxBakedRows)
    why.push_back(fmt::format("baked bakes at most {} rows, not M = {}", kMaxBakedRows, p.m));
  // Element offsets into B and C are immediates of 32-bit int arithmetic.
  if (p.k * p.n > INT_MAX / 2 || p.m * p.n > INT_MAX / 2)
    why.push_back(
        fmt::format("baked needs K·N and M·N below 2^30 (32-bit offsets), not {}", to_string(p)));
  return why;
}

std::vector<std::string> why_not_baked(const Problem& p, const CsrMatrix& a) {
  std::vector<std::string> why = validate_baked(p);
  const int64_t passes = baked_passes(p);
  if (a.nnz() * passes > kMaxBakedProducts)
    why.push_back(fmt::format(
        "baked bakes at most {} products (nonzeros x 32-column passes), not {} x {} (the "
        "kernel's code and its compile time grow with every one)",
        kMaxBakedProducts, a.nnz(), passes));
  return why;
}

std::string baked_spec(const BakedSchedule& s) {
  return fmt::format("baked;warps={}", s.warps_per_block);
}

std::string print_baked(const BakedSchedule& s) {
  return fmt::format(
      "schedule baked\n"
      "  A      : in the kernel's instructions (values and column offsets as immediates)\n"
      "  block  : rows:{}\n"
      "  warp   : row (lanes across the dense columns, 32 at a time)\n"
      "  reduce : none (a lane sums its row's products in column order)\n",
      s.warps_per_block);
}

BakedSchedule parse_baked_fields(std::string_view spec,
                                 const std::vector<std::string_view>& parts) {
  BakedSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (key != "warps") spec_fields::error(key, "warps (family baked)", key);
    s.warps_per_block = static_cast<int>(spec_fields::parse_int(key, v, 1, 32));
  });
  spec_fields::check_legal(spec, validate_baked(s));
  return s;
}

int64_t baked_blocks(int64_t rows, const BakedSchedule& s) {
  return (rows + s.warps_per_block - 1) / s.warps_per_block;
}

std::vector<std::string> verify_baked(const Problem& p, const BakedSchedule& s,
                                      const DeviceLimits& dev) {
  std::vector<std::string> why;
  if (s.threads_per_block() > dev.max_threads_per_block)
    why.push_back(fmt::format("baked: {} threads per block exceed {}'s {}", s.threads_per_block(),
                              dev.name, dev.max_threads_per_block));
  if (baked_blocks(p.m, s) > dev.max_grid_x)
    why.push_back(fmt::format("baked: {} blocks exceed {}'s grid", baked_blocks(p.m, s), dev.name));
  return why;
}

std::vector<Schedule> enumerate_baked_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!why_not_baked(p, a).empty()) return out;
  for (int w : {1, 2, 4, 8}) {
    if (w > 1 && w / 2 >= p.m) break;  // a block of idle warps
    BakedSchedule s{w};
    if (verify_baked(p, s, dev).empty()) out.emplace_back(s);
  }
  return out;
}

}  // namespace sparsegen
