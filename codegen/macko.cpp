#include "codegen/macko.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "codegen/emitter.h"
#include "ir/diagnostics.h"
#include "ir/macko_schedule.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

using tmpl::cptr_u32;
using tmpl::f32;
using tmpl::i32;
using tmpl::IntArg;
using tmpl::ptr_u32;
using tmpl::targs;
using tmpl::TypeArg;

class MackoEmitter : public Emitter {
 public:
  MackoEmitter(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
               const EmitOptions& opt)
      : p_(p), s_(s), f_(f), opt_(opt) {}

  GeneratedKernel run() {
    if (p_.dtype != DType::F16 && p_.dtype != DType::BF16)
      throw UserError(
          fmt::format("codegen: MACKO needs fp16 or bf16 values, not {}", to_string(p_.dtype)));
    if (f_.slots() > INT_MAX / 2 || p_.m > INT_MAX / 2 || p_.k > INT_MAX / 2 || p_.n > INT_MAX / 2)
      throw UserError(
          fmt::format("codegen: {} with {} MACKO slots exceeds the kernel's 32-bit "
                      "positions",
                      to_string(p_), f_.slots()));
    SG_ASSERT(f_.rows == p_.m && f_.cols == p_.k && f_.delta_bits == s_.delta_bits,
              "emit_macko: the format does not match the problem and schedule");
    R_ = s_.warps_per_row;
    U_ = s_.unroll;
    NC_ = s_.cols;
    NT_ = s_.threads_per_block();
    items_ = macko_uses_items(s_);
    for (const char* n :
         {"values", "B",    "C",  "alpha",   "beta",    "deltas", "row_ptr", "items",  "row_order",
          "lane",   "warp", "T",  "sg_smem", "s_items", "s_part", "s_rows",  "s_next", "b_items",
          "b0",     "item", "i0", "nitems",  "orow",    "sc",     "sum",     "fc"})
      reserve(n);
    decl(fmt::format("// sparsegen MACKO kernel\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl(fmt::format("using T = {};", p_.dtype == DType::F16 ? "__half" : "__nv_bfloat16"));
    if (s_.staged())
      emit_staged_body();
    else
      emit_body();
    GeneratedKernel k;
    k.source = assemble();
    k.headers = header_sources();
    k.signature = signature();
    return k;
  }

 private:
  std::string b_ptr(const std::string& k, const std::string& col) const {
    return p_.b_layout == Layout::RowMajor
               ? fmt::format("B + static_cast<long long>({}) * {} + {}", k, p_.n, col)
               : fmt::format("B + static_cast<long long>({}) * {} + {}", col, p_.k, k);
  }
  std::string c_ptr(const std::string& row, const std::string& col) const {
    return p_.c_layout == Layout::RowMajor
               ? fmt::format("C + static_cast<long long>({}) * {} + {}", row, p_.n, col)
               : fmt::format("C + static_cast<long long>({}) * {} + {}", col, p_.m, row);
  }

  // acc[i] += a * B[col][col0 + i] for the thread's columns.
  void emit_fma(const std::string& a, const std::string& col) {
    if (p_.b_layout == Layout::RowMajor && NC_ > 1 && p_.n % NC_ == 0) {
      call_stmt(tmpl::fma_vec_f32, targs(IntArg{NC_}, TypeArg{"T"}),
                tmpl::cptr_t(b_ptr(col, "col0")), f32(a), tmpl::ptr_f32("acc"));
      return;
    }
    for (int i = 0; i < NC_; ++i) {
      const std::string c = fmt::format("col0 + {}", i);
      const std::string b =
          call(tmpl::load_f32, targs(TypeArg{"T"}), tmpl::cptr_t(b_ptr(col, c))).text;
      if (NC_ == 1 || (i == 0))
        line(fmt::format("acc[{}] = fmaf({}, {}, acc[{}]);", i, a, b, i));
      else
        line(fmt::format("if ({} < {}) acc[{}] = fmaf({}, {}, acc[{}]);", c, p_.n, i, a, b, i));
    }
  }

  // C[row][col0 + col] = alpha * v + beta * C, for a column inside N.
  void emit_guarded_store(const std::string& col, const std::string& v) {
    const std::string c = fmt::format("col0 + {}", col);
    auto g = NC_ == 1 || p_.n % NC_ == 0 ? block() : block(fmt::format("if ({} < {})", c, p_.n));
    call_stmt(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t(c_ptr("row", c)), f32(v),
              f32("alpha"), f32("beta"));
  }

  void emit_body() {
    const int rpb = s_.rows_per_block();
    const int step = R_ * kWarpSize * U_;  // vectors per step of the row's warps
    const int dw = s_.delta_bits == 8 ? 2 : 1;
    const int bits = s_.delta_bits;
    line("const int lane = threadIdx.x % 32;");
    line("const int warp = threadIdx.x / 32;");
    emit_scatter_col();
    line(fmt::format("const int row = blockIdx.x * {} + warp / {};", rpb, R_));
    line(fmt::format("const int wr = warp % {};", R_));
    line("(void)wr;");
    if (R_ > 1) {
      line(fmt::format("__shared__ int wtot[2][{}];", R_));
      line(fmt::format("__shared__ float part[{}][{}];", R_, NC_));
      comment("split row: the block is one row, so this exit is block-uniform");
    } else {
      comment("warp per row: the exit is warp-uniform and no block barrier follows");
    }
    line(fmt::format("if (row >= {}) return;", p_.m));
    line(fmt::format("const int col0 = blockIdx.y * {};", NC_));
    line("const int s0 = row_ptr[row];");
    line("const int s1 = row_ptr[row + 1];");
    line("const int v1 = (s1 + 7) >> 3;");
    line(fmt::format("float acc[{}];", NC_));
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) acc[i] = 0.0f;", NC_));
    line("int carry = 0;");
    if (R_ > 1) line("int buf = 0;");
    {
      auto loop = block(fmt::format("for (int base = s0 >> 3; base < v1; base += {})", step));
      line(fmt::format("unsigned raw[{}][4] = {{}};", U_));
      line(fmt::format("unsigned dw[{}][{}] = {{}};", U_, dw));
      line(fmt::format("int pre[{}][8];", U_));
      line(fmt::format("int tot[{}], incl[{}];", U_, U_));
      comment("issue every load of the step first (unroll x 16 bytes of values in flight)");
      line("#pragma unroll");
      {
        auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
        line(fmt::format("const int vec = base + wr * {} + u * 32 + lane;", kWarpSize * U_));
        auto g = block("if (vec < v1)");
        call_stmt(tmpl::macko_load_values, targs(TypeArg{"T"}), tmpl::cptr_t("values"), i32("vec"),
                  ptr_u32("raw[u]"));
        call_stmt(tmpl::macko_load_deltas, targs(IntArg{bits}), cptr_u32("deltas"), i32("vec"),
                  ptr_u32("dw[u]"));
      }
      line("#pragma unroll");
      {
        auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
        line(fmt::format("const int vec = base + wr * {} + u * 32 + lane;", kWarpSize * U_));
        comment("lanes past the row's last vector decode nothing (their slots are >= s1)");
        line(fmt::format("tot[u] = {};", call(tmpl::macko_decode, targs(IntArg{bits}),
                                              cptr_u32("dw[u]"), i32("vec * 8"), i32("s0"),
                                              i32("vec < v1 ? s1 : 0"), tmpl::ptr_i32("pre[u]"))
                                             .text));
        line(fmt::format("incl[u] = {};",
                         call(tmpl::macko_warp_scan, i32("tot[u]"), i32("lane")).text));
      }
      if (R_ > 1) {
        comment("split row: each warp's slot total of this step meets the others in shared memory");
        line("int wsum = 0;");
        line("#pragma unroll");
        line(fmt::format(
            "for (int u = 0; u < {}; ++u) wsum += __shfl_sync(0xffffffffu, incl[u], 31);", U_));
        line("if (lane == 0) wtot[buf][wr] = wsum;");
        line("__syncthreads();");
        line("int before = 0, all = 0;");
        line("#pragma unroll");
        {
          auto w = block(fmt::format("for (int w = 0; w < {}; ++w)", R_));
          line("const int t = wtot[buf][w];");
          line("before += w < wr ? t : 0;");
          line("all += t;");
        }
        line("int c = carry + before;");
        line("carry += all;");
        line("buf ^= 1;");
      } else {
        line("int c = carry;");
      }
      line("#pragma unroll");
      {
        auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
        line("const int ex = c + incl[u] - tot[u] - 1;");
        line("#pragma unroll");
        {
          auto j = block("for (int j = 0; j < 8; ++j)");
          line("const int prev = j == 0 ? 0 : pre[u][j - 1];");
          auto g = block("if (pre[u][j] != prev)");
          line("const int col = ex + pre[u][j];");
          line(fmt::format(
              "const float a = {};",
              call(tmpl::macko_value, targs(TypeArg{"T"}), cptr_u32("raw[u]"), i32("j")).text));
          emit_fma("a", "col");
        }
        line("c += __shfl_sync(0xffffffffu, incl[u], 31);");
      }
      if (R_ == 1) line("carry = c;");
    }
    comment("row total: lanes (a reduce-scatter: column sc on its group's lanes), then warps");
    comment("(shared memory, fixed order)");
    emit_scatter_sum("acc");
    if (R_ > 1) {
      line(fmt::format("if ({}) part[wr][{}] = sum;", scatter_writer(), scatter_col()));
      line("__syncthreads();");
      comment("thread fc < NC finishes column fc");
      line("const int fc = threadIdx.x;");
      line(fmt::format("if (fc >= {}) return;", NC_));
      line("float t = 0.0f;");
      line("#pragma unroll");
      line(fmt::format("for (int w = 0; w < {}; ++w) t += part[w][fc];", R_));
      emit_guarded_store("fc", "t");
    } else {
      line(fmt::format("if ({}) return;", scatter_writer(false)));
      emit_guarded_store(scatter_col(), "sum");
    }
    shared_bytes_ = macko_shared_bytes(s_);
  }

  // Staged B, warp per row; the block's work items (its rows, long ones cut into segments:
  // ir/macko_schedule.h, macko_items) are taken one at a time from a shared counter. The shape
  // (U = unroll, ES = bytes per staged row of B, G = guard rows, IPB = items per block):
  //   extern __shared__ unsigned sg_smem[];  // [counter | G zero | B | G zero | items | sums]
  //   s_items[t] = items[blockIdx.x * IPB + t];  item = warp;  load step 0 of the item
  //   stage B;  __syncthreads();
  //   for (;;) {
  //     at the item's last step: next item = atomicAdd(counter, 1)
  //     load the next step (of this item or the next)  // in flight while this step computes
  //     mask the item's edge vectors; lane totals; one warp scan (two u packed in one int)
  //     for u, j: cb += step(j); acc += value(j) * B_smem[cb + (G + j + 1) * ES]
  //     at the item's end: warp reduce-scatter (column sc on lanes sc * 32 / NC ...); the first
  //     lane of each column stores a whole row's C, or leaves a cut row's segment sum in shared
  //     memory
  //   }
  //   blocks with a cut row: __syncthreads(); per cut row: C = alpha * (its segments) + beta * C
  // Rows mode (the other staged schedules) is the same loop over whole rows: the row bounds sit in
  // front of B ([row bounds | counter | G zero | B | G zero]), every item is a row, no barrier.
  void emit_staged_body() {
    SG_ASSERT(R_ == 1 && p_.n == NC_ && p_.b_layout == Layout::RowMajor &&
                  macko_stage_offset(s_) % 16 == 0,
              "staged MACKO: warp per row, cols == n, row-major B");
    const int dw = s_.delta_bits == 8 ? 2 : 1;
    emit_staged_first_item();
    line(fmt::format("unsigned raw[{}][4], dw[{}][{}];", U_, U_, dw));
    comment("the first step's loads are issued before B is staged, so both are in flight");
    emit_staged_loads("raw", "dw", "base", "v1", "");
    call_stmt(tmpl::macko_stage_b,
              targs(TypeArg{"T"}, IntArg{NC_}, IntArg{staged_f32()}, IntArg{kMackoStageGuard}),
              tmpl::cptr_t("B"), i32(std::to_string(p_.k)),
              ptr_u32(fmt::format("sg_smem + {}", macko_stage_offset(s_) / 4)));
    line("__syncthreads();");
    line(fmt::format("float acc[{}];", NC_));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) acc[c] = 0.0f;", NC_));
    {
      auto loop = block("for (;;)");
      emit_staged_next_position();
      line(fmt::format("unsigned nraw[{}][4], ndw[{}][{}];", U_, U_, dw));
      emit_staged_loads("nraw", "ndw", "nbase", "nv1", "nitem < nitems && ");
      emit_staged_step();
      emit_staged_item_end();
      line("#pragma unroll");
      {
        auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
        line("#pragma unroll");
        line("for (int w = 0; w < 4; ++w) raw[u][w] = nraw[u][w];");
        line("#pragma unroll");
        line(fmt::format("for (int w = 0; w < {}; ++w) dw[u][w] = ndw[u][w];", dw));
      }
      line("base = nbase;");
      line("item = nitem;");
      line("s0 = ns0;");
      line("s1 = ns1;");
      line("v1 = nv1;");
    }
    emit_staged_store_rows();
    shared_bytes_ = 0;
    dynamic_shared_bytes_ = macko_stage_bytes(p_, s_);
  }

