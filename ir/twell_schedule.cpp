#include "ir/twell_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/diagnostics.h"
#include "ir/spec_fields.h"

namespace sparsegen {
namespace {

int64_t align256(int64_t b) {
  return (b + 255) / 256 * 256;
}

constexpr std::string_view kGateNames[] = {"mma", "lib"};
constexpr std::string_view kBalanceNames[] = {"token", "queue", "even"};
constexpr std::string_view kPackNames[] = {"scan", "mask"};

// The queue's teams of an 8-warp block, nearest to 4 column groups per thread first, more groups
// counting double (ties: fewer groups first). On an H200 the teams with 4 groups were fastest at K
// = 2048 and 4096 (mean 30); 8 groups take about 124 registers and leave 2 blocks per SM, 1-2
// groups keep the block's warps waiting at its barriers. The cost model ties the teams (same
// bytes), so this order is what its top few measure first, and the enumeration's first schedule is
// the untuned default.
std::vector<int> queue_teams_order(const Problem& p) {
  std::vector<int> teams = {1, 2, 4, 8};
  auto groups = [&](int t) { return twell_groups(p, TwellSchedule{.warps = 8, .teams = t}); };
  // Beyond 4 groups counts double: registers cost occupancy faster than barriers cost time.
  auto distance = [&](int t) {
    const double d = std::log2(double(groups(t))) - 2.0;
    return d > 0 ? 2.0 * d : -d;
  };
  std::stable_sort(teams.begin(), teams.end(), [&](int a, int b) {
    return distance(a) != distance(b) ? distance(a) < distance(b) : groups(a) < groups(b);
  });
  return teams;
}

}  // namespace

std::string_view to_string(TwellGate g) {
  return kGateNames[static_cast<int>(g)];
}
std::optional<TwellGate> parse_twell_gate(std::string_view s) {
  return spec_fields::lookup<TwellGate>(kGateNames, s);
}

std::string_view to_string(TwellBalance b) {
  return kBalanceNames[static_cast<int>(b)];
}
std::optional<TwellBalance> parse_twell_balance(std::string_view s) {
  return spec_fields::lookup<TwellBalance>(kBalanceNames, s);
}

std::string_view to_string(TwellPack k) {
  return kPackNames[static_cast<int>(k)];
}
std::optional<TwellPack> parse_twell_pack(std::string_view s) {
  return spec_fields::lookup<TwellPack>(kPackNames, s);
}

std::vector<std::string> validate(const TwellSchedule& s) {
  std::vector<std::string> why;
  if (s.tile != 64 && s.tile != 128)
    why.push_back(fmt::format("tile={} must be 64 or 128 columns", s.tile));
  if (s.comp != 1 && s.comp != 2 && s.comp != 4 && s.comp != 8 && s.comp != 16)
    why.push_back(fmt::format("comp={} must be one of 1, 2, 4, 8, 16", s.comp));
  if (s.warps != 4 && s.warps != 8) why.push_back(fmt::format("warps={} must be 4 or 8", s.warps));
  if (s.split != 1 && s.split != 4 && s.split != 16)
    why.push_back(fmt::format("split={} must be 1, 4 or 16", s.split));
  if (s.balance == TwellBalance::Queue && s.split != 1)
    why.push_back(fmt::format("balance=queue cuts tokens itself: split={} must be 1", s.split));
  if (s.teams != 1 && s.teams != 2 && s.teams != 4 && s.teams != 8)
    why.push_back(fmt::format("teams={} must be 1, 2, 4 or 8", s.teams));
  else if (s.warps % s.teams != 0)
    why.push_back(fmt::format("teams={} must divide warps={}", s.teams, s.warps));
  if (s.teams > 1 && s.balance == TwellBalance::Token)
    why.push_back(fmt::format(
        "teams={} take their own work: balance must be queue or even, not token", s.teams));
  if (s.pack == TwellPack::Mask && s.gate != TwellGate::Lib)
    why.push_back(
        "pack=mask reads the library GEMM's ReLU bit-mask: gate must be lib (gate=mma writes "
        "TwELL in its own epilogue)");
  if (s.balance == TwellBalance::Even) {
    if (s.split != 1)
      why.push_back(fmt::format("balance=even divides tokens itself: split={} must be 1", s.split));
    if (s.gate != TwellGate::Lib)
      why.push_back(
          "balance=even reads the token counts that the gate=lib pack writes: gate must "
          "be lib");
    if (s.blocks < 1 || s.blocks > 65535)
      why.push_back(fmt::format("balance=even needs blocks=1..65535 (got {})", s.blocks));
  } else if (s.blocks != 0) {
    why.push_back(
        fmt::format("blocks={} sizes balance=even's grid: balance must be even", s.blocks));
  }
  return why;
}

std::vector<std::string> validate_twell(const Problem& p, const TwellSchedule& s) {
  std::vector<std::string> why;
  if (s.balance == TwellBalance::Even && p.n % 8 != 0)
    why.push_back(fmt::format(
        "balance=even reads the token counts of the row pack, which needs N a multiple of 8 "
        "(N={})",
        p.n));
  if (p.op != Op::GatedFfn)
    why.push_back(fmt::format(
        "twell computes a gated FFN whose sparsity appears at run time, not {}", to_string(p.op)));
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(
        fmt::format("twell runs on the tensor cores in fp16 or bf16, not {}", to_string(p.dtype)));
  if (p.op == Op::GatedFfn && (p.k == 0 || p.n == 0))
    why.push_back(fmt::format("twell needs K > 0 and N > 0 (got K={}, N={})", p.k, p.n));
  if (p.op == Op::GatedFfn && p.n > 65535 * int64_t{64})
    why.push_back(fmt::format("twell keeps tile indices below 65536 (N={})", p.n));
  return why;
}

std::string twell_spec(const TwellSchedule& s) {
  std::string spec =
      fmt::format("twell;tile={};comp={};warps={};gate={};split={};balance={};teams={}", s.tile,
                  s.comp, s.warps, to_string(s.gate), s.split, to_string(s.balance), s.teams);
  if (s.balance == TwellBalance::Even) spec += fmt::format(";blocks={}", s.blocks);
  if (s.pack != TwellPack::Scan) spec += fmt::format(";pack={}", to_string(s.pack));
  return spec;
}

std::string print_twell(const TwellSchedule& s) {
  std::string out = "schedule twell\n";
  out += fmt::format(
      "  format : tile-wise ELL, {} columns per tile, room for {} entries (comp {}), dense "
      "backup for fuller tiles\n",
      s.tile, s.cap(), s.comp);
  if (s.gate == TwellGate::Mma)
    out += fmt::format(
        "  kernel1: x·W_g on mma.sync m16n8k16, {} x {} block tile, {} warps, {} stages; "
        "ReLU + TwELL epilogue\n",
        kTwellGemmRows, s.tile, kTwellGemmThreads / kWarpSize, kTwellGemmStages);
  else if (s.pack == TwellPack::Mask)
    out +=
        "  kernel1: G = ReLU(x·W_g) and its bit-mask of positive values by the BLAS library (G "
        "dense, the backup), then one warp per token row packs TwELL from the mask, reading only "
        "the values of its set bits\n";
  else
    out +=
        "  kernel1: G = ReLU(x·W_g) by the BLAS library (dense, the backup), then one warp per "
        "token row packs TwELL (per row and tile when N is not a multiple of 8)\n";
  const std::string teams =
      s.teams == 1 ? std::string() : fmt::format(" ({} teams of {})", s.teams, s.team_warps());
  std::string blocks;
  switch (s.balance) {
    case TwellBalance::Queue:
      blocks = fmt::format(
          "persistent blocks of {} warps{} taking tokens and parts of {} batches from a queue",
          s.warps, teams, kTwellPartBatches);
      break;
    case TwellBalance::Even:
      blocks = fmt::format(
          "{} blocks of {} warps{}, each worker an equal share of the tokens' batches (a token "
          "{}, an entry 1, a dense piece {})",
          s.blocks, s.warps, teams, kTwellEvenTokenCost, kTwellEvenPieceCost);
      break;
    case TwellBalance::Token:
      blocks = fmt::format(
          "{} of {} warps per token",
          s.split == 1 ? std::string("one block") : fmt::format("{} blocks", s.split), s.warps);
      break;
  }
  out += fmt::format("  kernel2: {}, batches of {} entries: u = x·W_u[:,n], y += h·u·W_d[n,:]{}\n",
                     blocks, kTwellBatch,
                     s.split == 1 && s.balance == TwellBalance::Token
                         ? ""
                         : " (partial rows added in an fp32 workspace)");
  return out;
}

TwellSchedule parse_twell_fields(std::string_view spec,
                                 const std::vector<std::string_view>& parts) {
  TwellSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    auto num = [&](int64_t hi) { return static_cast<int>(spec_fields::parse_int(key, v, 1, hi)); };
    if (key == "tile")
      s.tile = num(4096);
    else if (key == "comp")
      s.comp = num(4096);
    else if (key == "warps")
      s.warps = num(64);
    else if (key == "gate") {
      s.gate = spec_fields::parse_enum<TwellGate>(key, kGateNames, v);
    } else if (key == "split") {
      s.split = num(4096);
    } else if (key == "balance") {
      s.balance = spec_fields::parse_enum<TwellBalance>(key, kBalanceNames, v);
    } else if (key == "teams") {
      s.teams = num(64);
    } else if (key == "blocks") {
      s.blocks = num(65535);
    } else if (key == "pack") {
      s.pack = spec_fields::parse_enum<TwellPack>(key, kPackNames, v);
    } else {
      spec_fields::error(
          key, "one of tile, comp, warps, gate, split, balance, teams, blocks, pack (family twell)",
          key);
    }
  });
  spec_fields::check_legal(spec, validate(s));
  return s;
}

