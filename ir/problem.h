// Problem: what a kernel computes (the public sparsegen/problem.h defines it and documents the
// operations), plus what only sparsegen itself uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "ir/dtype.h"
#include "sparsegen/problem.h"

namespace sparsegen {

// "4096x11008" (or "4096X11008") as (rows, cols), both >= 1; nullopt for anything else. The one
// spelling of a matrix shape on every command line.
std::optional<std::pair<int64_t, int64_t>> parse_shape(std::string_view text);

}  // namespace sparsegen
