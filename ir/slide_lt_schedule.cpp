#include "ir/slide_lt_schedule.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/slide_format.h"
#include "ir/slide_schedule.h"
#include "ir/spec_fields.h"

namespace sparsegen {
namespace {

// fp8 e4m3 is not offered: the library's e4m3 GEMM misses the fp32-accumulation error bound
// every kernel is checked against (measured on an H200, cuSPARSELt 0.8: relative errors of
// 0.0017 where the bound allows 0.0016, a few elements per case; its accumulation is not full
// fp32). The generated slide kernels run e4m3 within the bound.
bool lt_dtype(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::I8;
}

// The library's rule for the structured operand's M and K.
int64_t mk_multiple(DType t) {
  return dtype_bytes(t) == 1 ? 32 : 16;
}

}  // namespace

std::vector<std::string> validate(const SlideLtSchedule& s) {
  std::vector<std::string> why;
  if (s.pattern < kSlideMinN || s.pattern > kSlideMaxN)
    why.push_back(fmt::format("pattern N={} must be in {} … {} (2:4 … 14:16)", s.pattern,
                              kSlideMinN, kSlideMaxN));
  if (s.alg < SlideLtSchedule::kSearch)
    why.push_back(fmt::format("alg={} must be search or an id >= 0", s.alg));
  if (s.split_k != 1 && s.split_k != 2 && s.split_k != 4 && s.split_k != 8)
    why.push_back(fmt::format("split_k={} must be one of 1, 2, 4, 8", s.split_k));
  if (s.split_k_mode < 0 || s.split_k_mode > 2)
    why.push_back(fmt::format("split_k_mode={} must be 0, 1 or 2", s.split_k_mode));
  if (s.split_k_buffers < 1 || s.split_k_buffers > s.split_k)
    why.push_back(fmt::format("split_k_buffers={} must be in 1 … split_k", s.split_k_buffers));
  if (s.searched() && (s.split_k != 1 || s.split_k_mode != 0 || s.split_k_buffers != 1))
    why.push_back("alg=search finds split-K itself: give split_k only with an algorithm id");
  return why;
}

std::vector<std::string> validate_slide_lt(const Problem& p) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("slide_lt computes SpMM/SpMV with a static sparse weight, not {}",
                              to_string(p.op)));
  if (!lt_dtype(p.dtype))
    why.push_back(
        fmt::format("slide_lt runs the 2:4 library GEMM in fp16, bf16 or int8, not {} (its fp8 "
                    "GEMM exceeds the fp32-accumulation error bound; the slide family runs fp8)",
                    to_string(p.dtype)));
  if (is_quantized(p.dtype) && p.io_dtype != DType::F16 && p.io_dtype != DType::BF16)
    why.push_back(
        fmt::format("slide_lt writes fp16 or bf16 outputs, not {}", to_string(p.io_dtype)));
  if (p.c_layout != Layout::ColMajor)
    why.push_back(
        "slide_lt needs C column-major (the library writes each token's outputs contiguously)");
  if (p.degenerate())
    why.push_back(fmt::format("slide_lt needs M, K, N > 0 (got M={}, K={}, N={})", p.m, p.k, p.n));
  if (lt_dtype(p.dtype) && p.m % mk_multiple(p.dtype) != 0)
    why.push_back(fmt::format(
        "slide_lt needs M a multiple of {} for {} (the library's rule for the 2:4 operand), not {}",
        mk_multiple(p.dtype), to_string(p.dtype), p.m));
  return why;
}

std::string slide_lt_spec(const SlideLtSchedule& s) {
  const std::string pat = fmt::format("{}:{}", 2 * s.pattern - 2, 2 * s.pattern);
  if (s.searched()) return fmt::format("slide_lt;pattern={};alg=search", pat);
  return fmt::format("slide_lt;pattern={};alg={};split_k={};split_k_mode={};split_k_buffers={}",
                     pat, s.alg, s.split_k, s.split_k_mode, s.split_k_buffers);
}

std::string print_slide_lt(const SlideLtSchedule& s) {
  std::string out = "schedule slide_lt\n";
  out += fmt::format("  format: {}:{} as 2:4 sliding windows (gamma {:.3f}), dense lifted weight\n",
                     2 * s.pattern - 2, 2 * s.pattern, 2.0 - 2.0 / s.pattern);
  out += "  b     : lifted (and quantized per token) by the b_transform kernel, column-major\n";
  out += "  gemm  : the 2:4 sparse GEMM library (cuSPARSELt), weight compressed at load\n";
  if (s.searched())
    out += "  alg   : searched when the kernel is loaded\n";
  else
    out += fmt::format("  alg   : id {}, split_k {} (mode {}, {} buffer{})\n", s.alg, s.split_k,
                       s.split_k_mode, s.split_k_buffers, s.split_k_buffers == 1 ? "" : "s");
  out += "  scale : int8: row x token scales applied to the raw accumulators (main kernel)\n";
  return out;
}

