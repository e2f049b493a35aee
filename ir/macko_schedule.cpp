#include "ir/macko_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <queue>

#include "ir/diagnostics.h"
#include "ir/int_math.h"
#include "ir/spec_fields.h"

namespace sparsegen {

namespace {

bool pow2_in(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

int pow2_ceil(int64_t x) {
  int p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

constexpr std::string_view kBStageNames[] = {"global", "shared", "shared_f32"};

}  // namespace

std::string_view to_string(BStage b) {
  return kBStageNames[static_cast<int>(b)];
}
std::optional<BStage> parse_bstage(std::string_view s) {
  return spec_fields::lookup<BStage>(kBStageNames, s);
}

std::vector<std::string> validate(const MackoSchedule& s) {
  std::vector<std::string> why;
  auto bad = [&](std::string m) { why.push_back(std::move(m)); };
  if (!valid_macko_delta_bits(s.delta_bits))
    bad(fmt::format("delta={} must be 2, 4 or 8", s.delta_bits));
  if (!pow2_in(s.warps_per_row, 1, 8))
    bad(fmt::format("wpr={} must be 1, 2, 4 or 8", s.warps_per_row));
  if (s.warps_per_block < 1 || s.warps_per_block > 32)
    bad(fmt::format("warps={} must be in 1..32", s.warps_per_block));
  if (!pow2_in(s.unroll, 1, 4)) bad(fmt::format("unroll={} must be 1, 2 or 4", s.unroll));
  if (!pow2_in(s.cols, 1, 8)) bad(fmt::format("cols={} must be 1, 2, 4 or 8", s.cols));
  if (s.vector_bytes != 16)
    bad(fmt::format("vec={} must be 16 (aligned 16-byte value vectors)", s.vector_bytes));
  if (s.rows_per_warp < 1 || s.rows_per_warp > kMackoMaxRowsPerWarp)
    bad(fmt::format("rpw={} must be in 1..{}", s.rows_per_warp, kMackoMaxRowsPerWarp));
  if (s.stage == BStage::Global && s.rows_per_warp != 1)
    bad(fmt::format("rpw={} needs a staged B (rows per warp amortise the copy)", s.rows_per_warp));
  if (s.stage == BStage::SharedF32 && s.cols != 1)
    bad(fmt::format("stage=shared_f32 stages one fp32 column: cols={} must be 1", s.cols));
  if (s.sort_rows && !s.staged())
    bad("sort=1 needs a staged B (the row order is dealt to blocks of the staged kernel)");
  if (s.staged() && s.warps_per_row != 1)
    bad(fmt::format("a staged B needs wpr=1 (warp per row), not wpr={}", s.warps_per_row));
  if (why.empty() && s.warps_per_row > 1 && s.warps_per_block != s.warps_per_row)
    bad(fmt::format("split row (wpr={}) needs warps={} == wpr: the block is one row's warps",
                    s.warps_per_row, s.warps_per_block));
  return why;
}

std::vector<std::string> validate_macko(const Problem& p, const MackoSchedule& s) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("MACKO computes SpMM/SpMV with a static sparse weight, not {}",
                              to_string(p.op)));
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(
        fmt::format("MACKO needs 2-byte values (fp16 or bf16), not {}", to_string(p.dtype)));
  if (p.n > 0 && s.cols > 1 && s.cols / 2 >= p.n)
    why.push_back(
        fmt::format("cols={} leaves half of each thread's columns beyond n={}", s.cols, p.n));
  if (s.staged()) {
    if (p.b_layout != Layout::RowMajor)
      why.push_back("a staged B needs a row-major B (rows of B are copied whole)");
    if (p.n != s.cols)
      why.push_back(
          fmt::format("a staged B needs cols={} == n={} (the block stages all of B)", s.cols, p.n));
  }
  return why;
}

std::string macko_spec(const MackoSchedule& s) {
  return fmt::format(
      "macko;delta={};wpr={};warps={};unroll={};cols={};vec={};stage={};rpw={};sort={}",
      s.delta_bits, s.warps_per_row, s.warps_per_block, s.unroll, s.cols, s.vector_bytes,
      to_string(s.stage), s.rows_per_warp, s.sort_rows ? 1 : 0);
}

std::string print_macko(const MackoSchedule& s) {
  std::string out = "schedule macko\n";
  out += fmt::format("  format: delta_bits={} vector={}B (8 slots) reverse-offset aligned\n",
                     s.delta_bits, s.vector_bytes);
  out += fmt::format("  row   : {} ({} warp{} per row) rows_per_block={} warps={}\n",
                     s.warps_per_row == 1 ? "warp-per-row" : "split-row", s.warps_per_row,
                     s.warps_per_row == 1 ? "" : "s", s.rows_per_block(), s.warps_per_block);
  out += fmt::format("  step  : unroll={} vectors/thread, {} slots per warp step\n", s.unroll,
                     s.unroll * kWarpSize * kMackoVectorSlots);
  out += fmt::format("  cols  : thread={}\n", s.cols);
  out += fmt::format("  B     : {}{}\n", to_string(s.stage),
                     s.staged()
                         ? fmt::format(" (staged once per block, {} rows per warp{})",
                                       s.rows_per_warp, s.sort_rows ? ", longest rows first" : "")
                         : std::string(" (gathered through L1)"));
  out += "  output: store\n";
  return out;
}

MackoSchedule parse_macko_fields(std::string_view spec,
                                 const std::vector<std::string_view>& parts) {
  MackoSchedule s;
  bool warps_given = false;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    auto num = [&](int64_t lo, int64_t hi) {
      return static_cast<int>(spec_fields::parse_int(key, v, lo, hi));
    };
    if (key == "delta") {
      s.delta_bits = num(1, 64);
    } else if (key == "wpr") {
      s.warps_per_row = num(1, 32);
    } else if (key == "warps") {
      s.warps_per_block = num(1, 32);
      warps_given = true;
    } else if (key == "unroll") {
      s.unroll = num(1, 16);
    } else if (key == "cols") {
      s.cols = num(1, 8);
    } else if (key == "vec") {
      s.vector_bytes = num(1, 64);
    } else if (key == "stage") {
      s.stage = spec_fields::parse_enum<BStage>(key, kBStageNames, v);
    } else if (key == "rpw") {
      s.rows_per_warp = num(1, 1 << 20);
    } else if (key == "sort") {
      s.sort_rows = num(0, 1) == 1;
    } else {
      spec_fields::error(
          key, "one of delta, wpr, warps, unroll, cols, vec, stage, rpw, sort (family macko)", key);
    }
  });
  // A split-row SPEC may leave warps out: it follows wpr.
  if (s.warps_per_row > 1 && !warps_given) s.warps_per_block = s.warps_per_row;
  spec_fields::check_legal(spec, validate(s));
  return s;
}

