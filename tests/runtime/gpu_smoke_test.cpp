// Runtime tests. NvrtcCpu.* need no GPU (NVRTC runs on the host) and always run; Gpu.* skip
// themselves with the reason when no CUDA driver or device is present, and on the device machine
// they must pass, not skip.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_smoke.h"
#include "runtime/nvrtc_compiler.h"

namespace sparsegen {
namespace {

const char* kKernel = R"(#include "scale_helper.cuh"
extern "C" __global__ void scale_add(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = helper_scale(a, x[i]) + y[i];
}
template <int K>
__global__ void times_k(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= K;
}
)";

const char* kHelper =
    "#pragma once\n"
    "__device__ inline float helper_scale(float a, float x) { return a * x; }\n";

nvrtc::CompileOptions options_for(const std::string& arch) {
  nvrtc::CompileOptions o;
  o.arch = arch;
  o.program_name = "runtime_test.cu";
  o.headers["scale_helper.cuh"] = kHelper;
  return o;
}

std::string image_text(const nvrtc::CompileResult& r) {
  return std::string(r.image.begin(), r.image.end());
}

// ---------------------------------------------------------------- NVRTC on the host

TEST(NvrtcCpu, VersionIsReported) {
  nvrtc::Version v = nvrtc::version();
  EXPECT_GE(v.major, 12);
  EXPECT_EQ(nvrtc::version_string(), std::to_string(v.major) + "." + std::to_string(v.minor));
  std::vector<int> archs = nvrtc::supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(NvrtcCpu, ArchNames) {
  EXPECT_EQ(nvrtc::sm_arch_for(9, 0), "sm_90");
  EXPECT_EQ(nvrtc::sm_arch_for(9, 0, true), "sm_90a");
  EXPECT_EQ(nvrtc::sm_arch_for(8, 6), "sm_86");
  EXPECT_EQ(nvrtc::compute_arch_for(8, 0), "compute_80");
  EXPECT_THROW(nvrtc::sm_arch_for(-1, 0), NvrtcError);
  EXPECT_THROW(nvrtc::sm_arch_for(9, 12), NvrtcError);
  // The arch-specific variant a wgmma kernel is compiled for.
  EXPECT_EQ(nvrtc::arch_specific_variant("sm_90"), "sm_90a");
  EXPECT_EQ(nvrtc::arch_specific_variant("compute_90"), "compute_90a");
  EXPECT_EQ(nvrtc::arch_specific_variant("sm_90a"), "sm_90a");
  EXPECT_EQ(nvrtc::arch_specific_variant("sm_100f"), "sm_100a");
  EXPECT_THROW(nvrtc::arch_specific_variant("sm90"), NvrtcError);
}

TEST(NvrtcCpu, CompilesToPtx) {
  for (const char* arch : {"compute_80", "compute_90"}) {
    SCOPED_TRACE(arch);
    nvrtc::CompileResult r = nvrtc::compile(kKernel, options_for(arch));
    EXPECT_FALSE(r.is_cubin);
    ASSERT_FALSE(r.image.empty());
    EXPECT_EQ(r.image.back(), '\0');  // PTX is handed to the driver as a C string
    std::string ptx = image_text(r);
    EXPECT_NE(ptx.find(".entry scale_add"), std::string::npos);
    EXPECT_NE(ptx.find(std::string(".target sm_") + (arch + 8)), std::string::npos);
    EXPECT_GT(r.compile_ms, 0.0);
  }
}

TEST(NvrtcCpu, CompilesToCubin) {
  for (const char* arch : {"sm_80", "sm_90", "sm_90a"}) {
    SCOPED_TRACE(arch);
    nvrtc::CompileResult r = nvrtc::compile(kKernel, options_for(arch));
    EXPECT_TRUE(r.is_cubin);
    ASSERT_GE(r.image.size(), 4u);
    EXPECT_EQ(std::memcmp(r.image.data(),
                          "\x7f"
                          "ELF",
                          4),
              0);  // a cubin is an ELF file
    EXPECT_NE(image_text(r).find("scale_add"), std::string::npos);
    EXPECT_EQ(r.options.front(), std::string("--gpu-architecture=") + arch);
  }
}

TEST(NvrtcCpu, OptionsAreApplied) {
  nvrtc::CompileOptions o = options_for("compute_90");
  o.fast_math = true;
  o.line_info = true;
  o.defines = {"SG_TEST=1"};
  nvrtc::CompileResult r = nvrtc::compile(kKernel, o);
  auto has = [&](const std::string& s) {
    return std::find(r.options.begin(), r.options.end(), s) != r.options.end();
  };
  EXPECT_TRUE(has("--use_fast_math"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_TRUE(has("-DSG_TEST=1"));
  EXPECT_TRUE(has("-std=c++17"));
  EXPECT_NE(image_text(r).find(".loc"), std::string::npos);  // line info present
  // Fast math off by default.
  nvrtc::CompileResult plain = nvrtc::compile(kKernel, options_for("compute_90"));
  EXPECT_EQ(std::find(plain.options.begin(), plain.options.end(), "--use_fast_math"),
            plain.options.end());
}

TEST(NvrtcCpu, NameExpressionsGiveLoweredNames) {
  nvrtc::CompileOptions o = options_for("compute_90");
  o.name_expressions = {"times_k<3>"};
  nvrtc::CompileResult r = nvrtc::compile(kKernel, o);
  ASSERT_EQ(r.lowered_names.count("times_k<3>"), 1u);
  const std::string& mangled = r.lowered_names["times_k<3>"];
  EXPECT_NE(mangled.find("times_k"), std::string::npos);
  EXPECT_NE(image_text(r).find(mangled), std::string::npos);
}

TEST(NvrtcCpu, NamedHeaderIsFoundAndMissingHeaderFails) {
  // Found: compiles (above). Missing: the log names the header.
  nvrtc::CompileOptions o = options_for("compute_90");
  o.headers.clear();
  try {
    nvrtc::compile(kKernel, o);
    FAIL() << "expected NvrtcError";
  } catch (const NvrtcError& e) {
    EXPECT_NE(e.log().find("scale_helper.cuh"), std::string::npos) << e.log();
    EXPECT_EQ(e.call(), "nvrtcCompileProgram");
  }
}

TEST(NvrtcCpu, CudaToolkitHeadersAreReachable) {
  const char* src = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void conv(const __half* a, __nv_bfloat16* b) {
  b[threadIdx.x] = __float2bfloat16(__half2float(a[threadIdx.x]));
})";
  nvrtc::CompileOptions o;
  o.arch = "sm_90";
  EXPECT_NO_THROW(nvrtc::compile(src, o));
  EXPECT_FALSE(nvrtc::cuda_include_dirs().empty());
}

TEST(NvrtcCpu, SyntaxErrorThrowsWithLogAndSourceLine) {
  const char* bad =
      "extern \"C\" __global__ void k(float* y) {\n"
      "  y[threadIdx.x] = 1.0f\n"  // line 2: missing ';'
      "  int oops = ;\n"           // line 3
      "}\n";
  nvrtc::CompileOptions o;
  o.arch = "sm_90";
  o.program_name = "bad_kernel.cu";
  try {
    nvrtc::compile(bad, o);
    FAIL() << "expected NvrtcError";
  } catch (const NvrtcError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code_name(), "NVRTC_ERROR_COMPILATION");
    EXPECT_NE(e.log().find("bad_kernel.cu("), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("error"), std::string::npos);
    EXPECT_NE(what.find("sm_90"), std::string::npos);
    EXPECT_NE(what.find("int oops = ;"), std::string::npos) << what;  // the source is shown
    EXPECT_NE(what.find("around line 3"), std::string::npos) << what;
    EXPECT_NE(what.find(e.log()), std::string::npos);  // so is the whole log
  }
}

TEST(NvrtcCpu, InvalidArchIsRejected) {
  nvrtc::CompileOptions o = options_for("sm90");
  EXPECT_THROW(nvrtc::compile(kKernel, o), NvrtcError);
  o.arch = "compute_";
  EXPECT_THROW(nvrtc::compile(kKernel, o), NvrtcError);
}

TEST(NvrtcCpu, SmokeKernelCompiles) {
  nvrtc::CompileOptions o;
  o.arch = "compute_80";
  o.headers[cuda::smoke_kernel_header_name()] = cuda::smoke_kernel_header();
  nvrtc::CompileResult r = nvrtc::compile(cuda::smoke_kernel_source(), o);
  EXPECT_NE(image_text(r).find(".entry sparsegen_smoke_axpy"), std::string::npos);
}

// ---------------------------------------------------------------- driver without a GPU

TEST(DriverCpu, AvailabilityIsAnsweredWithAReason) {
  std::string why;
  bool ok = cuda::driver_available(&why);
  if (!ok) {
    EXPECT_FALSE(why.empty());
    // Every driver entry point then throws CudaError with the same reason, never crashes.
    try {
      cuda::device_count();
      FAIL() << "expected CudaError";
    } catch (const CudaError& e) {
      EXPECT_EQ(e.call(), "dlopen");
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos);
    }
    EXPECT_THROW(cuda::Context ctx(0), CudaError);
  } else {
    EXPECT_GE(cuda::device_count(), 1);
  }
}

// A graph cannot be captured on the legacy default stream, and an empty one cannot be launched:
// both are refused before the driver is asked (so also without one).
TEST(DriverCpu, GraphRefusesTheLegacyStreamAndAnEmptyLaunch) {
  bool enqueued = false;
  EXPECT_THROW(cuda::Graph::capture(nullptr, [&](CUstream) { enqueued = true; }), CudaError);
  EXPECT_FALSE(enqueued);
  const cuda::Graph g;
  EXPECT_TRUE(g.empty());
  try {
    g.launch();
    FAIL() << "an empty graph was launched";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.call(), "cuGraphLaunch");
  }
}

