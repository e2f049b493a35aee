// GeneralSparse emitter: pattern checks on the emitted CUDA (not byte equality).
#include "codegen/general_sparse.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ir/format.h"
#include "tests/codegen/codegen_test_matrices.h"

namespace sparsegen::codegen {
namespace {

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

GeneratedKernel emit(const CsrMatrix& a, const Problem& p, const std::string& spec) {
  const Schedule s = parse_schedule(spec);
  const auto why = validate(p, s);
  EXPECT_TRUE(why.empty()) << spec << ": " << (why.empty() ? "" : why.front());
  const PackedFormat f = pack_format(a, p, s);
  return emit_general_sparse(p, s, f);
}

const CsrMatrix& matrix(size_t i) {
  static const auto mats = testing::codegen_matrices();
  return mats.at(i).a;
}

const CsrMatrix& uniform() {
  static const CsrMatrix a = testing::csr_with_lengths(std::vector<int64_t>(32, 8), 64, 4);
  return a;
}

TEST(GeneralSparse, CsrVectorShape) {
  const Problem p = Problem::spmm(32, 64, 32, DType::F16);
  const auto k = emit(uniform(), p,
                      "general;block=rows:4;warp=row;thread=nnz:4;warps=4;group=8;tcols=2;"
                      "bcols=32;red=total,total,none;pad=4;vec=4");
  const std::string& s = k.source;
  EXPECT_TRUE(has(s, "using T = __half;"));
  EXPECT_TRUE(has(s, "extern \"C\" __global__ void __launch_bounds__(128) sparsegen_general("));
  EXPECT_TRUE(has(s, "#include \"sg_warp_reduce.cuh\""));
  EXPECT_TRUE(has(s, "sg::warp_reduce_sum_strided<4, 8>(acc[0])"));
  EXPECT_TRUE(has(s, "sg::load_vec_f32<4, T>(values + p"));
  EXPECT_TRUE(has(s, "sg::load_vec_i32<4>(col_idx + p"));
  EXPECT_TRUE(has(s, "sg::fma_vec_f32<2, T>("));  // N % tcols == 0, row-major B
  EXPECT_TRUE(has(s, "sg::store_axpby<T>("));
  EXPECT_FALSE(has(s, "atomic_add"));
  EXPECT_FALSE(k.signature.prologue.present());
  EXPECT_FALSE(k.signature.epilogue.present());
  // One kernel, launched first: nothing of the sequence to wait for.
  EXPECT_FALSE(has(s, "grid_dependency_wait"));
  EXPECT_FALSE(k.signature.launch.programmatic_wait);
  EXPECT_EQ(k.signature.workspace_bytes, 0);
  EXPECT_EQ(k.signature.launch.block_threads, 128);
  EXPECT_EQ(k.signature.launch.grid_x, 8);  // 32 rows / 4 per block
  EXPECT_EQ(k.signature.launch.grid_y, 1);
  EXPECT_EQ(k.headers.count("sg_warp_reduce.cuh"), 1u);
  // Uniform rows: the block and warp child offsets are linear, emitted as arithmetic.
  EXPECT_FALSE(has(s, "block_child_begin["));
  EXPECT_FALSE(has(s, "warp_child_begin["));
  EXPECT_FALSE(has(s, "thread_nz_begin["));
  for (const auto& prm : k.signature.params) EXPECT_NE(prm.kind, ParamKind::I32Table) << prm.name;
}

TEST(GeneralSparse, RowPerBlockUsesBlockReduction) {
  const Problem p = Problem::spmv(32, 64, DType::F32);
  const auto k = emit(uniform(), p,
                      "general;block=row;warp=nnz:32;thread=nnz:1;warps=2;group=1;tcols=1;"
                      "bcols=1;red=total,total,total;pad=1;vec=1");
  EXPECT_TRUE(has(k.source, "__shared__ float red_smem[64];"));
  EXPECT_TRUE(has(k.source, "sg::block_reduce_sum<64, 1>(acc[0], red_smem, tid)"));
  EXPECT_TRUE(has(k.source, "if (tid < 1)"));
  EXPECT_EQ(k.signature.launch.shared_bytes, 64 * 4);
  EXPECT_EQ(k.signature.launch.grid_x, 32);
}

TEST(GeneralSparse, WholeRowsPerGroupHasNoCrossLaneReduction) {
  const auto& a = matrix(0);  // empty rows
  const Problem p = Problem::spmm(8, 16, 7, DType::BF16, Layout::ColMajor, Layout::ColMajor);
  const auto k = emit(a, p,
                      "general;block=rows:8;warp=rows:2;thread=row;warps=2;group=4;tcols=2;"
                      "bcols=8;red=total,none,none;pad=1;vec=1");
  const std::string& s = k.source;
  EXPECT_TRUE(has(s, "using T = __nv_bfloat16;"));
  EXPECT_FALSE(has(s, "reduce_sum"));
  // Column-major B (K x N): element (k, col) at col * K + k; C (M x N): col * M + row.
  EXPECT_TRUE(has(s, "* 16 + k[j]"));
  EXPECT_TRUE(has(s, "* 8 + orow"));
  // N = 7 is not a multiple of tcols = 2: guarded scalar loads, no vector load of B.
  EXPECT_FALSE(has(s, "fma_vec_f32"));
  EXPECT_TRUE(has(s, "< 7)"));
}

TEST(GeneralSparse, NonzeroSplitUsesAtomicsAndPrologue) {
  const auto& a = matrix(2);  // power law
  const Problem p = Problem::spmm(a.rows, a.cols, 8, DType::F32);
  const auto k = emit(a, p,
                      "general;block=nnz:64;warp=nnz:32;thread=nnz:4;warps=2;group=4;tcols=2;"
                      "bcols=8;red=bitmap,segment,segment;pad=1;vec=2");
  const std::string& s = k.source;
  EXPECT_TRUE(has(s, "sparsegen_general_scale_c(T* C, float beta)"));
  EXPECT_TRUE(has(s, "sg::scale_f32<T>(C + i, beta)"));
  EXPECT_TRUE(has(s, "row_start_bits"));
  EXPECT_TRUE(has(s, "sg::segment_heads<4>(row, lane)"));
  EXPECT_TRUE(has(s, "sg::bitmap_reduce_sum<4>(acc[0]"));
  // fp32: the atomic adds go straight into C (fp32 atomics); no workspace, no epilogue.
  EXPECT_TRUE(has(s, "sg::atomic_add_f32<float>(C + "));
  EXPECT_FALSE(has(s, "store_axpby"));
  // Programmatic dependent launch: the prologue lets the kernel start at once, and the kernel
  // waits for the prologue's beta·C before its first atomic add (not before its loads).
  EXPECT_TRUE(has(s, "#include \"sg_grid_dependency.cuh\""));
  EXPECT_TRUE(has(s, "sg::launch_dependents();\n  sg::grid_dependency_wait();"));
  const size_t kernel_at = s.find("sparsegen_general(");
  const size_t wait_at = s.find("sg::grid_dependency_wait();", kernel_at);
  ASSERT_NE(wait_at, std::string::npos);
  EXPECT_LT(s.find("(col_idx + ", kernel_at), wait_at);  // the index loads come first
  EXPECT_LT(wait_at, s.find("sg::atomic_add_f32<float>(C + ", kernel_at));
  EXPECT_TRUE(k.signature.launch.programmatic_wait);
  EXPECT_TRUE(k.signature.prologue.launch.programmatic_wait);
  EXPECT_FALSE(has(s, "float* __restrict__ ws"));
  EXPECT_EQ(k.signature.prologue.name, "sparsegen_general_scale_c");
  EXPECT_EQ(k.signature.prologue.launch.grid_x, std::min<int64_t>((p.m * p.n + 255) / 256, 1024));
  ASSERT_EQ(k.signature.prologue.params.size(), 2u);
  EXPECT_EQ(k.signature.prologue.params[0].kind, ParamKind::C);
  EXPECT_EQ(k.signature.prologue.params[1].kind, ParamKind::Beta);
  EXPECT_FALSE(k.signature.epilogue.present());
  EXPECT_EQ(k.signature.workspace_bytes, 0);
  EXPECT_EQ(k.signature.params[3].kind, ParamKind::C);
  bool bits = false;
  for (const auto& prm : k.signature.params)
    if (prm.name == "row_start_bits") {
      bits = true;
      EXPECT_EQ(prm.kind, ParamKind::U32Table);
      EXPECT_FALSE(prm.data.empty());
    }
  EXPECT_TRUE(bits);
}

// fp16/bf16 with split rows: the partial rows meet in an fp32 workspace (fp32 atomics), the
// prologue sets it to beta*C, the epilogue rounds it into C once. A 16-bit atomicAdd would round
// every partial sum and overflow where partial sums exceed the dtype's range (LAGraph/olm1000).

// Above kProgrammaticMaxNnz stored nonzeros an atomic kernel launches after its prologue in stream
// order: no wait in the kernel, no programmatic launch (the prologue keeps its own).
TEST(GeneralSparse, LargeAtomicKernelsDoNotWaitOnTheirPrologue) {
  CsrMatrix a;
  a.rows = 17000;
  a.cols = 5000;
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t j = 0; j < 64; ++j) {
      a.col_idx.push_back(static_cast<int32_t>((r * 7 + j * 73) % a.cols));
      a.values.push_back(0.5f + static_cast<float>((r + j) % 7) * 0.125f);
    }
    std::sort(a.col_idx.end() - 64, a.col_idx.end());
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  ASSERT_GT(a.nnz(), int64_t{1} << 20);
  const Problem p = Problem::spmm(a.rows, a.cols, 8, DType::F32);
  const auto k = emit(a, p,
                      "general;block=nnz:64;warp=nnz:32;thread=nnz:4;warps=2;group=4;tcols=2;"
                      "bcols=8;red=bitmap,segment,segment;pad=1;vec=2");
  const std::string& s = k.source;
  const size_t kernel_at = s.find("sparsegen_general(");
  ASSERT_NE(kernel_at, std::string::npos);
  EXPECT_TRUE(has(s, "sg::atomic_add_f32<float>(C + "));
  EXPECT_EQ(s.find("sg::grid_dependency_wait();", kernel_at), std::string::npos);
  EXPECT_FALSE(k.signature.launch.programmatic_wait);
  EXPECT_EQ(k.signature.prologue.name, "sparsegen_general_scale_c");
}
TEST(GeneralSparse, SixteenBitNonzeroSplitAccumulatesInAnFp32Workspace) {
  const auto& a = matrix(2);
  for (DType t : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(to_string(t)));
    const Problem p = Problem::spmm(a.rows, a.cols, 8, t, Layout::RowMajor, Layout::ColMajor);
    const auto k = emit(a, p,
                        "general;block=nnz:64;warp=nnz:32;thread=nnz:4;warps=2;group=4;tcols=2;"
                        "bcols=8;red=bitmap,segment,segment;pad=1;vec=2");
    const std::string& s = k.source;
    const KernelSignature& sig = k.signature;
    // Main kernel: ws instead of C, fp32 atomics into it (column-major: col * M + row).
    EXPECT_TRUE(has(s, "float* __restrict__ ws,"));
    EXPECT_TRUE(has(s, fmt::format("sg::atomic_add_f32<float>(ws + static_cast<long long>(", "")));
    EXPECT_TRUE(has(s, fmt::format(") * {} + orow", p.m)));
    EXPECT_FALSE(has(s, "atomic_add_f32<T>"));
    EXPECT_FALSE(has(s, "scale_f32"));
    ASSERT_GE(sig.params.size(), 6u);
    EXPECT_EQ(sig.params[3].kind, ParamKind::Workspace);
    EXPECT_EQ(sig.params[3].name, "ws");
    for (const auto& prm : sig.params) EXPECT_NE(prm.kind, ParamKind::C) << prm.name;
    EXPECT_EQ(sig.workspace_bytes, p.m * p.n * 4);
    // Prologue ws = beta*C (C read-only, not read when beta == 0), epilogue C = round(ws).
    // Aux kernels take plain pointers: a programmatic launch must not read ws before its wait.
    EXPECT_TRUE(has(s, "sparsegen_general_init_ws(float* ws, const T* C, float beta)"));
    EXPECT_TRUE(has(s, "sg::init_workspace<T>(ws + i, C + i, beta)"));
    EXPECT_TRUE(has(s, "sparsegen_general_store_ws(T* C, const float* ws)"));
    EXPECT_TRUE(has(s, "sg::store_f32<T>(C + i, ws[i])"));
    EXPECT_EQ(sig.prologue.name, "sparsegen_general_init_ws");
    EXPECT_EQ(sig.epilogue.name, "sparsegen_general_store_ws");
    ASSERT_EQ(sig.prologue.params.size(), 3u);
    EXPECT_EQ(sig.prologue.params[0].kind, ParamKind::Workspace);
    EXPECT_EQ(sig.prologue.params[1].kind, ParamKind::C);
    EXPECT_EQ(sig.prologue.params[2].kind, ParamKind::Beta);
    ASSERT_EQ(sig.epilogue.params.size(), 2u);
    EXPECT_EQ(sig.epilogue.params[0].kind, ParamKind::C);
    EXPECT_EQ(sig.epilogue.params[1].kind, ParamKind::Workspace);
    for (const LaunchShape& l : {sig.prologue.launch, sig.epilogue.launch}) {
      EXPECT_EQ(l.grid_x, std::min<int64_t>((p.m * p.n + 255) / 256, 1024));
      EXPECT_EQ(l.block_threads, 256);
    }
    const std::string d = describe(sig);
    EXPECT_TRUE(has(d, "prologue sparsegen_general_init_ws(ws, C, beta)")) << d;
    EXPECT_TRUE(has(d, "epilogue sparsegen_general_store_ws(C, ws)")) << d;
    EXPECT_TRUE(has(d, fmt::format("workspace {} bytes", p.m * p.n * 4))) << d;
  }
}

