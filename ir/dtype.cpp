#include "ir/dtype.h"

#include "ir/diagnostics.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace sparsegen {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int bytes;
  double max;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "fp32", 4, 3.4028234663852886e38},
    {DType::F16, "fp16", 2, 65504.0},
    {DType::BF16, "bf16", 2, 3.3895313892515355e38},
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

uint16_t float_to_half_bits(float f) {
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
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
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
}  // namespace

ConversionReport check_range(std::span<const float> values, DType target) {
  ConversionReport r;
  if (target == DType::F32) return r;
  const float thr = cached_threshold(target);
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    // NaN fails the comparison and infinity is not "out of range" (reported at load).
    if (std::fabs(v) >= thr && std::isfinite(v)) {
      if (r.out_of_range == 0) {
        r.first_index = static_cast<int64_t>(i);
        r.first_value = v;
      }
      ++r.out_of_range;
    }
  }
  return r;
}

std::vector<uint16_t> convert_values(std::span<const float> values, DType target,
                                     ConversionReport* report) {
  SG_ASSERT(target != DType::F32, "convert_values targets a 16-bit type");
  const float maxv = static_cast<float>(dtype_max(target));
  const float thr = cached_threshold(target);
  std::vector<uint16_t> out(values.size());
  ConversionReport local;
  for (size_t i = 0; i < values.size(); ++i) {
    float v = values[i];
    uint16_t bits = target == DType::F16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
    if (std::fabs(v) >= thr && std::isfinite(v)) {  // rounds to infinity (no back conversion)
      if (local.out_of_range == 0) {
        local.first_index = static_cast<int64_t>(i);
        local.first_value = v;
      }
      ++local.out_of_range;
      float sat = std::copysign(maxv, v);
      bits = target == DType::F16 ? float_to_half_bits(sat) : float_to_bf16_bits(sat);
    }
    out[i] = bits;
  }
  if (report) *report = local;
  return out;
}

}  // namespace sparsegen