// ---------------------------------------------------------------- on the GPU

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::driver_available(&why)) GTEST_SKIP() << "no CUDA GPU: " << why;
  }
};

TEST_F(Gpu, DeviceQuery) {
  cuda::Context ctx(0);
  const cuda::DeviceInfo& d = ctx.info();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.cc_major, 7);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.total_memory_bytes, std::size_t{1} << 30);
  EXPECT_GT(d.l2_cache_bytes, 0);
  EXPECT_GE(d.max_threads_per_block, 1024);
  EXPECT_GE(d.max_shared_memory_per_block_optin, d.max_shared_memory_per_block);
  EXPECT_GT(d.max_registers_per_sm, 0);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_GE(cuda::driver_version(), 12000);
  std::printf("device: %s, cc %d.%d, %d SMs, L2 %d KiB, opt-in smem %d KiB\n", d.name.c_str(),
              d.cc_major, d.cc_minor, d.sm_count, d.l2_cache_bytes / 1024,
              d.max_shared_memory_per_block_optin / 1024);
}

// Compiles kKernel for the device, runs y = a*x + y on seeded random non-integer data, checks
// against a double-precision reference; `arch` chooses cubin or PTX (driver JIT).
void run_scale_add(const std::string& arch_override) {
  cuda::Context ctx(0);
  const cuda::DeviceInfo& d = ctx.info();
  std::string arch =
      arch_override.empty() ? nvrtc::sm_arch_for(d.cc_major, d.cc_minor) : arch_override;
  nvrtc::CompileResult compiled = nvrtc::compile(kKernel, options_for(arch));
  cuda::Module module(compiled.image);
  CUfunction fn = module.function("scale_add");

  const int n = 1'000'003;
  std::vector<float> x(n), y(n), out(n);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  cuda::DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float));
  dx.upload(x);
  dy.upload(y);
  cuda::LaunchConfig cfg;
  cfg.block.x = 256;
  cfg.grid.x = (n + 255) / 256;
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  float a = 0.3183099f;
  int count = n;
  cuda::launch_kernel(fn, cfg, px, py, a, count);
  ctx.synchronize();
  dy.download(out);
  double err2 = 0, ref2 = 0;
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    double ref = static_cast<double>(a) * x[i] + y[i];
    double scale = std::fabs(static_cast<double>(a) * x[i]) + std::fabs(y[i]);
    double diff = std::fabs(out[i] - ref);
    if (!(diff <= 4.0 * std::numeric_limits<float>::epsilon() * scale + 1e-30)) ++bad;
    err2 += diff * diff;
    ref2 += ref * ref;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_LT(std::sqrt(err2 / ref2), 1e-6);
}

