// `sparsegen run FILE -n N [--schedule SPEC] [--dtype fp32|fp16|bf16] [--layout-b row|col]
//  [--layout-c row|col] [--check] [--json] [--repeats R]`: compiles the GeneralSparse kernel for
// the matrix on this machine's GPU and runs it on seeded random B (and C), timing R launches.
// --check also compares the result with the CPU references (compiler/gpu_check.h), for beta = 0
// (poisoned C) and beta != 0, and exits 1 when either fails.
//
// Exit codes (main.cpp): 0 success; 1 bad file/flag or a failed --check; 3 no GPU / CUDA error.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/io/load.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "runtime/cuda_driver.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

struct RunArgs {
  std::string file;
  int64_t n = 1;
  std::string schedule;
  std::string dtype = "fp32";
  std::string io = "fp16";
  std::string b_layout = "row";
  std::string c_layout = "row";
  std::string tensor;
  bool check = false;
  bool json = false;
  int repeats = 10;
};

nlohmann::json check_json(const CheckResult& r, float beta) {
  return {{"beta", beta},
          {"passed", r.passed},
          {"rel_error", r.rel_error},
          {"rel_bound", r.rel_bound},
          {"max_ratio", r.max_ratio},
          {"unwritten", r.unwritten},
          {"nans", r.nans},
          {"out_of_bound", r.out_of_bound},
          {"compared_reference_spmm", r.compared_reference_spmm},
          {"compared_interpreter", r.compared_interpreter},
          {"error", r.error}};
}

