// `sparsegen emit FILE -n N [--schedule SPEC] [--dtype fp32|fp16|bf16] [--b-layout row|col]
//  [--c-layout row|col] [--signature]`: prints the CUDA source of the GeneralSparse kernel for the
// matrix (the first enumerated schedule when --schedule is absent); --signature prints the launch
// description (kernel name, launch shape, parameters in order) instead.
// `sparsegen schedules FILE -n N [--dtype ...] [--limit K] [--long]`: lists the valid schedule
// space the tuner searches (one SPEC per line, or the multi-line form with --long): the general
// family, rule-preferred schedules first, then MACKO and bitmap_tc where they apply.
//
// Exit codes (main.cpp): 0 success; 1 bad file, bad flag value or illegal schedule.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "codegen/family.h"
#include "compiler/tune.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/io/load.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

struct ProblemArgs {
  std::string file;
  int64_t n = 1;
  std::string dtype = "fp32";
  std::string io = "fp16";
  std::string b_layout = "row";
  std::string c_layout = "row";
  std::string tensor;
};

struct EmitArgs : ProblemArgs {
  std::string schedule;
  bool signature = false;
};

struct SchedulesArgs : ProblemArgs {
  int64_t limit = 0;
  bool long_form = false;
  bool ranked = false;
  std::string arch = "sm_90";
};

void add_problem_options(CLI::App* cmd, ProblemArgs& a) {
  cmd->add_option("file", a.file, "matrix file (.mtx, .smtx, .safetensors, .npy)")->required();
  cmd->add_option("-n", a.n, "dense columns of B and C (1 = SpMV)")->required();
  cmd->add_option("--dtype", a.dtype,
                  "value dtype of A: fp32, fp16, bf16 (also B and C), int8 or fp8_e4m3 (per-row "
                  "and per-token scales; B and C in --io)");
  cmd->add_option("--io", a.io, "B and C of an int8 / fp8_e4m3 problem: fp16 or bf16");
  cmd->add_option("--b-layout", a.b_layout, "layout of B: row or col");
  cmd->add_option("--c-layout", a.c_layout, "layout of C: row or col");
  cmd->add_option("--tensor", a.tensor, "tensor name in a .safetensors file");
}

Problem make_problem(const ProblemArgs& a, const CsrMatrix& m) {
  const DType dt = dtype_flag(a.dtype);
  const Layout bl = layout_flag(a.b_layout, "--b-layout");
  const Layout cl = layout_flag(a.c_layout, "--c-layout");
  if (a.n < 0) throw UserError(fmt::format("-n: expected a non-negative count, found {}", a.n));
  if (is_quantized(dt))
    return Problem::quantized_spmm(m.rows, m.cols, a.n, dt, io_flag(a.io), bl, cl);
  if (a.n == 1 && bl == Layout::RowMajor && cl == Layout::RowMajor)
    return Problem::spmv(m.rows, m.cols, dt);
  return Problem::spmm(m.rows, m.cols, a.n, dt, bl, cl);
}

CsrMatrix load(const ProblemArgs& a) {
  LoadOptions o;
  o.tensor = a.tensor;
  return load_matrix(a.file, o).matrix;
}

void run_emit(const EmitArgs& a) {
  const CsrMatrix m = load(a);
  const Problem p = make_problem(a, m);
  Schedule s;
  if (a.schedule.empty()) {
    const auto all = enumerate_schedules(p, m);
    if (all.empty())
      throw UserError(fmt::format("{}: no valid schedule for {}", a.file, to_string(p)));
    s = all.front();
  } else {
    s = parse_schedule(a.schedule);
  }
  const auto why = validate(p, s);
  if (!why.empty())
    throw UserError(fmt::format("--schedule: illegal for {}: {}", to_string(p), why.front()));
  const codegen::GeneratedKernel k = codegen::emit_kernel(p, s, *s.family().pack(m, p, s));
  if (a.signature) {
    std::printf("# %s\n# %s\n%s", to_string(p).c_str(), to_string(s).c_str(),
                codegen::describe(k.signature).c_str());
    return;
  }
  std::fputs(k.source.c_str(), stdout);
}

void run_schedules(const SchedulesArgs& a) {
  const CsrMatrix m = load(a);
  const Problem p = make_problem(a, m);
  EnumerateOptions eo;
  eo.include_specialised = true;  // the space `sparsegen tune` searches: MACKO and bitmap_tc too
  std::vector<Schedule> all = enumerate_schedules(p, m, eo);
  std::printf("# %s: %zu valid schedules\n", to_string(p).c_str(), all.size());
  // Families with none say why (their first reasons).
  for (const IrFamily* f : ir_families()) {
    if (std::any_of(all.begin(), all.end(),
                    [&](const Schedule& s) { return s.family_name() == f->name(); }))
      continue;
    const auto why = f->why_not(p, m);
    std::printf("# %s: none (%s)\n", std::string(f->name()).c_str(),
                why.empty() ? "no schedule fits this matrix on the device"
                            : fmt::format("{}", fmt::join(why, "; ")).c_str());
  }
  // --ranked: the cost model's order (what tune measures first) with each prediction; library
  // candidates, which the model does not rank, are left out.
  std::vector<std::optional<double>> predicted(all.size());
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (a.ranked) {
    std::vector<Schedule> ranked;
    for (const Schedule& s : all)
      if (!s.family().library()) ranked.push_back(s);
    RankedSpace r = rank_space(m, p, offline_target(a.arch), std::move(ranked), nullptr);
    std::printf("# ranked by %s\n", r.how.c_str());
    order = r.order;
    predicted = r.predicted_ms;
    all = std::move(r.all);
  }
  int64_t shown = 0;
  for (size_t i : order) {
    if (a.limit > 0 && shown >= a.limit) break;
    const Schedule& s = all[i];
    const std::string text = a.long_form ? print_schedule(s) : to_string(s);
    if (a.ranked)
      std::printf(
          "%4lld  %s  %s\n", static_cast<long long>(shown + 1),
          predicted[i] ? fmt::format("{:10.4f} ms", *predicted[i]).c_str() : "         - ms",
          text.c_str());
    else
      std::printf("%s\n", text.c_str());
    ++shown;
  }
}

}  // namespace

void register_emit(CLI::App& app) {
  auto emit = std::make_shared<EmitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "emit", "Print the CUDA source of the kernel of any family for a matrix and schedule");
  add_problem_options(cmd, *emit);
  cmd->add_option("--schedule", emit->schedule,
                  "schedule SPEC (see `sparsegen schedules`); default: the first enumerated");
  cmd->add_flag("--signature", emit->signature,
                "print the launch description (kernel, grid, parameters) instead of the source");
  cmd->callback([emit] { run_emit(*emit); });

  auto sched = std::make_shared<SchedulesArgs>();
  CLI::App* list = app.add_subcommand(
      "schedules", "List the valid schedules of every family for a matrix and N");
  add_problem_options(list, *sched);
  list->add_option("--limit", sched->limit, "print at most this many (0 = all)");
  list->add_flag("--long", sched->long_form, "multi-line form of each schedule");
  list->add_flag("--ranked", sched->ranked,
                 "in the cost model's order, with its predicted time (what `tune` measures first)");
  list->add_option("--arch", sched->arch,
                   "--ranked: the architecture whose cost model ranks (default sm_90)");
  list->callback([sched] { run_schedules(*sched); });
}

}  // namespace sparsegen::cli