TEST_F(Gpu, CubinForDeviceArchRunsCorrectly) {
  run_scale_add("");
}

// A captured graph (a memset and two launches) replays them with the arguments they were captured
// with, from scratch on every replay; a call the capture refuses (synchronizing the capturing
// stream) throws out of capture() and leaves the stream usable.
TEST_F(Gpu, GraphCaptureReplaysAndRefusesSynchronousCalls) {
  cuda::Context ctx(0);
  const cuda::DeviceInfo& d = ctx.info();
  const nvrtc::CompileResult compiled =
      nvrtc::compile(kKernel, options_for(nvrtc::sm_arch_for(d.cc_major, d.cc_minor)));
  cuda::Module module(compiled.image);
  CUfunction fn = module.function("scale_add");
  const int n = 4099;
  std::vector<float> x(n);
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (float& v : x) v = dist(rng);
  cuda::DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float));
  dx.upload(x);
  cuda::Stream s;
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  float a1 = 0.75f, a2 = -1.3f;
  int count = n;
  const cuda::Graph g = cuda::Graph::capture(s.get(), [&](CUstream st) {
    cuda::LaunchConfig cfg;
    cfg.block.x = 256;
    cfg.grid.x = (n + 255) / 256;
    cfg.stream = st;
    cuda::fill_bytes_async(py, n * sizeof(float), 0, st);  // y = 0
    cuda::launch_kernel(fn, cfg, px, py, a1, count);       // y = a1·x
    cuda::launch_kernel(fn, cfg, px, py, a2, count);       // y += a2·x
  });
  a1 = a2 = 0.0f;  // the graph holds the captured values
  auto check = [&](const char* what) {
    dy.fill_u32(0x7FC0DEADu);  // NaN: an element the replay misses shows
    g.launch(s.get());
    s.synchronize();
    std::vector<float> y(n);
    dy.download(y);
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      const double ref = (0.75 - 1.3) * static_cast<double>(x[i]);
      const double tol = 4.0 * std::numeric_limits<float>::epsilon() * 2.05 * std::fabs(x[i]);
      if (!(std::fabs(y[i] - ref) <= tol + 1e-30)) ++bad;
    }
    EXPECT_EQ(bad, 0) << what;
  };
  check("first replay");
  check("second replay");
  EXPECT_THROW(cuda::Graph::capture(s.get(), [&](CUstream) { s.synchronize(); }), CudaError);
  check("after a refused capture");
}