int64_t twell_k_padded(const Problem& p) {
  return (p.k + 7) / 8 * 8;
}
int64_t twell_tiles(const Problem& p, const TwellSchedule& s) {
  return (p.n + s.tile - 1) / s.tile;
}

TwellBuffer twell_buffer(const Problem& p, const TwellSchedule& s) {
  TwellBuffer b;
  const int64_t cells = p.m * twell_tiles(p, s);
  b.counts = 0;
  b.entries = align256(cells * 4);
  b.backup = align256(b.entries + cells * s.cap() * 4);
  b.tokens = align256(b.backup + p.m * p.n * 2);
  b.mask = s.balance == TwellBalance::Even ? align256(b.tokens + p.m * 8) : b.tokens;
  if (s.pack == TwellPack::Mask) b.mask_bits = (p.n + 127) / 128 * 128;
  b.bytes = align256(b.mask + p.m * b.mask_bits / 8);
  return b;
}

int64_t twell_gemm_shared_bytes(const TwellSchedule& s) {
  if (s.gate == TwellGate::Lib) return 0;
  const int64_t stage = int64_t{kTwellGemmRows + s.tile} * 40 * 2;  // rows padded to 40 halves
  return std::max<int64_t>(kTwellGemmStages * stage, int64_t{kTwellGemmRows} * (s.tile + 8) * 2);
}

