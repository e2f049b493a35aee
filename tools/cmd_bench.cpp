// `sparsegen bench ARGS...`: runs the `sparsegen-bench` executable that lies next to this one,
// with ARGS passed through unchanged (`sparsegen bench --help` prints the benchmark's own help).
//
// The benchmark links cuBLAS, cuSPARSE and the CUDA runtime; the `sparsegen` CLI and libraries
// must not (they load the driver with dlopen and run on machines without the CUDA toolkit), so the
// benchmark stays a separate binary and this sub-command replaces the process with it (execv).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "tools/commands.h"

namespace sparsegen::cli {
namespace {

namespace fs = std::filesystem;

// The benchmark binary's path: `sparsegen-bench` in the folder of the running executable.
fs::path bench_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw UserError(fmt::format(
        "bench: cannot locate the sparsegen executable (/proc/self/exe: {})", ec.message()));
  return self.parent_path() / "sparsegen-bench";
}

[[noreturn]] void exec_bench(const std::vector<std::string>& args) {
  const fs::path bin = bench_binary();
  std::error_code ec;
  if (!fs::is_regular_file(bin, ec))
    throw UserError(fmt::format(
        "bench: the benchmark executable {} does not exist; it is built next to sparsegen as the "
        "CMake target sparsegen-bench (it needs cuBLAS, cuSPARSE and the CUDA runtime; CMake skips "
        "it with a warning when the toolkit lacks them)",
        bin.string()));
  std::vector<std::string> owned;
  owned.push_back(bin.string());
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : owned) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(argv[0], argv.data());
  const int err = errno;  // execv returns only on failure
  throw UserError(fmt::format("bench: cannot run {}: {}", bin.string(), std::strerror(err)));
}

}  // namespace

void register_bench(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "bench",
      "Benchmark against cuBLAS and cuSPARSE, or measure search quality (runs sparsegen-bench; "
      "`sparsegen bench --help` lists its options)");
  // Every argument, --help included, belongs to sparsegen-bench: no options of our own, and the
  // first argument ends parsing here (prefix command) so the rest reach remaining() in order.
  sub->set_help_flag();
  sub->prefix_command();
  sub->callback([sub] { exec_bench(sub->remaining()); });
}

}  // namespace sparsegen::cli
