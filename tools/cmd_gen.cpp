// `sparsegen gen` (synthetic LLM-like pruned weight) and `sparsegen prune` (prune a real dense
// weight from .safetensors / .npy). Both write OUT by its extension: .safetensors -> sparsegen CSR
// container, .mtx -> Matrix Market. The pruning itself lives in ir/gen/pruning.h.
// `sparsegen gen --method rmat --scale S [--edge-factor E] [--rmat A,B,C]` writes a Graph500
// R-MAT (Kronecker) power-law matrix instead (ir/gen/rmat.h).
//
// Exit codes (main.cpp): 0 written; 1 bad flag value, bad input file or unwritable output;
// 2 usage error (unknown flag, missing --method / -o / --sparsity, --shape with --rows).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "ir/gen/pruning.h"
#include "ir/gen/rmat.h"
#include "ir/io/csr_container.h"
#include "ir/io/load.h"
#include "ir/io/matrix_market.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

// Flags shared by gen and prune.
struct PruneArgs {
  std::string method;
  std::optional<double> sparsity;
  std::string nm;
  std::optional<int> block;
  uint64_t seed = 0;
  std::string out;
};

struct GenArgs {
  PruneArgs p;
  std::optional<int64_t> rows, cols;
  std::string shape;
  // --method rmat
  std::optional<int> scale;
  int edge_factor = 16;
  std::string rmat;  // "A,B,C" (D = 1 - A - B - C)
};

struct PruneCmdArgs {
  PruneArgs p;
  std::string weights;
  std::string tensor;
};

enum class OutKind { Container, MatrixMarket };

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Decided before any work, so a typo in -o does not cost a generation run.
OutKind out_kind(const std::string& out) {
  const std::filesystem::path dir = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw UserError(fmt::format("-o {}: directory {} does not exist", out, dir.string()));
  if (ends_with(out, ".safetensors")) return OutKind::Container;
  if (ends_with(out, ".mtx")) return OutKind::MatrixMarket;
  throw UserError(
      fmt::format("-o {}: expected a .safetensors (sparsegen CSR container) or .mtx "
                  "(Matrix Market) file name",
                  out));
}

PruneSpec spec_from(const PruneArgs& a) {
  PruneSpec s;
  auto method = parse_prune_method(a.method);
  if (!method)
    throw UserError(fmt::format("--method {}: expected one of {}", a.method, prune_method_names()));
  s.method = *method;
  s.seed = a.seed;
  if (!a.nm.empty() && s.method != PruneMethod::NM)
    throw UserError(
        fmt::format("--nm {} is only used with --method nm (got --method {})", a.nm, a.method));
  if (a.block && s.method != PruneMethod::Block)
    throw UserError(fmt::format("--block {} is only used with --method block (got --method {})",
                                *a.block, a.method));
  if (s.method == PruneMethod::NM) {
    if (a.nm.empty()) throw CLI::RequiredError("--nm (with --method nm)");
    std::tie(s.n, s.m) = parse_nm(a.nm);
    const double implied = 1.0 - static_cast<double>(s.n) / static_cast<double>(s.m);
    // --sparsity is optional for N:M; if given it must agree with N:M.
    if (a.sparsity && std::fabs(*a.sparsity - implied) > 1e-9)
      throw UserError(fmt::format("--sparsity {} contradicts --nm {} (which means sparsity {:g})",
                                  *a.sparsity, a.nm, implied));
    s.sparsity = implied;
  } else {
    if (!a.sparsity) throw CLI::RequiredError("--sparsity (with --method " + a.method + ")");
    s.sparsity = *a.sparsity;
  }
  if (a.block) s.block = *a.block;
  validate(s);
  return s;
}

// "magnitude 0.5", "nm 2:4", "block 0.6 (16x16)", "random 0.5 (seed 3)".
std::string describe(const PruneSpec& s) {
  switch (s.method) {
    case PruneMethod::NM:
      return fmt::format("nm {}:{}", s.n, s.m);
    case PruneMethod::Block:
      return fmt::format("block {:g} ({}x{} blocks)", s.sparsity, s.block, s.block);
    case PruneMethod::Random:
      return fmt::format("random {:g} (seed {})", s.sparsity, s.seed);
    default:
      return fmt::format("{} {:g}", to_string(s.method), s.sparsity);
  }
}