int64_t twell_down_shared_bytes(const Problem& p, const TwellSchedule& s) {
  const int64_t tiles = twell_tiles(p, s);
  // Per worker: x row (dtype), batch columns / values / h·u, tile prefix sums, overflowing tile
  // list, 8 ints; 16-byte aligned.
  const int64_t worker =
      twell_k_padded(p) * 2 + kTwellBatch * 12 + (tiles + 1) * 4 + tiles * 4 + 32;
  // balance=even: the block's chunk starts on the work line, C, and a scratch word per warp
  // (64-bit), after the workers' slices.
  const int64_t line = s.balance == TwellBalance::Even ? (s.warps * 33 + 1) * 8 : 0;
  return (worker + 15) / 16 * 16 * s.teams + line;
}

TwellWorkspace twell_workspace(const Problem& p, const TwellSchedule& s) {
  TwellWorkspace w;
  const int64_t kp = twell_k_padded(p);
  if (s.balance == TwellBalance::Queue) {
    w.rows = std::min(p.m, kTwellQueuePool);
    w.counters = w.rows * kp;
    w.control = w.counters + w.rows;
    w.items = (w.control + 8 + 1) / 2 * 2;  // 8-byte aligned
    w.bytes = (w.items + 2 * p.m * (twell_max_parts(p, s) - 1)) * 4;
  } else if (s.balance == TwellBalance::Even) {
    w.rows = int64_t{s.blocks} * s.teams;
    w.counters = w.rows * kp;
    w.bytes = (w.counters + w.rows) * 4;
  } else if (s.split > 1) {
    w.rows = p.m;
    w.counters = w.rows * kp;
    w.bytes = (w.counters + w.rows) * 4;
  }
  return w;
}

int64_t twell_max_parts(const Problem& p, const TwellSchedule& s) {
  const int64_t batches = twell_tiles(p, s) * (s.tile / kTwellBatch);
  if (s.balance == TwellBalance::Even)
    return std::max<int64_t>(1, std::min<int64_t>(batches, int64_t{s.blocks} * s.teams));
  return std::min<int64_t>(
      kTwellMaxParts, std::max<int64_t>(1, (batches + kTwellPartBatches - 1) / kTwellPartBatches));
}

int64_t twell_workspace_bytes(const Problem& p, const TwellSchedule& s) {
  return twell_workspace(p, s).bytes;
}

int64_t twell_down_grid(const Problem& p, const TwellSchedule& s) {
  switch (s.balance) {
    case TwellBalance::Queue:
      return std::min((p.m + s.teams - 1) / s.teams, kTwellQueueGrid);
    case TwellBalance::Even:
      return s.blocks;
    case TwellBalance::Token:
      break;
  }
  return p.m;
}

int64_t twell_even_blocks(const Problem& p, const TwellSchedule& s, const DeviceLimits& dev) {
  const int64_t threads = int64_t{s.warps} * kWarpSize;
  const int64_t by_threads = dev.max_threads_per_multiprocessor / threads;
  const int64_t smem = twell_down_shared_bytes(p, s) + dev.shared_reserved_per_block;
  const int64_t by_smem = dev.max_shared_per_multiprocessor / std::max<int64_t>(smem, 1);
  const int64_t per_sm =
      std::max<int64_t>(1, std::min({by_threads, by_smem, int64_t{kTwellEvenBlocksPerSm},
                                     int64_t{dev.max_blocks_per_multiprocessor}}));
  return std::min<int64_t>(65535, per_sm * std::max(dev.multiprocessors, 1));
}

