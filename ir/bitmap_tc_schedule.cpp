#include "ir/bitmap_tc_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "ir/diagnostics.h"
#include "ir/spec_fields.h"

namespace sparsegen {

namespace {

int64_t col_tiles_of(const Problem& p) {
  return (p.k + kBitmapTileCols - 1) / kBitmapTileCols;
}

constexpr std::string_view kMmaNames[] = {"sync", "wgmma"};
constexpr std::string_view kPipeNames[] = {"async", "bulk"};
constexpr std::string_view kCopyNames[] = {"tile", "step"};
constexpr std::string_view kBLoadNames[] = {"arranged", "map"};
constexpr std::string_view kDecodeNames[] = {"regs", "scatter"};
constexpr std::string_view kKReduceNames[] = {"ws", "cluster"};

}  // namespace

std::string_view to_string(BitmapCopy c) {
  return kCopyNames[static_cast<int>(c)];
}

std::string_view to_string(BitmapBLoad b) {
  return kBLoadNames[static_cast<int>(b)];
}

std::string_view to_string(BitmapDecode d) {
  return kDecodeNames[static_cast<int>(d)];
}

std::string_view to_string(BitmapKReduce k) {
  return kKReduceNames[static_cast<int>(k)];
}

std::string_view to_string(BitmapPipe p) {
  return kPipeNames[static_cast<int>(p)];
}

std::string_view to_string(MmaKind m) {
  return kMmaNames[static_cast<int>(m)];
}
std::optional<MmaKind> parse_mma(std::string_view s) {
  return spec_fields::lookup<MmaKind>(kMmaNames, s);
}

std::vector<std::string> validate(const BitmapTcSchedule& s) {
  std::vector<std::string> why;
  auto bad = [&](std::string m) { why.push_back(std::move(m)); };
  const int w = s.warps_per_block;
  if (w != 1 && w != 2 && w != 4 && w != 8) bad(fmt::format("warps={} must be 1, 2, 4 or 8", w));
  if (s.m_tiles != 1 && s.m_tiles != 2) bad(fmt::format("mt={} must be 1 or 2", s.m_tiles));
  if (s.k_tiles != 1 && s.k_tiles != 2 && s.k_tiles != 4)
    bad(fmt::format("kt={} must be 1, 2 or 4", s.k_tiles));
  if (s.ksplit < 1 || s.ksplit > 64) bad(fmt::format("ksplit={} must be in 1..64", s.ksplit));
  if (s.pipe == BitmapPipe::Bulk) {
    if (s.stages < 2 || s.stages > 6)
      bad(fmt::format("stages={} must be in 2..6 with pipe=bulk", s.stages));
    if (s.k_tiles != 1)
      bad(fmt::format("pipe=bulk copies one 64-column tile a step: kt={} must be 1", s.k_tiles));
  } else if (s.copy != BitmapCopy::Tile) {
    bad(fmt::format("copy={} needs pipe=bulk", to_string(s.copy)));
  } else if (s.stages != 2 && s.stages != 3) {
    bad(fmt::format("stages={} must be 2 or 3", s.stages));
  }
  if (s.cluster != 1 && s.cluster != 2 && s.cluster != 4)
    bad(fmt::format("cluster={} must be 1, 2 or 4", s.cluster));
  else if (s.cluster > 1 && (s.pipe != BitmapPipe::Bulk || s.copy != BitmapCopy::Step))
    bad(fmt::format("cluster={} needs pipe=bulk and copy=step", s.cluster));
  if (s.mma == MmaKind::Wgmma && w % 4 != 0)
    bad(fmt::format("mma=wgmma needs whole warpgroups: warps={} must be 4 or 8", w));
  if (s.b_load == BitmapBLoad::Map && (s.pipe != BitmapPipe::Bulk || s.mma != MmaKind::Wgmma))
    bad("b=map needs pipe=bulk and mma=wgmma (the swizzled B is read by wgmma descriptors)");
  if (s.decode == BitmapDecode::Scatter &&
      (s.pipe != BitmapPipe::Bulk || s.mma != MmaKind::Wgmma || s.copy != BitmapCopy::Step ||
       s.b_load != BitmapBLoad::Map || s.m_tiles != 1 || s.values != BitmapValues::Slot))
    bad("decode=scatter needs pipe=bulk, mma=wgmma, copy=step, b=map, mt=1 and vals=slot (a "
        "warp's one row tile scattered into a dense tile that wgmma reads)");
  if (s.kred == BitmapKReduce::Cluster &&
      (s.pipe != BitmapPipe::Bulk || s.ksplit < 2 || s.ksplit > 8 || s.cluster != 1))
    bad(fmt::format(
        "kred=cluster needs pipe=bulk, ksplit 2..8 (a cluster of K parts) and cluster=1, not "
        "ksplit={} cluster={}",
        s.ksplit, s.cluster));
  // ptxas serialises the scatter kernel's wgmma when its sums are stored for the cluster
  if (s.kred == BitmapKReduce::Cluster && s.decode == BitmapDecode::Scatter)
    bad("kred=cluster does not combine with decode=scatter");
  return why;
}

std::vector<std::string> validate_bitmap_tc(const Problem& p, const BitmapTcSchedule& s) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("bitmap_tc computes SpMM/SpMV with a static sparse weight, not {}",
                              to_string(p.op)));
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(
        fmt::format("bitmap_tc runs on fp16/bf16 tensor cores, not {}", to_string(p.dtype)));
  if (p.b_layout != Layout::RowMajor)
    why.push_back("bitmap_tc needs a row-major B (ldmatrix.trans reads 16-byte rows of B)");
  if (p.n % 8 != 0 || p.n < 8 || p.n > 128)
    why.push_back(
        fmt::format("bitmap_tc needs n a multiple of 8 in 8..128 (mma n8 tiles), not {}", p.n));
  if (s.pipe == BitmapPipe::Bulk && p.k == 0)
    why.push_back("pipe=bulk needs k > 0 (with k = 0 the result is C = beta·C)");
  if (s.mma == MmaKind::Wgmma && p.n != 8 && p.n != 16 && p.n != 32 && p.n != 64 && p.n != 128)
    why.push_back(fmt::format("mma=wgmma is emitted for n in {{8, 16, 32, 64, 128}}, not {}", p.n));
  if (s.b_load == BitmapBLoad::Map && p.n != 16 && p.n != 32 && p.n != 64 && p.n != 128)
    why.push_back(fmt::format(
        "b=map copies B rows of 32, 64 or 128 bytes (one swizzle atom wide): n in {{16, 32, 64, "
        "128}}, not {}",
        p.n));
  const int64_t tiles = col_tiles_of(p);
  if (p.k > 0 && s.ksplit > tiles)
    why.push_back(
        fmt::format("ksplit={} exceeds the {} column tiles of k={}", s.ksplit, tiles, p.k));
  return why;
}