std::vector<int64_t> macko_row_order(const std::vector<int64_t>& row_ptr, int64_t rows_per_block) {
  SG_ASSERT(rows_per_block > 0 && !row_ptr.empty(), "macko_row_order: empty shape");
  const int64_t m = static_cast<int64_t>(row_ptr.size()) - 1;
  const int64_t blocks = (m + rows_per_block - 1) / rows_per_block;
  auto len = [&](int64_t r) {
    return row_ptr[static_cast<size_t>(r + 1)] - row_ptr[static_cast<size_t>(r)];
  };
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) rows[static_cast<size_t>(r)] = r;
  std::stable_sort(rows.begin(), rows.end(), [&](int64_t x, int64_t y) { return len(x) > len(y); });
  // Min-heap of (slots so far, block) over the blocks with room left.
  using Load = std::pair<int64_t, int64_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> open;
  std::vector<int64_t> filled(static_cast<size_t>(blocks), 0);
  for (int64_t b = 0; b < blocks; ++b) open.emplace(0, b);
  std::vector<int64_t> order(static_cast<size_t>(m));
  for (int64_t r : rows) {
    const auto [load, b] = open.top();
    open.pop();
    const int64_t cap = std::min(rows_per_block, m - b * rows_per_block);
    int64_t& i = filled[static_cast<size_t>(b)];
    order[static_cast<size_t>(b * rows_per_block + i)] = r;
    if (++i < cap) open.emplace(load + len(r), b);
  }
  return order;
}

int64_t macko_grid_x(const Problem& p, const MackoSchedule& s) {
  const int64_t rpb = s.rows_per_block();
  return (p.m + rpb - 1) / rpb;
}

int64_t macko_grid_y(const Problem& p, const MackoSchedule& s) {
  return (p.n + s.cols - 1) / s.cols;
}

int macko_registers(const MackoSchedule& s) {
  // Staged: two steps of raw words in flight (this one and the next), delta planes, the
  // accumulators; fitted to ptxas on sm_90 (N = 1: 47 registers at unroll 2, 72 at unroll 4, as
  // sparsegen-macko-bench reports them), rounded up to the allocation unit of 8.
  // Global: per vector 4 raw value words, up to 2 delta words, 8 prefix sums, plus the
  // accumulators and a fixed base for row bounds, carry, addresses and loop state.
  if (s.staged()) return (24 + 12 * s.unroll + s.cols + 7) / 8 * 8;
  return 32 + s.unroll * (4 + 2 + 8) + s.cols;
}