  // `const float sum = ...`: the warp's sum of column scatter_col() of acc (NC_ columns), on
  // every lane (sg::warp_reduce_scatter_sum; acc is clobbered).
  void emit_scatter_sum(const std::string& acc) {
    line(fmt::format(
        "const float sum = {};",
        call(tmpl::warp_reduce_scatter_sum, targs(IntArg{NC_}), tmpl::ptr_f32(acc), i32("lane"))
            .text));
  }
  // The column a lane holds after emit_scatter_sum, and whether it is its group's first lane
  // (the one that stores it; is = false: the test that it is not).
  std::string scatter_col() const { return NC_ == 1 ? "0" : "sc"; }
  std::string scatter_writer(bool is = true) const {
    const char* op = is ? "==" : "!=";
    return NC_ == 1 ? fmt::format("lane {} 0", op)
                    : fmt::format("(lane & {}) {} 0", kWarpSize / NC_ - 1, op);
  }
  void emit_scatter_col() {
    if (NC_ > 1)
      line(fmt::format("const int sc = {};",
                       call(tmpl::warp_scatter_col, targs(IntArg{NC_}), i32("lane")).text));
  }

  int staged_f32() const { return s_.stage == BStage::SharedF32 ? 1 : 0; }
  int ipb() const { return macko_items_per_block(s_); }

