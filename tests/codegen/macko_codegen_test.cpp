// MACKO emitter: the emitted CUDA's shape (pattern checks) and NVRTC compilation of every MACKO
// schedule the enumerator produces (compute_90 PTX; no GPU needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "codegen/macko.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/codegen/codegen_test_matrices.h"

namespace sparsegen::codegen {
namespace {

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

CsrMatrix long_rows() {
  std::vector<int64_t> lengths;
  for (int r = 0; r < 24; ++r) lengths.push_back(r % 5 == 0 ? 0 : 700 + 131 * r);
  return testing::csr_with_lengths(lengths, 8192, 11);
}

TEST(MackoCodegen, EmittedKernelShape) {
  const CsrMatrix a = long_rows();
  const Problem p = Problem::spmv(a.rows, a.cols, DType::F16);
  const Schedule s = parse_schedule("macko;delta=4;wpr=1;warps=4;unroll=2;cols=1");
  const MackoFormat f = pack_macko(a, 4);
  const GeneratedKernel k = emit_macko(p, s, f);
  EXPECT_TRUE(has(k.source, "sg::macko_load_values<T>(values, vec, raw[u])"));
  EXPECT_TRUE(has(k.source, "sg::macko_load_deltas<4>(deltas, vec, dw[u])"));
  EXPECT_TRUE(has(k.source, "sg::macko_warp_scan(tot[u], lane)"));
  EXPECT_TRUE(has(k.source, "using T = __half;"));
  EXPECT_FALSE(has(k.source, "__syncthreads"));  // warp per row: no block barrier
  EXPECT_EQ(k.headers.count("sg_macko.cuh"), 1u);
  EXPECT_EQ(k.signature.launch.grid_x, (a.rows + 3) / 4);
  EXPECT_EQ(k.signature.launch.block_threads, 128);
  ASSERT_EQ(k.signature.params.size(), 7u);
  EXPECT_EQ(k.signature.params[5].kind, ParamKind::U32Table);
  EXPECT_EQ(static_cast<int64_t>(k.signature.params[5].data.size()), (f.slots() * 4 / 8 + 3) / 4);
  EXPECT_EQ(k.signature.params[6].data, f.row_ptr);

  const Problem p8 = Problem::spmm(a.rows, a.cols, 8, DType::BF16);
  const Schedule split = parse_schedule("macko;delta=8;wpr=4;unroll=4;cols=8");
  const GeneratedKernel k8 = emit_macko(p8, split, pack_macko(a, 8));
  EXPECT_TRUE(has(k8.source, "__syncthreads"));
  EXPECT_TRUE(has(k8.source, "sg::fma_vec_f32<8, T>"));
  EXPECT_TRUE(has(k8.source, "using T = __nv_bfloat16;"));
  EXPECT_EQ(k8.signature.launch.grid_x, a.rows);
  EXPECT_THROW(emit_macko(Problem::spmv(a.rows, a.cols, DType::F32), s, f), UserError);
}

// Staged B: dynamic shared memory for [items | partial sums | counter | guards + B], the items
// taken from a shared counter, and after a barrier one store per row from its last item.
TEST(MackoCodegen, StagedKernelShape) {
  const CsrMatrix a = long_rows();
  const Problem p = Problem::spmv(a.rows, a.cols, DType::F16);
  const MackoFormat f = pack_macko(a, 4);
  const Schedule s = parse_schedule("macko;delta=4;warps=8;unroll=2;cols=1;stage=shared_f32");
  const GeneratedKernel k = emit_macko(p, s, f);
  EXPECT_TRUE(has(k.source, "extern __shared__ __align__(16) unsigned sg_smem[];"));
  // [counter (16 bytes) | 16 + 8192 + 16 fp32 rows of B | 17 items (8 rows, 8 spare, the header)
  // x 16 bytes | 17 partial sums x 4 bytes].
  EXPECT_TRUE(has(k.source, "sg::macko_stage_b<T, 1, 1, 16>(B, 8192, sg_smem + 4);"));
  EXPECT_TRUE(has(k.source, "int4* const s_items = reinterpret_cast<int4*>(sg_smem + 8228);"));
  EXPECT_TRUE(has(k.source, "t = atomicAdd(s_next, 1);"));
  EXPECT_TRUE(has(k.source, "const int nitems = b_items[16].x;"));
  EXPECT_TRUE(has(k.source, "sg::macko_stage_fma<T, 1, 1>(sg_smem, cb + 80 + (j + 1) * 4,"));
  // A whole row is stored by its warp; a cut row's segments meet after a barrier that only
  // blocks with a cut row reach.
  EXPECT_TRUE(has(k.source, "const float sum = sg::warp_reduce_scatter_sum<1>(acc, lane);"));
  EXPECT_TRUE(has(k.source, "if (lane == 0 && orow >= 0) {"));
  EXPECT_TRUE(has(k.source, "C + static_cast<long long>(orow) * 1 + 0, sum, alpha, beta"));
  EXPECT_TRUE(has(k.source, "else if (lane == 0) {\n        s_part[item * 1 + 0] = sum;"));
  EXPECT_TRUE(has(k.source, "if (s_items[16].y == 0) return;\n  __syncthreads();"));
  EXPECT_TRUE(has(k.source, "for (int i = t; s_items[i].z >= 0;) {"));
  EXPECT_TRUE(has(k.source, "C + static_cast<long long>(r) * 1 + 0"));
  EXPECT_EQ(k.signature.launch.dynamic_shared_bytes, 16 + (8192 + 32) * 4 + 17 * 16 + 17 * 4);
  ASSERT_EQ(k.signature.params.size(), 7u);
  EXPECT_EQ(k.signature.params[6].name, "items");
  EXPECT_EQ(k.signature.params[6].data, macko_items(f, s.as<MackoSchedule>()));
  EXPECT_TRUE(has(k.source, "const int* __restrict__ items) {"));

  // sort=1 only changes the table: the rows in macko_row_order's order (longest first).
  const Schedule so = parse_schedule("macko;delta=4;warps=8;unroll=2;cols=1;stage=shared;sort=1");
  const GeneratedKernel ks = emit_macko(p, so, f);
  ASSERT_EQ(ks.signature.params.size(), 7u);
  const std::vector<int64_t>& items = ks.signature.params[6].data;
  const std::vector<int64_t> order = macko_row_order(f.row_ptr, 8);
  EXPECT_EQ(order.front(), 23);  // the longest row (700 + 131 * 23 nonzeros)
  // Block 0's first item is row 23 from its first slot (or its first segment).
  EXPECT_EQ(items[0], f.row_ptr[23]);
  EXPECT_EQ(items[2], -1 - f.row_ptr[23] % 8);
  nvrtc::CompileOptions o;
  o.arch = "compute_90";
  o.headers = ks.headers;
  EXPECT_NO_THROW(nvrtc::compile(ks.source, o));

  // Rows mode (4 rows per warp, or N = 4 and 8): whole rows from the bounds in front of B, and
  // with sort=1 the row-order table.
  const Schedule r = parse_schedule("macko;delta=4;warps=8;unroll=2;cols=1;stage=shared;rpw=4");
  ASSERT_FALSE(macko_uses_items(r.as<MackoSchedule>()));
  const GeneratedKernel kr = emit_macko(p, r, f);
  EXPECT_TRUE(has(kr.source, "int* const s_rows = reinterpret_cast<int*>(sg_smem);"));
  EXPECT_TRUE(has(kr.source, "ns1 = s_rows[nitem + 1];"));
  EXPECT_TRUE(has(kr.source, "orow = b0 + nitem;"));
  EXPECT_FALSE(has(kr.source, "__syncthreads();\n  for (int t"));
  ASSERT_EQ(kr.signature.params.size(), 7u);
  EXPECT_EQ(kr.signature.params[6].data, f.row_ptr);
  // 32 rows + 1 starts + the counter = 136 bytes, rounded to 144.
  EXPECT_EQ(kr.signature.launch.dynamic_shared_bytes, 144 + (8192 + 32) * 2);
  const Schedule rs =
      parse_schedule("macko;delta=4;warps=8;unroll=2;cols=1;stage=shared;rpw=4;sort=1");
  const GeneratedKernel krs = emit_macko(p, rs, f);
  ASSERT_EQ(krs.signature.params.size(), 8u);
  EXPECT_EQ(krs.signature.params[7].name, "row_order");
  EXPECT_EQ(krs.signature.params[7].data, macko_row_order(f.row_ptr, 32));
  EXPECT_TRUE(has(krs.source, "orow = s_rows[64 + nitem];"));
  o.headers = krs.headers;
  EXPECT_NO_THROW(nvrtc::compile(krs.source, o));

  // N = 8: one reduce-scatter per row (column sc on lanes 4 sc .. 4 sc + 3), and the first lane of
  // each column's group stores it: 8 lanes, one 16-byte row of C.
  const Problem p8 = Problem::spmm(a.rows, a.cols, 8, DType::F16);
  const Schedule r8 = parse_schedule("macko;delta=4;warps=8;unroll=2;cols=8;stage=shared;rpw=4");
  const GeneratedKernel k8 = emit_macko(p8, r8, pack_macko(a, 4));
  EXPECT_TRUE(has(k8.source, "const int sc = sg::warp_scatter_col<8>(lane);"));
  EXPECT_TRUE(has(k8.source, "const float sum = sg::warp_reduce_scatter_sum<8>(acc, lane);"));
  EXPECT_TRUE(has(k8.source, "if ((lane & 3) == 0 && orow >= 0) {"));
  EXPECT_TRUE(has(k8.source, "C + static_cast<long long>(orow) * 8 + sc, sum, alpha, beta"));
  EXPECT_FALSE(has(k8.source, "warp_reduce_sum<"));
  o.headers = k8.headers;
  EXPECT_NO_THROW(nvrtc::compile(k8.source, o));
}

// Staged variants the enumerator does not offer but a SPEC may ask for (b = 2, unroll 1, N = 2
// and 4, bf16, an odd K) compile too.
TEST(MackoCodegen, StagedSpecVariantsCompile) {
  const CsrMatrix a = testing::csr_with_lengths({3, 0, 1, 9, 0, 2, 40, 17}, 301, 5);
  struct Case {
    int64_t n;
    DType dt;
    const char* spec;
  };
  const Case cases[] = {
      {1, DType::F16, "macko;delta=2;warps=8;unroll=1;cols=1;stage=shared"},
      {1, DType::BF16, "macko;delta=8;warps=8;unroll=4;cols=1;stage=shared_f32;sort=1"},
      {2, DType::F16, "macko;delta=4;warps=4;unroll=2;cols=2;stage=shared;rpw=2"},
      {4, DType::BF16, "macko;delta=2;warps=8;unroll=2;cols=4;stage=shared;sort=1"},
      {8, DType::F16, "macko;delta=8;warps=16;unroll=1;cols=8;stage=shared;rpw=4;sort=1"},
  };
  for (const Case& c : cases) {
    const Problem p =
        c.n == 1 ? Problem::spmv(a.rows, a.cols, c.dt) : Problem::spmm(a.rows, a.cols, c.n, c.dt);
    const Schedule s = parse_schedule(c.spec);
    const GeneratedKernel k = emit_macko(p, s, pack_macko(a, s.as<MackoSchedule>().delta_bits));
    nvrtc::CompileOptions o;
    o.arch = "compute_90";
    o.headers = k.headers;
    EXPECT_NO_THROW(nvrtc::compile(k.source, o)) << c.spec << "\n" << k.source;
  }
}

// Two unrolled vectors share one warp scan when a warp's total of one u fits in 15 bits: always
// with 4-bit deltas, with 8-bit ones while K + 14 < 2^15 (the valid steps of one u span at most
// one row's K columns).
TEST(MackoCodegen, PackedScanBound) {
  const char* spec = "macko;delta=8;warps=8;unroll=2;cols=1;stage=shared";
  const char* packed = "sg::macko_warp_scan(tot[u] | (tot[u + 1] << 16), lane)";
  for (const int64_t k : {int64_t{32753}, int64_t{32754}}) {
    const CsrMatrix a = testing::csr_with_lengths({3, 0, 1, 9, 40, 17}, k, 5);
    const GeneratedKernel g = emit_macko(Problem::spmv(a.rows, a.cols, DType::F16),
                                         parse_schedule(spec), pack_macko(a, 8));
    EXPECT_EQ(has(g.source, packed), k == 32753) << "K = " << k;
    EXPECT_EQ(has(g.source, "sg::macko_warp_scan(tot[u], lane)"), k == 32754) << "K = " << k;
  }
  const CsrMatrix a = testing::csr_with_lengths({3, 0, 1, 9, 40, 17}, 40000, 5);
  const GeneratedKernel g4 = emit_macko(
      Problem::spmv(a.rows, a.cols, DType::F16),
      parse_schedule("macko;delta=4;warps=8;unroll=2;cols=1;stage=shared"), pack_macko(a, 4));
  EXPECT_TRUE(has(g4.source, packed));
}

TEST(MackoCodegen, DeltaWordsAreLittleEndian) {
  MackoFormat f;
  f.deltas = {0x21, 0x43, 0x65, 0x87, 0x09};
  EXPECT_EQ(macko_delta_words(f), (std::vector<int64_t>{0x87654321LL, 0x09}));
}

TEST(MackoCodegen, EveryEnumeratedScheduleCompiles) {
  const std::vector<CsrMatrix> mats = {long_rows(),
                                       testing::csr_with_lengths({3, 0, 1, 9, 0, 2}, 64, 3)};
  size_t compiled = 0;
  for (const CsrMatrix& a : mats)
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {1, 2, 7, 8})
        for (Layout l : {Layout::RowMajor, Layout::ColMajor}) {
          if (l == Layout::ColMajor && (n == 2 || dt == DType::BF16)) continue;  // bounded
          const Problem p = n == 1 && l == Layout::RowMajor
                                ? Problem::spmv(a.rows, a.cols, dt)
                                : Problem::spmm(a.rows, a.cols, n, dt, l, l);
          auto all = enumerate_macko_schedules(p, a, DeviceLimits::sm90());
          ASSERT_FALSE(all.empty()) << to_string(p);
          // Every schedule of the first problem (each structural variant: b, split, unroll,
          // block shape), the first and last of the others; SPARSEGEN_NVRTC_ALL=1: all of them
          // (~275 kernels, measured 0.2-0.5 s each here).
          const bool first = compiled == 0;
          if (!first && std::getenv("SPARSEGEN_NVRTC_ALL") == nullptr && all.size() > 2)
            all = {all.front(), all.back()};
          for (const Schedule& s : all) {
            const GeneratedKernel k =
                emit_macko(p, s, pack_macko(a, s.as<MackoSchedule>().delta_bits));
            nvrtc::CompileOptions o;
            o.arch = "compute_90";
            o.headers = k.headers;
            try {
              const auto r = nvrtc::compile(k.source, o);
              EXPECT_FALSE(r.is_cubin);
              ++compiled;
            } catch (const std::exception& e) {
              ADD_FAILURE() << to_string(p) << " " << to_string(s) << "\n"
                            << e.what() << "\n"
                            << k.source;
              return;
            }
          }
        }
  std::printf("compiled %zu MACKO kernels\n", compiled);
  EXPECT_GT(compiled, 40u);
}

}  // namespace
}  // namespace sparsegen::codegen
