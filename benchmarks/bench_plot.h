// The plot of a `sparsegen-bench` JSON document (what --json writes), written next to it as an
// SVG (benchmarks/svg_plot.h); tools/plot_bench.py draws the same speedups with matplotlib.
//
// The suite: our speedup over cuBLAS (dense) and over cuSPARSE (best CSR) per case, baseline time
// / our time on a log axis with the 1x line; cases ordered by their summary group (in order of
// appearance), then by matrix; each group labelled with its geometric means (as the summary).
// --exhaustive: the search quality per case, exhaustive best / search pick (<= 1; 1 is the best).
// Cases without a value (not measured, a failed check, a dry run) have no bar.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "benchmarks/svg_plot.h"

namespace sparsegen::bench {

// The chart of `doc`: speedups, or the search quality when doc["mode"] is "exhaustive".
LogBarChart bench_chart(const nlohmann::json& doc);

// Where the plot of the JSON file `json_path` goes: FILE.json -> FILE.svg (FILE -> FILE.svg).
std::string plot_path(const std::string& json_path);

}  // namespace sparsegen::bench