  // Items mode (macko_uses_items): the counter, then B, then the block's items (first slot, end
  // slot, carry, row) and the cut rows' partial sums. The warp's first item is read from global
  // memory (the shared copy is complete only after the barrier); the block has `warps` spare
  // items, so every warp has a first one (perhaps empty).
  void emit_staged_first_item() {
    line("extern __shared__ __align__(16) unsigned sg_smem[];");
    if (!items_) {
      emit_staged_first_row();
      return;
    }
    line("int* const s_next = reinterpret_cast<int*>(sg_smem);");
    line(fmt::format("int4* const s_items = reinterpret_cast<int4*>(sg_smem + {});",
                     macko_items_offset(p_, s_) / 4));
    line(fmt::format("float* const s_part = reinterpret_cast<float*>(s_items + {});", ipb()));
    line("const int lane = threadIdx.x % 32;");
    line("const int warp = threadIdx.x / 32;");
    emit_scatter_col();
    comment("the block's items: first slot, end slot, column carry, row (-1: not a row's last)");
    line(fmt::format(
        "const int4* const b_items = reinterpret_cast<const int4*>(items) + blockIdx.x * {};",
        ipb()));
    line(fmt::format("for (int t = threadIdx.x; t < {}; t += {}) s_items[t] = b_items[t];", ipb(),
                     NT_));
    line(fmt::format("if (threadIdx.x == 0) *s_next = {};", s_.warps_per_block));
    comment("the header (last item): how many are real, whether a row was cut; a warp past them");
    comment("starts on an empty item");
    line(fmt::format("const int nitems = b_items[{}].x;", ipb() - 1));
    line("int item = warp;");
    line("const int4 i0 = b_items[warp];");
    line("int s0 = i0.x, s1 = i0.y, carry = i0.z;");
    comment("a whole row (its first segment, carry < 0, and its last, row >= 0) is stored at once");
    line("int orow = i0.z < 0 ? i0.w : -1;");
    line("int base = s0 >> 3;");
    line("int v1 = (s1 + 7) >> 3;");
  }

