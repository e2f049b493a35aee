// bitmap_tc emitter (codegen/bitmap_tc.h): the emitted CUDA's shape (pattern checks), the kernel
// signature (tables, launch shape, workspace), and NVRTC compilation for sm_90 over dtypes, N,
// m_tiles, ksplit and stages (no GPU needed).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codegen/bitmap_tc.h"
#include "ir/bitmap_format.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/diagnostics.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/codegen/codegen_test_matrices.h"

namespace sparsegen::codegen {
namespace {

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// The kernel's PTX for sm_90a (wgmma, bulk copies), compiled by NVRTC with its headers.
std::string sm90a_ptx(const GeneratedKernel& k) {
  nvrtc::CompileOptions o;
  o.arch = "compute_90a";
  o.headers = k.headers;
  return std::string(nvrtc::compile(k.source, o).image.data());
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// 37 rows (not a multiple of 16: the last row tile is partial), 200 columns (not a multiple of
// 64: 4 column tiles, the last one 8 wide), seeded random row lengths with empty rows, a long row
// and a fully dense one.
CsrMatrix odd_matrix() {
  std::mt19937_64 g(42);
  std::uniform_int_distribution<int64_t> len(0, 60);
  std::vector<int64_t> lengths;
  for (int r = 0; r < 37; ++r) lengths.push_back(r % 6 == 2 ? 0 : len(g));
  lengths[9] = 200;
  lengths[20] = 150;
  return testing::csr_with_lengths(lengths, 200, 17);
}

BitmapTcSchedule make(int warps, int mt, int ksplit, int stages, int kt = 1,
                      MmaKind mma = MmaKind::Sync) {
  BitmapTcSchedule s;
  s.warps_per_block = warps;
  s.m_tiles = mt;
  s.k_tiles = kt;
  s.ksplit = ksplit;
  s.stages = stages;
  s.mma = mma;
  return s;
}

TEST(BitmapTcCodegen, EmittedKernelShape) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  const Problem p = Problem::spmm(a.rows, a.cols, 24, DType::F16);
  const Schedule s = parse_schedule("bitmap_tc;warps=4;mt=2;ksplit=1;stages=3");
  const GeneratedKernel k = emit_bitmap_tc(p, s, f);
  const std::string& src = k.source;
  EXPECT_TRUE(has(src, "extern \"C\" __global__ void __launch_bounds__(128) sparsegen_bitmap_tc("));
  EXPECT_TRUE(has(src, "using T = __half;"));
  EXPECT_TRUE(has(src, "extern __shared__ __align__(16) unsigned sg_smem[];"));
  EXPECT_TRUE(has(src, "sg::bitmap_tc_load_tile_ptrs<8, 4, 4, 128>("));
  // B tile: NT = 3 n8 tiles, 48-byte rows (3 units of 16: odd), 128 threads, 64 rows per step;
  // rows from k_end = min(K, end of the K part) on are zero-filled.
  EXPECT_TRUE(has(src, "sg::bitmap_tc_issue_b<T, 3, 48, 128, 64>("));
  EXPECT_TRUE(has(src, "const int k_end = min(200, (ct0 + tiles) * 64);"));
  EXPECT_TRUE(has(src, "const int steps = (tiles + 0) / 1;"));
  // Value copies per lane: the largest tile, 16-byte chunks over 32 lanes, at least one.
  EXPECT_TRUE(has(src, fmt::format("sg::bitmap_tc_issue_a<T, {}>(",
                                   std::max<int64_t>(1, (f.max_tile_values / 8 + 31) / 32))));
  // Stage buffers as 32-bit shared addresses after the tile pointers.
  EXPECT_TRUE(has(src, "const unsigned s_stage0 = sg::smem_addr(sg_smem) + "));
  // mt = 2 A tiles per warp (kt = 1): their lane words and value starts, a scan per row tile.
  EXPECT_TRUE(
      has(src, fmt::format("sg::bitmap_tc_lanes<2, {}, 0, 0>(",
                           bitmap_tc_smem(p, s.as<BitmapTcSchedule>(), f.max_tile_values).a_tile)));
  EXPECT_TRUE(has(src, "sg::bitmap_tc_a_quarter("));
  EXPECT_TRUE(has(src, "sg::bitmap_tc_mma_quarter<T, 3, 2, 48>("));
  EXPECT_TRUE(has(src, "sg::cp_async_commit();"));
  EXPECT_TRUE(has(src, "sg::cp_async_wait<2>();"));  // stages - 1 groups in flight
  EXPECT_EQ(count(src, "sg::cp_async_wait<"), 1u);
  EXPECT_TRUE(has(src, "sg::bitmap_tc_finish<T, 3, 0>(C, static_cast<float*>(nullptr),"));
  // ksplit = 1: stores C directly; no workspace, no aux kernels.
  EXPECT_TRUE(has(src, "    T* __restrict__ C,\n"));
  EXPECT_FALSE(has(src, " ws"));
  EXPECT_FALSE(has(src, "_init_ws"));
  EXPECT_FALSE(has(src, "_store_ws"));
  EXPECT_FALSE(has(src, "atomicAdd"));
  EXPECT_EQ(count(src, "__global__"), 1u);
  // Row-major C: element (r, c) at r * 24 + c * 1 (M = 37 rows).
  EXPECT_TRUE(has(src, ", 37, 24, 1, alpha, beta, lane);"));
  EXPECT_EQ(k.headers.count("sg_bitmap_tc.cuh"), 1u);
  EXPECT_EQ(k.headers.count("sg_dtype.cuh"), 1u);

  // Two stages wait for one group.
  const GeneratedKernel k2 =
      emit_bitmap_tc(p, parse_schedule("bitmap_tc;warps=8;mt=1;ksplit=1;stages=2"), f);
  EXPECT_TRUE(has(k2.source, "__launch_bounds__(256)"));
  EXPECT_TRUE(has(k2.source, "sg::cp_async_wait<1>();"));
  EXPECT_TRUE(has(k2.source, "sg::bitmap_tc_mma_quarter<T, 3, 1, 48>("));

  // bf16, N = 128 (16 n8 tiles, 272-byte B rows), a custom name.
  const Problem p128 = Problem::spmm(a.rows, a.cols, 128, DType::BF16);
  const GeneratedKernel kb =
      emit_bitmap_tc(p128, parse_schedule("bitmap_tc;warps=1"), f, {.kernel_name = "my_tc_kernel"});
  EXPECT_TRUE(has(kb.source, "using T = __nv_bfloat16;"));
  EXPECT_TRUE(has(kb.source, "__launch_bounds__(32) my_tc_kernel("));
  EXPECT_TRUE(has(kb.source, "sg::bitmap_tc_issue_b<T, 16, 272, 32, 64>("));
  EXPECT_TRUE(has(kb.source, "sg::bitmap_tc_mma_quarter<T, 16, 1, 272>("));
  EXPECT_EQ(kb.signature.kernel_name, "my_tc_kernel");
}

// kt > 1: a pipeline step covers kt column tiles: kt x 64 B rows, kt A tiles per row tile (past
// the part: empty), ceil(tiles / kt) steps, 4·kt quarters per step.
TEST(BitmapTcCodegen, MultiTileSteps) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  const Problem p = Problem::spmm(a.rows, a.cols, 24, DType::F16);
  const BitmapTcSchedule b = make(4, 2, 1, 3, 2);
  const GeneratedKernel k = emit_bitmap_tc(p, Schedule(b), f);
  const std::string& src = k.source;
  EXPECT_TRUE(has(src, "const int steps = (tiles + 1) / 2;"));
  EXPECT_TRUE(has(src, "sg::bitmap_tc_issue_b<T, 3, 48, 128, 128>("));
  EXPECT_TRUE(has(src, "for (int u = 0; u < 2; ++u)"));
  EXPECT_TRUE(has(src, "const bool ok = rt < 3 && j < tiles;"));
  // A lane word and a value address per A tile (mt x kt), mt x 4 operand registers.
  EXPECT_TRUE(has(src, "unsigned w[4], addr[4], a[8];"));
  EXPECT_TRUE(has(src, "for (int uq = 0; uq < 8; ++uq)"));
  EXPECT_TRUE(has(src, "sg::bitmap_tc_mma_quarter<T, 3, 2, 48>("));
  EXPECT_TRUE(has(src, "sg::cp_async_wait<2>();"));
  // Shared addresses: the stages start after the tile pointers, 8 x 5 x 4 = 160 bytes; a stage
  // is 2 x (3072 + 8 x a_tile) bytes; the A tiles start after the two B tiles (6144 bytes).
  const BitmapTcSmem m = bitmap_tc_smem(p, b, f.max_tile_values);
  EXPECT_EQ(k.signature.launch.dynamic_shared_bytes, m.total);
  EXPECT_EQ(m.tile_ptrs, 160);
  EXPECT_EQ(m.stage, 2 * (3072 + 8 * m.a_tile));
  EXPECT_TRUE(has(src, "const unsigned s_stage0 = sg::smem_addr(sg_smem) + 160;")) << src;
  const std::string stage = "s_stage0 + (buf) * " + std::to_string(m.stage);
  EXPECT_TRUE(has(src, stage + ", B,")) << src;
  EXPECT_TRUE(has(src, stage + " + 6144 + (rtl * 2 + u) * " + std::to_string(m.a_tile) + ","))
      << src;
  // kt = 2: the two k tiles of a row tile share a scan.
  EXPECT_TRUE(has(src, fmt::format("sg::bitmap_tc_lanes<4, {}, 1, 0>({} + 6144 + (warp * 4) * {},",
                                   m.a_tile, stage, m.a_tile)))
      << src;

