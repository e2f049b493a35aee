// Public value types of sparsegen (fp32, fp16, bf16 and the quantized int8 / fp8 e4m3) and their
// one name table, reused by the printer, the CLI and the cache key. Self-contained: part of the
// installed API (the internal ir/dtype.h adds the host conversions).
#pragma once

#include <optional>
#include <string_view>

namespace sparsegen {

// Value types. F32/F16/BF16 are floating values used as they are; I8 and F8E4M3 are quantized
// storage types (int8, and fp8 e4m3fn: 1 sign, 4 exponent, 3 mantissa bits, bias 7, no infinity,
// largest finite 448) that a problem pairs with fp32 scales and a 16-bit output type
// (sparsegen/problem.h).
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

}  // namespace sparsegen
