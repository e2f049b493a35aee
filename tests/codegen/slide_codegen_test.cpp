// slide emitter: the emitted source's shape (pattern checks) and NVRTC cubins for every value
// type on sm_90 (fp16 / bf16 / int8 also on sm_80), no GPU needed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "codegen/slide.h"
#include "ir/gen/pruning.h"
#include "ir/slide_schedule.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen::codegen {
namespace {

CsrMatrix weight_6_8(int64_t m, int64_t k) {
  return testing::slide_weight(m, k, 4, 9);
}

// A split=wg schedule (pattern 6:8), and its kernel over the weight packed in its slot order.
SlideSchedule wg_schedule(int warps, int nt, int unroll, int stages) {
  SlideSchedule s;
  s.split = SlideSplit::Group;
  s.warps = warps;
  s.n_tiles = nt;
  s.unroll = unroll;
  s.stages = stages;
  return s;
}
GeneratedKernel emit_wg(const CsrMatrix& a, const Problem& p, const SlideSchedule& s) {
  return emit_slide(p, Schedule(s),
                    pack_slide_tc(a, s.pattern, p.dtype, SlideForm::Kernel, slide_pack_group(s),
                                  slide_pack_order(s)));
}

// The kernel's NVRTC image for `arch` (empty when it does not compile).
std::vector<char> image_for(const GeneratedKernel& k, const std::string& arch) {
  nvrtc::CompileOptions o;
  o.arch = arch;
  o.headers = k.headers;
  return nvrtc::compile(k.source, o).image;
}

TEST(SlideCodegen, SourceShapeAndSignature) {
  const CsrMatrix a = weight_6_8(64, 100);
  SlideSchedule s;
  s.warps = 4;
  s.n_tiles = 2;
  const Problem p = Problem::quantized_spmm(64, 100, 16, DType::I8, DType::F16, Layout::ColMajor,
                                            Layout::ColMajor);
  const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, DType::I8));
  // The lift: one token per block (column-major B, not 16-byte vectors as K % 8 != 0), all of
  // K (3 chunks of 64 lifted columns, 160 staged columns) in shared memory at once.
  EXPECT_NE(k.source.find("sg::slide_lift<T, 2, 4, 128, 1, 1, 0, 0>(B, bw, token_scales, "
                          "reinterpret_cast<T*>(sg_lift_smem), 100, 16, 1, 100, 3, 2, 3, 160)"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("all of K staged at once"), std::string::npos);
  EXPECT_NE(
      k.source.find("sg::slide_spmm<T, 2, 1, 2, 2, 4, 1, 1, 1, 0>(values, meta, bw, C, row_scales, "
                    "token_scales, sg_smem"),
      std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("using T = __half;"), std::string::npos);
  // split=rows: the row-owning kernel, B staged in shared memory (two steps of nt x unroll x 512).
  SlideSchedule r = s;
  r.split = SlideSplit::Rows;
  const GeneratedKernel kr = emit_slide(p, Schedule(r), pack_slide_tc(a, 4, DType::I8));
  EXPECT_NE(kr.source.find("sg::slide_spmm_rows<T, 2, 1, 2, 2, 4, 1, 1, 1, 0>(values, meta, bw, C"),
            std::string::npos)
      << kr.source;
  EXPECT_EQ(kr.signature.launch.dynamic_shared_bytes, 2 * 2 * 2 * 512);
  EXPECT_EQ(kr.signature.launch.grid_x, 1);  // 4 row tiles / (4 warps x 1)
  // lift=fused (fp16): one kernel reading B itself, no b_transform, no B work buffer.
  SlideSchedule fu;
  fu.lift = SlideLift::Fused;
  const Problem p16 = Problem::spmm(64, 100, 16, DType::F16, Layout::ColMajor, Layout::RowMajor);
  const GeneratedKernel kf = emit_slide(p16, Schedule(fu), pack_slide_tc(a, 4, DType::F16));
  EXPECT_NE(
      kf.source.find("sg::slide_spmm_fused<T, 0, 4, 1, 1, 2, 4, 1, 1>(values, meta, B, C, sg_smem"),
      std::string::npos)
      << kf.source;
  EXPECT_FALSE(kf.signature.b_transform.present());
  EXPECT_EQ(kf.signature.b_work_bytes, 0);
  // int8 / e4m3 quantize B per token first: fused is refused with a reason.
  EXPECT_FALSE(
      validate(Problem::quantized_spmm(64, 100, 16, DType::I8, DType::F16), Schedule(fu)).empty());
  ASSERT_EQ(k.headers.count("sg_slide.cuh"), 1u);
  EXPECT_NE(k.headers.at("sg_slide.cuh").find("mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32"),
            std::string::npos);
  const KernelSignature& sig = k.signature;
  EXPECT_EQ(sig.b_transform.name, "sparsegen_slide_lift");
  EXPECT_EQ(sig.token_scales, 16);
  EXPECT_EQ(sig.launch.grid_x, 4);  // 64 rows / 16
  EXPECT_EQ(sig.launch.grid_y, 1);  // 2 column tiles / nt 2
  EXPECT_EQ(sig.launch.dynamic_shared_bytes, 3 * 1 * 2 * 4 * 32 * 4);
  EXPECT_GT(sig.b_work_bytes, 0);
  EXPECT_NE(describe(sig).find("row_scales"), std::string::npos);
  EXPECT_EQ(sig.b_transform.launch.grid_x, 16);  // one block per token of the 2 column tiles
  EXPECT_EQ(sig.b_transform.launch.grid_y, 1);
  EXPECT_EQ(sig.b_transform.launch.dynamic_shared_bytes, 160 * 2);
}