int twell_groups(const Problem& p, const TwellSchedule& s) {
  const int64_t threads = int64_t{s.team_warps()} * kWarpSize;
  return static_cast<int>((twell_k_padded(p) / 8 + threads - 1) / threads);
}

int twell_registers(const Problem& p, const TwellSchedule& s) {
  // Each thread accumulates its groups of 8 fp32 columns.
  const int64_t groups = twell_groups(p, s);
  return static_cast<int>(std::min<int64_t>(255, 40 + 8 * groups + 8 * groups / 2));
}

TwellWeights twell_weights_layout(const Problem& p) {
  TwellWeights w;
  const int64_t one = p.n * twell_k_padded(p);
  w.gate_t = 0;
  w.up_t = p.gated ? one : 0;
  w.down = w.up_t + one;
  w.elements = w.down + one;
  return w;
}

std::vector<std::string> verify_twell(const Problem& p, const TwellSchedule& s,
                                      const DeviceLimits& dev) {
  std::vector<std::string> why;
  const int sm = dev.sm();
  if (sm != 0 && sm < 80)
    why.push_back(fmt::format("twell uses mma.sync bf16/fp16 (sm_80+), not {}", dev.name));
  for (int threads : {kTwellGemmThreads, s.warps * 32})
    if (threads > dev.max_threads_per_block) {
      why.push_back(fmt::format("a block of {} threads exceeds the device's {}", threads,
                                dev.max_threads_per_block));
      break;
    }
  const int64_t gemm = twell_gemm_shared_bytes(s), down = twell_down_shared_bytes(p, s);
  if (gemm > dev.max_shared_per_block)
    why.push_back(fmt::format("kernel 1 needs {} bytes of shared memory, the device has {}", gemm,
                              dev.max_shared_per_block));
  if (down > dev.max_shared_per_block)
    why.push_back(fmt::format(
        "kernel 2 keeps the token's x row in shared memory: {} bytes for K={}, the device has {}",
        down, p.k, dev.max_shared_per_block));
  if (twell_registers(p, s) >= dev.max_registers_per_thread)
    why.push_back(
        fmt::format("kernel 2 accumulates K={} columns in registers: {} threads per worker "
                    "are too few (more warps, fewer teams, or a smaller K)",
                    p.k, s.team_warps() * 32));
  if ((p.m + kTwellGemmRows - 1) / kTwellGemmRows > dev.max_grid_y || p.m > dev.max_grid_x ||
      s.split > dev.max_grid_y)
    why.push_back(fmt::format("M={} tokens exceed the grid", p.m));
  if (twell_buffer(p, s).bytes / 4 > INT32_MAX || p.m * p.k > INT32_MAX ||
      twell_weights_layout(p).elements > INT32_MAX)
    why.push_back(fmt::format("{} exceeds the twell kernels' 32-bit offsets", to_string(p)));
  return why;
}

std::vector<Schedule> enumerate_twell_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!validate_twell(p, TwellSchedule{}).empty() || a.cols != p.n) return out;
  const std::vector<int> teams_order = queue_teams_order(p);
  for (TwellGate gate : {TwellGate::Lib, TwellGate::Mma})
    for (int tile : {128, 64})
      for (int comp : {4, 8, 2, 16, 1})
        for (int warps : {8, 4})
          for (TwellBalance balance :
               {TwellBalance::Even, TwellBalance::Queue, TwellBalance::Token}) {
            const bool even = balance == TwellBalance::Even;
            if (even && (gate != TwellGate::Lib || warps != 8)) continue;
            // Even and the queue with 8 warps: their workers are teams.
            if (balance != TwellBalance::Token && warps == 8) {
              for (int teams : teams_order) {
                TwellSchedule s{tile, comp, warps, gate, 1, balance, teams};
                if (even) s.blocks = static_cast<int>(twell_even_blocks(p, s, dev));
                if (twell_groups(p, s) <= 8 && validate_twell(p, s).empty() &&
                    verify_twell(p, s, dev).empty())
                  out.emplace_back(s);
              }
              continue;
            }
            for (int split : {1, 4, 16}) {
              if (split > 1 &&
                  (gate != TwellGate::Lib || p.m > 1024 || balance != TwellBalance::Token))
                continue;
              const TwellSchedule s{tile, comp, warps, gate, split, balance};
              if (verify_twell(p, s, dev).empty()) out.emplace_back(s);
            }
          }
  return out;
}

}  // namespace sparsegen
