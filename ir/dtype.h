// Value precisions. One name table, reused by the printer, the CLI and the cache key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace sparsegen {

// Value types. F32/F16/BF16 are floating values used as they are; I8 and F8E4M3 are quantized
// storage types (int8, and fp8 e4m3fn: 1 sign, 4 exponent, 3 mantissa bits, bias 7, no infinity,
// largest finite 448) that a problem pairs with fp32 scales and a 16-bit output type
// (ir/problem.h).
enum class DType { F32, F16, BF16, I8, F8E4M3 };

// "fp32", "fp16", "bf16", "int8", "fp8_e4m3".
std::string_view to_string(DType t);
// Inverse of to_string; nullopt for unknown names (the caller names the flag in its error).
std::optional<DType> parse_dtype(std::string_view name);
int dtype_bytes(DType t);
// Largest finite magnitude the precision can hold.
double dtype_max(DType t);
// True for the quantized storage types (I8, F8E4M3): values are used with scales.
bool is_quantized(DType t);

// IEEE binary16 / bfloat16 bit patterns, round-to-nearest-even.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);
// fp8 e4m3fn (OCP FP8, the type of sm_89+ tensor cores), round-to-nearest-even; magnitudes beyond
// 448 saturate to 448 (the format has no infinity), NaN stays NaN (0x7f).
uint8_t float_to_e4m3_bits(float f);
float e4m3_bits_to_float(uint8_t b);
// int8 by round-to-nearest-even, saturating to [-127, 127] (symmetric, as per-row quantization
// uses it); NaN becomes 0.
int8_t float_to_int8(float f);

// Result of converting fp32 master values to a narrower precision. Values whose magnitude exceeds
// the target's range are counted and the first is located; the conversion never turns a finite
// input into inf silently: callers decide (report and stop, or report and proceed).
struct ConversionReport {
  int64_t out_of_range = 0;
  int64_t first_index = -1;  // index into the value array of the first out-of-range value
  float first_value = 0;
};

// Converts to fp16 or bf16 bits. Out-of-range finite values are saturated to the largest finite
// value *and* reported; NaN/Inf inputs stay NaN/Inf (they were reported at load).
std::vector<uint16_t> convert_values(std::span<const float> values, DType target,
                                     ConversionReport* report);
// convert_values into `out` (2 bytes per value, the host's byte order, any alignment), e.g. the
// byte buffer a kernel's values are uploaded from, without an intermediate vector. Multithreaded
// for large inputs (ir/parallel.h); the result does not depend on the thread count.
ConversionReport convert_values_to(std::span<const float> values, DType target,
                                   std::span<std::byte> out);

// What convert_values would report, without converting: one comparison per value (multithreaded
// for large inputs, like the conversion).
ConversionReport check_range(std::span<const float> values, DType target);

// The smallest positive float that fp16 / bf16 rounding (to nearest even) turns into infinity:
// 65520 for fp16, 0x1.fefp127 (bits 0x7f7f8000) for bf16.
float overflow_threshold(DType target);

}  // namespace sparsegen
