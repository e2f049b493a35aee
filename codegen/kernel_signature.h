// What the runtime needs to launch an emitted kernel: its name, parameters in order (with the host
// data of every table parameter), launch shape, and an optional prologue kernel. Family-neutral:
// every emitter returns one; the runtime treats the tables as opaque typed arrays.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen::codegen {

enum class ParamKind {
  Values,    // const T*  A's packed values (PackedFormat::values converted to the problem dtype)
  ColIdx,    // const int* A's packed column indices (PackedFormat::col_idx)
  B,         // const T*  dense B
  C,         // T*        dense C
  Alpha,     // float
  Beta,      // float
  I32Table,  // const int*            offset table (data below)
  I16Table,  // const short*          quasilinear residuals
  I8Table,   // const signed char*    quasilinear residuals
  U32Table,  // const unsigned*       bitmaps / row-start bits
};
std::string_view to_string(ParamKind k);

struct KernelParam {
  std::string name;  // the parameter's name in the emitted source
  ParamKind kind;
  std::string source;         // which PackedFormat array it holds, e.g. "warp.child_begin"
  std::vector<int64_t> data;  // table contents (tables only), converted to the kind's width
};

struct LaunchShape {
  int64_t grid_x = 0;
  int64_t grid_y = 0;
  int block_threads = 0;
  int64_t shared_bytes = 0;  // static shared memory used (informational)
};

struct KernelSignature {
  std::string kernel_name;          // extern "C"
  std::vector<KernelParam> params;  // in declaration order
  LaunchShape launch;
  // When non-empty, launch this kernel first with (C, beta): it sets C = beta * C (C is not read
  // when beta == 0). Used when rows are finished with atomic adds.
  std::string prologue_name;
  LaunchShape prologue_launch;
  // True when grid_x or grid_y is 0: the caller must not launch (C = beta * C is still due).
  bool empty_grid() const { return launch.grid_x == 0 || launch.grid_y == 0; }
};

// Human-readable list of the parameters, one per line ("values  const T*  packed A values").
std::string describe(const KernelSignature& sig);

}  // namespace sparsegen::codegen