  // Rows mode: the block's row bounds in front of B (rows_per_block + 1 starts; with sort_rows a
  // start, an end and the row per row), and the counter; every item is a whole row.
  void emit_staged_first_row() {
    const int rpb = s_.rows_per_block();
    const bool sorted = s_.sort_rows;
    line("int* const s_rows = reinterpret_cast<int*>(sg_smem);");
    line(fmt::format("int* const s_next = s_rows + {};", sorted ? 3 * rpb : rpb + 1));
    line("const int lane = threadIdx.x % 32;");
    line("const int warp = threadIdx.x / 32;");
    emit_scatter_col();
    line(fmt::format("const int b0 = blockIdx.x * {};", rpb));
    line(fmt::format("const int nitems = min({}, {} - b0);", rpb, p_.m));
    line("int item = warp;");
    line("int s0 = 0, s1 = 0, orow = -1;");
    if (sorted) {
      comment("the block's rows in row_order (balanced blocks, longest first): start, end, row");
      line(fmt::format("for (int t = threadIdx.x; t < nitems; t += {}) {{", NT_));
      line("  const int o = row_order[b0 + t];");
      line("  s_rows[t] = row_ptr[o];");
      line(fmt::format("  s_rows[{} + t] = row_ptr[o + 1];", rpb));
      line(fmt::format("  s_rows[{} + t] = o;", 2 * rpb));
      line("}");
      line("if (item < nitems) {");
      line("  orow = row_order[b0 + item];");
      line("  s0 = row_ptr[orow];");
      line("  s1 = row_ptr[orow + 1];");
      line("}");
    } else {
      comment("the block's row bounds, for the rows taken after the first");
      line(fmt::format(
          "for (int t = threadIdx.x; t <= nitems; t += {}) s_rows[t] = row_ptr[b0 + t];", NT_));
      line("if (item < nitems) {");
      line("  orow = b0 + item;");
      line("  s0 = row_ptr[orow];");
      line("  s1 = row_ptr[orow + 1];");
      line("}");
    }
    line(fmt::format("if (threadIdx.x == 0) *s_next = {};", s_.warps_per_block));
    comment("the row's first vector starts s0 & 7 slots early: those slots step from column -1");
    line("int carry = -1 - (s0 & 7);");
    line("int base = s0 >> 3;");
    line("int v1 = (s1 + 7) >> 3;");
  }

