#include "ir/general_schedule.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/spec_fields.h"

namespace sparsegen {

namespace {

bool pow2_in(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

constexpr int64_t kMaxAmount = int64_t{1} << 24;
constexpr int kMaxPad = 4096;

using R = ReductionKind;
using W = WorkSplit;

}  // namespace

int GeneralSchedule::children(Level l) const {
  switch (l) {
    case Level::Block:
      return warps_per_block;
    case Level::Warp:
      return groups_per_warp();
    case Level::Thread:
      return 0;
  }
  return 0;
}

OutputMode GeneralSchedule::output() const {
  return at(Level::Block).kind == WorkSplit::Nnz ? OutputMode::Atomic : OutputMode::Store;
}

std::vector<std::string> validate(const GeneralSchedule& s) {
  std::vector<std::string> why;
  auto bad = [&](std::string msg) { why.push_back(std::move(msg)); };

  if (s.warps_per_block < 1 || s.warps_per_block > 32)
    bad(fmt::format("warps={} must be in 1..32", s.warps_per_block));
  if (!pow2_in(s.group_threads, 1, 32))
    bad(fmt::format("group={} must be 1, 2, 4, 8, 16 or 32", s.group_threads));
  if (!pow2_in(s.thread_cols, 1, 8))
    bad(fmt::format("tcols={} must be 1, 2, 4 or 8", s.thread_cols));
  if (!pow2_in(s.vector_width, 1, 8))
    bad(fmt::format("vec={} must be 1, 2, 4 or 8", s.vector_width));
  if (s.pad < 1 || s.pad > kMaxPad) bad(fmt::format("pad={} must be in 1..{}", s.pad, kMaxPad));
  for (int l = 0; l < 3; ++l) {
    const LevelSplit& sp = s.split[l];
    auto name = to_string(static_cast<Level>(l));
    if (sp.kind == W::Row && sp.amount != 1)
      bad(fmt::format("{}: split row takes no amount (found {})", name, sp.amount));
    if (sp.kind != W::Row && (sp.amount < 1 || sp.amount > kMaxAmount))
      bad(fmt::format("{}: split {} amount {} must be in 1..{}", name, to_string(sp.kind),
                      sp.amount, kMaxAmount));
  }
  if (!why.empty()) return why;  // the rules below assume sane numbers

  if (s.block_cols < 1 || s.block_cols % s.warp_cols() != 0)
    bad(fmt::format("bcols={} must be a positive multiple of warp columns group*tcols = {}",
                    s.block_cols, s.warp_cols()));

  const LevelSplit& b = s.at(Level::Block);
  const LevelSplit& w = s.at(Level::Warp);
  const LevelSplit& t = s.at(Level::Thread);
  const R rb = s.reduction(Level::Block), rw = s.reduction(Level::Warp),
          rt = s.reduction(Level::Thread);
  const int64_t G = s.groups_per_warp(), Wn = s.warps_per_block;
  auto want = [&](Level l, std::initializer_list<R> ok, const std::string& because) {
    R got = s.reduction(l);
    for (R r : ok)
      if (r == got) return;
    std::string list;
    for (R r : ok) list += (list.empty() ? "" : " or ") + std::string(to_string(r));
    bad(fmt::format("{} reduction {} is illegal here: expected {} ({})", to_string(l),
                    to_string(got), list, because));
  };

  const std::string nest =
      fmt::format("{}/{}/{}", to_string(b.kind), to_string(w.kind), to_string(t.kind));
  if (b.kind == W::Row && w.kind == W::Nnz && t.kind == W::Nnz) {
    if (w.amount != G * t.amount)
      bad(fmt::format("warp nnz:{} must equal groups per warp ({}) x thread nnz:{} = {}", w.amount,
                      G, t.amount, G * t.amount));
    want(Level::Thread, {R::Total}, "thread chunks lie in the block's one row");
    want(Level::Warp, {R::Total}, "all groups work on the block's one row");
    want(Level::Block, {R::Total}, "all warps work on the block's one row");
  } else if (b.kind == W::Rows && w.kind == W::Row && t.kind == W::Nnz) {
    want(Level::Thread, {R::Total}, "thread chunks lie in the warp's one row");
    want(Level::Warp, {R::Total}, "all groups work on the warp's one row");
    want(Level::Block, {R::None}, "each warp finishes whole rows");
  } else if (b.kind == W::Rows && w.kind == W::Rows && (t.kind == W::Row || t.kind == W::Rows)) {
    want(Level::Thread, {R::Total}, "each thread-group sums whole rows");
    want(Level::Warp, {R::None}, "each thread-group finishes whole rows");
    want(Level::Block, {R::None}, "each thread-group finishes whole rows");
  } else if (b.kind == W::Nnz && w.kind == W::Nnz && t.kind == W::Nnz) {
    if (w.amount != G * t.amount)
      bad(fmt::format("warp nnz:{} must equal groups per warp ({}) x thread nnz:{} = {}", w.amount,
                      G, t.amount, G * t.amount));
    if (b.amount != Wn * w.amount)
      bad(fmt::format("block nnz:{} must equal warps ({}) x warp nnz:{} = {}", b.amount, Wn,
                      w.amount, Wn * w.amount));
    if (rt == R::Total && s.pad % t.amount != 0)
      bad(
          fmt::format("thread reduction total needs pad ({}) to be a multiple of thread nnz:{} "
                      "so that no thread chunk crosses a row; use bitmap",
                      s.pad, t.amount));
    want(Level::Thread, {R::Total, R::Bitmap}, "thread chunks of a nonzero split");
    if (rt == R::Total) {
      want(Level::Warp, {R::Total, R::Bitmap}, "thread total hands up one partial per group");
      if (rw == R::Total && s.pad % w.amount != 0)
        bad(
            fmt::format("warp reduction total needs pad ({}) to be a multiple of warp nnz:{}; "
                        "use bitmap",
                        s.pad, w.amount));
    } else if (rt == R::Bitmap) {
      want(Level::Warp, {R::Segment}, "thread bitmap hands up head/tail partials");
    }
    if (rw == R::Total) {
      want(Level::Block, {R::Total, R::Bitmap}, "warp total hands up one partial per warp");
      if (rb == R::Total && s.pad % b.amount != 0)
        bad(
            fmt::format("block reduction total needs pad ({}) to be a multiple of block nnz:{}; "
                        "use bitmap",
                        s.pad, b.amount));
    } else if (rw == R::Bitmap || rw == R::Segment) {
      want(Level::Block, {R::Segment}, "warp bitmap/segment hands up head/tail partials");
    }
  } else {
    bad(
        fmt::format("split nesting block/warp/thread = {} is illegal: legal are row/nnz/nnz, "
                    "rows/row/nnz, rows/rows/row, rows/rows/rows and nnz/nnz/nnz",
                    nest));
  }

  // Vector loads need every thread chunk (or row) to start on a multiple of the vector width.
  const int v = s.vector_width;
  if (v > 1) {
    if (t.kind == W::Nnz) {
      if (t.amount % v != 0)
        bad(fmt::format("vec={} needs thread nnz:{} to be a multiple of it", v, t.amount));
      if (b.kind != W::Nnz && s.pad % v != 0)
        bad(fmt::format("vec={} needs pad ({}) to be a multiple of it (chunks start at row starts)",
                        v, s.pad));
    } else if (s.pad % v != 0) {
      bad(fmt::format("vec={} needs pad ({}) to be a multiple of it (threads read whole rows)", v,
                      s.pad));
    }
  }
  if (s.interleave) {
    if (t.kind != W::Nnz) {
      bad("interleave needs thread split nnz (equal chunks per group)");
    } else {
      if (G < 2) bad("interleave needs at least 2 groups per warp (group < 32)");
      const int64_t round = G * t.amount;
      if (b.kind != W::Nnz && s.pad % round != 0)
        bad(
            fmt::format("interleave needs pad ({}) to be a multiple of a warp round "
                        "(groups {} x thread nnz:{} = {}) so every round is full",
                        s.pad, G, t.amount, round));
    }
  }
  return why;
}

std::vector<std::string> validate_general(const Problem& p, const GeneralSchedule& g) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("general computes SpMM/SpMV with a static sparse weight, not {}",
                              to_string(p.op)));
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(
        fmt::format("general kernels take fp32, fp16 or bf16 values, not {}", to_string(p.dtype)));
  // A block column tile whose last pass is entirely beyond N is only wasted work.
  if (p.n > 0 && g.block_cols - g.warp_cols() >= p.n)
    why.push_back(fmt::format("bcols={} leaves a pass of {} columns entirely beyond n={}",
                              g.block_cols, g.warp_cols(), p.n));
  if (p.n > 0 && g.thread_cols > 1 && g.thread_cols / 2 >= p.n)
    why.push_back(fmt::format("tcols={} leaves half of each thread's columns beyond n={}",
                              g.thread_cols, p.n));
  if (p.n > 0 && g.warp_cols() - g.thread_cols >= p.n && g.group_threads > 1)
    why.push_back(fmt::format("group={} x tcols={} leaves whole lanes beyond n={}", g.group_threads,
                              g.thread_cols, p.n));
  return why;
}