SlideLtSchedule parse_slide_lt_fields(std::string_view spec,
                                      const std::vector<std::string_view>& parts) {
  SlideLtSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (key == "pattern") {
      s.pattern = parse_slide_pattern_field(key, v);
    } else if (key == "alg") {
      s.alg = v == "search" ? SlideLtSchedule::kSearch
                            : static_cast<int>(spec_fields::parse_int(key, v, 0, 4096));
    } else if (key == "split_k") {
      s.split_k = static_cast<int>(spec_fields::parse_int(key, v, 1, 64));
    } else if (key == "split_k_mode") {
      s.split_k_mode = static_cast<int>(spec_fields::parse_int(key, v, 0, 2));
    } else if (key == "split_k_buffers") {
      s.split_k_buffers = static_cast<int>(spec_fields::parse_int(key, v, 1, 64));
    } else {
      spec_fields::error(
          key, "one of pattern, alg, split_k, split_k_mode, split_k_buffers (family slide_lt)",
          key);
    }
  });
  spec_fields::check_legal(spec, validate(s));
  return s;
}

std::string slide_lt_choice(const SlideLtSchedule& s) {
  if (s.searched()) return "";
  return fmt::format("alg={},split_k={},mode={},buffers={}", s.alg, s.split_k, s.split_k_mode,
                     s.split_k_buffers);
}

SlideLtSchedule with_choice(const SlideLtSchedule& s, std::string_view choice) {
  SlideLtSchedule out = s;
  int seen = 0;
  size_t pos = 0;
  while (pos <= choice.size()) {
    const size_t end = std::min(choice.find(',', pos), choice.size());
    const std::string_view part = choice.substr(pos, end - pos);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      throw UserError(fmt::format("library choice '{}': '{}' is not KEY=VALUE", choice, part));
    const std::string_view key = part.substr(0, eq), v = part.substr(eq + 1);
    const int64_t x = spec_fields::parse_int(key, v, 0, 4096);
    if (key == "alg")
      out.alg = static_cast<int>(x), seen |= 1;
    else if (key == "split_k")
      out.split_k = static_cast<int>(x), seen |= 2;
    else if (key == "mode")
      out.split_k_mode = static_cast<int>(x), seen |= 4;
    else if (key == "buffers")
      out.split_k_buffers = static_cast<int>(x), seen |= 8;
    else
      throw UserError(fmt::format("library choice '{}': unknown field '{}'", choice, key));
    pos = end + 1;
  }
  if (seen != 15)
    throw UserError(
        fmt::format("library choice '{}' lacks one of alg, split_k, mode, buffers", choice));
  // The library reports split-K 1 plans with its own mode and buffer defaults: normalise them.
  if (out.split_k == 1) out.split_k_mode = 0, out.split_k_buffers = 1;
  const auto why = validate(out);
  if (!why.empty())
    throw UserError(
        fmt::format("library choice '{}' is not a slide_lt schedule: {}", choice, why.front()));
  return out;
}

int64_t slide_lt_lifted_k(const Problem& p, int pattern) {
  return slide_chunks(p, pattern, SlideForm::Library) *
         slide_mma(p.dtype, SlideForm::Library).chunk;
}

int64_t slide_lt_b_work_bytes(const Problem& p, int pattern) {
  return slide_lt_lifted_k(p, pattern) * p.n * dtype_bytes(p.dtype);
}

int64_t slide_lt_workspace_bytes(const Problem& p) {
  return is_quantized(p.dtype) ? p.m * p.n * 4 : 0;
}

std::vector<std::string> verify_slide_lt(const Problem& p, const DeviceLimits& dev) {
  std::vector<std::string> why;
  const int sm = dev.sm();
  if (sm != 0 && sm < 80)
    why.push_back(
        fmt::format("{} has no 2:4 sparse tensor cores (the library needs sm_80)", dev.name));
  // The lift runs blocks of 128 threads, the scale kernel of 256.
  const int threads = is_quantized(p.dtype) ? 256 : 128;
  if (dev.max_threads_per_block < threads)
    why.push_back(fmt::format("the lift and scale kernels need blocks of {} threads; {} allows {}",
                              threads, dev.name, dev.max_threads_per_block));
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k * p.n > INT32_MAX ||
      (lt_dtype(p.dtype) && slide_lt_b_work_bytes(p, kSlideMaxN) > INT32_MAX) ||
      p.m * p.n > INT32_MAX)
    why.push_back("the operands exceed the lift's and scale kernel's 32-bit offsets");
  return why;
}

std::vector<Schedule> enumerate_slide_lt_schedules(const Problem& p, const CsrMatrix& a,
                                                   const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!validate_slide_lt(p).empty() || !verify_slide_lt(p, dev).empty()) return out;
  const SlidePattern pat = detect_slide_pattern(a);
  if (pat.n == 0) return out;
  SlideLtSchedule s;
  s.pattern = pat.n;
  out.emplace_back(s);
  return out;
}

}  // namespace sparsegen