  // One step's loads into rw/dws: vectors b + u * 32 + lane below `end` (zeros elsewhere).
  void emit_staged_loads(const std::string& rw, const std::string& dws, const std::string& b,
                         const std::string& end, const std::string& live) {
    const int dw = s_.delta_bits == 8 ? 2 : 1;
    line("#pragma unroll");
    auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
    line(fmt::format("const int vec = {} + u * 32 + lane;", b));
    {
      auto g = block(fmt::format("if ({}vec < {})", live, end));
      call_stmt(tmpl::macko_load_values, targs(TypeArg{"T"}), tmpl::cptr_t("values"), i32("vec"),
                ptr_u32(rw + "[u]"));
      call_stmt(tmpl::macko_load_deltas, targs(IntArg{s_.delta_bits}), cptr_u32("deltas"),
                i32("vec"), ptr_u32(dws + "[u]"));
    }
    auto e = block("else");
    line("#pragma unroll");
    line(fmt::format("for (int w = 0; w < 4; ++w) {}[u][w] = 0u;", rw));
    line("#pragma unroll");
    line(fmt::format("for (int w = 0; w < {}; ++w) {}[u][w] = 0u;", dw, dws));
  }

  // Where the next step starts: further along this item, or at its end the next item taken from
  // the block's counter.
  void emit_staged_next_position() {
    line(fmt::format("int nbase = base + {};", kWarpSize * U_));
    line("int nitem = item, ns0 = s0, ns1 = s1, nv1 = v1;");
    line("const bool item_end = nbase >= v1;");
    auto g = block("if (item_end)");
    line("int t = 0;");
    line("if (lane == 0) t = atomicAdd(s_next, 1);");
    line("nitem = __shfl_sync(0xffffffffu, t, 0);");
    auto h = block("if (nitem < nitems)");
    if (items_) {
      line("const int4 n = s_items[nitem];");
      line("ns0 = n.x;");
      line("ns1 = n.y;");
    } else {
      line("ns0 = s_rows[nitem];");
      line(s_.sort_rows ? fmt::format("ns1 = s_rows[{} + nitem];", s_.rows_per_block())
                        : std::string("ns1 = s_rows[nitem + 1];"));
    }
    line("nbase = ns0 >> 3;");
    line("nv1 = (ns1 + 7) >> 3;");
  }

