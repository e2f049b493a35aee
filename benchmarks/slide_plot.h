// The plot of a `sparsegen-slide-bench` JSON document, written next to it as an SVG
// (benchmarks/svg_plot.h): per case, dense cuBLASLt time / slide time (lift included) on a log
// axis with the 1x line, one group per value type and pattern labelled with its geometric mean;
// the lift kernel's bandwidth against the copy of the same run is a second series where a case
// has it. Cases without a slide time (an error) have no bar.
#pragma once

#include <nlohmann/json.hpp>

#include "benchmarks/svg_plot.h"

namespace sparsegen::bench {

LogBarChart slide_chart(const nlohmann::json& doc);

}  // namespace sparsegen::bench
