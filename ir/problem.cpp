#include "ir/problem.h"

#include <fmt/format.h>

#include <charconv>

#include "ir/diagnostics.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

namespace {
constexpr std::string_view kOpNames[] = {"spmm", "spmv", "gated_ffn"};
constexpr std::string_view kScalesNames[] = {"none", "row_token"};
constexpr std::string_view kLayoutNames[] = {"row", "col"};
}  // namespace

std::string_view to_string(Op op) { return kOpNames[static_cast<int>(op)]; }
std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

std::string_view to_string(Scales s) { return kScalesNames[static_cast<int>(s)]; }
std::string_view to_string(Layout l) { return kLayoutNames[static_cast<int>(l)]; }
std::optional<Layout> parse_layout(std::string_view name) {
  for (int i = 0; i < 2; ++i)
    if (kLayoutNames[i] == name) return static_cast<Layout>(i);
  return std::nullopt;
}

std::string validate(const Problem& p) {
  auto dim = [](const char* name, int64_t v) -> std::string {
    if (v < 0) return fmt::format("problem: {} = {} is negative", name, v);
    if (v > kMaxDimension)
      return fmt::format("problem: {} = {} exceeds the largest supported dimension {}", name, v,
                         kMaxDimension);
    return {};
  };
  for (auto [name, v] : {std::pair{"m", p.m}, std::pair{"k", p.k}, std::pair{"n", p.n}})
    if (auto e = dim(name, v); !e.empty()) return e;
  if (p.op == Op::SpMV && p.n != 1)
    return fmt::format("problem: spmv needs n = 1, found n = {}", p.n);
  const bool q = is_quantized(p.dtype);
  if (q && p.io_dtype != DType::F16 && p.io_dtype != DType::BF16)
    return fmt::format("problem: {} values need fp16 or bf16 activations and output (io), found {}",
                       to_string(p.dtype), to_string(p.io_dtype));
  if (q != (p.scales == Scales::RowAndToken))
    return fmt::format("problem: {} values {} scales", to_string(p.dtype),
                       q ? "need row and token" : "take no");
  if (p.op == Op::GatedFfn) {
    if (p.dtype != DType::F16 && p.dtype != DType::BF16)
      return fmt::format("problem: a gated FFN runs in fp16 or bf16, found {}",
                         to_string(p.dtype));
    if (p.b_layout != Layout::RowMajor || p.c_layout != Layout::RowMajor)
      return "problem: a gated FFN takes row-major x and y";
  }
  return {};
}

Problem Problem::spmm(int64_t m, int64_t k, int64_t n, DType dtype, Layout b, Layout c) {
  Problem p{Op::SpMM, m, k, n, dtype, b, c};
  if (auto e = validate(p); !e.empty()) throw UserError(e);
  return p;
}

Problem Problem::spmv(int64_t m, int64_t k, DType dtype) {
  Problem p{Op::SpMV, m, k, 1, dtype, Layout::RowMajor, Layout::RowMajor};
  if (auto e = validate(p); !e.empty()) throw UserError(e);
  return p;
}

Problem Problem::quantized_spmm(int64_t m, int64_t k, int64_t n, DType dtype, DType out,
                                Layout b, Layout c) {
  Problem p{Op::SpMM, m, k, n, dtype, b, c, out, Scales::RowAndToken};
  if (!is_quantized(dtype))
    throw UserError(fmt::format("problem: quantized_spmm takes int8 or fp8_e4m3, found {}",
                                to_string(dtype)));
  if (auto e = validate(p); !e.empty()) throw UserError(e);
  return p;
}

Problem Problem::gated_ffn(int64_t m, int64_t k, int64_t n, DType dtype, bool gated) {
  Problem p{Op::GatedFfn, m, k, n, dtype, Layout::RowMajor, Layout::RowMajor};
  p.gated = gated;
  if (auto e = validate(p); !e.empty()) throw UserError(e);
  return p;
}

std::optional<std::pair<int64_t, int64_t>> parse_shape(std::string_view text) {
  const size_t x = text.find_first_of("xX");
  if (x == std::string_view::npos || x == 0) return std::nullopt;
  int64_t r = 0, c = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  const auto [p1, ec1] = std::from_chars(b, b + x, r);
  const auto [p2, ec2] = std::from_chars(b + x + 1, e, c);
  if (ec1 != std::errc() || p1 != b + x || ec2 != std::errc() || p2 != e || r < 1 || c < 1)
    return std::nullopt;
  return std::pair{r, c};
}

std::string to_string(const Problem& p) {
  std::string s = fmt::format("{} m={} k={} n={} dtype={} b={} c={}", to_string(p.op), p.m, p.k,
                              p.n, to_string(p.dtype), to_string(p.b_layout),
                              to_string(p.c_layout));
  // Only what differs from a plain floating SpMM, so existing keys stay as they were.
  if (is_quantized(p.dtype))
    s += fmt::format(" io={} scales={}", to_string(p.io_dtype), to_string(p.scales));
  if (p.op == Op::GatedFfn) s += fmt::format(" gated={}", p.gated ? 1 : 0);
  return s;
}

}  // namespace sparsegen
