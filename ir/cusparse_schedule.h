// cusparse schedule family: the sparse weight multiplied by the vendor's CSR SpMM (cuSPARSE),
// the library candidate the tuner measures next to the generated kernels on every problem it can
// run (and returns where the library is faster, saying so). Its IrFamily is in
// ir/cusparse_family.cpp.
//
//   cusparse;alg=alg2
//     alg  the CSR SpMM algorithm: default (the library's choice), alg1, alg2 or alg3
//
// One step per run: C = alpha · A · B + beta · C by cusparseSpMM on A's CSR arrays (32-bit
// offsets and indices), fp32 values and compute; B and C in one order. (The library's 16-bit
// SpMM is not offered: it misses the fp32-accumulation error bound.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// The library's CSR SpMM algorithms; kCsrAlgNames is the one name table (spec, printer, the
// runtime's choice of algorithm).
enum class CsrAlg { Default, Alg1, Alg2, Alg3 };
inline constexpr std::string_view kCsrAlgNames[] = {"default", "alg1", "alg2", "alg3"};
std::string_view to_string(CsrAlg a);

struct CusparseSchedule {
  static constexpr std::string_view kFamily = "cusparse";
  CsrAlg alg = CsrAlg::Default;
  bool operator==(const CusparseSchedule&) const = default;
};

// Reasons the library cannot run the problem (op, dtype, layouts, sizes); empty = it can.
std::vector<std::string> validate_cusparse(const Problem& p);
// The same plus the matrix's own limits (nonzeros beyond 32-bit offsets, none at all).
std::vector<std::string> why_not_cusparse(const Problem& p, const CsrMatrix& a);
std::string cusparse_spec(const CusparseSchedule& s);
std::string print_cusparse(const CusparseSchedule& s);
CusparseSchedule parse_cusparse_fields(std::string_view spec,
                                       const std::vector<std::string_view>& parts);
// The device's limits: the library's SpMM kernels run blocks of 128 threads and more.
std::vector<std::string> verify_cusparse(const DeviceLimits& dev);
// One schedule per algorithm when the library can run the problem on the device, else none.
std::vector<Schedule> enumerate_cusparse_schedules(const Problem& p, const CsrMatrix& a,
                                                   const DeviceLimits& dev);

}  // namespace sparsegen
