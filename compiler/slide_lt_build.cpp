// The slide_lt family's compiler/ layer: one module (the lift and, for 8-bit types, the scale
// kernel) built by the default steps; the values are the dense lifted weight, which the library
// compresses when the kernel is loaded (compiler/pipeline.cpp plans the 2:4 GEMM there).
#include "compiler/family.h"
#include "ir/slide_lt_schedule.h"

namespace sparsegen {

const CompilerFamily& slide_lt_compiler_family() {
  static const DefaultBuild<SlideLtSchedule> f;
  return f;
}

}  // namespace sparsegen