  // This step: mask the item's edge vectors, lane totals, warp scan, then per slot one staged-B
  // gather and the FMAs.
  void emit_staged_step() {
    const int bits = s_.delta_bits;
    const int es = s_.stage_row_bytes();
    const int64_t b_off = macko_stage_offset(s_) + kMackoStageGuard * es;
    // Two unrolled vectors' lane totals share one scan when a warp's total fits in 16 bits: with
    // b_delta <= 4 a lane's total is at most 8 * 16; with 8 bits, the valid slots of one u are of
    // one row (an item is a row or a segment of one), so their steps add up to at most K, and the
    // masked ones (at most 7 on each side) step by 1. (Below 2^15, so that the packed int stays
    // positive through the scan.)
    const bool pack = U_ >= 2 && (bits <= 4 || p_.k + 14 < (int64_t{1} << 15));
    line(fmt::format("int tot[{}], inc[{}];", U_, U_));
    line(fmt::format("unsigned pl[{}][2];", U_));
    line("#pragma unroll");
    {
      auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
      line("const int vec = base + u * 32 + lane;");
      line("const int first = vec * 8;");
      line("tot[u] = 0;");
      {
        auto g = block("if (vec < v1)");
        comment("only an item's first and last vectors hold slots of other items");
        line("if (first < s0 || first + 8 > s1)");
        line(fmt::format(
            "  {};", call(tmpl::macko_mask, targs(IntArg{bits}), ptr_u32("raw[u]"),
                          ptr_u32("dw[u]"), i32("max(s0 - first, 0)"), i32("min(s1 - first, 8)"))
                         .text));
        line(
            fmt::format("tot[u] = {};",
                        call(tmpl::macko_lane_total, targs(IntArg{bits}), cptr_u32("dw[u]")).text));
      }
      call_stmt(tmpl::macko_planes, targs(IntArg{bits}, IntArg{es}), cptr_u32("dw[u]"),
                ptr_u32("pl[u]"));
    }
    if (pack) {
      comment(bits <= 4
                  ? "two lane totals per scan: a warp's total of one u is at most 32 * 128 < 2^16"
                  : "two lane totals per scan: a warp's total of one u is at most K + 14 < 2^15");
      line("#pragma unroll");
      auto q = block(fmt::format("for (int u = 0; u < {}; u += 2)", U_));
      line(fmt::format(
          "const int both = {};",
          call(tmpl::macko_warp_scan, i32("tot[u] | (tot[u + 1] << 16)"), i32("lane")).text));
      line("inc[u] = both & 0xffff;");
      line("inc[u + 1] = both >> 16;");
    } else {
      line("#pragma unroll");
      line(fmt::format("for (int u = 0; u < {}; ++u) inc[u] = {};", U_,
                       call(tmpl::macko_warp_scan, i32("tot[u]"), i32("lane")).text));
    }
    line("#pragma unroll");
    auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", U_));
    {
      comment("lanes past the item's end have nothing; skipped when the whole warp is past it");
      auto g = block("if (base + u * 32 < v1)");
      line(fmt::format("int cb = (carry + inc[u] - tot[u]) * {};", es));
      line("#pragma unroll");
      auto j = block("for (int j = 0; j < 8; ++j)");
      line(fmt::format("cb += {};", call(tmpl::macko_step, targs(IntArg{bits}, IntArg{es}),
                                         cptr_u32("pl[u]"), i32("j"))
                                        .text));
      call_stmt(
          tmpl::macko_stage_fma, targs(TypeArg{"T"}, IntArg{NC_}, IntArg{staged_f32()}),
          cptr_u32("sg_smem"), i32(fmt::format("cb + {} + (j + 1) * {}", b_off, es)),
          f32(call(tmpl::macko_value, targs(TypeArg{"T"}), cptr_u32("raw[u]"), i32("j")).text),
          tmpl::ptr_f32("acc"));
    }
    line("carry += __shfl_sync(0xffffffffu, inc[u], 31);");
  }