// ksplit > 1: grid.y = column blocks x K parts, an fp32 workspace of M·N sums and one counter per
// output tile, left zero by the kernel; no workspace with one part.
TEST(SlideCodegen, KParts) {
  const CsrMatrix a = weight_6_8(64, 1000);
  const Problem p = Problem::quantized_spmm(64, 1000, 16, DType::I8, DType::F16, Layout::ColMajor,
                                            Layout::RowMajor);
  SlideSchedule s;
  s.warps = 4;
  s.ksplit = 3;
  const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, DType::I8));
  EXPECT_NE(k.source.find("sg::slide_spmm<T, 2, 1, 1, 2, 4, 1, 3, 1, 0>(values, meta, bw, C"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("ws, reinterpret_cast<unsigned*>(ws + 1024), 2);"), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("float* __restrict__ ws) {"), std::string::npos);
  EXPECT_NE(k.source.find("2 column block(s) x 3 K parts of"), std::string::npos);
  const KernelSignature& sig = k.signature;
  EXPECT_EQ(sig.launch.grid_x, 4);
  EXPECT_EQ(sig.launch.grid_y, 2 * 3);
  EXPECT_EQ(sig.params.back().kind, ParamKind::Workspace);
  EXPECT_EQ(sig.workspace_bytes, 4 * 1024 + 32);  // 64 x 16 sums, 4 x 2 counters (16-byte units)
  EXPECT_TRUE(sig.workspace_zeroed);
  EXPECT_EQ(slide_spec(s).find(";ksplit=3"), slide_spec(s).size() - 9);
  EXPECT_EQ(parse_schedule(slide_spec(s)), Schedule(s));
  s.ksplit = 1;
  const GeneratedKernel k1 = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, DType::I8));
  EXPECT_EQ(k1.signature.workspace_bytes, 0);
  EXPECT_EQ(slide_spec(s).find("ksplit"), std::string::npos);  // one part: the SPEC as before
  // More parts than chunks is refused with a reason.
  s.ksplit = 64;
  EXPECT_FALSE(validate(p, Schedule(s)).empty());
}

