// Offset compression: an integer offset array that follows a simple rule is emitted as arithmetic
// instead of a memory load. classify() picks the cheapest exact form, in this order:
//
//   Linear       a[i] = stride·i + base                              e.g. 0 8 16 24 32
//   Branch       piecewise constant with <= kMaxBranchPieces pieces:   e.g. 0 0 0 5 5 9 9 9
//                a[i] = values[j] for breaks[j] <= i < breaks[j+1]  (emitted as a compare chain)
//   Cyclic       a[i] = table[i % period] + (i / period)·stride,      e.g. 0 1 3 | 4 5 7 | 8 9 11
//                period <= kMaxCyclicPeriod                           (table: a few constants)
//   Quasilinear  a[i] = stride·i + base + residual[i], residuals fit in int8 or int16 (a narrow
//                table load replaces a 4/8-byte one)                   e.g. 0 9 17 26 33 ...
//   Table        a[i] = table[i] (a plain load)
//
// Every form reconstructs the array exactly: eval(i) == a[i] for all i (tested).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen {

enum class OffsetForm { Linear, Branch, Cyclic, Quasilinear, Table };
std::string_view to_string(OffsetForm f);  // "linear", "branch", "cyclic", "quasilinear", "table"

inline constexpr int kMaxBranchPieces = 4;
inline constexpr int kMaxCyclicPeriod = 32;

struct OffsetCompression {
  OffsetForm form = OffsetForm::Table;
  int64_t size = 0;    // number of entries
  int64_t stride = 0;  // Linear, Cyclic (per period), Quasilinear
  int64_t base = 0;    // Linear, Quasilinear
  int64_t period = 0;  // Cyclic
  // Branch: breaks (first index of each piece, breaks[0] == 0) and values, one per piece.
  std::vector<int64_t> breaks;
  // Branch: piece values; Cyclic: the period table; Quasilinear: residuals; Table: empty (the
  // table is the classified array itself: no copy of an array that can be 22M entries long).
  std::vector<int64_t> values;
  int residual_bytes = 0;  // Quasilinear: 1 or 2

  // Reconstructs a[i] from the form, reading `a` (the classified array) only for a Table;
  // precondition 0 <= i < size.
  int64_t eval(int64_t i, std::span<const int64_t> a) const;
  // Bytes of table data the kernel still loads (0 for Linear/Branch; small for Cyclic).
  int64_t table_bytes() const;
};

// Picks the first exact form of the list above.
OffsetCompression classify_offsets(std::span<const int64_t> a);

// "linear(stride=8,base=0)", "branch(3 pieces)", "cyclic(period=3,stride=4)",
// "quasilinear(stride=8,base=0,residual=int8)", "table(n=100)".
std::string describe(const OffsetCompression& c);

}  // namespace sparsegen
