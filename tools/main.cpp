// `sparsegen` command-line entry point.
//
// Exit codes: 0 success, 1 user error (bad file, bad flag, unsupported combination; the message
// names the file and line or the flag), 2 command-line usage error, 3 GPU/driver error.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "ir/diagnostics.h"
#include "runtime/cuda_driver.h"
#include "runtime/process_memory.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  // Before any thread allocates: searches over graph-sized matrices allocate and free the same
  // large arrays per candidate on pool threads (runtime/process_memory.h).
  sparsegen::keep_freed_memory_for_reuse();
  CLI::App app{"sparsegen: sparse-kernel code generator and autotuner for NVIDIA GPUs"};
  app.require_subcommand(1);
  sparsegen::cli::register_inspect(app);
  sparsegen::cli::register_gen(app);
  sparsegen::cli::register_gen_model(app);
  sparsegen::cli::register_tune_model(app);
  sparsegen::cli::register_smoke(app);
  sparsegen::cli::register_emit(app);
  sparsegen::cli::register_run(app);
  sparsegen::cli::register_calibrate(app);
  sparsegen::cli::register_tune(app);
  sparsegen::cli::register_cache(app);
  sparsegen::cli::register_bench(app);
  sparsegen::cli::register_ffn(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const sparsegen::UserError& e) {
    std::fprintf(stderr, "sparsegen: error: %s\n", e.what());
    return 1;
  } catch (const sparsegen::CudaError& e) {
    std::fprintf(stderr, "sparsegen: GPU error: %s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sparsegen: error: out of memory\n");
    return 1;
  }
  return 0;
}