// Uploads and downloads below and above the size where copies go through the pinned staging
// buffers (one chunk, several, a ragged last one): a kernel adds each element's index, so a chunk
// landing at the wrong offset in either direction shows (the two directions cannot cancel).
TEST_F(Gpu, LargeCopiesLandAtTheirOffsets) {
  cuda::Context ctx(0);
  const char* src = R"(
extern "C" __global__ void add_index(float* y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += (float)(i % 1021);
})";
  nvrtc::CompileOptions o =
      options_for(nvrtc::sm_arch_for(ctx.info().cc_major, ctx.info().cc_minor));
  cuda::Module module(nvrtc::compile(src, o).image);
  CUfunction fn = module.function("add_index");
  for (const long long n : {(1LL << 20) + 3, 1LL << 22, (1LL << 23) + 1023, 25LL * (1 << 20) + 5}) {
    std::vector<float> x(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
    for (long long i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = static_cast<float>((i * 7919) % 4096) * 0.25f + 0.125f;
    cuda::DeviceBuffer d(static_cast<size_t>(n) * sizeof(float));
    d.upload(x);
    cuda::LaunchConfig cfg;
    cfg.block.x = 256;
    cfg.grid.x = static_cast<unsigned>((n + 255) / 256);
    CUdeviceptr p = d.ptr();
    long long count = n;
    cuda::launch_kernel(fn, cfg, p, count);
    ctx.synchronize();
    d.download(out);
    long long bad = 0, first = -1;
    for (long long i = 0; i < n; ++i)
      if (out[static_cast<size_t>(i)] != x[static_cast<size_t>(i)] + static_cast<float>(i % 1021))
        ++bad, first = first < 0 ? i : first;
    EXPECT_EQ(bad, 0) << n << " floats, first wrong element " << first;
  }
}

TEST_F(Gpu, PtxIsJitCompiledByTheDriver) {
  cuda::Context ctx(0);
  run_scale_add(nvrtc::compute_arch_for(ctx.info().cc_major, ctx.info().cc_minor));
}

TEST_F(Gpu, SmokeCheckPassesAndWritesEveryOutput) {
  cuda::SmokeOptions o;
  o.n = 3'000'017;
  o.repeats = 5;
  cuda::SmokeResult r = cuda::run_gpu_smoke(o);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.unwritten, 0u);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_LT(r.rel_l2_error, 1e-6);
  EXPECT_GT(r.kernel_ms_median, 0.0);
  EXPECT_EQ(r.arch, nvrtc::sm_arch_for(r.device.cc_major, r.device.cc_minor));
}