  const GeneratedKernel k4 = emit_bitmap_tc(p, Schedule(make(2, 1, 1, 2, 4)), f);
  EXPECT_TRUE(has(k4.source, "const int steps = (tiles + 3) / 4;"));
  EXPECT_TRUE(has(k4.source, "sg::bitmap_tc_issue_b<T, 3, 48, 64, 256>("));
  EXPECT_TRUE(has(k4.source, "for (int uq = 0; uq < 16; ++uq)"));
  EXPECT_TRUE(has(k4.source, "sg::cp_async_wait<1>();"));
}

// ksplit > 1: the kernel adds into an fp32 workspace (its last parameter) and the last block of
// each row block stores C = ws + beta·C through bitmap_tc_split_finish; no aux kernels.
TEST(BitmapTcCodegen, SplitKUsesWorkspace) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  for (Layout c : {Layout::RowMajor, Layout::ColMajor}) {
    const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::BF16, Layout::RowMajor, c);
    const GeneratedKernel k =
        emit_bitmap_tc(p, parse_schedule("bitmap_tc;warps=4;mt=1;ksplit=3;stages=2"), f);
    const std::string& src = k.source;
    EXPECT_TRUE(has(src, "    const int* __restrict__ tile_ptr,\n    float* __restrict__ ws) {"));
    EXPECT_TRUE(has(src, "T* __restrict__ C,\n    float alpha"));
    EXPECT_EQ(count(src, "__global__"), 1u);
    EXPECT_TRUE(has(src, "sg::bitmap_tc_finish<T, 8, 1>(C, ws,"));
    // Counters after the M·N = 37·64 = 2368 floats; 64 rows per block (4 warps x 1 row tile).
    EXPECT_TRUE(has(src,
                    "sg::bitmap_tc_split_finish<T, 64, 64, 128>(C, ws, "
                    "reinterpret_cast<unsigned*>(ws + 2368), bx * 64, 37,"));
    // 4 column tiles in 3 parts of 2: the third part is empty, adds nothing, but is counted.
    EXPECT_TRUE(has(src, "const int bx = blockIdx.x, by = blockIdx.y;"));
    EXPECT_TRUE(has(src, "const int ct0 = by * 2;"));
    EXPECT_TRUE(has(src, "const int tiles = min(4 - ct0, 2);"));
    EXPECT_TRUE(has(src, "if (tiles > 0) {"));
    EXPECT_FALSE(has(src, "return;"));
    // C strides: row-major (r·N + c), column-major (r + c·M).
    const std::string strides = c == Layout::RowMajor ? ", 37, 64, 1, alpha, beta, lane);"
                                                      : ", 37, 1, 37, alpha, beta, lane);";
    EXPECT_TRUE(has(src, strides)) << src;
  }
}

TEST(BitmapTcCodegen, Signature) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  ASSERT_EQ(f.row_tiles, 3);
  ASSERT_EQ(f.col_tiles, 4);
  for (int ksplit : {1, 3}) {
    const Problem p = Problem::spmm(a.rows, a.cols, 40, DType::F16, Layout::RowMajor,
                                    ksplit == 1 ? Layout::ColMajor : Layout::RowMajor);
    const BitmapTcSchedule b = make(2, 2, ksplit, 3);
    const GeneratedKernel k = emit_bitmap_tc(p, Schedule(b), f);
    const KernelSignature& sig = k.signature;
    EXPECT_EQ(sig.kernel_name, "sparsegen_bitmap_tc");
    const size_t np = ksplit > 1 ? 8 : 7;
    ASSERT_EQ(sig.params.size(), np);
    const char* names[] = {"values", "B", "C", "alpha", "beta", "masks", "tile_ptr", "ws"};
    const ParamKind kinds[] = {ParamKind::Values,   ParamKind::B,        ParamKind::C,
                               ParamKind::Alpha,    ParamKind::Beta,     ParamKind::U32Table,
                               ParamKind::I32Table, ParamKind::Workspace};
    for (size_t i = 0; i < np; ++i) {
      EXPECT_EQ(sig.params[i].name, names[i]) << i;
      EXPECT_EQ(sig.params[i].kind, kinds[i]) << i;
      // The parameters appear in the source in this order.
      if (i == 0) continue;
      EXPECT_LT(k.source.find(" " + sig.params[i - 1].name + ",\n"),
                k.source.find(" " + sig.params[i].name + (i + 1 == np ? ")" : ",\n")))
          << sig.params[i].name;
    }
    // Masks: the 32 lane words of every tile, tiles in order.
    const std::vector<int64_t>& words = sig.params[5].data;
    ASSERT_EQ(words.size(), static_cast<size_t>(32 * f.tiles()));
    for (int64_t t = 0; t < f.tiles(); ++t) {
      const auto w = bitmap_lane_words(f, t);
      for (size_t l = 0; l < 32; ++l)
        EXPECT_EQ(words[static_cast<size_t>(t * 32) + l], static_cast<int64_t>(w[l]));
    }
    EXPECT_EQ(words, bitmap_mask_words(f));
    EXPECT_EQ(sig.params[6].data, f.tile_ptr);
    EXPECT_EQ(sig.params[6].data.size(), static_cast<size_t>(f.tiles() + 1));
    EXPECT_TRUE(sig.params[0].data.empty());
    // Launch: 64 rows per block (2 warps x 2 row tiles) -> ceil(37 / 64) = 1; grid.y = ksplit.
    EXPECT_EQ(sig.launch.grid_x, 1);
    EXPECT_EQ(sig.launch.grid_x, (a.rows + b.rows_per_block() - 1) / b.rows_per_block());
    EXPECT_EQ(sig.launch.grid_y, ksplit);
    EXPECT_EQ(sig.launch.block_threads, 64);
    EXPECT_EQ(sig.launch.dynamic_shared_bytes, bitmap_tc_smem(p, b, f.max_tile_values).total);
    EXPECT_FALSE(sig.empty_grid());
    if (ksplit == 1) {
      EXPECT_EQ(sig.workspace_bytes, 0);
      EXPECT_TRUE(sig.prologue.name.empty());
      EXPECT_TRUE(sig.epilogue.name.empty());
    } else {
      // 37·40 sums (a multiple of 4) and one counter per row block, rounded to 16 bytes.
      EXPECT_EQ(sig.workspace_bytes, 37 * 40 * 4 + 16);
      EXPECT_TRUE(sig.workspace_zeroed);
      EXPECT_TRUE(sig.prologue.name.empty());
      EXPECT_TRUE(sig.epilogue.name.empty());
    }
  }
  // Many rows: grid.x counts blocks of rows_per_block rows.
  const CsrMatrix tall = testing::csr_with_lengths(std::vector<int64_t>(1000, 3), 70, 9);
  const Problem pt = Problem::spmm(tall.rows, tall.cols, 8, DType::BF16);
  const GeneratedKernel kt =
      emit_bitmap_tc(pt, parse_schedule("bitmap_tc;warps=8;mt=2"), pack_bitmap_tiles(tall));
  EXPECT_EQ(kt.signature.launch.grid_x, 4);  // ceil(1000 / 256)
  EXPECT_EQ(kt.signature.launch.block_threads, 256);
}

