#include "ir/dtype.h"
#include "ir/diagnostics.h"
#include "ir/problem.h"
#include "tests/test_support.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sparsegen {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

float from_bits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}
uint32_t to_bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

bool half_is_nan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}
bool bf16_is_nan(uint16_t h) {
  return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
}

TEST(DType, NamesRoundTrip) {
  const std::vector<std::pair<DType, std::string>> table = {
      {DType::F32, "fp32"}, {DType::F16, "fp16"}, {DType::BF16, "bf16"}};
  for (const auto& [t, name] : table) {
    EXPECT_EQ(to_string(t), name);
    auto parsed = parse_dtype(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, t);
  }
}

TEST(DType, UnknownNamesGiveNullopt) {
  // Exact, case-sensitive match: the CLI reports anything else as a bad flag value.
  for (const char* name : {"", "FP16", "f16", "half", "float16", "fp16 ", " bf16", "fp64", "bf"})
    EXPECT_FALSE(parse_dtype(name).has_value()) << '"' << name << '"';
}

TEST(DType, BytesAndMax) {
  EXPECT_EQ(dtype_bytes(DType::F32), 4);
  EXPECT_EQ(dtype_bytes(DType::F16), 2);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2);
  EXPECT_EQ(dtype_max(DType::F32), static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(dtype_max(DType::F16), 65504.0);
  EXPECT_EQ(dtype_max(DType::BF16), 3.3895313892515355e38);
  // The table agrees with the largest finite bit pattern of each 16-bit format.
  EXPECT_EQ(dtype_max(DType::F16), static_cast<double>(half_bits_to_float(0x7bff)));
  EXPECT_EQ(dtype_max(DType::BF16), static_cast<double>(bf16_bits_to_float(0x7f7f)));
}

TEST(DType, HalfExactCases) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // tie between 0x7bff and inf: even is inf
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(kInf), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-kInf), 0xfc00);
  // Subnormals: 2^-24 is the smallest; 2^-25 is a tie to even (zero); 3 * 2^-25 ties up to 2.
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Normal ties: 1 + 2^-11 is halfway between 0x3c00 and 0x3c01.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  // Rounding that carries into the exponent.
  EXPECT_EQ(float_to_half_bits(std::nextafter(2.0f, 0.0f)), 0x4000);
}

TEST(DType, HalfToFloatExactCases) {
  EXPECT_EQ(half_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x7c00), kInf);
  EXPECT_EQ(half_bits_to_float(0xfc00), -kInf);
  EXPECT_EQ(to_bits(half_bits_to_float(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7c01)));
}