std::string general_spec(const GeneralSchedule& s) {
  return fmt::format(
      "general;block={};warp={};thread={};warps={};group={};tcols={};bcols={};red={},{},{};"
      "sort={};pad={};interleave={};vec={}",
      to_string(s.at(Level::Block)), to_string(s.at(Level::Warp)), to_string(s.at(Level::Thread)),
      s.warps_per_block, s.group_threads, s.thread_cols, s.block_cols,
      to_string(s.reduction(Level::Thread)), to_string(s.reduction(Level::Warp)),
      to_string(s.reduction(Level::Block)), s.sort_rows ? 1 : 0, s.pad, s.interleave ? 1 : 0,
      s.vector_width);
}

std::string print_general(const GeneralSchedule& s) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string out = "schedule general\n";
  out += fmt::format("  block : split={} reduce={}  warps={}\n", to_string(s.at(Level::Block)),
                     to_string(s.reduction(Level::Block)), s.warps_per_block);
  out += fmt::format("  warp  : split={} reduce={}  groups={}\n", to_string(s.at(Level::Warp)),
                     to_string(s.reduction(Level::Warp)), s.groups_per_warp());
  out += fmt::format("  thread: split={} reduce={}  group_threads={}\n",
                     to_string(s.at(Level::Thread)), to_string(s.reduction(Level::Thread)),
                     s.group_threads);
  out += fmt::format("  cols  : block={} warp={} thread={}\n", s.block_cols, s.warp_cols(),
                     s.thread_cols);
  out += fmt::format("  format: sort={} pad={} interleave={} vector={}\n", yn(s.sort_rows), s.pad,
                     yn(s.interleave), s.vector_width);
  out += fmt::format("  output: {}\n", to_string(s.output()));
  return out;
}