void run_run(const RunArgs& a) {
  KernelRequest req;
  req.n = a.n;
  req.dtype = dtype_flag(a.dtype);
  req.io_dtype = io_flag(a.io);
  req.b_layout = layout_flag(a.b_layout, "--layout-b");
  req.c_layout = layout_flag(a.c_layout, "--layout-c");
  if (a.repeats < 1) throw UserError(fmt::format("--repeats: expected >= 1, found {}", a.repeats));
  req.schedule = a.schedule;
  req.schedule_flag = "--schedule";

  LoadOptions lo;
  lo.tensor = a.tensor;
  const CsrMatrix m = load_matrix(a.file, lo).matrix;
  if (m.field == ValueField::Complex)
    throw UserError(
        fmt::format("{}: complex matrices are not supported (real kernels only)", a.file));
  // User errors first (they exit 1 on any machine), then the GPU, before compiling anything.
  const Problem p0 = make_problem(m, req);
  if (!a.schedule.empty()) (void)choose_schedule(p0, m, req, CompileTarget{});
  check_value_range(m, req.dtype);
  std::string why;
  if (!cuda::driver_available(&why))
    throw CudaError("no usable GPU: " + why, "cuInit", CUDA_ERROR_NO_DEVICE,
                    "CUDA_ERROR_NO_DEVICE");
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  const CompiledKernel k(ctx, build_kernel(m, req, target));
  const Problem& p = k.problem();

  // Timing run: seeded B and C, beta = 0.
  const CheckInputs in = make_check_inputs(p, 1, 1.0f, 0.0f);
  // B and C in the caller's types (the io type of a quantized problem).
  const DType bt = p.b_dtype();
  const size_t w = static_cast<size_t>(dtype_bytes(bt));
  std::vector<char> bb(in.b.size() * w), cb(in.c0.size() * w, 0);
  for (size_t i = 0; i < in.b.size(); ++i) {
    if (bt == DType::F32) {
      std::memcpy(bb.data() + 4 * i, &in.b[i], 4);
    } else {
      const uint16_t h =
          bt == DType::F16 ? float_to_half_bits(in.b[i]) : float_to_bf16_bits(in.b[i]);
      std::memcpy(bb.data() + 2 * i, &h, 2);
    }
  }
  cuda::DeviceBuffer db(bb.size() + w), dc(cb.size() + w);
  if (!bb.empty()) db.upload(bb.data(), bb.size());
  if (!cb.empty()) dc.upload(cb.data(), cb.size());
  cuda::Stream stream;
  k.run(db.ptr(), dc.ptr(), 1.0f, 0.0f, stream.get());  // warm-up
  std::vector<float> ms;
  for (int r = 0; r < a.repeats; ++r) {
    cuda::Event e0, e1;
    e0.record(stream.get());
    k.run(db.ptr(), dc.ptr(), 1.0f, 0.0f, stream.get());
    e1.record(stream.get());
    ms.push_back(cuda::Event::elapsed_ms(e0, e1));
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double flops = 2.0 * double(m.nnz()) * double(p.n);

  GpuCheckPair chk;
  if (a.check) chk = gpu_check(k, m, 7);

  if (a.json) {
    nlohmann::json j;
    j["file"] = a.file;
    j["problem"] = to_string(p);
    j["nnz"] = m.nnz();
    j["schedule"] = to_string(k.schedule());
    j["schedule_reason"] = k.schedule_reason();
    j["device"] = target.device_name;
    j["arch"] = target.arch;
    j["compile_ms"] = k.compile_ms();
    j["registers"] = k.registers();
    j["kernel_ms_median"] = median;
    j["gflops"] = median > 0 ? flops / (median * 1e6) : 0.0;
    j["repeats"] = a.repeats;
    if (a.check) {
      j["check"] = {{"passed", chk.passed()},
                    {"runs", {check_json(chk.beta0, 0.0f), check_json(chk.beta1, -1.5f)}}};
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("problem   %s (nnz %lld)\n", to_string(p).c_str(), static_cast<long long>(m.nnz()));
    std::printf("schedule  %s\n          (%s)\n", to_string(k.schedule()).c_str(),
                k.schedule_reason().c_str());
    std::printf("device    %s, %s, compile %.1f ms, %d registers/thread\n",
                target.device_name.c_str(), target.arch.c_str(), k.compile_ms(), k.registers());
    std::printf("kernel    %.4f ms median of %d (%.1f GFLOP/s)\n", median, a.repeats,
                median > 0 ? flops / (median * 1e6) : 0.0);
    if (a.check) {
      for (int i = 0; i < 2; ++i) {
        const CheckResult& r = i == 0 ? chk.beta0 : chk.beta1;
        std::printf("check     beta=%-5s %s  rel error %.3g (bound %.3g), max error/bound %.3g%s\n",
                    i == 0 ? "0" : "-1.5", r.passed ? "PASS" : "FAIL", r.rel_error, r.rel_bound,
                    r.max_ratio, r.compared_interpreter ? ", interpreter compared" : "");
        if (!r.passed) std::printf("          %s\n", r.error.c_str());
      }
    }
  }
  if (a.check && !chk.passed())
    throw UserError(
        fmt::format("{}: GPU result does not match the CPU reference: {}", a.file, chk.error()));
}

}  // namespace

void register_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Compile the kernel for a matrix, run it on the GPU, optionally check it");
  cmd->add_option("file", args->file, "matrix file (.mtx, .smtx, .safetensors, .npy)")->required();
  cmd->add_option("-n", args->n, "dense columns of B and C (1 = SpMV)")->required();
  cmd->add_option("--schedule", args->schedule,
                  "schedule SPEC (see `sparsegen schedules`); default: the first enumerated");
  cmd->add_option("--dtype", args->dtype, "value dtype of A: fp32, fp16, bf16 (also B and C), int8 or fp8_e4m3 (per-row and per-token scales; B and C in --io)");
  cmd->add_option("--io", args->io, "B and C of an int8 / fp8_e4m3 problem: fp16 or bf16");
  cmd->add_option("--layout-b,--b-layout", args->b_layout, "layout of B: row or col");
  cmd->add_option("--layout-c,--c-layout", args->c_layout, "layout of C: row or col");
  cmd->add_option("--tensor", args->tensor, "tensor name in a .safetensors file");
  cmd->add_option("--repeats", args->repeats, "timed launches (median reported)");
  cmd->add_flag("--check", args->check,
                "compare with the CPU reference (beta = 0 with poisoned C, and beta != 0)");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args] { run_run(*args); });
}

}  // namespace sparsegen::cli