TEST(DType, HalfNanStaysNan) {
  EXPECT_TRUE(half_is_nan(float_to_half_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(float_to_half_bits(-std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the low 13 bits, which truncation would drop (turning NaN into inf).
  EXPECT_TRUE(half_is_nan(float_to_half_bits(from_bits(0x7f800001u))));
  EXPECT_TRUE(half_is_nan(float_to_half_bits(from_bits(0xff801000u))));
}

// Every non-NaN 16-bit pattern survives to_float then to_bits; returns how many were checked.
int round_trip_all(uint16_t (*to_bits16)(float), float (*to_float)(uint16_t),
                   bool (*is_nan)(uint16_t)) {
  int checked = 0;
  for (uint32_t i = 0; i <= 0xffffu; ++i) {
    const auto h = static_cast<uint16_t>(i);
    if (is_nan(h)) continue;
    EXPECT_EQ(to_bits16(to_float(h)), h) << std::hex << "0x" << i;
    if (to_bits16(to_float(h)) != h) break;  // one report is enough
    ++checked;
  }
  return checked;
}

TEST(DType, HalfEveryPatternRoundTrips) {
  EXPECT_EQ(round_trip_all(float_to_half_bits, half_bits_to_float, half_is_nan), 65536 - 2 * 1023);
}

TEST(DType, HalfRoundsToNearestEvenAtEveryMidpoint) {
  // For each pair of adjacent non-negative finite halves (and 0x7bff/inf, whose midpoint is
  // 65520), the float midpoint is exact: it must go to the even pattern, its neighbours to the
  // nearer one. Negative values mirror through the sign bit.
  for (uint32_t i = 0; i < 0x7c00u; ++i) {
    const auto lo = static_cast<uint16_t>(i);
    const auto hi = static_cast<uint16_t>(i + 1);
    const double hi_val = hi == 0x7c00 ? 65536.0 : static_cast<double>(half_bits_to_float(hi));
    const auto mid = static_cast<float>((static_cast<double>(half_bits_to_float(lo)) + hi_val) / 2);
    ASSERT_EQ(float_to_half_bits(mid), (lo & 1u) ? hi : lo) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_half_bits(std::nextafter(mid, 0.0f)), lo) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_half_bits(std::nextafter(mid, kInf)), hi) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_half_bits(-mid), static_cast<uint16_t>(float_to_half_bits(mid) | 0x8000u));
  }
}

TEST(DType, Bf16ExactCases) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xbf80);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(kInf), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(-kInf), 0xff80);
  // Ties to even: 0x3f808000 lies between 0x3f80 (even) and 0x3f81; 0x3f818000 between 0x3f81
  // and 0x3f82 (even).
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808000u)), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(bf16_bits_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0x7f80), kInf);
  EXPECT_EQ(to_bits(bf16_bits_to_float(0x7f7f)), 0x7f7f0000u);
}

TEST(DType, Bf16NanStaysNan) {
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the low 16 bits: plain rounding would give inf (or carry into the sign).
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(from_bits(0x7f800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(from_bits(0x7fffffffu))));
  const uint16_t neg = float_to_bf16_bits(from_bits(0xff80ffffu));
  EXPECT_TRUE(bf16_is_nan(neg));
  EXPECT_EQ(neg & 0x8000u, 0x8000u);
}

TEST(DType, Bf16EveryPatternRoundTrips) {
  EXPECT_EQ(round_trip_all(float_to_bf16_bits, bf16_bits_to_float, bf16_is_nan), 65536 - 2 * 127);
}

TEST(DType, Bf16RoundsToNearestEvenAtEveryMidpoint) {
  // The midpoint between adjacent bf16 values h and h+1 is the float with bits (h << 16) | 0x8000.
  for (uint32_t i = 0; i < 0x7f80u; ++i) {
    const auto lo = static_cast<uint16_t>(i);
    const auto hi = static_cast<uint16_t>(i + 1);
    const float mid = from_bits((i << 16) | 0x8000u);
    ASSERT_EQ(float_to_bf16_bits(mid), (lo & 1u) ? hi : lo) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, 0.0f)), lo) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, kInf)), hi) << std::hex << "0x" << i;
    ASSERT_EQ(float_to_bf16_bits(-mid), static_cast<uint16_t>(float_to_bf16_bits(mid) | 0x8000u));
  }
}

TEST(DType, OverflowThresholds) {
  const float f16 = overflow_threshold(DType::F16);
  const float bf16 = overflow_threshold(DType::BF16);
  EXPECT_EQ(f16, 65520.0f);
  EXPECT_EQ(to_bits(bf16), 0x7f7f8000u);

  EXPECT_EQ(float_to_half_bits(f16), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::nextafter(f16, 0.0f)), 0x7bff);
  EXPECT_TRUE(std::isfinite(half_bits_to_float(float_to_half_bits(std::nextafter(f16, 0.0f)))));
  EXPECT_EQ(float_to_half_bits(-f16), 0xfc00);
  EXPECT_EQ(float_to_half_bits(-std::nextafter(f16, 0.0f)), 0xfbff);

  EXPECT_EQ(float_to_bf16_bits(bf16), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(std::nextafter(bf16, 0.0f)), 0x7f7f);
  EXPECT_TRUE(std::isfinite(bf16_bits_to_float(float_to_bf16_bits(std::nextafter(bf16, 0.0f)))));
  EXPECT_EQ(float_to_bf16_bits(-bf16), 0xff80);
  EXPECT_EQ(float_to_bf16_bits(-std::nextafter(bf16, 0.0f)), 0xff7f);
}