// stages=2 (two load steps in flight per warp): the last template argument of every main kernel,
// a SPEC field printed only when 2, and a kernel that compiles for each split and lift.
TEST(SlideCodegen, TwoLoadSteps) {
  const CsrMatrix a = weight_6_8(64, 1000);
  const Problem p = Problem::spmm(64, 1000, 16, DType::F16, Layout::ColMajor, Layout::ColMajor);
  SlideSchedule s;
  s.warps = 4;
  s.stages = 2;
  EXPECT_EQ(slide_spec(s).find(";stages=2"), slide_spec(s).size() - 9);
  EXPECT_EQ(parse_schedule(slide_spec(s)), Schedule(s));
  EXPECT_NE(print_slide(s).find("stages=2 load steps in flight"), std::string::npos);
  const char* calls[3] = {"sg::slide_spmm<T, 0, 1, 1, 2, 4, 0, 1, 2, 0>(",
                          "sg::slide_spmm_rows<T, 0, 1, 1, 2, 4, 0, 1, 2, 0>(",
                          "sg::slide_spmm_fused<T, 0, 4, 1, 1, 2, 4, 1, 2>("};
  int i = 0;
  for (const auto& [split, lift] :
       {std::pair{SlideSplit::K, SlideLift::Kernel}, std::pair{SlideSplit::Rows, SlideLift::Kernel},
        std::pair{SlideSplit::K, SlideLift::Fused}}) {
    s.split = split;
    s.lift = lift;
    const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, DType::F16));
    EXPECT_NE(k.source.find(calls[i++]), std::string::npos) << k.source;
    EXPECT_FALSE(image_for(k, "sm_90").empty());
  }
  s.stages = 1;
  EXPECT_EQ(slide_spec(s).find("stages"), std::string::npos);  // one step: the SPEC as before
  s.stages = 3;
  EXPECT_FALSE(validate(s).empty());
}

// prefetch: the SPEC field (printed when > 0), the template argument of both main kernels, the
// L2 bulk prefetch in the sm_90 code and none for sm_80; lift=fused and out-of-range values are
// refused; the enumeration never offers it (not measured yet).
TEST(SlideCodegen, PrefetchBeforeTheLift) {
  const CsrMatrix a = weight_6_8(64, 1000);
  const Problem p = Problem::spmm(64, 1000, 16, DType::F16, Layout::ColMajor, Layout::ColMajor);
  SlideSchedule s;
  s.warps = 4;
  s.prefetch = 16;
  EXPECT_EQ(slide_spec(s).find(";prefetch=16"), slide_spec(s).size() - 12);
  EXPECT_EQ(parse_schedule(slide_spec(s)), Schedule(s));
  EXPECT_NE(print_slide(s).find("prefetch=16 chunks of A per row tile"), std::string::npos);
  const char* calls[2] = {"sg::slide_spmm<T, 0, 1, 1, 2, 4, 0, 1, 1, 16>(",
                          "sg::slide_spmm_rows<T, 0, 1, 1, 2, 4, 0, 1, 1, 16>("};
  int i = 0;
  for (SlideSplit split : {SlideSplit::K, SlideSplit::Rows}) {
    s.split = split;
    const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, DType::F16));
    EXPECT_NE(k.source.find(calls[i++]), std::string::npos) << k.source;
    for (const char* arch : {"compute_90", "compute_80"}) {
      const std::vector<char> image = image_for(k, arch);
      const std::string ptx(image.begin(), image.end());
      EXPECT_EQ(ptx.find("cp.async.bulk.prefetch.L2") != std::string::npos,
                std::string(arch) == "compute_90")
          << arch;
    }
  }
  s.lift = SlideLift::Fused;
  s.split = SlideSplit::K;
  EXPECT_FALSE(validate(s).empty());
  s.lift = SlideLift::Kernel;
  s.prefetch = kSlideMaxPrefetch + 1;
  EXPECT_FALSE(validate(s).empty());
  for (const Schedule& e : enumerate_slide_schedules(p, a, DeviceLimits::sm90()))
    EXPECT_EQ(e.as<SlideSchedule>().prefetch, 0) << to_string(e);
}

