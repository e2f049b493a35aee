#include "compiler/pipeline_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <utility>

#include "ir/diagnostics.h"
#include "ir/parallel.h"

namespace sparsegen {

PipelineStep::PipelineStep(int index, const char* name, std::vector<std::string>* log)
    : index_(index), name_(name), log_(log), t0_(std::chrono::steady_clock::now()) {}

void PipelineStep::finish(const std::string& detail) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  std::string line =
      fmt::format("{}/{} {:<9} {:9.2f} ms  {}", index_, kPipelineSteps, name_, ms, detail);
  if (debug_logging()) std::fprintf(stderr, "sparsegen: [pipeline] %s\n", line.c_str());
  if (log_ != nullptr) log_->push_back(std::move(line));
}

std::vector<char> to_device_values(const std::vector<float>& v, DType dtype) {
  // One buffer, its pages faulted in on all cores, filled in parallel: no intermediate vector.
  std::vector<char> out;
  resize_prefaulted(out, v.size() * static_cast<size_t>(dtype_bytes(dtype)));
  if (dtype == DType::F32) {
    parallel_for(static_cast<int64_t>(v.size()), static_cast<int64_t>(v.size()),
                 [&](int64_t b, int64_t e) {
                   std::memcpy(out.data() + 4 * b, v.data() + b, static_cast<size_t>(e - b) * 4);
                 });
    return out;
  }
  if (is_quantized(dtype)) {  // the family's packer quantized them: exact in the type
    parallel_for(static_cast<int64_t>(v.size()), static_cast<int64_t>(v.size()),
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) {
                     const float x = v[static_cast<size_t>(i)];
                     out[static_cast<size_t>(i)] = dtype == DType::I8
                                                       ? static_cast<char>(float_to_int8(x))
                                                       : static_cast<char>(float_to_e4m3_bits(x));
                   }
                 });
    return out;
  }
  const ConversionReport rep = convert_values_to(v, dtype, std::as_writable_bytes(std::span(out)));
  SG_ASSERT(rep.out_of_range == 0, "packed values out of range after the range check");
  return out;
}

KernelBuild start_build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                        const CompileTarget& target) {
  if (p.op == Op::GatedFfn) {
    // The sparse operand of a gated FFN is an activation pattern (tokens x hidden width) of
    // any number of calibration tokens.
    if (a.cols != p.n)
      throw UserError(
          fmt::format("{}: the activation pattern has {} columns but the FFN's hidden "
                      "width is n={}",
                      a.source.empty() ? "activations" : a.source, a.cols, p.n));
  } else if (a.rows != p.m || a.cols != p.k) {
    throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m, p.k));
  }
  KernelBuild b;
  b.problem = p;
  b.schedule = s;
  b.target = target;
  b.nnz = a.nnz();
  return b;
}

void values_step(KernelBuild& b, const CsrMatrix& a, const std::vector<float>& packed) {
  PipelineStep st(5, "values", &b.step_log);
  check_value_range(a, b.problem.dtype);
  b.values = to_device_values(packed, b.problem.dtype);
  st.finish(fmt::format("{} bytes of {}", b.values.size(), to_string(b.problem.dtype)));
}

void emit_step(KernelBuild& b, const std::function<codegen::GeneratedKernel()>& emit) {
  PipelineStep st(6, "emit", &b.step_log);
  b.kernel = emit();
  st.finish(fmt::format("{} lines, {} parameters",
                        std::count(b.kernel.source.begin(), b.kernel.source.end(), '\n'),
                        b.kernel.signature.params.size()));
}

void compile_step(KernelBuild& b, const CompileTarget& target, std::string_view program_name,
                  bool line_info) {
  PipelineStep st(7, "nvrtc", &b.step_log);
  nvrtc::CompileOptions o;
  o.arch = b.kernel.arch_specific ? nvrtc::arch_specific_variant(target.arch) : target.arch;
  o.headers = b.kernel.headers;
  o.program_name = std::string(program_name);
  o.line_info = line_info;
  b.compiled = nvrtc::compile(b.kernel.source, o);
  st.finish(fmt::format("{} {}, {} bytes", b.compiled.arch, b.compiled.is_cubin ? "cubin" : "PTX",
                        b.compiled.image.size()));
}

}  // namespace sparsegen
