// `sparsegen ffn (--gen KxN | --weights CHECKPOINT --layer L) -m M [--mean-nnz X] [--dtype bf16]
//  [--non-gated] [--schedule SPEC] [--arch A] [--seed S] [--json]`: the gated FFN block
// (ir/ffn.h) for M tokens. On a GPU it tunes on M calibration tokens (compiler/ffn.h: every FFN
// family's best-ranked schedules measured, the dense FFN included; --schedule skips the search),
// checks the pick against the CPU reference on a sample of rows (beta 0 with y poisoned, and
// beta -1.5) and prints the choice, its reason and the measured times. Without a GPU (or with
// --arch) it builds the schedule offline and prints it.
//   --gen KxN        synthetic weights and tokens whose gate activations have --mean-nnz
//                    nonzeros per row on average (heavy-tailed, ir/gen/activations.h)
//   --weights FILE   a .safetensors checkpoint or shard index: the Hugging Face tensors
//   --layer L        model.layers.L.mlp.{gate,up,down}_proj.weight (transposed to K x N /
//                    N x K); the tokens are then Gaussian
//
// Exit codes (main.cpp): 0 success; 1 bad file/flag or a failed check; 3 no GPU / CUDA error.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/ffn.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/diagnostics.h"
#include "ir/ffn.h"
#include "ir/gen/activations.h"
#include "ir/interpreter.h"
#include "ir/io/checkpoint.h"
#include "ir/problem.h"
#include "ir/random.h"
#include "runtime/cuda_driver.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

struct FfnArgs {
  std::string gen, weights, schedule, arch, dtype = "bf16";
  int64_t layer = -1, m = 0;
  double mean_nnz = 30;
  uint64_t seed = 1;
  bool non_gated = false, json = false;
};

// Transposes a rows x cols row-major tensor.
std::vector<float> transposed(const DenseMatrix& d) {
  std::vector<float> t(d.data.size());
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.cols; ++c)
      t[static_cast<size_t>(c * d.rows + r)] = d.data[static_cast<size_t>(r * d.cols + c)];
  return t;
}

// The FFN weights of layer L of a Hugging Face checkpoint (gate_proj / up_proj: N x K,
// down_proj: K x N).
FfnWeights checkpoint_weights(const FfnArgs& a) {
  const Checkpoint ck = open_checkpoint(a.weights);
  auto tensor = [&](const char* proj) {
    const std::string name = fmt::format("model.layers.{}.mlp.{}.weight", a.layer, proj);
    const CheckpointTensor* t = ck.find(name);
    if (t == nullptr)
      throw UserError(fmt::format("{}: no tensor '{}' (--layer {})", a.weights, name, a.layer));
    return tensor_to_dense(ck.shards[t->shard], *t->tensor);
  };
  const DenseMatrix up = tensor("up_proj"), down = tensor("down_proj");
  FfnWeights w;
  w.n = up.rows;
  w.k = up.cols;
  w.gated = !a.non_gated;
  w.source = fmt::format("{} layer {}", a.weights, a.layer);
  if (down.rows != w.k || down.cols != w.n)
    throw UserError(fmt::format("{}: down_proj is {}x{}, up_proj {}x{} needs {}x{}", a.weights,
                                down.rows, down.cols, up.rows, up.cols, w.k, w.n));
  if (w.gated) {
    const DenseMatrix gate = tensor("gate_proj");
    if (gate.rows != up.rows || gate.cols != up.cols)
      throw UserError(fmt::format("{}: gate_proj is {}x{}, up_proj {}x{}", a.weights, gate.rows,
                                  gate.cols, up.rows, up.cols));
    w.gate = transposed(gate);
  }
  w.up = transposed(up);
  w.down = transposed(down);
  return w;
}