std::string bitmap_tc_spec(const BitmapTcSchedule& s) {
  // The default value layout is left out, so the SPECs (and kernel database keys) of slot
  // schedules read as they did before the field existed.
  return fmt::format(
      "bitmap_tc;warps={};mt={};kt={};ksplit={};stages={};mma={}{}{}{}{}{}{}{}", s.warps_per_block,
      s.m_tiles, s.k_tiles, s.ksplit, s.stages, to_string(s.mma),
      s.values == BitmapValues::Slot ? "" : fmt::format(";vals={}", to_string(s.values)),
      s.pipe == BitmapPipe::Async ? "" : fmt::format(";pipe={}", to_string(s.pipe)),
      s.copy == BitmapCopy::Tile ? "" : fmt::format(";copy={}", to_string(s.copy)),
      s.cluster == 1 ? "" : fmt::format(";cluster={}", s.cluster),
      s.b_load == BitmapBLoad::Arranged ? "" : fmt::format(";b={}", to_string(s.b_load)),
      s.decode == BitmapDecode::Registers ? "" : fmt::format(";decode={}", to_string(s.decode)),
      s.kred == BitmapKReduce::Workspace ? "" : fmt::format(";kred={}", to_string(s.kred)));
}

std::string print_bitmap_tc(const BitmapTcSchedule& s) {
  std::string out = "schedule bitmap_tc\n";
  out +=
      fmt::format("  format: bitmap tiles {}x{} (64-bit row masks, values in fragment order{})\n",
                  kBitmapTileRows, kBitmapTileCols,
                  s.values == BitmapValues::Pair ? "; vals=pair: a 32-bit word per register" : "");
  out += fmt::format("  block : warps={} rows_per_block={} (mt={} row tiles per warp){}\n",
                     s.warps_per_block, s.rows_per_block(), s.m_tiles,
                     s.pipe == BitmapPipe::Bulk ? " + a producer warp" : "");
  out += fmt::format("  k     : ksplit={} parts, {} column tile{} per step, {} stages={}\n",
                     s.ksplit, s.k_tiles, s.k_tiles == 1 ? "" : "s",
                     s.pipe == BitmapPipe::Bulk ? "bulk-copy (mbarrier)" : "cp.async", s.stages);
  if (s.copy == BitmapCopy::Step)
    out +=
        "  copy  : step (a step's lane words and values in one copy each; pack grouped by "
        "the block's row tiles)\n";
  if (s.cluster > 1)
    out += fmt::format(
        "  B     : clusters of {} row blocks, each step's B multicast into all of them\n",
        s.cluster);
  if (s.b_load == BitmapBLoad::Map)
    out += "  B     : map (TMA boxes of B in the wgmma swizzle, no arrangement kernel)\n";
  if (s.kred == BitmapKReduce::Cluster)
    out += fmt::format(
        "  k-red : cluster (the {} K parts of a row block in one cluster, added over distributed "
        "shared memory)\n",
        s.ksplit);
  if (s.decode == BitmapDecode::Scatter)
    out +=
        "  A     : scatter (values stored by offset into a zeroed dense tile, 128-byte swizzle)\n";
  out += s.mma != MmaKind::Wgmma ? "  math  : mma.m16n8k16 per warp, fp32 accumulate\n"
         : s.decode == BitmapDecode::Scatter
             ? "  math  : wgmma.m64nNk16 per warpgroup (A and B from shared), fp32 accumulate\n"
             : "  math  : wgmma.m64nNk16 per warpgroup (A from registers, B from shared), fp32 "
               "accumulate\n";
  out += fmt::format("  output: {}\n", to_string(s.output()));
  return out;
}

