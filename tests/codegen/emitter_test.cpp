// Emitter base: scopes, indentation, unique names, the typed helper table and the embedded
// template headers.
#include "codegen/emitter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "codegen/template_library.h"
#include "templates/template_index.h"
#include "tests/test_support.h"

namespace sparsegen::codegen {
namespace {

using tmpl::f32;
using tmpl::i32;
using tmpl::IntArg;
using tmpl::targs;
using tmpl::TypeArg;

TEST(Emitter, ScopesIndentAndClose) {
  Emitter e;
  e.line("int a = 0;");
  {
    auto loop = e.block("for (int i = 0; i < 4; ++i)");
    EXPECT_EQ(e.depth(), 1);
    e.line("a += i;");
    {
      auto inner = e.block("struct S", ";");
      e.line("int x;");
    }
  }
  EXPECT_EQ(e.depth(), 0);
  EXPECT_EQ(e.body(),
            "int a = 0;\n"
            "for (int i = 0; i < 4; ++i) {\n"
            "  a += i;\n"
            "  struct S {\n"
            "    int x;\n"
            "  };\n"
            "}\n");
}

TEST(Emitter, ScopeGuardMovesWithoutClosingTwice) {
  Emitter e;
  {
    auto a = e.block("if (x)");
    auto b = std::move(a);
    e.line("y();");
  }
  EXPECT_EQ(e.body(), "if (x) {\n  y();\n}\n");
}

TEST(Emitter, FreshNamesNeverShadowEnclosingScopes) {
  Emitter e;
  e.reserve("acc");
  EXPECT_EQ(e.fresh("acc"), "acc_1");
  EXPECT_EQ(e.fresh("p"), "p");
  {
    auto s = e.block();
    EXPECT_EQ(e.fresh("p"), "p_1");  // p is visible here
    EXPECT_EQ(e.fresh("q"), "q");
  }
  {
    auto s = e.block();
    EXPECT_EQ(e.fresh("q"), "q");  // sibling scope: q is free again
  }
  EXPECT_EQ(e.fresh("p"), "p_1");
}

TEST(Emitter, CommentsSplitLines) {
  Emitter e;
  e.comment("one\ntwo");
  EXPECT_EQ(e.body(), "// one\n// two\n");
}

TEST(Emitter, TypedCallsRenderAndRecordHeaders) {
  Emitter e;
  auto sum = e.call(tmpl::warp_reduce_sum_strided, targs(IntArg{4}, IntArg{8}), f32("acc[0]"));
  EXPECT_EQ(sum.text, "sg::warp_reduce_sum_strided<4, 8>(acc[0])");
  static_assert(decltype(sum)::kind == tmpl::Kind::kF32);
  e.call_stmt(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t("C + i"), f32("s"), f32("alpha"),
              f32("beta"));
  EXPECT_NE(e.body().find("sg::store_axpby<T>(C + i, s, alpha, beta);"), std::string::npos);
  // A helper's result feeds another helper when the kinds agree.
  auto heads = e.call(tmpl::segment_heads, targs(IntArg{8}), i32("row"), i32("lane"));
  auto red = e.call(tmpl::bitmap_reduce_sum, targs(IntArg{8}), f32("v"), heads, i32("lane"));
  EXPECT_EQ(red.text, "sg::bitmap_reduce_sum<8>(v, sg::segment_heads<8>(row, lane), lane)");
  EXPECT_EQ(e.used_headers(),
            (std::set<std::string>{"sg_bitmap_reduce.cuh", "sg_dtype.cuh", "sg_warp_reduce.cuh"}));
  const std::string src = e.source();
  EXPECT_EQ(src.rfind("#include \"sg_bitmap_reduce.cuh\"\n", 0), 0u);
}

// The condition the emitter's call() asserts at compile time rejects calls that no longer match
// a template's signature (wrong count, wrong kind, wrong template argument kind).
TEST(Emitter, SignatureMismatchesAreRejected) {
  using F = tmpl::Expr<tmpl::Kind::kF32>;
  using I = tmpl::Expr<tmpl::Kind::kI32>;
  using U = tmpl::Expr<tmpl::Kind::kU32>;
  static_assert(tmpl::call_matches<tmpl::warp_reduce_sum_t, tmpl::TArgs<IntArg>, F>);
  static_assert(!tmpl::call_matches<tmpl::warp_reduce_sum_t, tmpl::TArgs<IntArg>, F, F>);
  static_assert(!tmpl::call_matches<tmpl::warp_reduce_sum_t, tmpl::TArgs<TypeArg>, F>);
  static_assert(!tmpl::call_matches<tmpl::warp_reduce_sum_t, tmpl::TArgs<>, F>);
  static_assert(tmpl::call_matches<tmpl::bitmap_reduce_sum_t, tmpl::TArgs<IntArg>, F, U, I>);
  static_assert(!tmpl::call_matches<tmpl::bitmap_reduce_sum_t, tmpl::TArgs<IntArg>, F, I, I>);
  SUCCEED();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Elementwise helper kernels: a strided loop over COUNT elements after the grid-dependency calls;
// one block per 256 elements up to 1024 blocks, so a large C is not cut into 100k+ blocks that
// each pay for the grid-dependency instructions.
TEST(Emitter, ElementwiseKernelsStrideOverOneWaveOfBlocks) {
  Emitter e;
  e.elementwise_kernel("// scale", "scale_c", "float* C, float beta", 1000, "C[i] *= beta");
  const std::string s = e.source();
  const size_t wait = s.find("sg::grid_dependency_wait();");
  ASSERT_NE(wait, std::string::npos) << s;
  EXPECT_LT(s.find("sg::launch_dependents();"), wait) << s;
  EXPECT_NE(s.find("const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("i < 1000LL; i += stride) C[i] *= beta;"), std::string::npos) << s;

  EXPECT_EQ(elementwise_launch(1).grid_x, 1);
  EXPECT_EQ(elementwise_launch(1000).grid_x, 4);
  EXPECT_EQ(elementwise_launch(int64_t{1024} * 256).grid_x, 1024);
  const LaunchShape big = elementwise_launch(int64_t{1} << 25);  // a 4M x 8 C
  EXPECT_EQ(big.grid_x, 1024);
  EXPECT_EQ(big.grid_y, 1);
  EXPECT_EQ(big.block_threads, 256);
  EXPECT_TRUE(big.programmatic_wait);
}

TEST(TemplateLibrary, EmbeddedHeadersMatchTheFiles) {
  const auto headers = embedded_template_headers();
  ASSERT_GE(headers.size(), 5u);
  for (const auto& h : headers) {
    const auto path = testing::source_dir() / "templates" / std::string(h.name);
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(h.content, read_file(path)) << h.name;
    // Device code only: no host entry points, no host headers.
    EXPECT_EQ(h.content.find("#include <"), h.content.find("#include <cuda_")) << h.name;
    EXPECT_EQ(h.content.find("__host__ void"), std::string_view::npos) << h.name;
  }
}

TEST(TemplateIndex, EveryHelperComesFromAnEmbeddedHeader) {
  ASSERT_GE(tmpl::kAllHelpers.size(), 10u);
  for (const auto& h : tmpl::kAllHelpers) {
    bool found = false;
    for (const auto& e : embedded_template_headers())
      if (e.name == h.header) {
        found = true;
        EXPECT_NE(e.content.find(std::string(h.name.substr(4)) + "("), std::string_view::npos)
            << h.signature;
      }
    EXPECT_TRUE(found) << h.name << " in " << h.header;
  }
  EXPECT_EQ(tmpl::warp_reduce_sum_t::kSignature,
            "template <int WIDTH> float sg::warp_reduce_sum(float v)");
}

}  // namespace
}  // namespace sparsegen::codegen
