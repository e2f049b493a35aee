// Sub-command registration for the `sparsegen` CLI. Each cmd_*.cpp adds its sub-command(s) to the
// app; main.cpp runs the chosen one and maps errors to exit codes.
#pragma once

#include <CLI/CLI.hpp>

namespace sparsegen::cli {

void register_inspect(CLI::App& app);     // inspect FILE [--json]
void register_gen(CLI::App& app);         // gen, prune
void register_gen_model(CLI::App& app);   // gen-model --like NAME -o DIR
void register_tune_model(CLI::App& app);  // tune-model CHECKPOINT [-n 1,8] [--gpus all]
void register_smoke(CLI::App& app);       // gpu-smoke: NVRTC + driver API end-to-end check
void register_emit(CLI::App& app);        // emit FILE -n N [--schedule SPEC]; schedules FILE -n N
void register_run(CLI::App& app);         // run FILE -n N [--schedule SPEC] [--check] [--json]
void register_calibrate(CLI::App& app);   // calibrate [--budget-seconds S] [--out M] [--samples F]
void register_tune(CLI::App& app);        // tune FILE -n N [--top-k K] [--arch A] [--cache-dir D]
void register_cache(CLI::App& app);       // cache list|show KEY|clear|export FILE
void register_bench(CLI::App& app);
void register_ffn(CLI::App& app);         // ffn --gen KxN | --weights F --layer L -m M       // bench ARGS...: runs sparsegen-bench (next to sparsegen)

}  // namespace sparsegen::cli