namespace {

using spec_fields::parse_int;
[[noreturn]] void spec_error(std::string_view field, std::string_view expected,
                             std::string_view found) {
  spec_fields::error(field, expected, found);
}

bool parse_bool(std::string_view field, std::string_view v) {
  if (v == "1" || v == "yes" || v == "true") return true;
  if (v == "0" || v == "no" || v == "false") return false;
  spec_error(field, "0/1/yes/no", v);
}

LevelSplit parse_split(std::string_view field, std::string_view v) {
  const std::string expected = "row, rows:R or nnz:Z";
  auto colon = v.find(':');
  auto kind = parse_work_split(v.substr(0, colon));
  if (!kind) spec_error(field, expected, v);
  if (*kind == WorkSplit::Row) {
    if (colon != std::string_view::npos) spec_error(field, expected, v);
    return LevelSplit::row();
  }
  if (colon == std::string_view::npos) spec_error(field, expected, v);
  return {*kind, parse_int(field, v.substr(colon + 1), 1, kMaxAmount)};
}

}  // namespace

GeneralSchedule parse_general_fields(std::string_view spec,
                                     const std::vector<std::string_view>& parts) {
  GeneralSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (auto lvl = parse_level(key)) {
      s.split[static_cast<int>(*lvl)] = parse_split(key, v);
    } else if (key == "warps") {
      s.warps_per_block = static_cast<int>(parse_int(key, v, 1, 32));
    } else if (key == "group") {
      s.group_threads = static_cast<int>(parse_int(key, v, 1, 32));
    } else if (key == "tcols") {
      s.thread_cols = static_cast<int>(parse_int(key, v, 1, 8));
    } else if (key == "bcols") {
      s.block_cols = static_cast<int>(parse_int(key, v, 1, 65536));
    } else if (key == "red") {
      // thread,warp,block (bottom-up, like the legal chains read)
      std::array<std::string_view, 3> r;
      size_t c1 = v.find(','), c2 = c1 == v.npos ? v.npos : v.find(',', c1 + 1);
      if (c1 == v.npos || c2 == v.npos || v.find(',', c2 + 1) != v.npos)
        spec_error(key, "THREAD,WARP,BLOCK reductions", v);
      r = {v.substr(0, c1), v.substr(c1 + 1, c2 - c1 - 1), v.substr(c2 + 1)};
      const Level order[3] = {Level::Thread, Level::Warp, Level::Block};
      for (int j = 0; j < 3; ++j) {
        auto k = parse_reduction(r[j]);
        if (!k) spec_error(key, reduction_alternatives() + " per level", r[j]);
        s.reduce[static_cast<int>(order[j])] = *k;
      }
    } else if (key == "sort") {
      s.sort_rows = parse_bool(key, v);
    } else if (key == "pad") {
      s.pad = static_cast<int>(parse_int(key, v, 1, kMaxPad));
    } else if (key == "interleave") {
      s.interleave = parse_bool(key, v);
    } else if (key == "vec") {
      s.vector_width = static_cast<int>(parse_int(key, v, 1, 8));
    } else {
      spec_error(key,
                 "one of block, warp, thread, warps, group, tcols, bcols, red, sort, pad, "
                 "interleave, vec",
                 key);
    }
  });
  spec_fields::check_legal(spec, validate(s));
  return s;
}

}  // namespace sparsegen