int macko_blocks_per_sm(const Problem& p, const MackoSchedule& s, const DeviceLimits& dev) {
  const int threads = s.threads_per_block();
  int64_t bps = std::min(dev.max_blocks_per_multiprocessor,
                         dev.max_threads_per_multiprocessor / std::max(1, threads));
  bps = std::min<int64_t>(bps, dev.registers_per_multiprocessor /
                                   std::max<int64_t>(1, int64_t{macko_registers(s)} * threads));
  const int64_t smem =
      macko_stage_bytes(p, s) + macko_shared_bytes(s) + dev.shared_reserved_per_block;
  bps = std::min(bps, dev.max_shared_per_multiprocessor / smem);
  return static_cast<int>(std::max<int64_t>(1, bps));
}

int macko_one_wave_rows_per_warp(const Problem& p, const MackoSchedule& s,
                                 const DeviceLimits& dev) {
  if (!s.staged() || p.m <= 0) return 1;
  MackoSchedule t = s;
  t.rows_per_warp = 1;
  // The row bounds grow with the rows per block and can cost a resident block: a few rounds.
  for (int round = 0; round < 4; ++round) {
    const int64_t wave = int64_t{dev.multiprocessors} * macko_blocks_per_sm(p, t, dev) *
                         (t.warps_per_block / t.warps_per_row);
    const int64_t rpw = std::clamp<int64_t>((p.m + wave - 1) / wave, 1, kMackoMaxRowsPerWarp);
    if (rpw == t.rows_per_warp) break;
    t.rows_per_warp = static_cast<int>(rpw);
  }
  return t.rows_per_warp;
}

bool macko_uses_items(const MackoSchedule& s) {
  return s.staged() && s.cols <= 2 && s.rows_per_warp <= 3;
}

int64_t macko_stage_offset(const MackoSchedule& s) {
  if (macko_uses_items(s)) return 16;  // the counter, then B (16-byte aligned)
  const int64_t bounds = s.sort_rows ? 3 * int64_t{s.rows_per_block()} : s.rows_per_block() + 1;
  return (int64_t{4} * (bounds + 1) + 15) / 16 * 16;
}

int64_t macko_items_offset(const Problem& p, const MackoSchedule& s) {
  return (macko_stage_offset(s) + (p.k + 2 * kMackoStageGuard) * s.stage_row_bytes() + 15) / 16 *
         16;
}

int macko_items_per_block(const MackoSchedule& s) {
  return s.rows_per_block() + s.warps_per_block + 1;
}