void run_ffn(const FfnArgs& a) {
  if (a.gen.empty() == a.weights.empty())
    throw UserError("ffn: give exactly one of --gen KxN and --weights CHECKPOINT");
  if (!a.weights.empty() && a.layer < 0)
    throw UserError("--layer: expected the layer index (>= 0) of --weights");
  if (a.m < 1) throw UserError(fmt::format("-m: expected a token count >= 1, found {}", a.m));
  const DType dt = dtype_flag(a.dtype);
  if (dt != DType::F16 && dt != DType::BF16)
    throw UserError(fmt::format("--dtype: a gated FFN runs in fp16 or bf16, not {}", a.dtype));
  FfnWeights w;
  std::vector<float> x;
  ActivationSpec spec;
  spec.m = a.m;
  spec.dtype = dt;
  spec.gated = !a.non_gated;
  spec.mean_nnz = a.mean_nnz;
  spec.seed = a.seed;
  if (!a.gen.empty()) {
    const auto kn = parse_shape(a.gen);
    if (!kn)
      throw UserError(fmt::format("--gen: expected KxN (e.g. 2048x5632), found '{}'", a.gen));
    spec.k = kn->first;
    spec.n = kn->second;
    FfnCase c = make_ffn_case(spec);
    w = std::move(c.weights);
    x = std::move(c.x);
  } else {
    w = checkpoint_weights(a);
    uint64_t st = a.seed;
    x.resize(static_cast<size_t>(a.m * w.k));
    for (float& v : x) {
      const double u = (double(splitmix64(st) >> 11) + 0.5) * 0x1.0p-53;
      v = round_to(dt, float((splitmix64(st) & 1 ? -1.0 : 1.0) * (0.25 + u)));
    }
  }
  const Problem p = Problem::gated_ffn(a.m, w.k, w.n, dt, w.gated);
  check_weights(p, w);
  nlohmann::json out = {{"problem", to_string(p)}, {"weights", w.source}};
  std::string why;
  const bool offline = !a.arch.empty() || !cuda::driver_available(&why);
  if (offline) {
    const CompileTarget target = offline_target(a.arch.empty() ? "compute_90" : a.arch);
    Problem ps = p;
    ps.m = std::min<int64_t>(p.m, 64);
    const CsrMatrix h = ffn_activations(
        ps, w, std::span<const float>(x).subspan(0, static_cast<size_t>(ps.m * p.k)));
    std::string reason;
    const Schedule s = choose_ffn_schedule(p, h, a.schedule, target, &reason);
    const KernelBuild b = build_ffn_kernel(p, s, w, target, &h);
    out["device"] = why.empty() ? "offline" : "none: " + why;
    out["schedule"] = to_string(s);
    out["reason"] = reason;
    out["activations"] = to_string(activation_stats(h));
    if (a.json) {
      std::printf("%s\n", out.dump(1).c_str());
    } else {
      std::printf("%s (%s)\nactivations: %s\nschedule: %s\n  %s\n%s", to_string(p).c_str(),
                  w.source.c_str(), out["activations"].get<std::string>().c_str(),
                  to_string(s).c_str(), reason.c_str(), print_schedule(s).c_str());
      std::printf("built offline for %s (%s); nothing runs without a GPU\n", target.arch.c_str(),
                  why.empty() ? "--arch" : why.c_str());
    }
    return;
  }
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  std::unique_ptr<CompiledKernel> k;
  if (!a.schedule.empty()) {
    CsrMatrix none;
    none.cols = p.n;
    std::string reason;
    const Schedule s = choose_ffn_schedule(p, none, a.schedule, target, &reason);
    k = std::make_unique<CompiledKernel>(ctx, build_ffn_kernel(p, s, w, target, &none));
    out["reason"] = reason;
  } else {
    FfnTuneResult r = tune_ffn(ctx, p, w, x, target);
    out["reason"] = r.reason;
    out["activations"] = r.activations;
    out["measured"] = nlohmann::json::array();
    for (const FfnMeasured& m : r.measured)
      out["measured"].push_back({{"schedule", m.schedule}, {"ms", m.ms}, {"error", m.error}});
    k = std::move(r.kernel);
  }
  out["schedule"] = to_string(k->schedule());
  out["device"] = ctx->info().name;
  const FfnCheckResult chk = check_ffn(*k, w, x, a.seed + 1, 64);
  out["check"] = {{"passed", chk.passed},
                  {"rows", chk.rows_checked},
                  {"worst_ratio", chk.worst},
                  {"error", chk.error}};
  if (a.json) {
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    std::printf("%s (%s) on %s\nschedule: %s\n  %s\n", to_string(p).c_str(), w.source.c_str(),
                out["device"].get<std::string>().c_str(),
                out["schedule"].get<std::string>().c_str(),
                out["reason"].get<std::string>().c_str());
    if (out.contains("measured"))
      for (const auto& m : out["measured"])
        std::printf("  %-45s %s\n", m["schedule"].get<std::string>().c_str(),
                    m["error"].get<std::string>().empty()
                        ? fmt::format("{:.4f} ms", m["ms"].get<double>()).c_str()
                        : m["error"].get<std::string>().c_str());
    std::printf("check (%lld rows, beta 0 and -1.5): %s\n",
                static_cast<long long>(chk.rows_checked), chk.passed ? "pass" : chk.error.c_str());
  }
  if (!chk.passed) throw UserError("ffn: the result is outside the reference's bound");
}

}  // namespace

void register_ffn(CLI::App& app) {
  auto args = std::make_shared<FfnArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ffn", "Tune, run and check a gated FFN block (activation-sparse or dense) for M tokens");
  cmd->add_option("--gen", args->gen, "synthetic weights K x N (model width x hidden width)");
  cmd->add_option("--weights", args->weights, "a .safetensors checkpoint or shard index");
  cmd->add_option("--layer", args->layer, "the layer of --weights");
  cmd->add_option("-m", args->m, "tokens")->required();
  cmd->add_option("--mean-nnz", args->mean_nnz,
                  "--gen: mean nonzeros per row of the gate activations (heavy-tailed)");
  cmd->add_option("--dtype", args->dtype, "fp16 or bf16");
  cmd->add_flag("--non-gated", args->non_gated, "y = ReLU(x·W_u)·W_d (no gate projection)");
  cmd->add_option("--schedule", args->schedule, "a schedule SPEC (twell;... or dense_ffn;...)");
  cmd->add_option("--arch", args->arch, "build offline for this architecture (no run)");
  cmd->add_option("--seed", args->seed, "seed of the synthetic weights and tokens");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args] { run_ffn(*args); });
}

}  // namespace sparsegen::cli