BitmapTcSchedule parse_bitmap_tc_fields(std::string_view spec,
                                        const std::vector<std::string_view>& parts) {
  BitmapTcSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    auto num = [&](int64_t hi) { return static_cast<int>(spec_fields::parse_int(key, v, 1, hi)); };
    if (key == "warps")
      s.warps_per_block = num(32);
    else if (key == "mt")
      s.m_tiles = num(16);
    else if (key == "kt")
      s.k_tiles = num(64);
    else if (key == "ksplit")
      s.ksplit = num(1024);
    else if (key == "stages")
      s.stages = num(16);
    else if (key == "mma") {
      s.mma = spec_fields::parse_enum<MmaKind>(key, kMmaNames, v);
    } else if (key == "vals") {
      const auto l = parse_bitmap_values(v);
      if (!l) spec_fields::error(key, "slot or pair", v);
      s.values = *l;
    } else if (key == "pipe") {
      s.pipe = spec_fields::parse_enum<BitmapPipe>(key, kPipeNames, v);
    } else if (key == "copy") {
      s.copy = spec_fields::parse_enum<BitmapCopy>(key, kCopyNames, v);
    } else if (key == "cluster") {
      s.cluster = num(16);
    } else if (key == "b") {
      s.b_load = spec_fields::parse_enum<BitmapBLoad>(key, kBLoadNames, v);
    } else if (key == "kred") {
      s.kred = spec_fields::parse_enum<BitmapKReduce>(key, kKReduceNames, v);
    } else if (key == "decode") {
      s.decode = spec_fields::parse_enum<BitmapDecode>(key, kDecodeNames, v);
    } else
      spec_fields::error(
          key,
          "one of warps, mt, kt, ksplit, stages, mma, vals, pipe, copy, cluster, b, decode, kred "
          "(family bitmap_tc)",
          key);
  });
  spec_fields::check_legal(spec, validate(s));
  return s;
}