TEST(DType, ThresholdAndConversionOfF32AreInternalErrors) {
  // F32 needs no conversion: asking for one is a caller bug (SG_ASSERT aborts).
  const std::vector<float> v = {1.0f};
  EXPECT_DEATH(overflow_threshold(DType::F32), "overflow_threshold is for a 16-bit type");
  EXPECT_DEATH(convert_values(v, DType::F32, nullptr), "convert_values targets a 16-bit type");
}

// Values around both thresholds; indices are referred to below.
std::vector<float> mixed_values() {
  const float t16 = 65520.0f;
  const float tbf = from_bits(0x7f7f8000u);
  return {
      1.0f,                                     // 0
      std::nextafter(t16, 0.0f),                // 1: fits fp16
      t16,                                      // 2: fp16 overflow
      -70000.0f,                                // 3: fp16 overflow, negative
      kInf,                                     // 4: not counted
      -kInf,                                    // 5: not counted
      std::numeric_limits<float>::quiet_NaN(),  // 6: not counted
      std::nextafter(tbf, 0.0f),                // 7: fp16 overflow, fits bf16
      tbf,                                      // 8: both overflow
      -std::numeric_limits<float>::max(),       // 9: both overflow, negative
      -std::nextafter(t16, 0.0f),               // 10: fits fp16
      0.0f,                                     // 11
  };
}

// convert_values on mixed_values() reports what check_range reported (the report starts with
// junk, which must be overwritten) and gives `expected` bit for bit; index 6 (NaN) only needs to be
// a NaN.
void expect_conversion_matches(const std::vector<float>& v, DType dt,
                               const ConversionReport& checked,
                               const std::vector<uint16_t>& expected, bool (*is_nan)(uint16_t)) {
  ConversionReport converted{99, 99, 99.0f};
  const std::vector<uint16_t> bits = convert_values(v, dt, &converted);
  EXPECT_EQ(converted.out_of_range, checked.out_of_range);
  EXPECT_EQ(converted.first_index, checked.first_index);
  EXPECT_EQ(to_bits(converted.first_value), to_bits(checked.first_value));
  ASSERT_EQ(bits.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == 6)
      EXPECT_TRUE(is_nan(bits[i])) << std::hex << bits[i];
    else
      EXPECT_EQ(bits[i], expected[i]) << "index " << i;
  }
}

TEST(DType, CheckRangeAndConvertAgreeF16) {
  const std::vector<float> v = mixed_values();
  const ConversionReport checked = check_range(v, DType::F16);
  EXPECT_EQ(checked.out_of_range, 5);
  EXPECT_EQ(checked.first_index, 2);
  EXPECT_EQ(checked.first_value, 65520.0f);

  // Out-of-range finite values saturate to +-65504 (0x7bff / 0xfbff); inf and NaN pass through.
  expect_conversion_matches(v, DType::F16, checked,
                            {0x3c00, 0x7bff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0 /* NaN */, 0x7bff,
                             0x7bff, 0xfbff, 0xfbff, 0x0000},
                            half_is_nan);
}

TEST(DType, CheckRangeAndConvertAgreeBf16) {
  const std::vector<float> v = mixed_values();
  const ConversionReport checked = check_range(v, DType::BF16);
  EXPECT_EQ(checked.out_of_range, 2);
  EXPECT_EQ(checked.first_index, 8);
  EXPECT_EQ(to_bits(checked.first_value), 0x7f7f8000u);

  // 65519.996 and 65520 round to 65536 (0x4780) in bf16; -70000 is 0xc789.
  expect_conversion_matches(v, DType::BF16, checked,
                            {0x3f80, 0x4780, 0x4780, 0xc789, 0x7f80, 0xff80, 0 /* NaN */, 0x7f7f,
                             0x7f7f, 0xff7f, 0xc780, 0x0000},
                            bf16_is_nan);
}