// The lift's staging plan: row-major B stages 8 tokens per block (a column's tokens are
// adjacent); a K too long for shared memory is staged in segments, the 8-bit token maximum then
// found by a pass over B first. Both compile.
TEST(SlideCodegen, LiftStagesRowMajorTilesAndSegmentsOfLongK) {
  {
    const CsrMatrix a = weight_6_8(32, 96);
    const Problem p = Problem::spmm(32, 96, 20, DType::F16, Layout::RowMajor, Layout::RowMajor);
    const GeneratedKernel k =
        emit_slide(p, Schedule(SlideSchedule{}), pack_slide_tc(a, 4, DType::F16));
    EXPECT_NE(k.source.find("sg::slide_lift<T, 0, 4, 128, 0, 8, 0, 0>(B, bw,"), std::string::npos)
        << k.source;
    EXPECT_EQ(k.signature.b_transform.launch.grid_x, 3);  // 3 column tiles of 8 tokens
    EXPECT_FALSE(image_for(k, "sm_90").empty());
  }
  {
    // 128 KB of fp16 per token: more than the lift stages at once (two segments, each its own
    // block of the token: grid.y = 2).
    const int64_t kk = 64000;
    const CsrMatrix a = weight_6_8(16, kk);
    const Problem p = Problem::quantized_spmm(16, kk, 512, DType::I8, DType::F16, Layout::ColMajor,
                                              Layout::ColMajor);
    const GeneratedKernel k =
        emit_slide(p, Schedule(SlideSchedule{}), pack_slide_tc(a, 4, DType::I8));
    EXPECT_NE(k.source.find("sg::slide_lift<T, 2, 4, 128, 1, 1, 1, 0>(B, bw, token_scales,"),
              std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find("chunks staged at a time"), std::string::npos) << k.source;
    const int64_t smem = k.signature.b_transform.launch.dynamic_shared_bytes;
    EXPECT_GT(smem, 64 * 1024);
    EXPECT_LE(smem, 96 * 1024);
    EXPECT_EQ(k.signature.b_transform.launch.grid_y, 2);
    EXPECT_FALSE(image_for(k, "sm_90").empty());
  }
}

// At decode-sized N the token groups are few (N = 1: 8 blocks), so K is cut into segments of
// their own blocks (grid.y) until the grid has about 264 blocks, each at least 4 chunks; at
// N = 512 the groups alone fill the device and a block stages all of K.
TEST(SlideCodegen, LiftSplitsKAcrossBlocksAtDecodeSizes) {
  const int64_t kk = 14336;  // 6:8 lifted: 21504 columns, 336 chunks of int8, 672 of fp16
  const CsrMatrix a = weight_6_8(16, kk);
  for (const DType dt : {DType::I8, DType::F16}) {
    const int64_t chunks = dt == DType::I8 ? 336 : 672;
    const Problem p1 =
        is_quantized(dt)
            ? Problem::quantized_spmm(16, kk, 1, dt, DType::F16, Layout::ColMajor, Layout::ColMajor)
            : Problem::spmm(16, kk, 1, dt, Layout::ColMajor, Layout::ColMajor);
    const GeneratedKernel k = emit_slide(p1, Schedule(SlideSchedule{}), pack_slide_tc(a, 4, dt));
    const auto& lift = k.signature.b_transform.launch;
    EXPECT_EQ(lift.grid_x, 8);  // one token per block (column-major B), 8 of the column tile
    // 264 / 8 = 33 segments wanted: ceil(chunks / 33) chunks each, then ceil(chunks / that).
    const int64_t seg = (chunks + 32) / 33;
    EXPECT_EQ(lift.grid_y, (chunks + seg - 1) / seg) << to_string(dt);
    EXPECT_NE(k.source.find(fmt::format("{} chunks staged at a time, {} block(s) per token group",
                                        seg, lift.grid_y)),
              std::string::npos)
        << k.source;
    EXPECT_FALSE(image_for(k, "sm_90").empty());
    const Problem p512 = is_quantized(dt)
                             ? Problem::quantized_spmm(16, kk, 512, dt, DType::F16,
                                                       Layout::ColMajor, Layout::ColMajor)
                             : Problem::spmm(16, kk, 512, dt, Layout::ColMajor, Layout::ColMajor);
    EXPECT_EQ(emit_slide(p512, Schedule(SlideSchedule{}), pack_slide_tc(a, 4, dt))
                  .signature.b_transform.launch.grid_y,
              1);
  }
}