std::vector<int64_t> macko_items(const MackoFormat& f, const MackoSchedule& s) {
  SG_ASSERT(macko_uses_items(s), "macko_items: a schedule in items mode");
  SG_ASSERT(static_cast<int64_t>(f.row_ptr.size()) == f.rows + 1, "macko_items: row_ptr size");
  const int64_t m = f.rows, rpb = s.rows_per_block(), ipb = macko_items_per_block(s);
  const int64_t blocks = m > 0 ? (m + rpb - 1) / rpb : 0;
  const int64_t step = int64_t{kWarpSize} * s.unroll;  // vectors per warp step
  const std::vector<int64_t> order =
      s.sort_rows && m > 0 ? macko_row_order(f.row_ptr, rpb) : std::vector<int64_t>{};
  auto start = [&](int64_t r) { return f.row_ptr[static_cast<size_t>(r)]; };
  auto end = [&](int64_t r) { return f.row_ptr[static_cast<size_t>(r + 1)]; };
  auto vectors = [&](int64_t r) {
    return end(r) > start(r) ? (end(r) + 7) / 8 - start(r) / 8 : int64_t{0};
  };
  std::vector<int64_t> items(static_cast<size_t>(blocks * ipb * kMackoItemInts), 0);
  std::vector<int64_t> rows, pieces, by_length;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t nb = std::min(rpb, m - b * rpb);
    rows.resize(static_cast<size_t>(nb));
    for (int64_t i = 0; i < nb; ++i)
      rows[static_cast<size_t>(i)] =
          s.sort_rows ? order[static_cast<size_t>(b * rpb + i)] : b * rpb + i;
    // A segment is the block's even share of vectors per warp in whole steps; a row of at least
    // 1.5 segments is cut (longest first) while spare items last.
    int64_t total = 0;
    for (int64_t r : rows) total += vectors(r);
    const int64_t seg =
        std::max(step, round_up((total + s.warps_per_block - 1) / s.warps_per_block, step));
    pieces.assign(static_cast<size_t>(nb), 1);
    by_length.resize(static_cast<size_t>(nb));
    for (int64_t i = 0; i < nb; ++i) by_length[static_cast<size_t>(i)] = i;
    std::stable_sort(by_length.begin(), by_length.end(), [&](int64_t x, int64_t y) {
      return vectors(rows[static_cast<size_t>(x)]) > vectors(rows[static_cast<size_t>(y)]);
    });
    int64_t spare = ipb - 1 - nb;
    for (int64_t i : by_length) {
      const int64_t v = vectors(rows[static_cast<size_t>(i)]);
      if (spare == 0 || 2 * v < 3 * seg) break;
      const int64_t k = std::min((v + seg - 1) / seg, 1 + spare);
      pieces[static_cast<size_t>(i)] = k;
      spare -= k - 1;
    }
    int64_t* out = items.data() + b * ipb * kMackoItemInts;
    int64_t used = 0;
    for (int64_t i = 0; i < nb; ++i) {
      const int64_t r = rows[static_cast<size_t>(i)], s0 = start(r), s1 = end(r);
      // Equal segments of whole steps (vectors from s0's); the last one takes the rest.
      const int64_t k = pieces[static_cast<size_t>(i)];
      const int64_t len = std::max(step, round_up((vectors(r) + k - 1) / k, step));
      int64_t col = -1;  // the column of the slot before the segment
      int64_t e = s0;
      for (int64_t j = 0; j == 0 || e < s1; ++j) {
        const int64_t a = std::max(s0, (s0 / 8 + j * len) * 8);
        e = std::min(s1, (s0 / 8 + (j + 1) * len) * 8);
        SG_ASSERT(used < ipb - 1, "macko_items: more segments than items");
        int64_t* it = out + used * kMackoItemInts;
        it[0] = a;
        it[1] = e;
        it[2] = col - a % 8;
        it[3] = e == s1 ? r : -1;
        ++used;
        if (k > 1)  // only a later segment needs the column
          for (int64_t t = a; t < e; ++t) col += f.delta(t) + 1;
      }
    }
    for (int64_t i = used; i < ipb; ++i) out[i * kMackoItemInts + 3] = -1;
    out[(ipb - 1) * kMackoItemInts] = used;  // the header: how many items are real,
    out[(ipb - 1) * kMackoItemInts + 1] = used > nb ? 1 : 0;  // and whether a row was cut
  }
  return items;
}

int64_t macko_stage_bytes(const Problem& p, const MackoSchedule& s) {
  if (!s.staged()) return 0;
  if (!macko_uses_items(s))
    return macko_stage_offset(s) + (p.k + 2 * kMackoStageGuard) * s.stage_row_bytes();
  const int64_t items = macko_items_per_block(s);
  return macko_items_offset(p, s) + items * 4 * kMackoItemInts + items * 4 * s.cols;
}

int64_t macko_shared_bytes(const MackoSchedule& s) {
  if (s.warps_per_row == 1) return 0;
  return int64_t{4} * 2 * s.warps_per_row + int64_t{4} * s.warps_per_row * s.cols;
}

std::vector<std::string> verify_macko(const Problem& p, const MackoSchedule& s,
                                      const MackoStats& st, const DeviceLimits& dev) {
  std::vector<std::string> why = validate(s);
  for (auto& w : validate_macko(p, s)) why.push_back(std::move(w));
  if (!why.empty()) return why;
  const int threads = s.threads_per_block();
  if (threads > dev.max_threads_per_block)
    why.push_back(fmt::format("{} threads per block exceed {} on {}", threads,
                              dev.max_threads_per_block, dev.name));
  const int regs = macko_registers(s);
  if (regs > dev.max_registers_per_thread || int64_t{regs} * threads > dev.registers_per_block)
    why.push_back(fmt::format("about {} registers x {} threads exceed the limits of {}", regs,
                              threads, dev.name));
  if (macko_stage_bytes(p, s) > dev.max_shared_per_block)
    why.push_back(fmt::format("staging B takes {} bytes of shared memory, more than {} on {}",
                              macko_stage_bytes(p, s), dev.max_shared_per_block, dev.name));
  if (macko_shared_bytes(s) > dev.max_shared_per_block)
    why.push_back(fmt::format("{} bytes of shared memory exceed {} on {}", macko_shared_bytes(s),
                              dev.max_shared_per_block, dev.name));
  if (macko_grid_x(p, s) > dev.max_grid_x)
    why.push_back(fmt::format("grid.x = {} blocks exceeds {}", macko_grid_x(p, s), dev.max_grid_x));
  if (macko_grid_y(p, s) > dev.max_grid_y)
    why.push_back(
        fmt::format("grid.y = {} column tiles exceeds {}", macko_grid_y(p, s), dev.max_grid_y));
  // Slot positions are 32-bit in the kernel (with room for one step beyond the end).
  if (st.slots > INT_MAX / 2)
    why.push_back(fmt::format("{} MACKO slots exceed the kernel's 32-bit positions", st.slots));
  return why;
}