int64_t bitmap_tc_part_tiles(int64_t col_tiles, int ksplit) {
  return (col_tiles + ksplit - 1) / ksplit;
}

int64_t bitmap_tc_grid_x(const Problem& p, const BitmapTcSchedule& s) {
  const int64_t blocks = (p.m + s.rows_per_block() - 1) / s.rows_per_block();
  return (blocks + s.cluster - 1) / s.cluster * s.cluster;
}

int64_t bitmap_tc_grid_y(const Problem&, const BitmapTcSchedule& s) {
  return s.ksplit;
}

int64_t bitmap_tc_b_row_bytes(const Problem& p, const BitmapTcSchedule& s) {
  const int64_t units = (p.n * 2 + 15) / 16;
  return s.mma == MmaKind::Wgmma ? 16 * units : 16 * (units | 1);
}

int64_t bitmap_tc_tile_group(const BitmapTcSchedule& s) {
  return s.copy == BitmapCopy::Step ? s.rows_per_block() / kBitmapTileRows : 1;
}

BitmapTcSmem bitmap_tc_smem(const Problem& p, const BitmapTcSchedule& s, int64_t max_tile_values,
                            int64_t max_step_values) {
  auto round16 = [](int64_t b) { return (b + 15) / 16 * 16; };
  const int64_t row_tiles = s.rows_per_block() / kBitmapTileRows;
  const int64_t part = bitmap_tc_part_tiles(col_tiles_of(p), s.ksplit);
  BitmapTcSmem m;
  m.tile_ptrs =
      round16((s.copy == BitmapCopy::Step ? part * (row_tiles + 1) : row_tiles * (part + 1)) * 4);
  m.b_tile = kBitmapTileCols * bitmap_tc_b_row_bytes(p, s);
  m.a_values = round16(2 * max_tile_values);
  // copy=step stages each tile's lane starts after its lane words
  m.a_tile =
      kBitmapLaneBytes + (s.copy == BitmapCopy::Step ? kBitmapLaneStartBytes : 0) + m.a_values;
  // wgmma, arranged: the step's B column groups are 16 bytes apart beyond their rows
  // (bitmap_tc_b_group): one pad per column group and step. b=map: the TMA boxes, unpadded.
  const bool map = s.b_load == BitmapBLoad::Map;
  m.b_step = s.k_tiles * m.b_tile + (s.mma == MmaKind::Wgmma && !map ? 16 * ((p.n + 7) / 8) : 0);
  m.stage = m.b_step + s.k_tiles * row_tiles * m.a_tile;
  // decode=scatter: no lane words; the values, then a 16-bit offset per value
  const bool scatter = s.decode == BitmapDecode::Scatter;
  if (scatter) {
    const int64_t step_values =
        max_step_values >= 0 ? round16(2 * max_step_values) : row_tiles * m.a_values;
    m.a_tile = 2 * m.a_values;
    m.offsets = m.b_step + step_values;
    m.stage = m.b_step + 2 * step_values;
    m.dense = s.rows_per_block() * 128;
  }
  // b=map: every stage's B on a 1024-byte boundary (the swizzle atoms), the first one rounded
  // up at run time within the 1024 bytes allotted for it
  if (map) {
    m.stage = (m.stage + 1023) / 1024 * 1024;
    m.align = 1024;
  }
  // pipe=bulk: a full and an empty mbarrier per stage (cluster > 1: and the cluster's empty)
  m.barriers = s.pipe == BitmapPipe::Bulk ? round16((s.cluster > 1 ? 24 : 16) * s.stages) : 0;
  m.total = m.tile_ptrs + m.barriers + m.align + s.stages * m.stage + 2 * m.dense;
  if (s.cluster_k()) {
    // a consumer thread's accumulators as float4s: warps x 32 lanes x mt·N/8 x 16 bytes
    m.partials = int64_t{s.warps_per_block} * 32 * s.m_tiles * ((p.n + 7) / 8) * 16;
    m.total = std::max(m.total, m.tile_ptrs + m.barriers + m.align + m.partials);
  }
  return m;
}