TEST(BitmapTcCodegen, MaskWordsAreLaneWords) {
  // One 16 x 64 tile: row 0 = columns 1 and 32, row 1 = every column, other rows empty.
  BitmapTileFormat f;
  f.rows = 16;
  f.cols = 64;
  f.row_tiles = f.col_tiles = 1;
  f.masks.assign(16, 0);
  f.masks[0] = 0x0000000100000002ULL;
  f.masks[1] = ~uint64_t{0};
  std::vector<int64_t> expect(32, 0);
  // (0, 1): lane 0 bit 1; (0, 32): quarter 2, lane 0, bit 16. Row 1 is g = 1: lanes 4..7, the
  // bits of registers a0 and a2 (row g) of every quarter: 0x33333333.
  expect[0] = (1 << 1) | (1 << 16);
  for (int l = 4; l < 8; ++l) expect[static_cast<size_t>(l)] = 0x33333333;
  EXPECT_EQ(bitmap_mask_words(f), expect);
}

// copy=step's table: each tile's 32 lane words, then its lane starts in the format's entries
// counted from its step's first value (the values of the step's tiles before it), two 16-bit
// starts a word.
TEST(BitmapTcCodegen, MaskWordsWithStartsHoldLaneStartsFromTheStep) {
  const CsrMatrix a = odd_matrix();
  for (BitmapValues layout : {BitmapValues::Slot, BitmapValues::Pair}) {
    const BitmapTileFormat f = pack_bitmap_tiles(a, layout, 4);
    ASSERT_GT(f.row_tiles, 1);  // steps of more than one tile
    const std::vector<int64_t> plain = bitmap_mask_words(f);
    const std::vector<int64_t> rec = bitmap_mask_words_with_starts(f);
    ASSERT_EQ(rec.size(), static_cast<size_t>(48 * f.tiles()));
    int offset_starts = 0;
    for (int64_t rt = 0; rt < f.row_tiles; ++rt) {
      for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
        const int64_t t = bitmap_tile_index(f, rt, ct);
        const int64_t first = bitmap_tile_index(f, rt / 4 * 4, ct);
        const int before = static_cast<int>(f.tile_ptr[static_cast<size_t>(t)] -
                                            f.tile_ptr[static_cast<size_t>(first)]);
        std::array<uint32_t, 32> w{};
        for (size_t l = 0; l < 32; ++l) {
          EXPECT_EQ(rec[static_cast<size_t>(48 * t) + l], plain[static_cast<size_t>(32 * t) + l]);
          w[l] = static_cast<uint32_t>(plain[static_cast<size_t>(32 * t) + l]);
        }
        const auto start = bitmap_lane_starts(w, layout);
        for (size_t l = 0; l < 32; ++l) {
          const auto word = static_cast<uint32_t>(rec[static_cast<size_t>(48 * t) + 32 + l / 2]);
          EXPECT_EQ(static_cast<int>((word >> (16 * (l % 2))) & 0xffffu), before + start[l])
              << rt << " " << ct << " " << l;
        }
        offset_starts += before > 0;
      }
    }
    EXPECT_GT(offset_starts, 0);  // the sample exercises tiles after the first of a step
  }
}

TEST(BitmapTcCodegen, IllegalProblemsThrowUserError) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  const Schedule s = parse_schedule("bitmap_tc");
  try {
    (void)emit_bitmap_tc(Problem::spmm(a.rows, a.cols, 8, DType::F32), s, f);
    ADD_FAILURE() << "fp32 emitted";
  } catch (const UserError& e) {
    EXPECT_TRUE(has(e.what(), "fp32")) << e.what();
  }
  EXPECT_THROW(emit_bitmap_tc(Problem::spmm(a.rows, a.cols, 12, DType::F16), s, f), UserError);
  EXPECT_THROW(
      emit_bitmap_tc(Problem::spmm(a.rows, a.cols, 8, DType::BF16, Layout::ColMajor), s, f),
      UserError);
  EXPECT_THROW(emit_bitmap_tc(Problem::spmm(a.rows, a.cols, 8, DType::F16),
                              parse_schedule("bitmap_tc;ksplit=5"), f),
               UserError);  // 4 column tiles
}

// NVRTC to a cubin for `arch` with ptxas -v, whose report (registers, spills) lands in the log.
nvrtc::CompileResult compile_verbose(const GeneratedKernel& k, const std::string& arch) {
  nvrtc::CompileOptions o;
  o.arch = arch;
  o.headers = k.headers;
  o.extra_options = {"--ptxas-options=-v"};
  return nvrtc::compile(k.source, o);
}

// Emits (emit()) and compiles a kernel for sm_90a with ptxas -v and expects no spills and no
// serialised wgmma in its report; `what` names the case in a failure. Returns the compile time in
// ms (0 where emitting or compiling threw, a test failure).
double expect_clean_sm90a(const std::function<GeneratedKernel()>& emit, const std::string& what) {
  try {
    const auto r = compile_verbose(emit(), "sm_90a");
    EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
        << what << "\n"
        << r.log;
    EXPECT_FALSE(has(r.log, "serialized")) << what << "\n" << r.log;
    return r.compile_ms;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << "\n" << e.what();
    return 0.0;
  }
}

bool image_has(const std::vector<char>& image, const std::string& what) {
  return std::search(image.begin(), image.end(), what.begin(), what.end()) != image.end();
}

// PTX of one kernel: the helpers turn into the tensor-core, ldmatrix and cp.async instructions.
TEST(BitmapTcCodegen, PtxUsesTensorCores) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  struct Case {
    DType dt;
    int64_t n;
    const char* mma;
    const char* ldmatrix;
  };
  const Case cases[] = {
      {DType::F16, 24, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
       "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"},
      {DType::BF16, 8, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
       "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"},
  };
  for (const Case& c : cases) {
    const Problem p = Problem::spmm(a.rows, a.cols, c.n, c.dt);
    const GeneratedKernel k =
        emit_bitmap_tc(p, parse_schedule("bitmap_tc;warps=4;mt=1;ksplit=1;stages=3"), f);
    nvrtc::CompileOptions o;
    o.arch = "compute_90";
    o.headers = k.headers;
    const auto r = nvrtc::compile(k.source, o);
    ASSERT_FALSE(r.is_cubin);
    const std::string ptx(r.image.data());
    EXPECT_TRUE(has(ptx, c.mma)) << to_string(p);
    EXPECT_TRUE(has(ptx, c.ldmatrix)) << to_string(p);
    EXPECT_TRUE(has(ptx, "cp.async.cg.shared.global"));
    EXPECT_TRUE(has(ptx, "cp.async.wait_group 2"));
    EXPECT_TRUE(has(ptx, ".entry sparsegen_bitmap_tc("));
  }
}