// The flags that reproduce `s` (recorded in the output file's provenance).
std::string spec_flags(const PruneSpec& s) {
  std::string f = fmt::format("--method {}", to_string(s.method));
  if (s.method == PruneMethod::NM) return f + fmt::format(" --nm {}:{}", s.n, s.m);
  f += fmt::format(" --sparsity {}", s.sparsity);
  if (s.method == PruneMethod::Block) f += fmt::format(" --block {}", s.block);
  if (s.method == PruneMethod::Random) f += fmt::format(" --seed {}", s.seed);
  return f;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void write_out(const CsrMatrix& m, const std::string& out, OutKind kind) {
  if (kind == OutKind::Container)
    write_csr(out, m);
  else
    write_matrix_market(m, out);
}

void print_summary(const std::string& out, const CsrMatrix& m, const PruneSpec& s,
                   const std::string& timing) {
  const double cells = static_cast<double>(m.rows) * static_cast<double>(m.cols);
  const double sparsity = cells > 0 ? 1.0 - static_cast<double>(m.nnz()) / cells : 0.0;
  std::printf("%s\n", fmt::format("wrote {}: {} x {}, nnz {}, sparsity {:.4f} ({}); {}", out,
                                  m.rows, m.cols, m.nnz(), sparsity, describe(s), timing)
                          .c_str());
}

void note_explicit_zeros(const CsrMatrix& m) {
  if (int64_t z = count_explicit_zeros(m); z > 0)
    std::fprintf(stderr,
                 "sparsegen: note: %lld kept positions hold exact zeros (the weight was already "
                 "sparser than the target); they are stored as explicit entries\n",
                 static_cast<long long>(z));
}

// `gen --method rmat`: the Graph500 Kronecker generator; the pruning flags do not apply.
void run_rmat(const GenArgs& a) {
  const OutKind kind = out_kind(a.p.out);
  if (!a.shape.empty() || a.rows || a.cols)
    throw UserError("--method rmat: the shape is 2^scale x 2^scale (give --scale, not --shape)");
  if (a.p.sparsity || !a.p.nm.empty() || a.p.block)
    throw UserError(
        "--method rmat takes --scale, --edge-factor and --rmat, not --sparsity, --nm "
        "or --block");
  if (!a.scale) throw CLI::RequiredError("--scale (with --method rmat)");
  RmatSpec s;
  s.scale = *a.scale;
  s.edge_factor = a.edge_factor;
  s.seed = a.p.seed;
  if (!a.rmat.empty()) {
    double v[3] = {0, 0, 0};
    size_t at = 0;
    for (int i = 0; i < 3; ++i) {
      const size_t comma = a.rmat.find(',', at);
      const std::string part =
          a.rmat.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      char* end = nullptr;
      v[i] = std::strtod(part.c_str(), &end);
      if (part.empty() || end == nullptr || *end != '\0' || (i < 2) == (comma == std::string::npos))
        throw UserError(fmt::format("--rmat {}: expected A,B,C (e.g. 0.57,0.19,0.19)", a.rmat));
      at = comma + 1;
    }
    s.a = v[0];
    s.b = v[1];
    s.c = v[2];
  }
  validate(s);
  auto t0 = std::chrono::steady_clock::now();
  CsrMatrix m = make_rmat(s);
  const double t_gen = seconds_since(t0);
  m.source = fmt::format(
      "sparsegen gen --method rmat --scale {} --edge-factor {} --rmat {},{},{} "
      "--seed {}",
      s.scale, s.edge_factor, s.a, s.b, s.c, s.seed);
  auto t1 = std::chrono::steady_clock::now();
  write_out(m, a.p.out, kind);
  int64_t longest = 0;
  for (int64_t r = 0; r < m.rows; ++r) longest = std::max(longest, m.row_length(r));
  std::printf("%s\n",
              fmt::format("wrote {}: {} x {}, nnz {} ({} edges, duplicates merged), "
                          "longest row {}, mean {:.1f}; generate {:.2f} s, write {:.2f} s",
                          a.p.out, m.rows, m.cols, m.nnz(), int64_t{s.edge_factor} << s.scale,
                          longest, double(m.nnz()) / double(m.rows), t_gen, seconds_since(t1))
                  .c_str());
}

void run_gen(const GenArgs& a) {
  if (a.p.method == "rmat") return run_rmat(a);
  if (a.scale || a.edge_factor != 16 || !a.rmat.empty())
    throw UserError(
        fmt::format("--scale, --edge-factor and --rmat are for --method rmat (got "
                    "--method {})",
                    a.p.method));
  const OutKind kind = out_kind(a.p.out);
  const PruneSpec spec = spec_from(a.p);
  int64_t rows = 0, cols = 0;
  if (!a.shape.empty()) {
    std::tie(rows, cols) = cli::shape_flag(a.shape, "--shape");
  } else {
    if (!a.rows || !a.cols) throw CLI::RequiredError("--shape or both --rows and --cols");
    rows = *a.rows;
    cols = *a.cols;
  }
  auto t0 = std::chrono::steady_clock::now();
  // The seed drives both the weight and (for random) the selection.
  DenseMatrix w = make_llm_weight(rows, cols, a.p.seed);
  const double t_gen = seconds_since(t0);
  pruned_nnz(rows, cols, spec);  // shape checks (block multiples) before pruning
  auto t1 = std::chrono::steady_clock::now();
  CsrMatrix m = prune(w, spec);
  const double t_prune = seconds_since(t1);
  w = DenseMatrix{};  // release the dense weight before writing
  m.source =
      fmt::format("sparsegen gen --shape {}x{} {}{}", rows, cols, spec_flags(spec),
                  spec.method == PruneMethod::Random ? "" : fmt::format(" --seed {}", a.p.seed));
  auto t2 = std::chrono::steady_clock::now();
  write_out(m, a.p.out, kind);
  print_summary(a.p.out, m, spec,
                fmt::format("generate {:.2f} s, prune {:.2f} s, write {:.2f} s", t_gen, t_prune,
                            seconds_since(t2)));
}

void run_prune(const PruneCmdArgs& a) {
  const OutKind kind = out_kind(a.p.out);
  const PruneSpec spec = spec_from(a.p);
  auto t0 = std::chrono::steady_clock::now();
  DenseMatrix w = load_dense(a.weights, a.tensor);
  const double t_load = seconds_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  CsrMatrix m = prune(w, spec);
  const double t_prune = seconds_since(t1);
  w = DenseMatrix{};
  note_explicit_zeros(m);
  m.source = fmt::format("sparsegen prune {}{} {}", a.weights,
                         a.tensor.empty() ? "" : " --tensor " + a.tensor, spec_flags(spec));
  auto t2 = std::chrono::steady_clock::now();
  write_out(m, a.p.out, kind);
  print_summary(a.p.out, m, spec,
                fmt::format("load {:.2f} s, prune {:.2f} s, write {:.2f} s", t_load, t_prune,
                            seconds_since(t2)));
}

void add_prune_flags(CLI::App* cmd, PruneArgs& p) {
  cmd->add_option("--method", p.method,
                  "pruning method: " + prune_method_names() + " (gen also: rmat, see --scale)")
      ->required();
  cmd->add_option("--sparsity", p.sparsity,
                  "fraction of entries removed, in [0, 1) (implied by --nm for --method nm)");
  cmd->add_option("--nm", p.nm, "N:M pattern for --method nm, e.g. 2:4, 4:6, 6:8, 8:10, 14:16");
  cmd->add_option("--block", p.block, "block edge B for --method block (default 4)");
  cmd->add_option("--seed", p.seed,
                  "seed of the weight generator and random selection (default 0)");
  cmd->add_option("-o,--output", p.out, "output file: .safetensors (CSR container) or .mtx")
      ->required();
}

}  // namespace