int64_t bitmap_tc_b_work_bytes(const Problem& p, const BitmapTcSchedule& s) {
  // wgmma: per column group 64 rows of 16 bytes and the 16-byte pad of bitmap_tc_b_group<64>().
  // mma.sync: the staged tile's 64 rows of bitmap_tc_b_row_bytes (the ldmatrix pad included).
  if (s.b_load == BitmapBLoad::Map) return 0;
  return s.mma == MmaKind::Wgmma ? col_tiles_of(p) * (p.n / 8) * (kBitmapTileCols * 16 + 16)
                                 : col_tiles_of(p) * kBitmapTileCols * bitmap_tc_b_row_bytes(p, s);
}

int64_t bitmap_tc_shared_bytes(const Problem& p, const BitmapTcSchedule& s,
                               int64_t max_tile_values) {
  return bitmap_tc_smem(p, s, max_tile_values).total;
}

int bitmap_tc_registers(const Problem& p, const BitmapTcSchedule& s) {
  // fp32 accumulators (4 per n8 tile per row tile), the A operand of each row tile, B fragments of
  // two n8 tiles, and a base for masks, offsets, addresses and loop state.
  const int ntiles = static_cast<int>((p.n + 7) / 8);
  // ptxas: 235 for warps=8, mt=2, N=128, kt=1 (this gives 228).
  // wgmma holds every quarter's A operand of a step at once (4·kt quarters of 4 registers).
  // pipe=bulk holds two steps' operands (one decoded while the other is multiplied).
  // decode=scatter holds no A registers (wgmma reads A from shared memory).
  const int a_regs = s.decode == BitmapDecode::Scatter ? 0
                     : s.mma == MmaKind::Wgmma ? (s.pipe == BitmapPipe::Bulk ? 32 : 16 * s.k_tiles)
                                               : 4;
  return 72 + s.m_tiles * (4 * ntiles + a_regs + 6 * s.k_tiles) + 4;
}

std::vector<std::string> verify_bitmap_tc(const Problem& p, const BitmapTcSchedule& s,
                                          const BitmapTileStats& st, const DeviceLimits& dev) {
  std::vector<std::string> why = validate(s);
  for (auto& w : validate_bitmap_tc(p, s)) why.push_back(std::move(w));
  if (!why.empty()) return why;
  const int threads = s.threads_per_block();
  if (threads > dev.max_threads_per_block)
    why.push_back(fmt::format("{} threads per block exceed {} on {}", threads,
                              dev.max_threads_per_block, dev.name));
  const int regs = bitmap_tc_registers(p, s);
  if (regs > dev.max_registers_per_thread || int64_t{regs} * threads > dev.registers_per_block)
    why.push_back(fmt::format("about {} registers x {} threads exceed the limits of {}", regs,
                              threads, dev.name));
  const int64_t smem = bitmap_tc_shared_bytes(p, s, st.max_tile_values);
  if (smem > dev.max_shared_per_block)
    why.push_back(fmt::format("{} bytes of shared memory exceed {} on {}", smem,
                              dev.max_shared_per_block, dev.name));
  if (bitmap_tc_grid_x(p, s) > dev.max_grid_x)
    why.push_back(
        fmt::format("grid.x = {} blocks exceeds {}", bitmap_tc_grid_x(p, s), dev.max_grid_x));
  if (s.mma == MmaKind::Wgmma && !dev.wgmma)
    why.push_back(fmt::format("mma=wgmma needs an sm_90 device (wgmma, sm_90a), not {}", dev.name));
  if (s.pipe == BitmapPipe::Bulk && dev.sm() < 90)
    why.push_back(
        fmt::format("pipe=bulk needs an sm_90 device (cp.async.bulk, mbarrier), not {}", dev.name));
  if (bitmap_tc_grid_y(p, s) > dev.max_grid_y)
    why.push_back(fmt::format("grid.y = {} exceeds {}", bitmap_tc_grid_y(p, s), dev.max_grid_y));
  // Value offsets and tile indices are 32-bit in the kernel.
  if (st.slots > INT_MAX / 2 || st.tiles > INT_MAX / 32)
    why.push_back(fmt::format("{} value slots / {} tiles exceed the kernel's 32-bit offsets",
                              st.slots, st.tiles));
  return why;
}