TEST(GeneralSparse, WarpBitmapLoadsTheStoredBitmap) {
  const auto& a = matrix(2);
  const Problem p = Problem::spmv(a.rows, a.cols, DType::F32);
  const auto k = emit(a, p,
                      "general;block=nnz:64;warp=nnz:64;thread=nnz:2;warps=1;group=1;tcols=1;"
                      "bcols=1;red=total,bitmap,segment;pad=2;vec=1");
  EXPECT_TRUE(has(k.source, "const unsigned heads = warp_bitmap[wt];"));
  EXPECT_TRUE(has(k.source, "sg::is_run_head<1>(heads, lane)"));
}

TEST(GeneralSparse, SignatureListsTablesInOrder) {
  const auto& a = matrix(2);
  const Problem p = Problem::spmm(a.rows, a.cols, 4, DType::F32);
  const auto k = emit(a, p,
                      "general;block=rows:2;warp=row;thread=nnz:2;warps=2;group=4;tcols=1;"
                      "bcols=4;red=total,total,none;pad=2;vec=2");
  ASSERT_GE(k.signature.params.size(), 6u);
  EXPECT_EQ(k.signature.params[0].kind, ParamKind::Values);
  EXPECT_EQ(k.signature.params[3].kind, ParamKind::C);
  EXPECT_EQ(k.signature.params[5].kind, ParamKind::Beta);
  // Every table parameter is named in the source's parameter list.
  for (const auto& prm : k.signature.params)
    EXPECT_TRUE(has(k.source, " " + prm.name + (&prm == &k.signature.params.back() ? ")" : ",")))
        << prm.name;
  EXPECT_TRUE(has(describe(k.signature), "kernel sparsegen_general"));
}

}  // namespace
}  // namespace sparsegen::codegen