// e4m3 in the kernel form (ir/slide_schedule.h, SlideForm): the fp16 mma.sp shape (32-column
// chunks), KIND 4 in the lift and the main kernel, 8 bytes of A and of the lifted B per lane and
// chunk; the library form keeps m16n8k64 (64-column chunks, KIND 3) for cuSPARSELt.
TEST(SlideCodegen, E4m3RunsOnTheFp16SparseTensorCores) {
  const CsrMatrix a = weight_6_8(48, 130);
  const Problem p = Problem::quantized_spmm(48, 130, 16, DType::F8E4M3, DType::F16,
                                            Layout::ColMajor, Layout::ColMajor);
  const SlideTcFormat f = pack_slide_tc(a, 4, DType::F8E4M3);
  const SlideTcFormat lib = pack_slide_tc(a, 4, DType::F8E4M3, SlideForm::Library);
  // 130 columns: 17 groups of 8, 204 lifted columns.
  EXPECT_EQ(f.chunks, 7);
  EXPECT_EQ(lib.chunks, 4);
  EXPECT_EQ(f.chunks, slide_chunks(p, 4));
  EXPECT_EQ(f.values.size(), static_cast<size_t>(f.row_tiles * f.chunks * 32 * 8));
  EXPECT_EQ(slide_mma(DType::F8E4M3).lane_bytes(), 8);
  EXPECT_EQ(slide_mma(DType::F8E4M3, SlideForm::Library).lane_bytes(), 16);
  SlideSchedule s;
  s.n_tiles = 2;
  const GeneratedKernel k = emit_slide(p, Schedule(s), f);
  EXPECT_NE(k.source.find("sg::slide_lift<T, 4, 4, 128, 1, 1, 0, 0>(B, bw, token_scales,"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("sg::slide_spmm<T, 4, "), std::string::npos) << k.source;
  EXPECT_EQ(k.signature.b_work_bytes, f.chunks * slide_col_tiles(p) * 32 * 8);
  EXPECT_FALSE(image_for(k, "sm_90").empty());
}

// split=wg: the lift writes core order (ORDER 2; row-major B: 8 tokens per block), the main kernel
// is slide_spmm_wg, needs the sm_90a target, stages a ring of stages + 1 B steps; its cubin holds
// sparse wgmma for fp16, bf16 and int8.
TEST(SlideCodegen, WarpgroupKernelOnSm90a) {
  const CsrMatrix a = weight_6_8(100, 130);
  for (DType dt : {DType::F16, DType::BF16, DType::I8}) {
    const SlideSchedule s = wg_schedule(8, 4, 2, 2);
    const Problem p = is_quantized(dt) ? Problem::quantized_spmm(100, 130, 32, dt, DType::BF16)
                                       : Problem::spmm(100, 130, 32, dt);
    const GeneratedKernel k = emit_wg(a, p, s);
    const int kind = dt == DType::F16 ? 0 : dt == DType::BF16 ? 1 : 2;
    const int quant = is_quantized(dt) ? 1 : 0;
    EXPECT_NE(
        k.source.find(fmt::format("sg::slide_lift<T, {}, 4, 128, {}, 8, 0, 2>(", kind, quant)),
        std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find(fmt::format(
                  "sg::slide_spmm_wg<T, {}, 4, 2, 8, {}, 1, 2, 1, 0, 0, 4, 0, 8>(values, "
                  "meta, bw, C",
                  kind, quant)),
              std::string::npos)
        << k.source;
    EXPECT_TRUE(k.arch_specific);
    // 3 buffers x 2 chunks x (B: 4 tiles x 512, A: 8 warps x 512, metadata: 8 warps x 32 per lane).
    const int meta_lanes = dt == DType::I8 ? 4 : 2;
    EXPECT_EQ(k.signature.launch.dynamic_shared_bytes,
              3 * 2 * (4 * 512 + 8 * 512 + 8 * 32 * meta_lanes));
    EXPECT_EQ(k.signature.launch.grid_x, 1);  // 7 row tiles, 8 per block
    EXPECT_EQ(k.signature.launch.block_threads, 256);
    EXPECT_FALSE(image_for(k, "sm_90a").empty()) << to_string(dt);
  }
}

// split=wg in clusters: the template's last argument, a grid of whole clusters (7 row tiles: 2
// blocks of 4 warps, rounded up to 4), the launch's cluster dimension, and a cubin for sm_90a.
TEST(SlideCodegen, WarpgroupClusterLaunch) {
  const CsrMatrix a = weight_6_8(100, 130);
  SlideSchedule s = wg_schedule(4, 4, 2, 2);
  s.cluster = 4;
  const Problem p = Problem::spmm(100, 130, 32, DType::F16);
  const GeneratedKernel k = emit_wg(a, p, s);
  EXPECT_NE(k.source.find(
                "sg::slide_spmm_wg<T, 0, 4, 2, 4, 0, 1, 2, 4, 0, 0, 4, 0, 4>(values, meta, bw, C"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("// clusters of 4 row blocks"), std::string::npos) << k.source;
  EXPECT_EQ(k.signature.launch.grid_x, 4);
  EXPECT_EQ(k.signature.launch.cluster_x, 4);
  EXPECT_NE(describe(k.signature).find(" cluster=4"), std::string::npos);
  EXPECT_EQ(to_string(Schedule(s)),
            "slide;pattern=6:8;split=wg;lift=kernel;warps=4;mt=1;nt=4;unroll=2;stages=2;cluster=4");
  EXPECT_FALSE(image_for(k, "sm_90a").empty());
}

// split=wg with a producer warp: one more warp in the launch bounds and the launch, the template's
// last argument, and a cubin for sm_90a (with clusters and K parts as well).
TEST(SlideCodegen, WarpgroupProducerWarp) {
  const CsrMatrix a = weight_6_8(100, 130);
  SlideSchedule s = wg_schedule(4, 4, 2, 2);
  s.producer = 1;
  for (const int cluster : {1, 2}) {
    s.cluster = cluster;
    s.ksplit = cluster == 1 ? 1 : 2;
    const Problem p = Problem::spmm(100, 130, 32, DType::F16);
    const GeneratedKernel k = emit_wg(a, p, s);
    EXPECT_NE(k.source.find(fmt::format(
                  "sg::slide_spmm_wg<T, 0, 4, 2, 4, 0, {}, 2, {}, 1, 0, 4, 0, 4>(values, "
                  "meta, bw, C",
                  s.ksplit, cluster)),
              std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find("__launch_bounds__(160) sparsegen_slide("), std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find("// warp-specialised: the last warp stages the steps"),
              std::string::npos);
    EXPECT_EQ(k.signature.launch.block_threads, 160);
    EXPECT_FALSE(image_for(k, "sm_90a").empty()) << cluster;
  }
}

// split=wg with lift=fused: no lift kernel, a TMA tensor map of B as the parameter (its shape: K x
// N column-major, boxes of 64 columns x the block's tokens, 128-byte swizzle; B 16-byte aligned), U
// whole runs (unroll x 3 chunks), one producer warp per buffer in the launch; cubins for sm_90a
// with and without K parts.
TEST(SlideCodegen, WarpgroupFusedLift) {
  for (const int pattern : {4}) {
    const CsrMatrix a = testing::slide_weight(100, 136, pattern, 9);
    for (DType dt : {DType::F16, DType::BF16})
      for (const int ksplit : {1, 2}) {
        SlideSchedule s = wg_schedule(8, 4, 2, 3);
        s.pattern = pattern;
        s.lift = SlideLift::Fused;
        s.ksplit = ksplit;
        const Problem p = Problem::spmm(100, 136, 32, dt, Layout::ColMajor, Layout::ColMajor);
        ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
        const GeneratedKernel k = emit_wg(a, p, s);
        const int u = 2 * (pattern - 1);
        EXPECT_NE(
            k.source.find(fmt::format(
                "sg::slide_spmm_wg<T, {}, 4, {}, 8, 0, {}, 3, 1, 0, 1, {}, 0, 8>(values, meta, "
                "static_cast<const unsigned*>(nullptr), C",
                dt == DType::F16 ? 0 : 1, u, ksplit, pattern)),
            std::string::npos)
            << k.source;
        EXPECT_NE(k.source.find(", &b_map);"), std::string::npos) << k.source;
        EXPECT_NE(k.source.find("const __grid_constant__ sg::TensorMap b_map"), std::string::npos);
        const auto prm = std::find_if(k.signature.params.begin(), k.signature.params.end(),
                                      [](const KernelParam& q) { return q.name == "b_map"; });
        ASSERT_NE(prm, k.signature.params.end());
        EXPECT_EQ(prm->kind, ParamKind::BTensorMap);
        EXPECT_EQ(prm->data, (std::vector<int64_t>{136, 32, 136, 64, 32, 2, 128}));
        EXPECT_EQ(k.source.find("_lift"), std::string::npos) << k.source;
        EXPECT_NE(k.source.find("// lift fused: 4 producer warps, one per buffer"),
                  std::string::npos)
            << k.source;
        EXPECT_TRUE(k.signature.b_transform.name.empty());
        EXPECT_FALSE(k.signature.launch.programmatic_wait);
        EXPECT_EQ(k.signature.b_alignment, 16);
        EXPECT_EQ(k.signature.b_work_bytes, 0);
        EXPECT_EQ(k.signature.launch.block_threads, (8 + 4) * 32);
        // 4 buffers x u chunks x (B: 4 tiles x 512, A: 8 warps x 512, metadata: 8 warps x 64), a
        // multiple of 1024 already, and 1024 to align the first.
        EXPECT_EQ(k.signature.launch.dynamic_shared_bytes,
                  4 * u * (4 * 512 + 8 * 512 + 8 * 64) + 1024);
        EXPECT_FALSE(image_for(k, "sm_90a").empty()) << to_string(Schedule(s));
      }
  }
}

// split=wg lift=fused spread over a fixed grid (stream-K): the template's last argument, the
// grid, the workspace (the blocks' slots and a counter per 16-row tile and column block, zeroed
// once),
// and a cubin for sm_90a.
TEST(SlideCodegen, WarpgroupFusedLiftSpread) {
  const CsrMatrix a = weight_6_8(300, 512);  // 19 row tiles: 3 row blocks of 8 warps
  SlideSchedule s = wg_schedule(8, 4, 1, 3);
  s.lift = SlideLift::Fused;
  s.spread = 5;  // 3 row blocks x 8 runs = 24 runs over 5 blocks
  const Problem p = Problem::spmm(300, 512, 32, DType::F16, Layout::ColMajor, Layout::ColMajor);
  ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
  EXPECT_EQ(slide_spread_work(p, s), 24);
  const GeneratedKernel k = emit_wg(a, p, s);
  EXPECT_NE(
      k.source.find("sg::slide_spmm_wg<T, 0, 4, 3, 8, 0, 1, 3, 1, 0, 1, 4, 1, 8>(values, meta, "
                    "static_cast<const unsigned*>(nullptr), C"),
      std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("// spread: 5 blocks share 3 row blocks x 8 runs equally"),
            std::string::npos)
      << k.source;
  EXPECT_EQ(k.signature.launch.grid_x, 5);
  EXPECT_EQ(k.signature.launch.grid_y, 1);
  EXPECT_TRUE(k.signature.workspace_zeroed);
  // 24 row tiles (3 whole row blocks) x 1 column block x 4 slots (8 runs per row block, at
  // least 24 / 5 = 4 per block: at most 8 / 4 + 2 blocks on a row block) of 4 x 128 sums, then
  // one counter per row tile and column block.
  EXPECT_EQ(slide_spread_slots(p, s), 4);
  EXPECT_EQ(k.signature.workspace_bytes, 4 * 24 * 4 * 4 * 128 + 96);
  EXPECT_EQ(to_string(Schedule(s)),
            "slide;pattern=6:8;split=wg;lift=fused;warps=8;mt=1;nt=4;unroll=1;stages=3;spread=5");
  EXPECT_EQ(parse_schedule(to_string(Schedule(s))), Schedule(s));
  EXPECT_FALSE(image_for(k, "sm_90a").empty());
  s.spread = 25;
  ASSERT_FALSE(validate_slide(p, s).empty());
  EXPECT_NE(validate_slide(p, s).front().find("spread=25 exceeds the 24 runs"), std::string::npos);
  for (const char* bad : {"slide;split=wg;stages=2;spread=4", "slide;split=k;lift=fused;spread=4",
                          "slide;split=wg;lift=fused;stages=2;ksplit=2;spread=4"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
}

// split=wg with fewer row tiles per block than warps: the template's last argument, the grid of
// 7-tile blocks, the pack grouped by 7, and a cubin for sm_90a (lift=fused and lift=kernel).
TEST(SlideCodegen, WarpgroupFewerRowTiles) {
  const CsrMatrix a = weight_6_8(300, 512);  // 19 row tiles: 3 blocks of 7
  for (const SlideLift lift : {SlideLift::Fused, SlideLift::Kernel}) {
    SlideSchedule s = wg_schedule(8, 4, lift == SlideLift::Fused ? 1 : 2, 3);
    s.lift = lift;
    s.tiles = 7;
    const Problem p = Problem::spmm(300, 512, 32, DType::F16, Layout::ColMajor, Layout::ColMajor);
    ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
    const GeneratedKernel k = emit_wg(a, p, s);
    EXPECT_NE(k.source.find(fmt::format(
                  "sg::slide_spmm_wg<T, 0, 4, {}, 8, 0, 1, 3, 1, 0, {}, 4, 0, 7>(values, meta, ",
                  lift == SlideLift::Fused ? 3 : 2, lift == SlideLift::Fused ? 1 : 0)),
              std::string::npos)
        << k.source;
    EXPECT_EQ(k.signature.launch.grid_x, 3);
    EXPECT_EQ(slide_pack_group(s), 7);
    EXPECT_FALSE(image_for(k, "sm_90a").empty()) << to_string(Schedule(s));
  }
}

TEST(SlideCodegen, CompilesForEveryValueType) {
  const CsrMatrix a = weight_6_8(48, 130);
  for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
    for (const char* arch : {"sm_80", "sm_90"}) {
      if (dt == DType::F8E4M3 && std::string(arch) == "sm_80") continue;  // e4m3 mma.sp: sm_89+
      SlideSchedule s;
      s.unroll = 4;
      s.m_tiles = 2;
      s.split = std::string(arch) == "sm_90" ? SlideSplit::Rows : SlideSplit::K;
      if (dtype_bytes(dt) == 2 && s.split == SlideSplit::K) s.lift = SlideLift::Fused;
      const Problem p = is_quantized(dt) ? Problem::quantized_spmm(48, 130, 8, dt, DType::BF16)
                                         : Problem::spmm(48, 130, 8, dt);
      const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, dt));
      EXPECT_FALSE(image_for(k, arch).empty()) << to_string(dt) << " " << arch;
    }
}

// After a lift kernel the main kernel waits for it programmatically (sm_90: griddepcontrol),
// in both splits; the fused one has nothing to wait for.
TEST(SlideCodegen, WaitsForTheLiftOnlyWhenThereIsOne) {
  const CsrMatrix a = weight_6_8(48, 130);
  for (DType dt : {DType::F16, DType::I8})
    for (SlideSplit split : {SlideSplit::K, SlideSplit::Rows}) {
      SlideSchedule s;
      s.split = split;
      const Problem p = is_quantized(dt) ? Problem::quantized_spmm(48, 130, 8, dt, DType::F16)
                                         : Problem::spmm(48, 130, 8, dt);
      const GeneratedKernel k = emit_slide(p, Schedule(s), pack_slide_tc(a, 4, dt));
      EXPECT_TRUE(k.signature.launch.programmatic_wait);
      EXPECT_TRUE(k.signature.b_transform.present());
      EXPECT_FALSE(image_for(k, "sm_90").empty()) << to_string(dt);
    }
  SlideSchedule fused;
  fused.split = SlideSplit::K;
  fused.lift = SlideLift::Fused;
  const GeneratedKernel f = emit_slide(Problem::spmm(48, 130, 8, DType::F16), Schedule(fused),
                                       pack_slide_tc(a, 4, DType::F16));
  EXPECT_FALSE(f.signature.launch.programmatic_wait);
}

}  // namespace
}  // namespace sparsegen::codegen
