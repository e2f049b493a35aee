// Flag values shared by several sub-commands, parsed through the library's name tables so the
// error names the flag: "--dtype: expected fp32, fp16 or bf16, found 'fp8'".
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ir/dtype.h"
#include "ir/problem.h"

namespace sparsegen::cli {

DType dtype_flag(const std::string& value, const char* flag = "--dtype");
Layout layout_flag(const std::string& value, const char* flag);
// "ROWSxCOLS" (or "ROWSXCOLS"), both at least 1: "--shape 8x: expected ROWSxCOLS, e.g. 4096x11008".
std::pair<int64_t, int64_t> shape_flag(const std::string& value, const char* flag);

}  // namespace sparsegen::cli