TEST(DType, ConvertWithoutReportAndEmptyInput) {
  const std::vector<float> v = mixed_values();
  // A null report is allowed and changes nothing in the output.
  ConversionReport r;
  EXPECT_EQ(convert_values(v, DType::F16, nullptr), convert_values(v, DType::F16, &r));

  const std::vector<float> none;
  ConversionReport empty{7, 7, 7.0f};
  EXPECT_TRUE(convert_values(none, DType::BF16, &empty).empty());
  EXPECT_EQ(empty.out_of_range, 0);
  EXPECT_EQ(empty.first_index, -1);
  EXPECT_EQ(empty.first_value, 0.0f);
  const ConversionReport c = check_range(none, DType::F16);
  EXPECT_EQ(c.out_of_range, 0);
  EXPECT_EQ(c.first_index, -1);
}

TEST(DType, CheckRangeF32ReportsNothing) {
  const std::vector<float> v = mixed_values();
  const ConversionReport r = check_range(v, DType::F32);
  EXPECT_EQ(r.out_of_range, 0);
  EXPECT_EQ(r.first_index, -1);
  EXPECT_EQ(r.first_value, 0.0f);
}

TEST(DType, InRangeValuesConvertLikeTheScalarFunctions) {
  // No saturation below the threshold: convert_values is float_to_*_bits value by value.
  std::vector<float> v;
  for (int i = -200; i <= 200; ++i) v.push_back(static_cast<float>(i) * 327.37f);
  ConversionReport r;
  const std::vector<uint16_t> h = convert_values(v, DType::F16, &r);
  EXPECT_EQ(r.out_of_range, 0);
  EXPECT_EQ(r.first_index, -1);
  const std::vector<uint16_t> b = convert_values(v, DType::BF16, &r);
  EXPECT_EQ(r.out_of_range, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(h[i], float_to_half_bits(v[i])) << i;
    EXPECT_EQ(b[i], float_to_bf16_bits(v[i])) << i;
  }
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

TEST(QuantizedDType, NamesBytesAndMax) {
  for (auto [t, name] : {std::pair{DType::I8, "int8"}, std::pair{DType::F8E4M3, "fp8_e4m3"}}) {
    EXPECT_EQ(to_string(t), name);
    EXPECT_EQ(parse_dtype(name), t);
    EXPECT_EQ(dtype_bytes(t), 1);
    EXPECT_TRUE(is_quantized(t));
  }
  EXPECT_FALSE(is_quantized(DType::F16));
  EXPECT_EQ(dtype_max(DType::I8), 127.0);
  EXPECT_EQ(dtype_max(DType::F8E4M3), 448.0);
  EXPECT_EQ(static_cast<double>(e4m3_bits_to_float(0x7e)), dtype_max(DType::F8E4M3));
}

TEST(QuantizedDType, E4m3ExactCasesAndRounding) {
  EXPECT_EQ(float_to_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3_bits(0.5f), 0x30);
  EXPECT_EQ(float_to_e4m3_bits(-2.0f), 0xc0);
  EXPECT_EQ(float_to_e4m3_bits(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits(1e6f), 0x7e);  // saturates: the format has no infinity
  EXPECT_EQ(float_to_e4m3_bits(-1e6f), 0xfe);
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -6)), 0x08);  // smallest normal
  EXPECT_EQ(float_to_e4m3_bits(1.0625f), 0x38);               // tie: to even (1.0)
  EXPECT_EQ(float_to_e4m3_bits(1.1875f), 0x3a);               // tie: to even (1.25)
  EXPECT_EQ(float_to_e4m3_bits(std::nanf("")), 0x7f);
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xff)));
  // Every finite code round-trips.
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;
    const float f = e4m3_bits_to_float(static_cast<uint8_t>(b));
    EXPECT_EQ(float_to_e4m3_bits(f), b == 0x80 ? 0x80 : b) << b << " = " << f;
  }
  // Midpoints between neighbouring positive codes round to the even code.
  for (int b = 0; b < 0x7e; ++b) {
    const float lo = e4m3_bits_to_float(static_cast<uint8_t>(b));
    const float hi = e4m3_bits_to_float(static_cast<uint8_t>(b + 1));
    const uint8_t got = float_to_e4m3_bits((lo + hi) / 2);
    EXPECT_EQ(got, (b % 2 == 0) ? b : b + 1) << "between codes " << b << " and " << b + 1;
  }
}

