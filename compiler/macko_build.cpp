#include "compiler/macko_build.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "codegen/macko.h"
#include "ir/diagnostics.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"

namespace sparsegen {
namespace {

// Logs like pipeline.cpp's steps ("4/9 pack  12.3 ms  ...").
class Step {
 public:
  Step(int index, const char* name, std::vector<std::string>* log)
      : index_(index), name_(name), log_(log), t0_(std::chrono::steady_clock::now()) {}
  void finish(const std::string& detail) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    std::string line = fmt::format("{}/9 {:<9} {:9.2f} ms  {}", index_, name_, ms, detail);
    if (debug_logging()) std::fprintf(stderr, "sparsegen: [pipeline] %s\n", line.c_str());
    log_->push_back(std::move(line));
  }

 private:
  int index_;
  const char* name_;
  std::vector<std::string>* log_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

KernelBuild build_macko_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               const CompileTarget& target, bool line_info) {
  SG_ASSERT(s.family() == ScheduleFamily::Macko, "build_macko_kernel needs a MACKO schedule");
  const MackoSchedule& m = s.macko();
  KernelBuild b;
  b.problem = p;
  b.schedule = s;
  b.target = target;
  b.nnz = a.nnz();
  if (a.rows != p.m || a.cols != p.k)
    throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m, p.k));
  {
    Step st(3, "verify", &b.step_log);
    const auto reasons = verify_macko(p, m, macko_stats(a, m.delta_bits), target.limits);
    if (!reasons.empty())
      throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                  target.limits.name, to_string(p), fmt::join(reasons, "; ")));
    st.finish(target.limits.name);
  }
  MackoFormat f;
  {
    Step st(4, "pack", &b.step_log);
    f = pack_macko(a, m.delta_bits);
    st.finish(fmt::format("{} MACKO slots ({} real, {} padding), b={}", f.slots(), f.nnz,
                          f.padding, f.delta_bits));
  }
  {
    Step st(5, "values", &b.step_log);
    check_value_range(a, p.dtype);
    ConversionReport rep;
    const std::vector<uint16_t> bits = convert_values(f.values, p.dtype, &rep);
    SG_ASSERT(rep.out_of_range == 0, "packed values out of range after the range check");
    b.values.resize(bits.size() * sizeof(uint16_t));
    if (!bits.empty()) std::memcpy(b.values.data(), bits.data(), b.values.size());
    st.finish(fmt::format("{} bytes of {}", b.values.size(), to_string(p.dtype)));
  }
  {
    Step st(6, "emit", &b.step_log);
    b.kernel = codegen::emit_macko(p, s, f);
    st.finish(fmt::format("{} lines, {} parameters",
                          std::count(b.kernel.source.begin(), b.kernel.source.end(), '\n'),
                          b.kernel.signature.params.size()));
  }
  {
    Step st(7, "nvrtc", &b.step_log);
    nvrtc::CompileOptions o;
    o.arch = target.arch;
    o.headers = b.kernel.headers;
    o.program_name = "sparsegen_macko.cu";
    o.line_info = line_info;
    b.compiled = nvrtc::compile(b.kernel.source, o);
    st.finish(fmt::format("{} {}, {} bytes", b.compiled.arch, b.compiled.is_cubin ? "cubin" : "PTX",
                          b.compiled.image.size()));
  }
  return b;
}

}  // namespace sparsegen