std::vector<Schedule> enumerate_bitmap_tc_schedules(const Problem& p, const CsrMatrix& a,
                                                    const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (a.rows != p.m || a.cols != p.k || p.degenerate()) return out;
  BitmapTcSchedule probe;
  if (!validate_bitmap_tc(p, probe).empty()) return out;
  const BitmapTileStats st = bitmap_tile_stats(a);
  const int64_t tiles = col_tiles_of(p);
  // A warp's steps are latency-bound (decode -> mma chains), so the grid wants several blocks
  // per multiprocessor: K parts double while the grid is short of four waves of one block per
  // multiprocessor. 3 stages measured no faster than 2 on an H200, so the enumeration keeps 2.
  // mma=wgmma with the cp.async pipe is not offered: on an H200 it was slower than mma.sync in
  // every case measured (28672x7168 70 %: 1.39x slower at N = 64, 1.18x at N = 32, about even at N
  // = 8; 4096x4096 50 %, N = 64: 1.37x). It stays a legal schedule for --schedule, tested on the
  // GPU (GpuBitmapTc.Wgmma). vals=pair (half the decode loads, more value bytes) is not offered
  // either: on an H200 it was 5 % faster than slot on 28672x7168 70 % at N = 64 and 1-3 % at
  // N = 32, both still slower than cuBLAS there, and 2 % slower on 4096x4096 50 %; its value
  // bytes grow with sparsity (two per register holding a value), where slot's kernel is the
  // one that beats cuBLAS. --schedule reaches it (GpuBitmapTc.PairValues). Four row tiles per
  // warp (B fragments over 64 rows) measured 10-27 % slower than the best mt = 1 or 2 schedule on
  // 28672x7168 70 % at N = 32 and 64 and 1.8x slower on 4096x4096 50 %: the kernel is bound by
  // decode latency, and the accumulators cost the resident warps that hide it.
  for (int warps : {4, 8}) {
    for (int mt : {1, 2}) {
      for (int kt : {1, 2, 4}) {
        for (int ks = 1; ks <= 64 && ks <= tiles; ks *= 2) {
          BitmapTcSchedule s;
          s.warps_per_block = warps;
          s.m_tiles = mt;
          s.k_tiles = kt;
          s.ksplit = ks;
          if (ks > 1 && bitmap_tc_grid_x(p, s) * (ks / 2) >= 4 * int64_t{dev.multiprocessors})
            break;
          if (kt > bitmap_tc_part_tiles(tiles, ks)) continue;  // a step longer than the part
          if (!verify_bitmap_tc(p, s, st, dev).empty()) continue;
          out.emplace_back(s);
        }
      }
    }
  }
  // pipe=bulk with mma=wgmma and vals=pair (a producer warp, register-A wgmma), for N = 32 and 64
  // on sm_90: on an H200 (magnitude 70 %) 1.32x faster than the mma.sync schedule picked before on
  // 28672x7168 at N = 64 (same process), about level with cuBLAS on it at N = 32 and 64, 1.18x
  // faster than cuBLAS on 12288x12288 at N = 32; slower than mma.sync on 4096x4096 at N = 32.
  // Four warps keep six stages and eight keep four (the best of each there); mt = 2 measured
  // 1.4x slower. Both copy kinds: copy=step (three copies a step) made 8 warps on 28672x7168 at
  // N = 32 / 64 1.24x faster than copy=tile, while 4 warps on 12288x12288 at N = 32 ran 1.2x
  // slower with it (not understood). The tuner measures which wins. N = 128 (m64n128k16, 64
  // accumulators a thread, 122 registers) decodes each A tile once for all 128 columns; its B
  // steps are twice as large, so four warps keep four stages there (two blocks a multiprocessor
  // in shared memory). Eight warps run one block a multiprocessor at N = 128 (asking ptxas for
  // two, 112 registers, serialises the wgmma). Measured on an H200 (copy=step, eight warps) and
  // not offered: more stages while two blocks still fit (6 at 90 % and 5 at 70 %: 6-26 % slower
  // on 28672x7168 and 12288², 1 % faster on 4096²), and vals=slot at 50 % (7-13 % slower than
  // pair on three of four shapes, 3 % faster on 4096²). Four warps at N = 128 stay in the search
  // but measured 1.3x slower than eight on 12288² 70 % (stages 2-3, clusters of 2 or 4).
  if (dev.wgmma && (p.n == 32 || p.n == 64 || p.n == 128)) {
    for (int warps : {4, 8}) {
      for (int ks = 1; ks <= 64 && ks <= tiles; ks *= 2) {
        BitmapTcSchedule s;
        s.warps_per_block = warps;
        s.ksplit = ks;
        s.stages = warps == 4 && p.n != 128 ? 6 : 4;
        s.mma = MmaKind::Wgmma;
        s.values = BitmapValues::Pair;
        s.pipe = BitmapPipe::Bulk;
        // B by TMA through a tensor map (b=map): on an H200 0.85-0.97x the time of the arranged
        // B in eight of eight cases (N = 32, 64, 128; 4096² 0.85-0.86x, with no arrangement
        // launch), so the arranged form stays a SPEC-only schedule.
        s.b_load = BitmapBLoad::Map;
        if (ks > 1 && bitmap_tc_grid_x(p, s) * (ks / 2) >= 4 * int64_t{dev.multiprocessors}) break;
        // both copy kinds: the cost model cannot tell them apart, and which wins depends on the
        // shape, so the search measures across them (compiler/tune.h, select_for_measurement)
        for (BitmapCopy copy : {BitmapCopy::Tile, BitmapCopy::Step}) {
          s.copy = copy;
          if (verify_bitmap_tc(p, s, st, dev).empty()) out.emplace_back(s);
        }
        // Four warps (64-row blocks) read B once per 64 rows: clusters of 2 or 4 blocks share
        // each step's B by multicast. On an H200 that made 12288² N = 64 (ksplit 2) 1.2x (70 %)
        // and 1.46x (90 %) faster and 4096² 1.1x; eight warps ran 3-6 % slower with them.
        const int64_t blocks = bitmap_tc_grid_x(p, s);
        for (int cl : {2, 4}) {
          if (warps != 4 || blocks < cl) break;
          s.cluster = cl;
          if (verify_bitmap_tc(p, s, st, dev).empty()) out.emplace_back(s);
        }
        s.cluster = 1;
        // decode=scatter (A stored into dense swizzled tiles that wgmma reads, the work per
        // stored value) is not offered: on an H200 it ran 1.24-1.8x slower than these in every
        // case measured (28672x7168 at 50 / 70 / 90 %, N = 32 / 64 / 128; 4096² 90 %): zeroing
        // the tile, the proxy fence and the warpgroup barrier each step cost more than the
        // per-position decode they replace.
        // Eight warps with 2 or 4 K parts also add them within a cluster (kred=cluster): on an
        // H200 0.93x the time on 4096² 70 % at N = 64 (ksplit 4) and 0.97x on 12288² 70 %
        // (ksplit 2); not offered where it lost there: four warps (1.15x on 4096² 50 %, 1.44x on
        // 4096x11008 70 % at ksplit 4) and clusters of 8 (1.28x on 4096x11008 at N = 32).
        if (warps == 8 && (ks == 2 || ks == 4)) {
          s.copy = BitmapCopy::Step;
          s.kred = BitmapKReduce::Cluster;
          if (verify_bitmap_tc(p, s, st, dev).empty()) out.emplace_back(s);
          s.kred = BitmapKReduce::Workspace;
        }
      }
    }
  }
  return out;
}

}  // namespace sparsegen