// vals=pair: the lanes' scan counts two values per non-empty register and the decode loads a
// register with one 32-bit shared load; slot keeps 16-bit loads. NVRTC compiles the pair kernels
// for sm_90 without spills (mma.sync and wgmma), and an emit with a pack of the other layout is
// refused.
TEST(BitmapTcCodegen, PairValueLayout) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat slot = pack_bitmap_tiles(a);
  const BitmapTileFormat pair = pack_bitmap_tiles(a, BitmapValues::Pair);
  const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const Schedule sp = parse_schedule("bitmap_tc;warps=4;mt=2;ksplit=2;stages=2;vals=pair");
  const GeneratedKernel k = emit_bitmap_tc(p, sp, pair);
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_a_quarter_pairs("));
  EXPECT_FALSE(has(k.source, "sg::bitmap_tc_a_quarter("));
  EXPECT_TRUE(
      has(k.source,
          fmt::format("sg::bitmap_tc_lanes<2, {}, 0, 1>(",
                      bitmap_tc_smem(p, sp.as<BitmapTcSchedule>(), pair.max_tile_values).a_tile)));
  EXPECT_TRUE(has(k.source, "vals=pair"));  // the schedule comment
  // A pack of the other layout is an internal error (packs are shared by layout): it aborts.
  EXPECT_DEATH(emit_bitmap_tc(p, sp, slot), "value layout");

  auto ptx_of = [&](const Schedule& s, const BitmapTileFormat& f) {
    const GeneratedKernel g = emit_bitmap_tc(p, s, f);
    nvrtc::CompileOptions o;
    o.arch = "compute_90";
    o.headers = g.headers;
    return std::string(nvrtc::compile(g.source, o).image.data());
  };
  const std::string ptx_pair = ptx_of(sp, pair);
  const std::string ptx_slot = ptx_of(parse_schedule("bitmap_tc;warps=4;mt=2;ksplit=2"), slot);
  // Per step: 4 quarters x 2 row tiles x 4 registers = 32 pair loads, against 64 slot loads.
  EXPECT_EQ(count(ptx_pair, "ld.shared.u16"), 0u);
  EXPECT_EQ(count(ptx_slot, "ld.shared.u16"), 64u);
  EXPECT_GE(count(ptx_pair, "ld.shared.u32"), 32u);

  for (const char* spec : {"bitmap_tc;warps=4;mt=2;ksplit=2;vals=pair",
                           "bitmap_tc;warps=8;mt=1;kt=2;ksplit=1;stages=3;vals=pair",
                           "bitmap_tc;warps=4;mt=1;kt=4;ksplit=3;vals=pair"}) {
    const Schedule s = parse_schedule(spec);
    for (DType dt : {DType::F16, DType::BF16}) {
      const Problem q = Problem::spmm(a.rows, a.cols, 64, dt);
      const auto r = compile_verbose(emit_bitmap_tc(q, s, pair), "sm_90");
      EXPECT_TRUE(r.is_cubin) << spec;
      EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
          << spec << "\n"
          << r.log;
    }
  }
  const Schedule wg = parse_schedule("bitmap_tc;warps=4;mt=1;ksplit=1;mma=wgmma;vals=pair");
  const auto r = compile_verbose(emit_bitmap_tc(p, wg, pair), "sm_90a");
  EXPECT_TRUE(r.is_cubin);
}

// NVRTC compiles (to an sm_90 cubin: ptxas runs too) the emitted source for M = 37 (not a multiple
// of 16) and K = 200 (not a multiple of 64) over fp16/bf16 x N {8, 24, 64, 128} x mt {1, 2} x
// ksplit {1, 3} x stages {2, 3}, in a fixed sample of combinations that covers every value of
// every axis; SPARSEGEN_NVRTC_ALL=1 compiles the whole product (64 kernels). ptxas reports no
// spills for the sample (acc, the masks and the A operand stay in registers).
TEST(BitmapTcCodegen, CompilesForSm90) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  struct Combo {
    DType dt;
    int64_t n;
    int warps, mt, ksplit, stages;
    Layout c;
    int kt;
  };
  std::vector<Combo> combos;
  if (std::getenv("SPARSEGEN_NVRTC_ALL") != nullptr) {
    int i = 0;
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {8, 24, 64, 128})
        for (int mt : {1, 2})
          for (int ks : {1, 3})
            for (int st : {2, 3})
              for (int kt : {1, 2, 4}) {
                const int warps = 1 << (i % 4);
                const Layout c = i % 3 == 0 ? Layout::ColMajor : Layout::RowMajor;
                combos.push_back({dt, n, warps, mt, ks, st, c, kt});
                ++i;
              }
  } else {
    combos = {
        {DType::F16, 8, 4, 1, 1, 2, Layout::RowMajor, 1},
        {DType::BF16, 24, 8, 2, 3, 3, Layout::RowMajor, 1},
        {DType::F16, 64, 4, 2, 1, 3, Layout::ColMajor, 2},
        {DType::BF16, 128, 4, 1, 3, 2, Layout::RowMajor, 2},
        {DType::F16, 128, 8, 2, 1, 2, Layout::RowMajor, 1},
        {DType::BF16, 8, 1, 2, 3, 2, Layout::ColMajor, 4},
        {DType::F16, 24, 2, 1, 3, 3, Layout::ColMajor, 4},
        {DType::BF16, 64, 8, 1, 1, 3, Layout::RowMajor, 4},
        // N = 128, mt = 2 with kt = 4 is past the verifier's register bound (260 > 255).
        {DType::F16, 128, 8, 2, 1, 2, Layout::RowMajor, 2},
    };
  }
  double total_ms = 0;
  for (const Combo& c : combos) {
    const Problem p = Problem::spmm(a.rows, a.cols, c.n, c.dt, Layout::RowMajor, c.c);
    const Schedule s(make(c.warps, c.mt, c.ksplit, c.stages, c.kt));
    const GeneratedKernel k = emit_bitmap_tc(p, s, f);
    try {
      const auto r = compile_verbose(k, "sm_90");
      total_ms += r.compile_ms;
      EXPECT_TRUE(r.is_cubin);
      EXPECT_TRUE(image_has(r.image, "sparsegen_bitmap_tc")) << to_string(s);

      // ptxas -v: "0 bytes spill stores, 0 bytes spill loads" for every function.
      EXPECT_FALSE(has(r.log, "error")) << r.log;
      EXPECT_EQ(count(r.log, "bytes spill stores"), 1u) << r.log;
      EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
          << to_string(p) << " " << to_string(s) << "\n"
          << r.log;
    } catch (const std::exception& e) {
      ADD_FAILURE() << to_string(p) << " " << to_string(s) << "\n" << e.what() << "\n" << k.source;
    }
  }
  std::printf("[ NVRTC    ] %zu bitmap_tc kernels for sm_90 in %.0f ms\n", combos.size(), total_ms);
}

