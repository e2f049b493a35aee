// twell emitter: the two kernels' calls and launch shapes (pattern checks), and NVRTC cubins for
// sm_80 and sm_90 in bf16 and fp16, gated and not, x rows aligned (cp.async) or not; no GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/twell.h"
#include "ir/twell_schedule.h"
#include "runtime/nvrtc_compiler.h"

namespace sparsegen::codegen {
namespace {

TEST(TwellCodegen, SourceShapeAndSignature) {
  const Problem p = Problem::gated_ffn(300, 2048, 5632, DType::BF16);
  const TwellSchedule s{128, 4, 8};
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  const TwellBuffer b = twell_buffer(p, s);
  const TwellWeights w = twell_weights_layout(p);
  EXPECT_NE(k.source.find(fmt::format("sg::twell_gate_gemm<T, 128, 32, 8>(B, values + 0, bw, "
                                      "sg_smem, 300, 2048, 2048, 5632, 44, {}, {})",
                                      b.entries / 4, b.backup / 4)),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find(
                fmt::format("sg::twell_down<T, 8, 1, 128, 32, 1, 1, 2048, 1, 0, 2, 255, 8, 32>(B, "
                            "values + {}, values + {}, bw, C, sg_smem, "
                            "static_cast<float*>(nullptr), static_cast<int*>(nullptr), "
                            "static_cast<int*>(nullptr), static_cast<unsigned*>(nullptr)"
                            ", 0, alpha, beta, 300, 2048, 5632, 44",
                            w.up_t, w.down)),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("using T = __nv_bfloat16;"), std::string::npos);
  EXPECT_EQ(k.signature.b_transform.name, "sparsegen_twell_gate");
  EXPECT_EQ(k.signature.b_transform.launch.grid_x, 44);
  EXPECT_EQ(k.signature.b_transform.launch.grid_y, 3);
  EXPECT_EQ(k.signature.launch.grid_x, 300);
  EXPECT_EQ(k.signature.launch.block_threads, 256);
  EXPECT_EQ(k.signature.b_alignment, 16);
  EXPECT_EQ(k.signature.b_work_bytes, b.bytes);
  EXPECT_EQ(w.elements, 3 * 5632 * 2048);
  // K = 100: x rows are not 16-byte aligned, element loads; weights padded to 104.
  const Problem q = Problem::gated_ffn(5, 100, 700, DType::F16, false);
  const GeneratedKernel kq = emit_twell(q, Schedule(TwellSchedule{64, 16, 4}));
  EXPECT_NE(kq.source.find("sg::twell_gate_gemm<T, 64, 4, 1>(B, values + 0, bw, sg_smem, 5, 100, "
                           "104, 700, 11,"),
            std::string::npos)
      << kq.source;
  EXPECT_NE(kq.source.find("sg::twell_down<T, 4, 1, 64, 4, 0, 1, 104, 1, 0, 2, 255, 8, 32>"),
            std::string::npos)
      << kq.source;
  EXPECT_EQ(kq.signature.b_alignment, 2);
  EXPECT_EQ(twell_weights_layout(q).elements, 2 * 700 * 104);
}

// gate=lib: the library GEMM writes G = ReLU(x · W_g) into the backup region, the pack kernel
// runs as the prologue, kernel 2 as before.
TEST(TwellCodegen, LibraryGateSignature) {
  const Problem p = Problem::gated_ffn(300, 100, 1000, DType::F16);
  const TwellSchedule s{64, 8, 8, TwellGate::Lib};
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  ASSERT_EQ(k.signature.gemms_before.size(), 1u);
  const LibraryGemm& g = k.signature.gemms_before[0];
  EXPECT_EQ(g.m, 300);
  EXPECT_EQ(g.n, 1000);
  EXPECT_EQ(g.k, 100);
  EXPECT_TRUE(g.relu && g.b_transposed && !g.run_alpha_beta);
  EXPECT_EQ(g.a.buffer, ParamKind::B);
  EXPECT_EQ(g.a.ld, 100);
  EXPECT_EQ(g.b.buffer, ParamKind::Values);
  EXPECT_EQ(g.b.offset, 0);
  EXPECT_EQ(g.b.ld, 104);
  EXPECT_EQ(g.c.buffer, ParamKind::BWork);
  EXPECT_EQ(g.c.offset, twell_buffer(p, s).backup / 2);
  EXPECT_EQ(g.c.ld, 1000);
  EXPECT_FALSE(k.signature.b_transform.present());
  // N = 1000 is a multiple of 8: a warp per token row with 16-byte loads, 8 rows per block.
  EXPECT_EQ(k.signature.prologue.name, "sparsegen_twell_pack");
  EXPECT_EQ(k.signature.prologue.launch.grid_x, 38);
  EXPECT_EQ(k.signature.prologue.launch.grid_y, 1);
  EXPECT_NE(k.source.find("sg::twell_pack_rows<T, 64, 8, 4>(bw, 300, 1000, 16,"), std::string::npos)
      << k.source;
  EXPECT_EQ(k.source.find("twell_gate_gemm"), std::string::npos);

  // N = 1001: G's rows are not 16-byte aligned, so a warp per (row, tile) with 2-byte loads.
  const Problem odd = Problem::gated_ffn(300, 100, 1001, DType::F16);
  const GeneratedKernel ko = emit_twell(odd, Schedule(s));
  EXPECT_EQ(ko.signature.prologue.launch.grid_x, 16);
  EXPECT_EQ(ko.signature.prologue.launch.grid_y, 38);
  EXPECT_NE(ko.source.find("sg::twell_pack<T, 64, 8>(bw, 300, 1001, 16,"), std::string::npos)
      << ko.source;
}

// pack=mask: the library GEMM also writes G's ReLU bit-mask (rows of N rounded up to 128 bits)
// after the TwELL buffer, and the pack kernel reads it, a warp per token row for any N.
TEST(TwellCodegen, MaskPackReadsTheLibraryBitMask) {
  for (int64_t n : {int64_t{1000}, int64_t{1001}}) {
    const Problem p = Problem::gated_ffn(300, 100, n, DType::BF16);
    TwellSchedule s{64, 8, 8, TwellGate::Lib};
    const TwellBuffer plain = twell_buffer(p, s);
    s.pack = TwellPack::Mask;
    const TwellBuffer b = twell_buffer(p, s);
    EXPECT_EQ(b.mask, plain.bytes);
    EXPECT_EQ(b.mask % 256, 0);
    EXPECT_EQ(b.mask_bits, 1024);
    EXPECT_EQ(b.bytes, b.mask + 300 * 128);
    const GeneratedKernel k = emit_twell(p, Schedule(s));
    ASSERT_EQ(k.signature.gemms_before.size(), 1u);
    const LibraryGemm& g = k.signature.gemms_before[0];
    EXPECT_TRUE(g.relu);
    EXPECT_EQ(g.relu_mask_ld, 1024);
    EXPECT_EQ(g.relu_mask.buffer, ParamKind::BWork);
    EXPECT_EQ(g.relu_mask.offset, b.mask);
    EXPECT_EQ(k.signature.b_work_bytes, b.bytes);
    EXPECT_EQ(k.signature.prologue.launch.grid_x, 38);
    EXPECT_EQ(k.signature.prologue.launch.grid_y, 1);
    EXPECT_NE(k.source.find(fmt::format("sg::twell_pack_mask<T, 64, 8>(bw, 300, {}, 16, {}, {}, "
                                        "-1, {}, 32)",
                                        n, b.entries / 4, b.backup / 4, b.mask / 4)),
              std::string::npos)
        << k.source;
    EXPECT_EQ(k.source.find("twell_pack_rows"), std::string::npos);
    EXPECT_NE(describe(k.signature).find("relu + bit-mask (1024 bits a row)"), std::string::npos)
        << describe(k.signature);
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = k.headers;
    EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty());
  }
}

// split = 16: kernel 2's grid has 16 blocks per token and a self-cleaning fp32 workspace.
TEST(TwellCodegen, SplitTokensShareAWorkspace) {
  const Problem p = Problem::gated_ffn(3, 256, 1000, DType::BF16);
  const TwellSchedule s{128, 4, 8, TwellGate::Lib, 16};
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  EXPECT_EQ(k.signature.launch.grid_x, 3);
  EXPECT_EQ(k.signature.launch.grid_y, 16);
  EXPECT_EQ(k.signature.workspace_bytes, (3 * 256 + 3) * 4);
  EXPECT_TRUE(k.signature.workspace_zeroed);
  EXPECT_EQ(k.signature.params.back().kind, ParamKind::Workspace);
  EXPECT_NE(k.source.find("sg::twell_down<T, 8, 1, 128, 32, 1, 1, 256, 16, 0, 2, 255, 8, 32>"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("ws, reinterpret_cast<int*>(ws + 768), static_cast<int*>(nullptr), "
                          "static_cast<unsigned*>(nullptr), 0, alpha, beta"),
            std::string::npos)
      << k.source;
  nvrtc::CompileOptions o;
  o.arch = "sm_90";
  o.headers = k.headers;
  EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty());
}

// balance=queue: a persistent grid of min(M, 1024) blocks; the workspace holds the pool's rows
// and counters, the queue's control words and room for every 64-bit item a launch can push, all
// zero between launches.
TEST(TwellCodegen, QueueBalanceHasAPersistentGridAndAWorkQueue) {
  const Problem p = Problem::gated_ffn(3000, 256, 1000, DType::BF16);
  TwellSchedule s{128, 4, 8, TwellGate::Lib};
  s.balance = TwellBalance::Queue;
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  EXPECT_EQ(k.signature.launch.grid_x, 1024);
  EXPECT_EQ(k.signature.launch.grid_y, 1);
  const TwellWorkspace ws = twell_workspace(p, s);
  EXPECT_EQ(ws.rows, 1024);
  EXPECT_EQ(ws.counters, 1024 * 256);
  EXPECT_EQ(ws.control, 1024 * 256 + 1024);
  EXPECT_EQ(ws.items, 1024 * 256 + 1024 + 8);
  // N = 1000: 8 tiles of 128 = 16 batches, at most 8 parts of 2: 7 items per token.
  EXPECT_EQ(twell_max_parts(p, s), 8);
  EXPECT_EQ(ws.bytes, (ws.items + 2 * 3000 * 7) * 4);
  EXPECT_EQ(k.signature.workspace_bytes, ws.bytes);
  EXPECT_TRUE(k.signature.workspace_zeroed);
  EXPECT_NE(k.source.find(fmt::format(
                "sg::twell_down<T, 8, 1, 128, 32, 1, 1, 256, 1, 1, 2, 255, 8, 32>(B, values + "
                "256000, values + "
                "512000, bw, C, sg_smem, ws, reinterpret_cast<int*>(ws + {}), "
                "reinterpret_cast<int*>(ws + {}), reinterpret_cast<unsigned*>(ws + {}), 1024, "
                "alpha, beta, 3000, 256, 1000,",
                ws.counters, ws.control, ws.items)),
            std::string::npos)
      << k.source;
  // Fewer tokens than the grid's cap: one block each, a pool row each.
  const Problem few = Problem::gated_ffn(5, 100, 700, DType::F16, false);
  const GeneratedKernel kf = emit_twell(few, Schedule(s));
  EXPECT_EQ(kf.signature.launch.grid_x, 5);
  EXPECT_EQ(twell_workspace(few, s).rows, 5);
  for (const char* arch : {"sm_80", "sm_90"}) {
    nvrtc::CompileOptions o;
    o.arch = arch;
    o.headers = k.headers;
    EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty()) << arch;
    o.headers = kf.headers;
    EXPECT_FALSE(nvrtc::compile(kf.source, o).image.empty()) << arch;
  }
}