TEST_F(Gpu, InvalidLaunchConfigNamesTheCall) {
  cuda::Context ctx(0);
  nvrtc::CompileResult compiled = nvrtc::compile(
      kKernel, options_for(nvrtc::sm_arch_for(ctx.info().cc_major, ctx.info().cc_minor)));
  cuda::Module module(compiled.image);
  CUfunction fn = module.function("scale_add");
  cuda::DeviceBuffer dx(1024), dy(1024);
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  float a = 1.5f;
  int n = 256;
  cuda::LaunchConfig cfg;
  cfg.block.x = static_cast<unsigned>(ctx.info().max_threads_per_block) * 2;  // too many threads
  try {
    cuda::launch_kernel(fn, cfg, px, py, a, n);
    FAIL() << "expected CudaError";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernel");
    EXPECT_EQ(e.code(), static_cast<int>(CUDA_ERROR_INVALID_VALUE)) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuLaunchKernel"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_INVALID_VALUE"), std::string::npos);
  }
  // The context is still usable after a rejected launch.
  cfg.block.x = 256;
  EXPECT_NO_THROW(cuda::launch_kernel(fn, cfg, px, py, a, n));
  EXPECT_NO_THROW(ctx.synchronize());
}

TEST_F(Gpu, MissingKernelAndBadImageNameTheCall) {
  cuda::Context ctx(0);
  nvrtc::CompileResult compiled = nvrtc::compile(
      kKernel, options_for(nvrtc::sm_arch_for(ctx.info().cc_major, ctx.info().cc_minor)));
  cuda::Module module(compiled.image);
  try {
    module.function("no_such_kernel");
    FAIL() << "expected CudaError";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.call(), "cuModuleGetFunction");
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos);
  }
  std::vector<char> garbage(64, 'x');
  garbage.back() = '\0';
  EXPECT_THROW(cuda::Module bad(garbage), CudaError);
}

TEST_F(Gpu, ContextsComeAndGoOnOneThread) {
  // Context objects may come and go and nest; memory made under one stays usable (the primary
  // context lives for the process), and cuCtxSynchronize has the ABI <cuda.h> declares.
  { cuda::Context first(0); }
  cuda::Context second(0);
  {
    cuda::Context nested(0);
    cuda::DeviceBuffer b(256);
    b.fill_bytes(7);
  }
  cuda::DeviceBuffer c(256);
  c.fill_bytes(3);
  std::vector<unsigned char> h(256);
  c.download(h);
  EXPECT_EQ(h[255], 3);
  EXPECT_NO_THROW(second.synchronize());
}

TEST_F(Gpu, BufferFillAndEvents) {
  cuda::Context ctx(0);
  cuda::DeviceBuffer b(4096);
  b.fill_u32(0x7FC0DEADu);
  std::vector<std::uint32_t> h(1024);
  b.download(h);
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](std::uint32_t v) { return v == 0x7FC0DEADu; }));
  EXPECT_THROW(b.upload(h.data(), 8192), CudaError);  // larger than the buffer
  cuda::DeviceBuffer b16(6);                          // three 16-bit words: not a multiple of 4
  b16.fill_u16(0x7E5Au);
  std::vector<std::uint16_t> h16(3);
  b16.download(h16);
  EXPECT_TRUE(std::all_of(h16.begin(), h16.end(), [](std::uint16_t v) { return v == 0x7E5Au; }));
  EXPECT_THROW(b16.fill_u32(0), CudaError);
  EXPECT_THROW(cuda::DeviceBuffer(5).fill_u16(0), CudaError);
  EXPECT_EQ(cuda::current_context(), ctx.get());
  cuda::DeviceBuffer empty(0);
  EXPECT_EQ(empty.ptr(), CUdeviceptr{0});
  cuda::Stream s;
  cuda::Event e0, e1;
  e0.record(s.get());
  e1.record(s.get());
  EXPECT_GE(cuda::Event::elapsed_ms(e0, e1), 0.0f);
}

}  // namespace
}  // namespace sparsegen