  // At an item's end: the warp's sum, scattered so that column c lands on the lanes of column
  // c's group (warp_reduce_scatter_sum); the first lane of each group stores a whole row's column,
  // or leaves a segment's sum in shared memory; then the next item's start (or the exit).
  void emit_staged_item_end() {
    auto g = block("if (item_end)");
    emit_scatter_sum("acc");
    {
      auto st = block(fmt::format("if ({} && orow >= 0)", scatter_writer()));
      call_stmt(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t(c_ptr("orow", scatter_col())),
                f32("sum"), f32("alpha"), f32("beta"));
    }
    if (items_) {
      auto part = block(fmt::format("else if ({})", scatter_writer()));
      line(fmt::format("s_part[item * {} + {}] = sum;", NC_, scatter_col()));
    }
    line("if (nitem >= nitems) break;");
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) acc[c] = 0.0f;", NC_));
    if (items_) {
      comment("read again rather than held in registers through the step");
      line("const int4 n = s_items[nitem];");
      line("carry = n.z;");
      line("orow = n.z < 0 ? n.w : -1;");
    } else {
      line("carry = -1 - (ns0 & 7);");
      line(s_.sort_rows ? fmt::format("orow = s_rows[{} + nitem];", 2 * s_.rows_per_block())
                        : std::string("orow = b0 + nitem;"));
    }
  }

  // Blocks with a cut row only (the header's flag, block-uniform), after every warp's last item:
  // each row's last segment adds the segments before it, back to the row's first (carry < 0), and
  // stores C.
  void emit_staged_store_rows() {
    if (!items_) return;
    comment("blocks without a cut row stored every row in the loop: no barrier");
    line(fmt::format("if (s_items[{}].y == 0) return;", ipb() - 1));
    line("__syncthreads();");
    auto t = block(fmt::format("for (int t = threadIdx.x; t < nitems; t += {})", NT_));
    line("const int4 last = s_items[t];");
    line("const int r = last.w;");
    line("if (r < 0 || last.z < 0) continue;");
    line(fmt::format("float sum[{}];", NC_));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) sum[c] = s_part[t * {} + c];", NC_, NC_));
    {
      auto i = block("for (int i = t; s_items[i].z >= 0;)");
      line("--i;");
      line("#pragma unroll");
      line(fmt::format("for (int c = 0; c < {}; ++c) sum[c] += s_part[i * {} + c];", NC_, NC_));
    }
    for (int c = 0; c < NC_; ++c)
      call_stmt(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t(c_ptr("r", std::to_string(c))),
                f32(fmt::format("sum[{}]", c)), f32("alpha"), f32("beta"));
  }

  std::string assemble() const {
    return kernel_source(fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const T* __restrict__ values,\n    const T* __restrict__ B,\n"
        "    T* __restrict__ C,\n    float alpha,\n    float beta,\n"
        "    const unsigned* __restrict__ deltas,\n    const int* __restrict__ {}) {{\n",
        NT_, opt_.kernel_name,
        items_ ? "items"
               : (s_.sort_rows ? "row_ptr,\n    const int* __restrict__ row_order" : "row_ptr")));
  }

  KernelSignature signature() const {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = {
        {"values", ParamKind::Values, "macko.values", {}},
        {"B", ParamKind::B, "B", {}},
        {"C", ParamKind::C, "C", {}},
        {"alpha", ParamKind::Alpha, "alpha", {}},
        {"beta", ParamKind::Beta, "beta", {}},
        {"deltas", ParamKind::U32Table, "macko.deltas", macko_delta_words(f_)},
        items_ ? KernelParam{"items", ParamKind::I32Table, "macko.items", macko_items(f_, s_)}
               : KernelParam{"row_ptr", ParamKind::I32Table, "macko.row_ptr", f_.row_ptr}};
    if (!items_ && s_.sort_rows)
      sig.params.push_back({"row_order", ParamKind::I32Table, "macko.row_order",
                            macko_row_order(f_.row_ptr, s_.rows_per_block())});
    sig.launch.grid_x = macko_grid_x(p_, s_);
    sig.launch.grid_y = macko_grid_y(p_, s_);
    sig.launch.block_threads = NT_;
    sig.launch.shared_bytes = shared_bytes_;
    sig.launch.dynamic_shared_bytes = dynamic_shared_bytes_;
    return sig;
  }

  const Problem& p_;
  const MackoSchedule& s_;
  const MackoFormat& f_;
  const EmitOptions& opt_;
  int R_ = 1, U_ = 2, NC_ = 1, NT_ = 128;
  bool items_ = false;  // staged in items mode (macko_uses_items), else rows mode
  int64_t shared_bytes_ = 0;
  int64_t dynamic_shared_bytes_ = 0;
};

}  // namespace

std::vector<int64_t> macko_delta_words(const MackoFormat& f) {
  std::vector<int64_t> words((f.deltas.size() + 3) / 4, 0);
  for (size_t i = 0; i < f.deltas.size(); ++i)
    words[i / 4] |= int64_t{f.deltas[i]} << (8 * (i % 4));
  return words;
}

GeneratedKernel emit_macko(const Problem& problem, const Schedule& schedule, const MackoFormat& f,
                           const EmitOptions& opt) {
  // The schedule's own accessor asserts its family.
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_macko";
  MackoEmitter e(problem, schedule.as<MackoSchedule>(), f, o);
  return e.run();
}

const CodegenFamily& macko_codegen_family() {
  static const EmitFunction<MackoSchedule, MackoFormat, emit_macko> f;
  return f;
}

}  // namespace sparsegen::codegen