// mma=wgmma: the emitted source stages B in 16-byte column groups and multiplies per warpgroup;
// it is flagged arch-specific, and NVRTC compiles it for sm_90a (PTX: the wgmma shape of N, the
// fences, N-major B; cubin: no spills) over N {8, 16, 32, 64} x warps {4, 8} x mt {1, 2} x
// kt {1, 2, 4} x ksplit {1, 3}, fp16 and bf16 alternating. The plain sm_90 target refuses it.
TEST(BitmapTcCodegen, WgmmaCompilesForSm90a) {
  const CsrMatrix a = odd_matrix();
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  const Problem p64 = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const BitmapTcSchedule wg = make(4, 1, 1, 2, 1, MmaKind::Wgmma);
  const GeneratedKernel k = emit_bitmap_tc(p64, Schedule(wg), f);
  EXPECT_TRUE(k.arch_specific);
  EXPECT_FALSE(emit_bitmap_tc(p64, Schedule(make(4, 1, 1, 2)), f).arch_specific);
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_issue_b_groups<T, 8, 128, 64>("));
  EXPECT_TRUE(has(k.source, "sg::fence_proxy_async();"));
  EXPECT_TRUE(has(k.source, "unsigned w[1], addr[1], a[16];"));  // the step's 4 quarters of A
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_wgmma_step<T, 8, 1, 4>("));
  EXPECT_FALSE(has(k.source, "bitmap_tc_mma_quarter"));
  {
    nvrtc::CompileOptions o;
    o.arch = "compute_90a";
    o.headers = k.headers;
    const auto r = nvrtc::compile(k.source, o);
    const std::string ptx(r.image.data());
    EXPECT_TRUE(has(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16")) << ptx;
    EXPECT_TRUE(has(ptx, "wgmma.fence.sync.aligned"));
    EXPECT_TRUE(has(ptx, "wgmma.commit_group.sync.aligned"));
    EXPECT_EQ(count(ptx, "wgmma.mma_async"), 4u);  // one per quarter, one group per step
    EXPECT_EQ(count(ptx, "wgmma.commit_group"), 1u);
    EXPECT_TRUE(has(ptx, "wgmma.wait_group.sync.aligned 0"));
    EXPECT_TRUE(has(ptx, "fence.proxy.async.shared::cta"));
    EXPECT_FALSE(has(ptx, "ldmatrix"));
    EXPECT_FALSE(has(ptx, "mma.sync"));
    o.arch = "sm_90";
    EXPECT_THROW(nvrtc::compile(k.source, o), NvrtcError);
  }
  int i = 0;
  double total_ms = 0;
  for (int64_t n : {8, 16, 32, 64})
    for (int warps : {4, 8})
      for (int mt : {1, 2})
        for (int kt : {1, 2, 4}) {
          const DType dt = i % 2 == 0 ? DType::F16 : DType::BF16;
          const int ks = i % 3 == 0 ? 3 : 1;
          ++i;
          if (kt > bitmap_tc_part_tiles(f.col_tiles, ks)) continue;
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt);
          const Schedule s(make(warps, mt, ks, 2, kt, MmaKind::Wgmma));
          try {
            const auto r = compile_verbose(emit_bitmap_tc(p, s, f), "sm_90a");
            total_ms += r.compile_ms;
            EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
                << to_string(p) << " " << to_string(s) << "\n"
                << r.log;
            EXPECT_FALSE(has(r.log, "serialized")) << to_string(s) << "\n" << r.log;
          } catch (const std::exception& e) {
            ADD_FAILURE() << to_string(p) << " " << to_string(s) << "\n" << e.what();
          }
        }
  std::printf("[ NVRTC    ] %d wgmma bitmap_tc kernels for sm_90a in %.0f ms\n", i, total_ms);
}

// pipe=bulk: a producer warp beyond the computing ones issues every step's bulk copies on the
// stage's full mbarrier, the computing warps release stages on the empty ones (no block barrier
// in the loop), B comes arranged by the b_transform aux kernel (BWork), and the next step's A is
// decoded while the last step multiplies (wgmma_wait<1>). NVRTC compiles it for sm_90a without
// spills or serialised wgmma over N {8, 16, 32, 64} x warps {4, 8} x mt {1, 2} x stages {3, 4, 6} x
// ksplit {1, 3} x vals {slot, pair}, fp16 and bf16 alternating.
// cluster > 1: the grid in whole clusters (blocks past M copy no A), the cluster's first block
// multicasts B, every consumer warp also releases a stage on its cluster-empty barrier there,
// and cluster barriers replace the block barrier before the loop and end the kernel.
TEST(BitmapTcCodegen, BulkClustersMulticastB) {
  const CsrMatrix a = odd_matrix();
  const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  for (int cl : {2, 4}) {
    const Schedule s = parse_schedule(fmt::format(
        "bitmap_tc;warps=4;mt=1;stages=3;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster={}", cl));
    const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Pair, 4);
    const GeneratedKernel k = emit_bitmap_tc(p, s, f);
    EXPECT_EQ(k.signature.launch.cluster_x, cl);
    EXPECT_EQ(k.signature.launch.grid_x, cl);  // one row block of 64 rows, rounded up
    EXPECT_TRUE(
        has(k.source, fmt::format("sg::bitmap_tc_bulk_init_cluster<3, 4, {}>(s_bars, tid);", cl)));
    EXPECT_TRUE(has(k.source, "const int valid = max(0, min(4, "));
    EXPECT_TRUE(has(k.source, "const int first = valid > 0 ? rt0 * "));
    EXPECT_EQ(count(k.source, "sg::bitmap_tc_cluster_sync();"), 2u);
    EXPECT_FALSE(has(k.source, "__syncthreads();"));
    EXPECT_TRUE(has(k.source, fmt::format(", {}, 8, 0, 0>(s_bars, s_stage0, bw, "
                                          "static_cast<const sg::TensorMap*>(nullptr), masks, "
                                          "values, s_tp, first, valid, valid, ct0, steps, lane);",
                                          cl)));
    EXPECT_TRUE(
        has(k.source,
            "sg::bitmap_tc_bulk_release_cluster<1>(s_bars + 8 * (3 + (buf == 0 ? 2 : buf - 1)), "
            "s_bars + 8 * (6 + (buf == 0 ? 2 : buf - 1)), lane);"));
    EXPECT_EQ(k.signature.launch.dynamic_shared_bytes,
              bitmap_tc_shared_bytes(p, s.as<BitmapTcSchedule>(), f.max_tile_values));
    const std::string ptx = sm90a_ptx(k);
    EXPECT_TRUE(has(ptx, ".multicast::cluster"));
    EXPECT_TRUE(has(ptx, "mapa.shared::cluster"));
    EXPECT_TRUE(has(ptx, "barrier.cluster.arrive"));
  }
}

TEST(BitmapTcCodegen, BulkPipeCompilesForSm90a) {
  const CsrMatrix a = odd_matrix();
  const Problem p64 = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const Schedule s =
      parse_schedule("bitmap_tc;warps=4;mt=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step");
  const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Pair, 4);  // the block's 4 tiles
  const GeneratedKernel k = emit_bitmap_tc(p64, s, f);
  EXPECT_TRUE(k.arch_specific);
  EXPECT_TRUE(has(k.source, "__launch_bounds__(160)"));  // 4 computing warps + the producer
  // the block's tiles of a step are consecutive in the pack's groups: one range of pointers and
  // of bytes a step, the lane words together and the values packed after them
  EXPECT_TRUE(has(k.source, "const int first = rt0 * "));
  EXPECT_TRUE(has(k.source,
                  "sg::bitmap_tc_bulk_tile_ptrs<4, 160>(s_tp, tile_ptr, first, valid, "
                  "valid, tiles, tid);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_bulk_produce_steps<T, 4, 4, "));
  // each row tile's record: 32 lane words and 32 16-bit lane starts counted from the step's
  // values (no warp scan, no tile pointers in the consumers)
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_lanes_packed<1, 192>("));
  EXPECT_EQ(k.signature.params[5].data, bitmap_mask_words_with_starts(f));
  EXPECT_TRUE(has(k.source, " + 768, warp * 1, lane, w, addr);"));
  EXPECT_FALSE(has(k.source, "s_tp + i * 5"));
  EXPECT_FALSE(has(k.source, "bitmap_tc_load_tile_ptrs"));
  // the row-tile-major pack is not the order this kernel reads
  EXPECT_DEATH_IF_SUPPORTED(emit_bitmap_tc(p64, s, pack_bitmap_tiles(a, BitmapValues::Pair)),
                            "tile order");
  EXPECT_EQ(k.signature.launch.block_threads, 160);
  EXPECT_TRUE(has(k.source, "const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_bulk_init<4, 4>(s_bars, tid);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_bulk_zero<4, 4, "));
  EXPECT_TRUE(has(k.source, "if (warp == 4) {"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_bulk_produce_steps<T, 4, 4, "));
  EXPECT_TRUE(has(k.source, "if (warp < 4) {"));
  // two steps an iteration, each with its own A registers; the stage and its parity advance by one
  EXPECT_TRUE(has(k.source, "for (int i = 0; i < steps; i += 2) {"));
  EXPECT_EQ(count(k.source, "sg::bitmap_tc_bulk_wait(s_bars + 8 * buf, phase);"), 2u);
  EXPECT_TRUE(has(k.source, "step(a0, buf);"));
  EXPECT_TRUE(has(k.source, "step(a1, buf);"));
  EXPECT_TRUE(has(k.source, "if (i + 1 == steps) break;"));
  EXPECT_EQ(count(k.source, "if (++buf == 4) {"), 2u);
  EXPECT_FALSE(has(k.source, "if (i & 1)"));
  // the stage of step i - 1 (its multiplies waited for) goes back to the producer
  EXPECT_EQ(
      count(k.source,
            "sg::bitmap_tc_bulk_release<1>(s_bars + 8 * (4 + (buf == 0 ? 3 : buf - 1)), lane);"),
      2u);
  EXPECT_FALSE(has(k.source, "__syncthreads();\n    if (i"));
  EXPECT_LT(k.source.find("sg::wgmma_wait<1>();"), k.source.find("sg::bitmap_tc_bulk_release("));
  // B's descriptors from stage 0's start field plus a stage's bytes >> 4 per stage
  EXPECT_TRUE(has(k.source, "const unsigned b_start = sg::bitmap_tc_b_start(s_stage0);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_wgmma_issue_at<T, 8, 1, 4, 0>(b_start + buf * "));
  EXPECT_TRUE(has(k.source, "sg::wgmma_wait<1>();"));
  EXPECT_TRUE(has(k.source, "unsigned a0[16], a1[16];"));
  EXPECT_TRUE(has(k.source, "sparsegen_bitmap_tc_arrange_b("));
  // a plain launch after the arrangement (a programmatic one shared SMs with it)
  EXPECT_FALSE(has(k.source, "sg::launch_dependents();"));
  EXPECT_FALSE(has(k.source, "sg::grid_dependency_wait();"));
  EXPECT_FALSE(has(k.source, "bitmap_tc_issue_b_groups"));
  EXPECT_FALSE(has(k.source, "cp_async_wait"));
  const KernelSignature& sig = k.signature;
  EXPECT_TRUE(sig.b_transform.present());
  EXPECT_EQ(sig.b_transform.name, "sparsegen_bitmap_tc_arrange_b");
  EXPECT_EQ(sig.b_work_bytes, bitmap_tc_b_work_bytes(p64, s.as<BitmapTcSchedule>()));
  EXPECT_EQ(sig.b_work_bytes, f.col_tiles * 8 * 1040);
  EXPECT_EQ(sig.params.back().kind, ParamKind::BWork);
  EXPECT_FALSE(sig.launch.programmatic_wait);
  EXPECT_EQ(sig.launch.dynamic_shared_bytes,
            bitmap_tc_shared_bytes(p64, s.as<BitmapTcSchedule>(), f.max_tile_values));
  {
    const std::string ptx = sm90a_ptx(k);
    EXPECT_TRUE(has(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
    EXPECT_TRUE(has(ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
    EXPECT_TRUE(has(ptx, "mbarrier.arrive.expect_tx"));
    EXPECT_TRUE(has(ptx, "wgmma.wait_group.sync.aligned 1"));
    EXPECT_EQ(count(ptx, "wgmma.commit_group"), 2u);  // one group per step, two A sets
    EXPECT_FALSE(has(ptx, "cp.async.cg"));
  }
  // the pack in groups of the block's row tiles (bitmap_tc_tile_group)
  const auto pack = [&](const BitmapTcSchedule& b) {
    return pack_bitmap_tiles(a, b.values, bitmap_tc_tile_group(b));
  };
  int i = 0;
  double total_ms = 0;
  for (int64_t n : {8, 16, 32, 64})
    for (int warps : {4, 8})
      for (int mt : {1, 2})
        for (int stages : {3, 4, 6}) {
          const DType dt = i % 2 == 0 ? DType::F16 : DType::BF16;
          const int ks = i % 3 == 0 ? 3 : 1;
          const bool pair = i % 4 < 2;
          const BitmapCopy copy = i % 6 < 3 ? BitmapCopy::Step : BitmapCopy::Tile;
          ++i;
          BitmapTcSchedule b = make(warps, mt, ks, stages, 1, MmaKind::Wgmma);
          b.pipe = BitmapPipe::Bulk;
          b.copy = copy;
          b.values = pair ? BitmapValues::Pair : BitmapValues::Slot;
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt);
          try {
            const auto r = compile_verbose(emit_bitmap_tc(p, Schedule(b), pack(b)), "sm_90a");
            total_ms += r.compile_ms;
            EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
                << to_string(p) << " " << to_string(Schedule(b)) << "\n"
                << r.log;
            EXPECT_FALSE(has(r.log, "serialized")) << to_string(Schedule(b)) << "\n" << r.log;
          } catch (const std::exception& e) {
            ADD_FAILURE() << to_string(p) << " " << to_string(Schedule(b)) << "\n" << e.what();
          }
        }
  // N = 128 (m64n128k16: 64 accumulators a thread), mt = 1 as enumerated: both copy kinds and
  // warp counts, fp16 and bf16, no spills, one wgmma shape.
  for (int warps : {4, 8})
    for (BitmapCopy copy : {BitmapCopy::Tile, BitmapCopy::Step}) {
      const DType dt = i % 2 == 0 ? DType::F16 : DType::BF16;
      ++i;
      BitmapTcSchedule b = make(warps, 1, 1, 4, 1, MmaKind::Wgmma);
      b.pipe = BitmapPipe::Bulk;
      b.copy = copy;
      b.values = BitmapValues::Pair;
      const Problem p = Problem::spmm(a.rows, a.cols, 128, dt);
      const GeneratedKernel k128 = emit_bitmap_tc(p, Schedule(b), pack(b));
      try {
        const auto r = compile_verbose(k128, "sm_90a");
        total_ms += r.compile_ms;
        EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
            << to_string(Schedule(b)) << "\n"
            << r.log;
        EXPECT_FALSE(has(r.log, "serialized")) << to_string(Schedule(b)) << "\n" << r.log;
        const std::string ptx = sm90a_ptx(k128);
        EXPECT_TRUE(has(ptx, dt == DType::F16
                                 ? "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
                                 : "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16"))
            << to_string(Schedule(b));
        EXPECT_FALSE(has(ptx, "m64n64k16")) << to_string(Schedule(b));
      } catch (const std::exception& e) {
        ADD_FAILURE() << to_string(p) << " " << to_string(Schedule(b)) << "\n" << e.what();
      }
    }
  std::printf("[ NVRTC    ] %d bulk bitmap_tc kernels for sm_90a in %.0f ms\n", i, total_ms);
  // mma.sync with pipe=bulk: B arranged in the staged tile's padded rows; plain sm_90 (no wgmma).
  const Schedule ss = parse_schedule("bitmap_tc;warps=4;mt=2;ksplit=2;stages=3;pipe=bulk");
  const GeneratedKernel ks = emit_bitmap_tc(p64, ss, pack(ss.as<BitmapTcSchedule>()));
  EXPECT_FALSE(ks.arch_specific);
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_arrange_b_rows<T, 8, 9>("));  // 9 units: 144-byte rows
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_mma_quarter<T, 8, 2, 144>("));
  EXPECT_FALSE(has(ks.source, "wgmma"));
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_bulk_produce_tiles<T, 3, 8, "));  // copy=tile
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_load_tile_ptrs<8, "));
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_bulk_release<0>(s_bars + 8 * (3 + buf), lane);"));
  EXPECT_TRUE(has(ks.source, "sg::bitmap_tc_bulk_wait(s_bars + 8 * buf, phase);"));
  EXPECT_TRUE(has(ks.source, "if (++buf == 3) {"));
  EXPECT_EQ(ks.signature.b_work_bytes, f.col_tiles * 64 * 144);
  int j = 0;
  for (int64_t n : {8, 24, 64, 128})
    for (int warps : {1, 4, 8})
      for (int mt : {1, 2}) {
        const DType dt = j % 2 == 0 ? DType::F16 : DType::BF16;
        const bool pair = j % 4 < 2;
        BitmapTcSchedule b = make(warps, mt, j % 3 == 0 ? 3 : 1, 2 + j % 3);
        b.copy = j % 6 < 3 ? BitmapCopy::Step : BitmapCopy::Tile;
        ++j;
        b.pipe = BitmapPipe::Bulk;
        b.values = pair ? BitmapValues::Pair : BitmapValues::Slot;
        const Problem p = Problem::spmm(a.rows, a.cols, n, dt);
        try {
          const auto r = compile_verbose(emit_bitmap_tc(p, Schedule(b), pack(b)), "sm_90");
          EXPECT_EQ(count(r.log, "bytes spill stores"), count(r.log, " 0 bytes spill stores"))
              << to_string(p) << " " << to_string(Schedule(b)) << "\n"
              << r.log;
        } catch (const std::exception& e) {
          ADD_FAILURE() << to_string(p) << " " << to_string(Schedule(b)) << "\n" << e.what();
        }
      }
}

// b=map: no arrangement kernel and no BWork; B comes by TMA through a __grid_constant__ tensor map
// (boxes of 64 rows x min(N, 64) columns in the swizzle of their rows), the stages on 1024-byte
// boundaries, wgmma reading B through swizzled N-major descriptors. NVRTC compiles it for sm_90a
// without spills or serialised wgmma over N {16, 32, 64, 128} x both copy kinds x clusters.
TEST(BitmapTcCodegen, MapBReadsBThroughATensorMap) {
  const CsrMatrix a = odd_matrix();
  const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const Schedule s = parse_schedule(
      "bitmap_tc;warps=4;mt=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map");
  const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
  const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Pair, bitmap_tc_tile_group(b));
  const GeneratedKernel k = emit_bitmap_tc(p, s, f);
  const KernelSignature& sig = k.signature;
  EXPECT_FALSE(sig.b_transform.present());
  EXPECT_EQ(sig.b_work_bytes, 0);
  EXPECT_FALSE(has(k.source, "arrange_b"));
  EXPECT_TRUE(has(k.source, "const __grid_constant__ sg::TensorMap b_map"));
  EXPECT_TRUE(has(k.source, "s_stage0 = (sg::smem_addr(sg_smem) + "));
  EXPECT_TRUE(has(k.source, " + 1023u) & ~1023u;"));
  EXPECT_TRUE(has(k.source,
                  ", 1, 8, 1, 0>(s_bars, s_stage0, static_cast<const unsigned*>(nullptr), "
                  "&b_map, masks, "));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_wgmma_issue_at<T, 8, 1, 4, 1>(b_start + buf * "));
  ASSERT_EQ(sig.params.back().kind, ParamKind::BTensorMap);
  const TensorMapShape m = TensorMapShape::from_data(sig.params.back().data);
  EXPECT_EQ(m.inner, 64);
  EXPECT_EQ(m.outer, a.cols);
  EXPECT_EQ(m.row_elems, 64);
  EXPECT_EQ(m.box_inner, 64);
  EXPECT_EQ(m.box_outer, 64);
  EXPECT_EQ(m.swizzle_bytes, 128);
  // stages of whole 1024-byte blocks, plus 1024 bytes to round the first one up
  const BitmapTcSmem sm = bitmap_tc_smem(p, b, f.max_tile_values);
  EXPECT_EQ(sm.b_step, 64 * 128);
  EXPECT_EQ(sm.stage % 1024, 0);
  EXPECT_EQ(sm.align, 1024);
  EXPECT_EQ(sig.launch.dynamic_shared_bytes, sm.total);
  const std::string ptx = sm90a_ptx(k);
  EXPECT_TRUE(has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier"));
  // N = 32: one 64-byte box a step, N = 128: two 128-byte boxes
  for (int64_t n : {int64_t{32}, int64_t{128}}) {
    const Problem pn = Problem::spmm(a.rows, a.cols, n, DType::BF16);
    const TensorMapShape mn =
        TensorMapShape::from_data(emit_bitmap_tc(pn, s, f).signature.params.back().data);
    EXPECT_EQ(mn.box_inner, n == 32 ? 32 : 64);
    EXPECT_EQ(mn.swizzle_bytes, n == 32 ? 64 : 128);
  }
  int i = 0;
  double total_ms = 0;
  for (int64_t n : {16, 32, 64, 128})
    for (BitmapCopy copy : {BitmapCopy::Tile, BitmapCopy::Step})
      for (int cl : {1, 2}) {
        if (copy == BitmapCopy::Tile && cl > 1) continue;
        BitmapTcSchedule bb = b;
        bb.copy = copy;
        bb.cluster = cl;
        bb.warps_per_block = i % 2 == 0 ? 8 : 4;
        bb.ksplit = i % 3 == 0 ? 3 : 1;
        const DType dt = i % 2 == 0 ? DType::F16 : DType::BF16;
        ++i;
        const Problem pn = Problem::spmm(a.rows, a.cols, n, dt);
        const BitmapTileFormat fn =
            pack_bitmap_tiles(a, BitmapValues::Pair, bitmap_tc_tile_group(bb));
        total_ms += expect_clean_sm90a([&] { return emit_bitmap_tc(pn, Schedule(bb), fn); },
                                       to_string(pn) + " " + to_string(Schedule(bb)));
      }
  std::printf("[ NVRTC    ] %d b=map bitmap_tc kernels for sm_90a in %.0f ms\n", i, total_ms);
}

// decode=scatter's offsets: storing every slot's value at its offset into a zeroed 16 x 128-byte
// tile and reading position (r, c) back through the 128-byte swizzle rebuilds each tile of A
// exactly (fill slots store 0 at a position the tile does not hold), in any tile order.
TEST(BitmapTcCodegen, ScatterOffsetsRebuildEveryTile) {
  const CsrMatrix a = odd_matrix();
  for (int64_t group : {int64_t{1}, int64_t{4}}) {
    const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Slot, group);
    const std::vector<int64_t> words = bitmap_scatter_offsets(f);
    ASSERT_EQ(words.size(), static_cast<size_t>(f.slots() / 2));
    std::vector<float> dense(static_cast<size_t>(f.rows * f.cols), 0.0f);
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t j = a.row_ptr[static_cast<size_t>(r)]; j < a.row_ptr[static_cast<size_t>(r) + 1];
           ++j)
        dense[static_cast<size_t>(r * a.cols + a.col_idx[static_cast<size_t>(j)])] =
            a.values[static_cast<size_t>(j)];
    int fills = 0;
    for (int64_t rt = 0; rt < f.row_tiles; ++rt)
      for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
        const int64_t t = bitmap_tile_index(f, rt, ct);
        std::array<float, 1024> tile{};
        std::array<int, 1024> writes{};
        for (int64_t sl = f.tile_ptr[static_cast<size_t>(t)];
             sl < f.tile_ptr[static_cast<size_t>(t) + 1]; ++sl) {
          const auto w = static_cast<uint32_t>(words[static_cast<size_t>(sl / 2)]);
          const uint32_t off = (w >> (16 * (sl % 2))) & 0xffffu;
          ASSERT_LT(off, 2048u);
          ASSERT_EQ(off % 2, 0u);
          const float v = f.values[static_cast<size_t>(sl)];
          // a position gets one value; a fill's 0 never lands on a stored value
          if (writes[off / 2]++ > 0) {
            EXPECT_EQ(v, 0.0f) << rt << " " << ct;
          }
          if (writes[off / 2] == 1 || v != 0.0f) tile[off / 2] = v;
          fills += v == 0.0f;
        }
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 64; ++c) {
            const int64_t row = rt * 16 + r, col = ct * 64 + c;
            const float want = row < a.rows && col < a.cols
                                   ? dense[static_cast<size_t>(row * a.cols + col)]
                                   : 0.0f;
            EXPECT_EQ(tile[static_cast<size_t>(bitmap_scatter_offset(r, c) / 2)], want)
                << "group " << group << " tile " << rt << "," << ct << " at " << r << "," << c;
          }
      }
    EXPECT_GT(fills, 0);  // the sample has alignment fill
  }
  // the swizzle: row 0 is plain, row r's 16-byte pieces are XORed with r % 8
  EXPECT_EQ(bitmap_scatter_offset(0, 9), 18);
  EXPECT_EQ(bitmap_scatter_offset(1, 0), 128 + 16);
  EXPECT_EQ(bitmap_scatter_offset(9, 63), 9 * 128 + ((7 ^ 1) << 4) + 14);
}

// decode=scatter: the producer copies values and offsets (no lane words), each warp scatters
// into its rows of a dense buffer, and wgmma reads A from shared memory (the SS form, K-major
// 128-byte swizzle). NVRTC compiles it for sm_90a without spills or serialised wgmma over
// N {16, 32, 64, 128}, fp16/bf16, four and eight warps, split K and clusters.
TEST(BitmapTcCodegen, ScatterDecodeReadsAFromSharedMemory) {
  const CsrMatrix a = odd_matrix();
  const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const Schedule s = parse_schedule(
      "bitmap_tc;warps=4;mt=1;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;decode=scatter");
  const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
  const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Slot, bitmap_tc_tile_group(b));
  const GeneratedKernel k = emit_bitmap_tc(p, s, f);
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_scatter(dense + warp * 2048, "));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_warpgroup_sync(warp >> 2);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_wgmma_issue_ss<T, 8>(dense + (warp >> 2) * 8192, "));
  EXPECT_FALSE(has(k.source, "bitmap_tc_bulk_zero"));
  EXPECT_FALSE(has(k.source, "bitmap_tc_lanes_packed"));
  const KernelSignature& sig = k.signature;
  EXPECT_EQ(sig.params[5].source, "bitmap.scatter offsets");
  EXPECT_EQ(sig.params[5].data, bitmap_scatter_offsets(f));
  const int64_t step = bitmap_max_step_values(f);
  const BitmapTcSmem sm = bitmap_tc_smem(p, b, f.max_tile_values, step);
  EXPECT_LE(step, 4 * f.max_tile_values);
  EXPECT_EQ(sm.dense, 64 * 128);
  EXPECT_EQ(sm.offsets, sm.b_step + (2 * step + 15) / 16 * 16);
  EXPECT_LE(sm.total, bitmap_tc_smem(p, b, f.max_tile_values).total);
  EXPECT_EQ(sm.stage % 1024, 0);
  EXPECT_EQ(sig.launch.dynamic_shared_bytes, sm.total);
  const std::string ptx = sm90a_ptx(k);
  EXPECT_TRUE(has(ptx, "st.shared.u16"));
  EXPECT_TRUE(has(ptx, "bar.sync"));
  EXPECT_TRUE(has(ptx, "fence.proxy.async.shared::cta"));
  EXPECT_EQ(count(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), 4u);
  int i = 0;
  double total_ms = 0;
  for (int64_t n : {16, 32, 64, 128})
    for (int cl : {1, 2}) {
      BitmapTcSchedule bb = b;
      bb.cluster = cl;
      bb.warps_per_block = i % 2 == 0 ? 8 : 4;
      bb.ksplit = i % 3 == 0 ? 3 : 1;
      const DType dt = i % 2 == 0 ? DType::F16 : DType::BF16;
      ++i;
      const Problem pn = Problem::spmm(a.rows, a.cols, n, dt);
      const BitmapTileFormat fn =
          pack_bitmap_tiles(a, BitmapValues::Slot, bitmap_tc_tile_group(bb));
      total_ms += expect_clean_sm90a([&] { return emit_bitmap_tc(pn, Schedule(bb), fn); },
                                     to_string(pn) + " " + to_string(Schedule(bb)));
    }
  std::printf("[ NVRTC    ] %d decode=scatter bitmap_tc kernels for sm_90a in %.0f ms\n", i,
              total_ms);
}

// kred=cluster: a row block's K parts are one cluster of consecutive blocks (grid.x = row blocks
// x ksplit, no grid.y), each block leaves its sums in shared memory and the cluster adds them
// over distributed shared memory: no workspace, no atomics, no split-K finish. NVRTC compiles it
// for sm_90a without spills or serialised wgmma, over N, warps, 2..4 K parts (the sample's four
// column tiles), both copy kinds and value layouts, and mma.sync.
TEST(BitmapTcCodegen, ClusterKReduceNeedsNoWorkspace) {
  const CsrMatrix a = odd_matrix();
  const Problem p = Problem::spmm(a.rows, a.cols, 64, DType::F16);
  const Schedule s = parse_schedule(
      "bitmap_tc;warps=8;mt=1;ksplit=4;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
      "kred=cluster");
  const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
  const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Pair, bitmap_tc_tile_group(b));
  const GeneratedKernel k = emit_bitmap_tc(p, s, f);
  EXPECT_TRUE(has(k.source, "const int bx = blockIdx.x / 4, by = blockIdx.x % 4;"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_partials_store<32, 8, 0>(part, acc, warp, lane);"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_partials_store<32, 8, 1>(part, acc, warp, lane);"));
  EXPECT_TRUE(has(k.source, "if (warp < 8 && warp % 4 == by)"));
  EXPECT_TRUE(has(k.source, "sg::bitmap_tc_partials_sum<32, 4>(s_stage0, sum, warp, lane);"));
  EXPECT_FALSE(has(k.source, "bitmap_tc_split_finish"));
  EXPECT_FALSE(has(k.source, "float* __restrict__ ws"));
  const KernelSignature& sig = k.signature;
  EXPECT_EQ(sig.workspace_bytes, 0);
  EXPECT_EQ(sig.launch.grid_x, bitmap_tc_grid_x(p, b) * 4);
  EXPECT_EQ(sig.launch.grid_y, 1);
  EXPECT_EQ(sig.launch.cluster_x, 4);
  for (const KernelParam& prm : sig.params) EXPECT_NE(prm.kind, ParamKind::Workspace);
  const BitmapTcSmem sm = bitmap_tc_smem(p, b, f.max_tile_values);
  EXPECT_EQ(sm.partials, 8 * 32 * 8 * 16);
  EXPECT_GE(sm.total - sm.tile_ptrs - sm.barriers - sm.align, sm.partials);
  const std::string ptx = sm90a_ptx(k);
  EXPECT_TRUE(has(ptx, "ld.shared::cluster.v4.u32"));
  EXPECT_TRUE(has(ptx, "barrier.cluster.arrive"));
  EXPECT_FALSE(has(ptx, "red.global"));
  EXPECT_FALSE(has(ptx, "atom.global"));
  const char* const specs[] = {
      "bitmap_tc;warps=4;mt=1;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
      "kred=cluster",
      "bitmap_tc;warps=8;mt=1;ksplit=4;stages=4;mma=wgmma;vals=pair;pipe=bulk;b=map;kred=cluster",
      "bitmap_tc;warps=4;mt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;"
      "kred=cluster",
      "bitmap_tc;warps=4;mt=2;ksplit=4;stages=3;pipe=bulk;kred=cluster",
  };
  int i = 0;
  for (const char* spec : specs)
    for (int64_t n : {32, 128}) {
      const Schedule sc = parse_schedule(spec);
      const BitmapTcSchedule& bb = sc.as<BitmapTcSchedule>();
      const Problem pn = Problem::spmm(a.rows, a.cols, n, i++ % 2 == 0 ? DType::F16 : DType::BF16);
      const BitmapTileFormat fn = pack_bitmap_tiles(a, bb.values, bitmap_tc_tile_group(bb));
      expect_clean_sm90a([&] { return emit_bitmap_tc(pn, sc, fn); }, to_string(pn) + " " + spec);
    }
}

// Degenerate shapes (Problem: "valid, the result is C = beta·C"). M = 0: an empty grid, nothing
// launched; the source still compiles (the pipeline compiles before CompiledKernel::run skips).
TEST(BitmapTcCodegen, ZeroRowsIsAnEmptyGrid) {
  const CsrMatrix a = testing::csr_with_lengths({}, 200, 1);
  const Problem p = Problem::spmm(0, 200, 8, DType::F16);
  for (const char* spec : {"bitmap_tc", "bitmap_tc;ksplit=3"}) {
    const GeneratedKernel k = emit_bitmap_tc(p, parse_schedule(spec), pack_bitmap_tiles(a));
    EXPECT_TRUE(k.signature.empty_grid()) << spec;
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = k.headers;
    EXPECT_NO_THROW(nvrtc::compile(k.source, o)) << spec;
  }
}

// N = 0 is rejected by validate_bitmap_tc (n a multiple of 8 in 8..128): the kernel would need an
// empty accumulator array.
TEST(BitmapTcCodegen, ZeroColumnsOfBEmitsCompilableSourceOrUserError) {
  const CsrMatrix a = odd_matrix();
  const Problem p = Problem::spmm(a.rows, a.cols, 0, DType::F16);
  for (const char* spec : {"bitmap_tc", "bitmap_tc;ksplit=3"}) {
    GeneratedKernel k;
    try {
      k = emit_bitmap_tc(p, parse_schedule(spec), pack_bitmap_tiles(a));
    } catch (const UserError&) {
      continue;  // an explicit rejection is fine
    }
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = k.headers;
    EXPECT_NO_THROW(nvrtc::compile(k.source, o)) << spec << "\n" << k.source;
  }
}

// K = 0 with ksplit = 1: the Store kernel has no column tile to walk but must still store
// C = beta·C, so its blocks must not return before the finish.
TEST(BitmapTcCodegen, ZeroKStillStoresBetaC) {
  const CsrMatrix a = testing::csr_with_lengths(std::vector<int64_t>(37, 0), 0, 1);
  const Problem p = Problem::spmm(a.rows, 0, 8, DType::F16);
  const GeneratedKernel k =
      emit_bitmap_tc(p, parse_schedule("bitmap_tc;ksplit=1"), pack_bitmap_tiles(a));
  const KernelSignature& sig = k.signature;
  const bool aux_apply_beta =
      sig.empty_grid() && !sig.prologue.name.empty() && !sig.epilogue.name.empty();
  const bool every_block_returns_before_storing =
      has(k.source, "const int tiles = min(0 - ct0, 0);") &&
      has(k.source, "if (tiles <= 0) return;");
  EXPECT_TRUE(aux_apply_beta || !every_block_returns_before_storing) << k.source;
}

}  // namespace
}  // namespace sparsegen::codegen
