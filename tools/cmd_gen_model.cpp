// `sparsegen gen-model --like NAME --method magnitude|random|... --sparsity S [--layers L]
//  [--seed S] [--dtype fp16|bf16|fp32] [--shard-size 5GB] -o DIR`: a synthetic pruned checkpoint
// with Hugging Face tensor names and shapes (ir/gen/model_gen.h), for tests and demos of
// tune-model and the PyTorch layer.
//
// Exit codes (main.cpp): 0 written; 1 bad flag value or unwritable output; 2 usage error.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/gen/model_gen.h"
#include "ir/progress_line.h"
#include "tools/commands.h"

namespace sparsegen::cli {
namespace {

struct GenModelArgs {
  std::string like;
  std::string method = "magnitude";
  double sparsity = 0.5;
  std::string nm;
  std::optional<int64_t> layers;
  uint64_t seed = 0;
  std::string dtype = "fp16";
  std::string shard_size = "5GB";
  std::string out;
};

// "5GB", "500MB", "64KB", "1000" (bytes); decimal units as transformers' max_shard_size.
uint64_t parse_size(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  if (pos == 0 || mult == 0 || !(v > 0) || v * mult > 1e15)
    throw UserError(
        fmt::format("--shard-size {}: expected a size such as 5GB, 500MB or 1000000", text));
  return static_cast<uint64_t>(v * mult);
}

StDType file_dtype(const std::string& s) {
  if (s == "fp16") return StDType::F16;
  if (s == "bf16") return StDType::BF16;
  if (s == "fp32") return StDType::F32;
  throw UserError(fmt::format("--dtype {}: expected fp16, bf16 or fp32", s));
}

void run_gen_model(const GenModelArgs& a) {
  ModelGenSpec spec;
  const auto shape = find_model_shape(a.like);
  if (!shape)
    throw UserError(fmt::format("--like {}: expected one of {}", a.like, model_shape_names()));
  spec.shape = *shape;
  const auto method = parse_prune_method(a.method);
  if (!method)
    throw UserError(fmt::format("--method {}: expected one of {}", a.method, prune_method_names()));
  spec.prune.method = *method;
  spec.prune.sparsity = a.sparsity;
  if (*method == PruneMethod::NM) {
    if (a.nm.empty()) throw UserError("--method nm needs --nm N:M (e.g. --nm 2:4)");
    std::tie(spec.prune.n, spec.prune.m) = parse_nm(a.nm);
    spec.prune.sparsity = 1.0 - static_cast<double>(spec.prune.n) / spec.prune.m;
  } else if (!a.nm.empty()) {
    throw UserError(fmt::format("--nm {} is only used with --method nm", a.nm));
  }
  spec.layers = a.layers;
  spec.seed = a.seed;
  spec.dtype = file_dtype(a.dtype);
  spec.max_shard_bytes = parse_size(a.shard_size);
  if (std::filesystem::exists(std::filesystem::path(a.out) / "model.safetensors.index.json"))
    throw UserError(
        fmt::format("-o {}: holds a checkpoint already (model.safetensors.index.json); "
                    "choose an empty directory",
                    a.out));

  const auto t0 = std::chrono::steady_clock::now();
  const int total = static_cast<int>(model_tensors(spec.shape, spec.layers).size());
  ProgressLine bar("tensors", total);
  const ModelGenResult r = generate_model(spec, a.out, [&](int done, int) { bar.update(done); });
  bar.clear();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "wrote %s: %lld tensors (%lld pruned linear weights, %s %g), %.2f GB in %zu "
      "shard%s + %s + config.json, %.1f s\n",
      a.out.c_str(), static_cast<long long>(r.tensors), static_cast<long long>(r.linear_tensors),
      to_string(spec.prune.method).data(), spec.prune.sparsity,
      static_cast<double>(r.files.total_bytes) / 1e9, r.files.shard_files.size(),
      r.files.shard_files.size() == 1 ? "" : "s", r.files.index_file.c_str(), secs);
  if (r.linear_elements > 0)
    std::printf("linear weights: %lld of %lld kept (density %.4f)\n",
                static_cast<long long>(r.linear_kept), static_cast<long long>(r.linear_elements),
                static_cast<double>(r.linear_kept) / static_cast<double>(r.linear_elements));
  if (r.raised_to_subnormal > 0)
    std::printf(
        "note: %lld nonzero values below the smallest %s subnormal were stored as it, "
        "so that they stay nonzero\n",
        static_cast<long long>(r.raised_to_subnormal), a.dtype.c_str());
}

}  // namespace

void register_gen_model(CLI::App& app) {
  auto args = std::make_shared<GenModelArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gen-model", "Write a synthetic pruned LLM checkpoint (sharded safetensors, HF names)");
  cmd->add_option("--like", args->like, "model shape: " + model_shape_names())->required();
  cmd->add_option(
      "--method", args->method,
      "pruning of the linear weights: " + prune_method_names() + " (default magnitude)");
  cmd->add_option("--sparsity", args->sparsity, "fraction removed (default 0.5)");
  cmd->add_option("--nm", args->nm, "N:M with --method nm (e.g. 2:4)");
  cmd->add_option("--layers", args->layers, "decoder layers to write (default: all)");
  cmd->add_option("--seed", args->seed, "seed of the values and of random pruning (default 0)");
  cmd->add_option("--dtype", args->dtype, "tensor dtype in the files: fp16 (default), bf16, fp32");
  cmd->add_option("--shard-size", args->shard_size, "largest shard (default 5GB)");
  cmd->add_option("-o,--out", args->out, "output directory (created when missing)")->required();
  cmd->callback([args] { run_gen_model(*args); });
}

}  // namespace sparsegen::cli