std::vector<Schedule> enumerate_macko_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev) {
  std::vector<Schedule> global, staged;
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return {};
  if (p.n < 1 || p.n > 8 || a.rows != p.m || a.cols != p.k) return {};
  const int cols = pow2_ceil(p.n);
  // Rows of uneven length (coefficient of variation >= 0.25; magnitude pruning gives 0.3-0.9,
  // random about 0.05) also get the longest-rows-first order.
  double sum = 0, sum2 = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    const double l = double(a.row_length(r));
    sum += l;
    sum2 += l * l;
  }
  const double mean = a.rows > 0 ? sum / double(a.rows) : 0.0;
  const double var = a.rows > 0 ? std::max(0.0, sum2 / double(a.rows) - mean * mean) : 0.0;
  const bool uneven = mean > 0 && std::sqrt(var) >= 0.25 * mean;
  for (int bits : {4, 2, 8}) {
    const MackoStats st = macko_stats(a, bits);
    // Staged B (N in {1, 2, 4, 8}, row-major B; b = 4 and 8): rows per warp from 1 up to where
    // the grid would leave multiprocessors without a block (fewer blocks = fewer copies of B).
    if (p.b_layout == Layout::RowMajor && cols == p.n && bits != 2) {
      for (BStage stage : {BStage::Shared, BStage::SharedF32}) {
        if (stage == BStage::SharedF32 && cols != 1) continue;
        for (int warps : {8, 16}) {
          for (int unroll : {2, 4}) {
            MackoSchedule s0{.delta_bits = bits,
                             .warps_per_block = warps,
                             .unroll = unroll,
                             .cols = cols,
                             .stage = stage};
            std::vector<int> rpws;
            for (int rpw = 1; rpw <= 16; rpw *= 2) {
              s0.rows_per_warp = rpw;
              if (rpw > 1 && macko_grid_x(p, s0) < dev.multiprocessors) break;
              rpws.push_back(rpw);
            }
            // One wave: with a whole B per block, a grid of more blocks than fit at once copies
            // B again for every later wave, and a last partial wave leaves multiprocessors idle
            // (12288 rows, N = 8, 16 warps: 1 block per SM, rpw 4 gives 192 blocks = 1.45 waves).
            const int wave = macko_one_wave_rows_per_warp(p, s0, dev);
            if (std::find(rpws.begin(), rpws.end(), wave) == rpws.end()) rpws.push_back(wave);
            for (int rpw : rpws) {
              MackoSchedule s = s0;
              s.rows_per_warp = rpw;
              if (!validate(s).empty() || !validate_macko(p, s).empty() ||
                  !verify_macko(p, s, st, dev).empty())
                continue;
              staged.emplace_back(s);
              if (uneven) {
                s.sort_rows = true;
                if (verify_macko(p, s, st, dev).empty()) staged.emplace_back(s);
              }
            }
          }
        }
      }
    }
    const double mean_slots = p.m > 0 ? double(st.nnz + st.padding) / double(p.m) : 0.0;
    for (int wpr : {1, 2, 4, 8}) {
      for (int unroll : {2, 4}) {
        const double step = double(wpr) * kWarpSize * kMackoVectorSlots * unroll;
        if (wpr > 1 && mean_slots < 2 * step) continue;  // split only pays off on long rows
        for (int warps : {4, 8}) {
          MackoSchedule s;
          s.delta_bits = bits;
          s.warps_per_row = wpr;
          s.warps_per_block = wpr == 1 ? warps : wpr;
          s.unroll = unroll;
          s.cols = cols;
          if (wpr > 1 && warps != 4) continue;  // one block shape per split
          if (!validate(s).empty() || !verify_macko(p, s, st, dev).empty()) continue;
          global.emplace_back(s);
        }
      }
    }
  }
  // Where B can be staged, the staged kernels won every one of the 30 shapes x prunings x
  // sparsities of sparsegen-macko-bench on an H200, so the B-from-global ones are offered only
  // where staging is impossible.
  return staged.empty() ? global : staged;
}

}  // namespace sparsegen