void register_gen(CLI::App& app) {
  auto gen = std::make_shared<GenArgs>();
  CLI::App* g = app.add_subcommand(
      "gen", "Generate a synthetic LLM-like weight (log-normal row/column scales) and prune it");
  auto* shape = g->add_option("--shape", gen->shape, "ROWSxCOLS, e.g. 4096x11008");
  auto* rows = g->add_option("--rows", gen->rows, "number of rows");
  auto* cols = g->add_option("--cols", gen->cols, "number of columns");
  shape->excludes(rows)->excludes(cols);
  add_prune_flags(g, gen->p);
  g->add_option("--scale", gen->scale, "--method rmat: 2^scale rows and columns (16-24 typical)");
  g->add_option("--edge-factor", gen->edge_factor, "--method rmat: edges per vertex (default 16)");
  g->add_option("--rmat", gen->rmat,
                "--method rmat: quadrant probabilities A,B,C (D = 1-A-B-C; default "
                "0.57,0.19,0.19 as Graph500)");
  g->callback([gen] { run_gen(*gen); });

  auto pr = std::make_shared<PruneCmdArgs>();
  CLI::App* p = app.add_subcommand(
      "prune", "Prune a dense weight from .safetensors (by --tensor name) or .npy");
  p->add_option("weights", pr->weights, "weight file (.safetensors or .npy)")->required();
  p->add_option("--tensor", pr->tensor, "tensor name in a .safetensors file");
  add_prune_flags(p, pr->p);
  p->callback([pr] { run_prune(*pr); });
}

}  // namespace sparsegen::cli
