// Pieces shared by the family builds (compiler/family.h: CompilerFamily::build and any family
// override) and the tuner (tune.cpp), so each step has one implementation.
// Internal to compiler/: not part of the public API.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/dtype.h"

namespace sparsegen {

inline constexpr int kPipelineSteps = 9;

// Times one pipeline step; finish() logs "4/9 pack  12.3 ms  detail" to `log` (when non-null) and,
// with SPARSEGEN_DEBUG=1, to stderr. A step that throws is not logged: the exception says why.
class PipelineStep {
 public:
  PipelineStep(int index, const char* name, std::vector<std::string>* log);
  void finish(const std::string& detail = "");

 private:
  int index_;
  const char* name_;
  std::vector<std::string>* log_;
  std::chrono::steady_clock::time_point t0_;
};

// Step 5: packed fp32 master values as the bytes of `dtype` the kernel reads. Precondition:
// check_value_range() accepted these values (padding is 0).
std::vector<char> to_device_values(const std::vector<float>& v, DType dtype);

// The start of a family build: a KernelBuild for
// (p, s, target) after checking that the matrix has the problem's shape (UserError naming both;
// for a gated FFN the matrix is an activation pattern with N columns and any number of rows).
KernelBuild start_build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                        const CompileTarget& target);

// Step 5: check_value_range() of the matrix, then the packed fp32 values as the bytes of the
// problem's dtype in b.values; logged with their size.
void values_step(KernelBuild& b, const CsrMatrix& a, const std::vector<float>& packed);

// Step 6: b.kernel = emit(), logged with the source's line and parameter counts.
void emit_step(KernelBuild& b, const std::function<codegen::GeneratedKernel()>& emit);

// Step 7: NVRTC for `target` on b.kernel; fills b.compiled and logs the step into b.step_log.
void compile_step(KernelBuild& b, const CompileTarget& target, std::string_view program_name,
                  bool line_info);

}  // namespace sparsegen
