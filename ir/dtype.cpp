#include "ir/dtype.h"

#include "ir/diagnostics.h"
#include "ir/parallel.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

namespace sparsegen {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int bytes;
  double max;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "fp32", 4, 3.4028234663852886e38},  {DType::F16, "fp16", 2, 65504.0},
    {DType::BF16, "bf16", 2, 3.3895313892515355e38}, {DType::I8, "int8", 1, 127.0},
    {DType::F8E4M3, "fp8_e4m3", 1, 448.0},
};
const DTypeInfo& info(DType t) {
  return kDTypes[static_cast<int>(t)];
}
}  // namespace

std::string_view to_string(DType t) {
  return info(t).name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  return info(t).bytes;
}
double dtype_max(DType t) {
  return info(t).max;
}
bool is_quantized(DType t) {
  return t == DType::I8 || t == DType::F8E4M3;
}

uint8_t float_to_e4m3_bits(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);  // saturate: 1.75 * 2^8
  // Subnormals: spacing 2^-9 below 2^-6.
  if (a < 0.015625f) {
    const float q = std::nearbyint(a * 512.0f);  // round half to even (default rounding mode)
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));  // q = 8 is the first normal
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // a = 1.f * 2^(e-1); three mantissa bits: scale the significand to [8, 16) and round.
  float sig = std::nearbyint(m * 16.0f);  // in [8, 16]
  int exp = e - 1;
  if (sig == 16.0f) {
    sig = 8.0f;
    ++exp;
  }
  const int biased = exp + 7;
  if (biased > 15 || (biased == 15 && sig > 14.0f))
    return static_cast<uint8_t>(sign | 0x7e);  // beyond 448 after rounding
  return static_cast<uint8_t>(sign | (biased << 3) | (static_cast<int>(sig) - 8));
}

float e4m3_bits_to_float(uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int exp = (b >> 3) & 0xf, man = b & 0x7;
  if (exp == 0xf && man == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
}

int8_t float_to_int8(float f) {
  if (std::isnan(f)) return 0;
  const float r = std::nearbyint(std::clamp(f, -127.0f, 127.0f));
  return static_cast<int8_t>(r);
}

namespace {

// The conversions, inlined into the bulk loops below (the public functions call them).
inline uint16_t half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow -> signed zero
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: ok
  return static_cast<uint16_t>(half);
}

inline uint16_t bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace

uint16_t float_to_half_bits(float f) {
  return half_bits(f);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_bf16_bits(float f) {
  return bf16_bits(f);
}

float bf16_bits_to_float(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

float overflow_threshold(DType target) {
  SG_ASSERT(target != DType::F32, "overflow_threshold is for a 16-bit type");
  auto overflows = [target](uint32_t bits) {
    const float v = std::bit_cast<float>(bits);
    return !std::isfinite(target == DType::F16 ? half_bits_to_float(float_to_half_bits(v))
                                               : bf16_bits_to_float(float_to_bf16_bits(v)));
  };
  // Rounding is monotone in |v|: binary search over the positive finite bit patterns.
  uint32_t lo = 0, hi = 0x7f800000u;  // overflows(hi) (infinity); !overflows(lo) (zero)
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (overflows(mid) ? hi : lo) = mid;
  }
  return std::bit_cast<float>(hi);
}

namespace {

float cached_threshold(DType t) {
  static const float f16 = overflow_threshold(DType::F16);
  static const float bf16 = overflow_threshold(DType::BF16);
  return t == DType::F16 ? f16 : bf16;
}

// Merges per-chunk reports in chunk order: the same report as one pass over all values.
ConversionReport merge_reports(const std::vector<ConversionReport>& parts,
                               const std::vector<int64_t>& bounds) {
  ConversionReport r;
  for (size_t c = 0; c < parts.size(); ++c) {
    if (parts[c].out_of_range == 0) continue;
    if (r.out_of_range == 0) {
      r.first_index = bounds[c] + parts[c].first_index;
      r.first_value = parts[c].first_value;
    }
    r.out_of_range += parts[c].out_of_range;
  }
  return r;
}

// Counts (and locates the first of) the finite values at or above thr in magnitude, which round to
// infinity: NaN fails the comparison and infinity is not "out of range" (reported at load).
inline void note_range(float v, float thr, int64_t i, ConversionReport& r) {
  if (std::fabs(v) >= thr && std::isfinite(v)) {
    if (r.out_of_range == 0) {
      r.first_index = i;
      r.first_value = v;
    }
    ++r.out_of_range;
  }
}

// values[b, e) to 16-bit words at out + 2 * (i - b) (unaligned, host byte order), saturating what
// would overflow; the report's first_index is relative to b.
template <DType T>
ConversionReport convert_chunk(const float* values, int64_t n, float thr, std::byte* out) {
  const float maxv = static_cast<float>(dtype_max(T));
  ConversionReport r;
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    uint16_t bits = T == DType::F16 ? half_bits(v) : bf16_bits(v);
    if (std::fabs(v) >= thr && std::isfinite(v)) [[unlikely]] {  // rounds to infinity
      note_range(v, thr, i, r);
      const float sat = std::copysign(maxv, v);
      bits = T == DType::F16 ? half_bits(sat) : bf16_bits(sat);
    }
    std::memcpy(out + 2 * i, &bits, 2);
  }
  return r;
}

}  // namespace

ConversionReport check_range(std::span<const float> values, DType target) {
  // fp32 holds every master value; quantized types are reached through scales chosen to fit.
  if (target == DType::F32 || is_quantized(target)) return {};
  const float thr = cached_threshold(target);
  const int64_t n = static_cast<int64_t>(values.size());
  const std::vector<int64_t> bounds = even_split(n, parallel_chunks(n));
  std::vector<ConversionReport> parts(bounds.size() - 1);
  run_chunks(bounds, [&](int c, int64_t b, int64_t e) {
    ConversionReport r;
    for (int64_t i = b; i < e; ++i) note_range(values[static_cast<size_t>(i)], thr, i - b, r);
    parts[static_cast<size_t>(c)] = r;
  });
  return merge_reports(parts, bounds);
}

ConversionReport convert_values_to(std::span<const float> values, DType target,
                                   std::span<std::byte> out) {
  SG_ASSERT(target != DType::F32, "convert_values targets a 16-bit type");
  SG_ASSERT(out.size() == 2 * values.size(), "convert_values_to: output is not 2 bytes per value");
  const float thr = cached_threshold(target);
  const int64_t n = static_cast<int64_t>(values.size());
  const std::vector<int64_t> bounds = even_split(n, parallel_chunks(n));
  std::vector<ConversionReport> parts(bounds.size() - 1);
  run_chunks(bounds, [&](int c, int64_t b, int64_t e) {
    const float* v = values.data() + b;
    std::byte* o = out.data() + 2 * b;
    parts[static_cast<size_t>(c)] = target == DType::F16
                                        ? convert_chunk<DType::F16>(v, e - b, thr, o)
                                        : convert_chunk<DType::BF16>(v, e - b, thr, o);
  });
  return merge_reports(parts, bounds);
}

std::vector<uint16_t> convert_values(std::span<const float> values, DType target,
                                     ConversionReport* report) {
  SG_ASSERT(target != DType::F32, "convert_values targets a 16-bit type");
  std::vector<uint16_t> out;
  resize_prefaulted(out, values.size());
  const ConversionReport r =
      convert_values_to(values, target, std::as_writable_bytes(std::span(out)));
  if (report) *report = r;
  return out;
}

}  // namespace sparsegen
