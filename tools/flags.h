// Flag values shared by several sub-commands, parsed through the library's name tables so the
// error names the flag: "--dtype: expected fp32, fp16, bf16, int8 or fp8_e4m3, found 'fp8'".
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ir/dtype.h"
#include "ir/problem.h"

namespace sparsegen::cli {

// Any value type: fp32, fp16, bf16, or the quantized int8 / fp8_e4m3 (per-row weight scales,
// per-token activation scales; B and C then hold the --io type).
DType dtype_flag(const std::string& value, const char* flag = "--dtype");
// The caller's B and C type of a quantized problem: fp16 or bf16.
DType io_flag(const std::string& value, const char* flag = "--io");
Layout layout_flag(const std::string& value, const char* flag);
// "ROWSxCOLS" (or "ROWSXCOLS"), both at least 1: "--shape 8x: expected ROWSxCOLS, e.g. 4096x11008".
std::pair<int64_t, int64_t> shape_flag(const std::string& value, const char* flag);

}  // namespace sparsegen::cli