// Queue teams: a block of 8 warps holds `teams` workers, each with its own 16-byte aligned slice
// of shared memory; the grid covers M / teams blocks; a thread of a smaller worker holds more
// column groups.
TEST(TwellCodegen, QueueTeamsShareABlock) {
  const Problem p = Problem::gated_ffn(3000, 2048, 1000, DType::BF16);
  TwellSchedule s{128, 4, 8, TwellGate::Lib, 1, TwellBalance::Queue, 4};
  EXPECT_TRUE(validate(s).empty());
  EXPECT_EQ(s.team_warps(), 2);
  EXPECT_EQ(twell_groups(p, s), 4);  // 2048 / 8 columns over 64 threads
  // Per worker: 4096 bytes of x, 768 of batch, 9 + 8 ints of tiles, 32: 4964 -> 4976.
  EXPECT_EQ(twell_down_shared_bytes(p, s), 4 * 4976);
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  EXPECT_EQ(k.signature.launch.grid_x, 750);
  EXPECT_EQ(k.signature.launch.block_threads, 256);
  EXPECT_NE(k.source.find("sg::twell_down<T, 8, 4, 128, 32, 1, 4, 2048, 1, 1, 2, 255, 8, 32>"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("in 4 workers of 2"), std::string::npos);
  s.teams = 8;  // one warp per worker: 8 groups per lane
  EXPECT_EQ(twell_groups(p, s), 8);
  const GeneratedKernel k8 = emit_twell(p, Schedule(s));
  EXPECT_EQ(k8.signature.launch.grid_x, 375);
  for (const GeneratedKernel* g : {&k, &k8}) {
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = g->headers;
    EXPECT_FALSE(nvrtc::compile(g->source, o).image.empty());
  }
}

// balance=even: a grid of `blocks` blocks, the row pack writing two ints per token after the
// backup, one fp32 row and counter per worker, the block's work line after the teams' slices.
TEST(TwellCodegen, EvenBalanceHasAFixedGridAndTokenCounts) {
  const Problem p = Problem::gated_ffn(3000, 2048, 1000, DType::BF16);
  TwellSchedule s{128, 4, 8, TwellGate::Lib, 1, TwellBalance::Even, 4};
  EXPECT_FALSE(validate(s).empty());  // no grid yet
  s.blocks = 264;
  EXPECT_TRUE(validate(s).empty());
  const TwellBuffer b = twell_buffer(p, s);
  EXPECT_EQ(b.tokens, (b.backup + 3000 * 1000 * 2 + 255) / 256 * 256);
  EXPECT_EQ(b.bytes, (b.tokens + 3000 * 8 + 255) / 256 * 256);
  EXPECT_EQ(twell_down_shared_bytes(p, s), 4 * 4976 + (8 * 33 + 1) * 8);
  const TwellWorkspace ws = twell_workspace(p, s);
  EXPECT_EQ(ws.rows, 264 * 4);
  EXPECT_EQ(ws.bytes, (264 * 4 * 2048 + 264 * 4) * 4);
  const GeneratedKernel k = emit_twell(p, Schedule(s));
  EXPECT_EQ(k.signature.launch.grid_x, 264);
  EXPECT_EQ(k.signature.workspace_bytes, ws.bytes);
  EXPECT_TRUE(k.signature.workspace_zeroed);
  EXPECT_EQ(k.signature.b_work_bytes, b.bytes);
  EXPECT_NE(k.source.find(fmt::format("sg::twell_pack_rows<T, 128, 32, 4>(bw, 3000, 1000, 8, {}, "
                                      "{}, {})",
                                      b.entries / 4, b.backup / 4, b.tokens / 4)),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find(fmt::format(
                "sg::twell_down<T, 8, 4, 128, 32, 1, 4, 2048, 1, 2, 2, 255, 8, 32>(B, values + "
                "2048000, values + 4096000, bw, C, sg_smem, ws, reinterpret_cast<int*>(ws + {}), "
                "static_cast<int*>(nullptr), static_cast<unsigned*>(nullptr), 0, alpha, beta, "
                "3000, 2048, 1000, 8, {}, {}, {})",
                ws.counters, b.entries / 4, b.backup / 4, b.tokens / 4)),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("264 blocks, each worker an equal share"), std::string::npos);
  EXPECT_NE(k.source.find("__launch_bounds__(256, 2) sparsegen_twell("), std::string::npos);
  // The other balances pass no token counts.
  s.balance = TwellBalance::Queue;
  s.blocks = 0;
  EXPECT_NE(
      emit_twell(p, Schedule(s))
          .source.find(fmt::format("(bw, 3000, 1000, 8, {}, {}, -1)", b.entries / 4, b.backup / 4)),
      std::string::npos);
  nvrtc::CompileOptions o;
  o.arch = "sm_90";
  o.headers = k.headers;
  EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty());
}

TEST(TwellCodegen, CompilesForSm80AndSm90) {
  for (const char* arch : {"sm_80", "sm_90"})
    for (DType dt : {DType::BF16, DType::F16})
      for (int variant = 0; variant < 2; ++variant) {
        const Problem p = Problem::gated_ffn(33, variant == 0 ? 256 : 250, 1000, dt, variant == 0);
        const GeneratedKernel k =
            emit_twell(p, Schedule(TwellSchedule{variant == 0 ? 128 : 64, 4, 8,
                                                 variant == 0 ? TwellGate::Mma : TwellGate::Lib}));
        nvrtc::CompileOptions o;
        o.arch = arch;
        o.headers = k.headers;
        const auto r = nvrtc::compile(k.source, o);
        EXPECT_FALSE(r.image.empty()) << to_string(dt) << " " << arch;
      }
}

}  // namespace
}  // namespace sparsegen::codegen