TEST(QuantizedDType, Int8RoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(float_to_int8(2.5f), 2);
  EXPECT_EQ(float_to_int8(3.5f), 4);
  EXPECT_EQ(float_to_int8(-2.5f), -2);
  EXPECT_EQ(float_to_int8(126.6f), 127);
  EXPECT_EQ(float_to_int8(300.0f), 127);
  EXPECT_EQ(float_to_int8(-300.0f), -127);
  EXPECT_EQ(float_to_int8(std::nanf("")), 0);
}

TEST(QuantizedDType, RangeChecksNeverRefuseQuantizedTargets) {
  // Quantized values come through scales chosen to fit: nothing is out of range.
  const std::vector<float> v = {1e30f, -5.0f, 0.25f};
  EXPECT_EQ(check_range(v, DType::I8).out_of_range, 0);
  EXPECT_EQ(check_range(v, DType::F8E4M3).out_of_range, 0);
}

TEST(ProblemKinds, QuantizedAndGatedFfnDescriptions) {
  // Existing problems print exactly as before (cache keys).
  EXPECT_EQ(to_string(Problem::spmm(4, 5, 8, DType::F16, Layout::RowMajor, Layout::ColMajor)),
            "spmm m=4 k=5 n=8 dtype=fp16 b=row c=col");
  const Problem q = Problem::quantized_spmm(4096, 4096, 16, DType::F8E4M3, DType::BF16);
  EXPECT_EQ(to_string(q),
            "spmm m=4096 k=4096 n=16 dtype=fp8_e4m3 b=row c=row io=bf16 "
            "scales=row_token");
  EXPECT_EQ(q.c_dtype(), DType::BF16);
  EXPECT_EQ(q.b_dtype(), DType::BF16);
  EXPECT_TRUE(q.sparse_weight());
  EXPECT_EQ(Problem::spmm(2, 2, 2, DType::F16).c_dtype(), DType::F16);
  const Problem f = Problem::gated_ffn(64, 2048, 5632, DType::BF16);
  EXPECT_EQ(to_string(f), "gated_ffn m=64 k=2048 n=5632 dtype=bf16 b=row c=row gated=1");
  EXPECT_FALSE(f.sparse_weight());
  EXPECT_EQ(parse_op("gated_ffn"), Op::GatedFfn);
  EXPECT_EQ(validate(f), "");
  // Bad combinations name what is wrong.
  EXPECT_THROW(Problem::quantized_spmm(4, 4, 4, DType::F16, DType::F16), UserError);
  EXPECT_THROW(Problem::quantized_spmm(4, 4, 4, DType::I8, DType::F32), UserError);
  EXPECT_THROW(Problem::gated_ffn(4, 4, 4, DType::F32), UserError);
  EXPECT_NE(testing::error_of([] { Problem::spmm(4, 4, 4, DType::I8); }).find("scales"),
            std::string::npos);  // int8 without scales
}

}  // namespace
}  // namespace sparsegen
