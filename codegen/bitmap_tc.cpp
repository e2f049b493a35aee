#include "codegen/bitmap_tc.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>

#include "codegen/emitter.h"
#include "codegen/template_types.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/diagnostics.h"
#include "ir/parallel.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

using tmpl::cptr_i32;
using tmpl::cptr_t;
using tmpl::cptr_tmap;
using tmpl::cptr_u32;
using tmpl::f32;
using tmpl::i32;
using tmpl::IntArg;
using tmpl::ptr_f32;
using tmpl::ptr_i32;
using tmpl::ptr_t;
using tmpl::ptr_u32;
using tmpl::targs;
using tmpl::TypeArg;
using tmpl::u32;

// copy=step: a staged tile's record, its lane words then its lane starts
// (bitmap_mask_words_with_starts)
constexpr int64_t kStepRecord = kBitmapLaneBytes + kBitmapLaneStartBytes;

class BitmapTcEmitter : public Emitter {
 public:
  BitmapTcEmitter(const Problem& p, const BitmapTcSchedule& s, const BitmapTileFormat& f,
                  const EmitOptions& opt)
      : p_(p),
        s_(s),
        f_(f),
        opt_(opt),
        // decode=scatter stages a step's values packed: sized by the pack's largest step
        smem_(bitmap_tc_smem(
            p, s, f.max_tile_values,
            s.decode == BitmapDecode::Scatter ? bitmap_max_step_values(f) : int64_t{-1})) {}

  GeneratedKernel run() {
    const auto why = validate_bitmap_tc(p_, s_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: bitmap_tc cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    if (f_.slots() > INT_MAX / 2 || f_.tiles() > INT_MAX / 32 || p_.m > INT_MAX / 2 ||
        p_.k > INT_MAX / 2 || p_.m * p_.n > INT_MAX)
      throw UserError(
          fmt::format("codegen: {} with {} bitmap values exceeds the kernel's 32-bit offsets",
                      to_string(p_), f_.slots()));
    SG_ASSERT(f_.rows == p_.m && f_.cols == p_.k,
              "emit_bitmap_tc: the format does not match the problem");
    SG_ASSERT(f_.layout == s_.values,
              "emit_bitmap_tc: the pack's value layout is not the schedule's");
    SG_ASSERT(f_.group == bitmap_tc_tile_group(s_),
              "emit_bitmap_tc: the pack's tile order is not the one the schedule reads");
    // wgmma descriptors step from stage to stage by stage >> 4 (bitmap_tc_wgmma_issue_at)
    SG_ASSERT(smem_.stage % 16 == 0, "emit_bitmap_tc: a stage is not a multiple of 16 bytes");
    pairs_ = s_.values == BitmapValues::Pair;
    NT_ = static_cast<int>(p_.n / 8);
    RTB_ = s_.rows_per_block() / static_cast<int>(kBitmapTileRows);
    THREADS_ = s_.threads_per_block();
    CT_ = f_.col_tiles;
    PT_ = bitmap_tc_part_tiles(CT_, s_.ksplit);
    atomic_ = s_.output() == OutputMode::Atomic;
    wgmma_ = s_.mma == MmaKind::Wgmma;
    bulk_ = s_.pipe == BitmapPipe::Bulk;
    step_copy_ = s_.copy == BitmapCopy::Step;
    cluster_ = s_.cluster;
    map_ = s_.b_load == BitmapBLoad::Map;
    scatter_ = s_.decode == BitmapDecode::Scatter;
    for (const char* n :
         {"values", "B",    "C",     "ws",    "alpha",   "beta",  "masks",    "tile_ptr",
          "lane",   "warp", "tid",   "T",     "sg_smem", "s_tp",  "s_stage0", "ct0",
          "tiles",  "acc",  "issue", "steps", "k_end",   "bw",    "s_bars",   "step",
          "a0",     "a1",   "valid", "rt0",   "first",   "b_map", "s_dense",  "tp",
          "dense",  "bx",   "by",    "sum",   "part"})
      reserve(n);
    decl(fmt::format("// sparsegen bitmap_tc kernel\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl(fmt::format("using T = {};", p_.dtype == DType::F16 ? "__half" : "__nv_bfloat16"));
    if (bulk_ && !map_) arrange_ = emit_arrange_b();
    emit_body();
    GeneratedKernel k;
    k.source = assemble();
    k.headers = header_sources();
    k.signature = signature();
    k.arch_specific = wgmma_;  // wgmma exists on sm_90a only
    return k;
  }

 private:
  // Shared-window addresses (32-bit, from s_stage0 = the first stage buffer) of stage `buf`'s B
  // tile and of its A tile number `idx` (row tile of the block x k_tiles + tile of the step):
  // 32 lane words, then the values.
  std::string stage_b(const std::string& buf) const {
    return fmt::format("s_stage0 + ({}) * {}", buf, smem_.stage);
  }
  std::string a_tile(const std::string& buf, const std::string& idx) const {
    return fmt::format("{} + {} + ({}) * {}", stage_b(buf), smem_.b_step, idx, smem_.a_tile);
  }

  // pipe=bulk (kt=1): the producer warp (warp `warps`) copies step i into stage i % S once the
  // computing warps released the stage's last use; a computing warp waits for the stage's full
  // barrier, runs the step and releases the stage on its empty barrier. mma=wgmma decodes a step
  // into one of two A register sets and issues its multiplies, then waits for the step before
  // (wgmma_wait<1>), so a step's decode overlaps the last step's multiplies; the stage released
  // is that step's.
  //   if (warp == warps) produce(all steps)
  //   else for i: wait(full[i % S]) -> step(i) [-> wgmma_wait<1>] -> release(empty[...])
  // cluster > 1: the barriers are ready cluster-wide (cluster_sync) before the loop; the first
  // block's producer multicasts each step's B into every block once all their consumers released
  // the stage (its cluster-empty barrier, where each consumer warp also arrives); a cluster_sync
  // at the end keeps every block until no other touches it.
  void emit_bulk_body() {
    const int S = s_.stages, W = s_.warps_per_block;
    if (scatter_) {
      comment("a stage: B's column tile, the step's values, packed, then their offsets");
    } else if (step_copy_) {
      comment("a stage: B's column tile, the row tiles' lane words and lane starts (the producer");
      comment("copies the valid ones; the rest stay zero, written once here), then their values,");
      comment("packed");
    } else {
      comment("row tiles of this block below M: the producer copies them, the rest read zero lane");
      comment("words, written once here");
      line(fmt::format("const int valid = min({}, {} - bx * {});", RTB_, f_.row_tiles, RTB_));
    }
    if (!scatter_)
      call_stmt(tmpl::bitmap_tc_bulk_zero,
                targs(IntArg{S}, IntArg{RTB_}, IntArg{smem_.stage}, IntArg{smem_.b_step},
                      IntArg{step_copy_ ? kStepRecord : smem_.a_tile},
                      IntArg{step_copy_ ? kStepRecord : kBitmapLaneBytes}, IntArg{THREADS_}),
                u32("s_stage0"), i32("valid"), i32("tid"));
    if (cluster_ > 1) {
      comment("the cluster's barriers and zeroed lane words are ready before any block copies");
      comment("into or arrives on another");
      call_stmt(tmpl::bitmap_tc_cluster_sync);
    } else {
      line("__syncthreads();");
    }
    {
      auto producer = block(fmt::format("if (warp == {})", W));
      if (step_copy_)
        call_stmt(
            tmpl::bitmap_tc_bulk_produce_steps,
            targs(TypeArg{"T"}, IntArg{S}, IntArg{RTB_}, IntArg{smem_.stage}, IntArg{smem_.b_step},
                  IntArg{scatter_ ? 0 : kStepRecord}, IntArg{b_tile_bytes()}, IntArg{cluster_},
                  IntArg{NT_}, IntArg{map_ ? 1 : 0}, IntArg{scatter_ ? smem_.offsets : 0}),
            u32("s_bars"), u32("s_stage0"), b_work_arg(), b_map_arg(), cptr_u32("masks"),
            cptr_t("values"), cptr_i32("s_tp"), i32("first"), i32("valid"), i32("valid"),
            i32("ct0"), i32("steps"), i32("lane"));
      else
        call_stmt(tmpl::bitmap_tc_bulk_produce_tiles,
                  targs(TypeArg{"T"}, IntArg{S}, IntArg{RTB_}, IntArg{PT_}, IntArg{CT_},
                        IntArg{smem_.stage}, IntArg{smem_.b_step}, IntArg{smem_.a_tile},
                        IntArg{b_tile_bytes()}, IntArg{NT_}, IntArg{map_ ? 1 : 0}),
                  u32("s_bars"), u32("s_stage0"), b_work_arg(), b_map_arg(), cptr_u32("masks"),
                  cptr_t("values"), cptr_i32("s_tp"), i32(fmt::format("bx * {}", RTB_)),
                  i32("valid"), i32("ct0"), i32("steps"), i32("lane"));
    }
    emit_consumers();
    if (s_.cluster_k()) emit_cluster_k();
    if (cluster_ > 1) {
      comment("no block leaves while the cluster may still copy into it or arrive on it");
      call_stmt(tmpl::bitmap_tc_cluster_sync);
    }
  }

  // pipe=bulk: the computing warps (see emit_bulk_body).
  void emit_consumers() {
    const int MT = s_.m_tiles, W = s_.warps_per_block;
    auto consumer = block(fmt::format("if (warp < {})", W));
    if (scatter_) {
      emit_scatter_consumer();
      return;
    }
    line(fmt::format("float acc[{}];", MT * NT_ * 4));
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) acc[i] = 0.0f;", MT * NT_ * 4));
    const auto decode_quarter = [&](const std::string& a) {
      line("#pragma unroll");
      line(fmt::format("for (int mt = 0; mt < {}; ++mt)", MT));
      line("  " + decode_quarter_call("w[mt]", "addr + mt", a + " + 4 * mt") + ";");
    };
    const auto lanes = [&] {
      line(fmt::format("unsigned w[{}], addr[{}];", MT, MT));
      if (step_copy_) {
        const std::string words = fmt::format("{} + {}", stage_b("buf"), smem_.b_step);
        call_stmt(tmpl::bitmap_tc_lanes_packed, targs(IntArg{MT}, IntArg{kStepRecord}), u32(words),
                  u32(fmt::format("{} + {}", words, RTB_ * kStepRecord)),
                  i32(fmt::format("warp * {}", MT)), i32("lane"), ptr_u32("w"), ptr_u32("addr"));
      } else {
        call_stmt(tmpl::bitmap_tc_lanes,
                  targs(IntArg{MT}, IntArg{smem_.a_tile}, IntArg{0}, IntArg{pairs_ ? 1 : 0}),
                  u32(a_tile("buf", fmt::format("warp * {}", MT))), i32("lane"), ptr_u32("w"),
                  ptr_u32("addr"));
      }
    };
    if (!wgmma_) {
      comment(
          "step(buf): per quarter, the A operands of the warp's row tiles, then their mma.sync");
      auto fn = block("auto step = [&](int buf)", ";");
      lanes();
      line(fmt::format("unsigned a[{}];", 4 * MT));
      line("#pragma unroll");
      auto q = block("for (int q = 0; q < 4; ++q)");
      decode_quarter("a");
      call_stmt(tmpl::bitmap_tc_mma_quarter,
                targs(TypeArg{"T"}, IntArg{NT_}, IntArg{MT}, IntArg{bitmap_tc_b_row_bytes(p_, s_)}),
                u32(stage_b("buf")), i32("q"), i32("lane"), cptr_u32("a"), ptr_f32("acc"));
    } else {
      comment("step(a, buf): the step's A into a (4 quarters x mt row tiles x 4 registers), then");
      comment("its multiplies, issued and not waited for; B's descriptors start from stage 0's");
      line("const unsigned b_start = " + call(tmpl::bitmap_tc_b_start, u32("s_stage0")).text + ";");
      auto fn = block("auto step = [&](unsigned* a, int buf)", ";");
      lanes();
      line("#pragma unroll");
      {
        auto q = block("for (int q = 0; q < 4; ++q)");
        decode_quarter(fmt::format("a + q * {}", 4 * MT));
      }
      call_stmt(tmpl::bitmap_tc_wgmma_issue_at,
                targs(TypeArg{"T"}, IntArg{NT_}, IntArg{MT}, IntArg{4}, IntArg{map_ ? 1 : 0}),
                u32(fmt::format("b_start + buf * {}", smem_.stage / 16)), cptr_u32("a"),
                ptr_f32("acc"));
    }
    if (wgmma_) {
      emit_wgmma_loop();
    } else {
      comment("the step's stage and its phase parity, advanced by one a step");
      emit_stage_start();
      auto loop = block("for (int i = 0; i < steps; ++i)");
      call_stmt(tmpl::bitmap_tc_bulk_wait, u32("s_bars + 8 * buf"), u32("phase"));
      line("step(buf);");
      comment("the warp's loads of the stage were consumed by its mma.sync: release it");
      line(release_call("buf") + ";");
      emit_stage_advance();
    }
    if (wgmma_) call_stmt(tmpl::wgmma_wait, targs(IntArg{0}));
    emit_finish_or_partials();
  }

  // mma=wgmma: the consumer loop, two steps an iteration so that each step's A registers (a0,
  // a1: step i's decode overlaps step i - 1's multiplies) are named, not chosen by a branch. The
  // stage and its phase parity advance by one a step, with no division by the stage count.
  //   int buf = 0; unsigned phase = 0;
  //   for (int i = 0; i < steps; i += 2) {
  //     wait(full[buf], phase); step(a0, buf); wgmma_wait<1>(); if (i > 0) release(buf - 1);
  //     advance; if (i + 1 == steps) break;
  //     wait(full[buf], phase); step(a1, buf); wgmma_wait<1>(); release(buf - 1); advance; }
  void emit_wgmma_loop() {
    const int S = s_.stages;
    line(fmt::format("unsigned a0[{0}], a1[{0}];", 16 * s_.m_tiles));
    emit_stage_start();
    const std::string previous = fmt::format("(buf == 0 ? {} : buf - 1)", S - 1);
    const auto half = [&](const std::string& regs, bool first) {
      call_stmt(tmpl::bitmap_tc_bulk_wait, u32("s_bars + 8 * buf"), u32("phase"));
      line(fmt::format("step({}, buf);", regs));
      comment("step i - 1's multiplies are done: its registers and its stage are free");
      call_stmt(tmpl::wgmma_wait, targs(IntArg{1}));
      if (first) line("if (i > 0)");
      line((first ? "  " : "") + release_call(previous) + ";");
      emit_stage_advance();
    };
    auto loop = block("for (int i = 0; i < steps; i += 2)");
    half("a0", true);
    line("if (i + 1 == steps) break;");
    half("a1", false);
  }

  // pipe=bulk consumers: the current step's stage `buf` and its full barrier's phase parity,
  // advanced by one a step (no division of the step index by the stage count).
  //   int buf = 0; unsigned phase = 0;  ...  if (++buf == S) { buf = 0; phase ^= 1u; }
  void emit_stage_start() {
    line("int buf = 0;");
    line("unsigned phase = 0;");
  }
  void emit_stage_advance() {
    auto advance = block(fmt::format("if (++buf == {})", s_.stages));
    line("buf = 0;");
    line("phase ^= 1u;");
  }

  // The end of a consumer warp: its row tiles stored (or added into the workspace), or with
  // kred=cluster its sums left in shared memory for the cluster's reduction (emit_cluster_k).
  void emit_finish_or_partials() {
    if (!s_.cluster_k()) {
      emit_finish();
      return;
    }
    comment("kred=cluster: the warp's sums into this block's shared memory (over the stages, once");
    comment("every consumer warp is done with them); an empty K part leaves zeros");
    line("float* part = reinterpret_cast<float*>(reinterpret_cast<char*>(sg_smem) +");
    line("                                       (s_stage0 - " +
         call(tmpl::smem_addr, cptr_u32("sg_smem")).text + "));");
    const int floats = s_.m_tiles * NT_ * 4;
    const auto store = [&](int zero) {
      call_stmt(tmpl::bitmap_tc_partials_store,
                targs(IntArg{floats}, IntArg{s_.warps_per_block}, IntArg{zero}), ptr_f32("part"),
                tmpl::cptr_f32("acc"), i32("warp"), i32("lane"));
    };
    {
      auto guard = block("if (tiles > 0)");
      store(0);
    }
    {
      auto other = block("else");
      store(1);
    }
  }

  // kred=cluster, after the producer and the consumers (every thread): once the cluster's blocks
  // have stored their sums, consumer warp w of the block of rank w % ksplit adds warp w's sums of
  // all the K parts (distributed shared memory, in rank order) and stores its rows of C; a last
  // cluster barrier keeps every block's shared memory until the reads are done.
  //   cluster_sync();  if (warp < W && warp % KS == by) { sum = partials of ranks 0..KS-1;
  //   finish(sum); }  cluster_sync();
  void emit_cluster_k() {
    const int floats = s_.m_tiles * NT_ * 4;
    comment("every block of the cluster has stored its K part's sums");
    call_stmt(tmpl::bitmap_tc_cluster_sync);
    {
      auto adder =
          block(fmt::format("if (warp < {} && warp % {} == by)", s_.warps_per_block, s_.ksplit));
      line(fmt::format("float sum[{}];", floats));
      call_stmt(tmpl::bitmap_tc_partials_sum, targs(IntArg{floats}, IntArg{s_.ksplit}),
                u32("s_stage0"), ptr_f32("sum"), i32("warp"), i32("lane"));
      emit_finish("sum", false);
    }
    comment("no block leaves while another may still read its sums");
    call_stmt(tmpl::bitmap_tc_cluster_sync);
  }

  // decode=scatter: a consumer warp's loop. Step i's A goes to dense buffer i & 1 (after the
  // stages): each warp scatters its row tile into its 16 rows, and the warpgroup multiplies its 64
  // rows from shared memory. Buffer i & 1 was last read by step i - 2's multiplies, which the
  // wgmma_wait<1> of step i - 1 saw complete.
  void emit_scatter_consumer() {
    const int S = s_.stages;
    line(fmt::format("float acc[{}];", NT_ * 4));
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) acc[i] = 0.0f;", NT_ * 4));
    line(fmt::format("const unsigned s_dense = s_stage0 + {};", S * smem_.stage));
    {
      auto loop = block("for (int i = 0; i < steps; ++i)");
      line(fmt::format("const int buf = i % {};", S));
      call_stmt(tmpl::bitmap_tc_bulk_wait, u32("s_bars + 8 * buf"),
                u32(fmt::format("(i / {}) & 1", S)));
      line(fmt::format("const unsigned dense = s_dense + (i & 1) * {};", smem_.dense));
      comment("the warp's row tile: values tp[warp] .. tp[warp + 1] of the step's, from tp[0]");
      line(fmt::format("const int* tp = s_tp + i * {};", RTB_ + 1));
      line("const int a0 = 2 * (tp[warp] - tp[0]);");
      call_stmt(tmpl::bitmap_tc_scatter, u32("dense + warp * 2048"),
                u32(fmt::format("{} + {} + a0", stage_b("buf"), smem_.b_step)),
                u32(fmt::format("{} + {} + a0", stage_b("buf"), smem_.offsets)),
                i32("tp[warp + 1] - tp[warp]"), i32("lane"));
      comment("the generic-proxy stores reach wgmma's async proxy; the warpgroup's rows are in");
      call_stmt(tmpl::fence_proxy_async);
      call_stmt(tmpl::bitmap_tc_warpgroup_sync, i32("warp >> 2"));
      call_stmt(tmpl::bitmap_tc_wgmma_issue_ss, targs(TypeArg{"T"}, IntArg{NT_}),
                u32(fmt::format("dense + (warp >> 2) * {}", 64 * 128)), u32(stage_b("buf")),
                ptr_f32("acc"));
      comment("step i - 1's multiplies are done: its stage and its dense buffer are free");
      call_stmt(tmpl::wgmma_wait, targs(IntArg{1}));
      line("if (i > 0)");
      line("  " + release_call(fmt::format("(i + {}) % {}", S - 1, S)) + ";");
    }
    call_stmt(tmpl::wgmma_wait, targs(IntArg{0}));
    emit_finish_or_partials();
  }

  // pipe=bulk: a consumer warp's release of stage `stage` (an expression): its empty barrier, and
  // in a cluster also the cluster-empty barrier of the first block
  // (bitmap_tc_bulk_release_cluster); wgmma consumers by an elected lane, mma.sync ones by lane 0.
  std::string release_call(const std::string& stage) {
    const int S = s_.stages;
    const std::string empty = fmt::format("s_bars + 8 * ({} + {})", S, stage);
    const IntArg elect{wgmma_ ? 1 : 0};
    if (cluster_ == 1)
      return call(tmpl::bitmap_tc_bulk_release, targs(elect), u32(empty), i32("lane")).text;
    return call(tmpl::bitmap_tc_bulk_release_cluster, targs(elect), u32(empty),
                u32(fmt::format("s_bars + 8 * ({} + {})", 2 * S, stage)), i32("lane"))
        .text;
  }

  // The decode of quarter q of one A tile into the registers at `a`, from its lane word `w` and
  // value address `addr` (the layout's helper: bitmap_tc_a_quarter or _pairs).
  std::string decode_quarter_call(const std::string& w, const std::string& addr,
                                  const std::string& a) {
    return pairs_
               ? call(tmpl::bitmap_tc_a_quarter_pairs, u32(w), i32("q"), ptr_u32(addr), ptr_u32(a))
                     .text
               : call(tmpl::bitmap_tc_a_quarter, u32(w), i32("q"), ptr_u32(addr), ptr_u32(a)).text;
  }

  // pipe=bulk: bytes of one column tile of B as a stage holds it: b=map, 64 rows of N·2 bytes
  // (the TMA boxes); arranged (BWork), wgmma: N/8 column groups of 64 rows and a 16-byte pad;
  // mma.sync, 64 rows of the padded row stride.
  int64_t b_tile_bytes() const {
    if (map_) return kBitmapTileCols * NT_ * 16;
    return wgmma_ ? static_cast<int64_t>(NT_) * (kBitmapTileCols * 16 + 16)
                  : kBitmapTileCols * bitmap_tc_b_row_bytes(p_, s_);
  }
  // The producer's B sources: the arranged BWork, or the tensor map's address (the other null).
  tmpl::Expr<tmpl::Kind::kConstPtrU32> b_work_arg() const {
    return cptr_u32(map_ ? "static_cast<const unsigned*>(nullptr)" : "bw");
  }
  tmpl::Expr<tmpl::Kind::kConstPtrTensorMap> b_map_arg() const {
    return cptr_tmap(map_ ? "&b_map" : "static_cast<const sg::TensorMap*>(nullptr)");
  }

  void emit_body() {
    const int MT = s_.m_tiles;
    line("extern __shared__ __align__(16) unsigned sg_smem[];");
    if (bulk_) {
      // the warp index from lane 0: uniform in the compiler's eyes, so the producer/consumer
      // branch is not divergent around the wgmma (ptxas would serialise them)
      line("const int tid = threadIdx.x, lane = tid & 31;");
      line("const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);");
    } else {
      line("const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;");
    }
    comment(
        "this block's K part: column tiles ct0 .. ct0 + tiles - 1 (the last part may be empty)");
    if (s_.cluster_k()) {
      comment(fmt::format("kred=cluster: the {0} K parts of a row block are one cluster of {0}",
                          s_.ksplit));
      comment("consecutive blocks (rank = K part)");
      line(fmt::format("const int bx = blockIdx.x / {0}, by = blockIdx.x % {0};", s_.ksplit));
    } else {
      line("const int bx = blockIdx.x, by = blockIdx.y;");
    }
    line(fmt::format("const int ct0 = by * {};", PT_));
    line(fmt::format("const int tiles = min({} - ct0, {});", CT_, PT_));
    comment("tiles may be 0 (K = 0, or an empty last K part): no step runs, and the block still");
    comment("stores C = beta·C (ksplit = 1) or counts itself in the split-K finish");
    const int KT = s_.k_tiles;
    line(fmt::format("const int steps = (tiles + {}) / {};", KT - 1, KT));
    if (!bulk_) {
      comment("B rows past the part are zero-filled: the next part's tiles are not this block's");
      line(fmt::format("const int k_end = min({}, (ct0 + tiles) * {});", p_.k, kBitmapTileCols));
    }
    line("int* s_tp = reinterpret_cast<int*>(sg_smem);");
    comment("stage buffers as 32-bit shared addresses: the copies' address math stays 32-bit");
    const std::string stages =
        fmt::format("{} + {}", call(tmpl::smem_addr, cptr_u32("sg_smem")).text,
                    smem_.tile_ptrs + smem_.barriers);
    if (smem_.align > 0) {
      comment("b=map: the stages on 1024-byte boundaries (the TMA boxes' swizzle atoms), the same");
      comment("offset in every block of a cluster");
    }
    line(fmt::format(
        "const unsigned s_stage0 = {};",
        smem_.align > 0 ? fmt::format("({} + {}u) & ~{}u", stages, smem_.align - 1, smem_.align - 1)
                        : stages));
    if (bulk_) {
      comment("pipe=bulk: the stages' mbarriers, after the tile-pointer table");
      line(fmt::format("const unsigned s_bars = {} + {};",
                       call(tmpl::smem_addr, cptr_u32("sg_smem")).text, smem_.tile_ptrs));
      if (cluster_ > 1)
        call_stmt(tmpl::bitmap_tc_bulk_init_cluster,
                  targs(IntArg{s_.stages}, IntArg{s_.warps_per_block}, IntArg{cluster_}),
                  u32("s_bars"), i32("tid"));
      else
        call_stmt(tmpl::bitmap_tc_bulk_init, targs(IntArg{s_.stages}, IntArg{s_.warps_per_block}),
                  u32("s_bars"), i32("tid"));
    }
    if (step_copy_) {
      comment("the block's row tiles below M are one group of the pack: its tiles of column tile");
      comment("ct0 + i are tiles first + i * valid onwards");
      line(fmt::format("const int rt0 = bx * {};", RTB_));
      if (cluster_ > 1) {
        comment("blocks past M (the grid in whole clusters) have no row tile: they take part in");
        comment("the B multicasts, copy no A and store nothing");
        line(fmt::format("const int valid = max(0, min({}, {} - rt0));", RTB_, f_.row_tiles));
        line(fmt::format("const int first = valid > 0 ? rt0 * {} + ct0 * valid : 0;", CT_));
      } else {
        line(fmt::format("const int valid = min({}, {} - rt0);", RTB_, f_.row_tiles));
        line(fmt::format("const int first = rt0 * {} + ct0 * valid;", CT_));
      }
      call_stmt(tmpl::bitmap_tc_bulk_tile_ptrs, targs(IntArg{RTB_}, IntArg{THREADS_}),
                ptr_i32("s_tp"), cptr_i32("tile_ptr"), i32("first"), i32("valid"), i32("valid"),
                i32("tiles"), i32("tid"));
    } else {
      call_stmt(tmpl::bitmap_tc_load_tile_ptrs,
                targs(IntArg{RTB_}, IntArg{PT_}, IntArg{CT_}, IntArg{THREADS_}), ptr_i32("s_tp"),
                cptr_i32("tile_ptr"), i32(fmt::format("bx * {}", RTB_)),
                i32(std::to_string(f_.row_tiles)), i32("ct0"), i32("tiles"), i32("tid"));
    }
    if (bulk_) {
      emit_bulk_body();
    } else {
      line("__syncthreads();");
      line(fmt::format("float acc[{}];", MT * NT_ * 4));
      line("#pragma unroll");
      line(fmt::format("for (int i = 0; i < {}; ++i) acc[i] = 0.0f;", MT * NT_ * 4));
      comment(fmt::format(
          "issue(i): cp.async copies of step i (column tiles ct0 + {0}i .. ct0 + {0}i + "
          "{1}) into",
          KT, KT - 1));
      comment(
          "buffer i % stages: the B rows (all threads) and each warp's A tiles (masks + values);");
      comment("tiles past the part are copied as empty (zero masks)");
      {
        auto fn = block("auto issue = [&](int i)", ";");
        line(fmt::format("const int buf = i % {};", s_.stages));
        if (wgmma_)
          call_stmt(
              tmpl::bitmap_tc_issue_b_groups,
              targs(TypeArg{"T"}, IntArg{NT_}, IntArg{THREADS_}, IntArg{kBitmapTileCols * KT}),
              u32(stage_b("buf")), cptr_t("B"),
              i32(fmt::format("(ct0 + i * {}) * {}", KT, kBitmapTileCols)), i32("k_end"),
              i32("tid"));
        else
          call_stmt(tmpl::bitmap_tc_issue_b,
                    targs(TypeArg{"T"}, IntArg{NT_}, IntArg{bitmap_tc_b_row_bytes(p_, s_)},
                          IntArg{THREADS_}, IntArg{kBitmapTileCols * KT}),
                    u32(stage_b("buf")), cptr_t("B"),
                    i32(fmt::format("(ct0 + i * {}) * {}", KT, kBitmapTileCols)), i32("k_end"),
                    i32("tid"));
        line("#pragma unroll");
        auto mt = block(fmt::format("for (int mt = 0; mt < {}; ++mt)", MT));
        line(fmt::format("const int rtl = warp * {} + mt;", MT));
        line(fmt::format("const int rt = bx * {} + rtl;", RTB_));
        line("#pragma unroll");
        auto u = block(fmt::format("for (int u = 0; u < {}; ++u)", KT));
        line(fmt::format("const int j = i * {} + u;", KT));
        line(fmt::format("const bool ok = rt < {} && j < tiles;", f_.row_tiles));
        line(fmt::format("const int* tp = s_tp + rtl * {} + j;", PT_ + 1));
        // Value copies per lane: the largest tile's 16-byte chunks over 32 lanes (at least 1).
        const int64_t a_iters =
            std::max<int64_t>(1, (f_.max_tile_values / kBitmapValueAlign + 31) / 32);
        call_stmt(tmpl::bitmap_tc_issue_a, targs(TypeArg{"T"}, IntArg{a_iters}),
                  u32(a_tile("buf", fmt::format("rtl * {} + u", KT))), cptr_u32("masks"),
                  cptr_t("values"), i32(fmt::format("rt * {} + ct0 + j", CT_)),
                  i32("ok ? tp[0] : 0"), i32("ok ? tp[1] : 0"), i32("ok"), i32("lane"));
      }
      line(fmt::format("for (int i = 0; i < {}; ++i) {{", s_.stages - 1));
      line("  if (i < steps) issue(i);");
      line("  " + call(tmpl::cp_async_commit).text + ";");
      line("}");
      {
        auto loop = block("for (int i = 0; i < steps; ++i)");
        line(fmt::format("if (i + {} < steps) issue(i + {});", s_.stages - 1, s_.stages - 1));
        comment("one group per step, also when empty, so the wait count below stays exact");
        call_stmt(tmpl::cp_async_commit);
        call_stmt(tmpl::cp_async_wait, targs(IntArg{s_.stages - 1}));
        if (wgmma_) {
          comment("B reaches the tensor cores through the async proxy");
          call_stmt(tmpl::fence_proxy_async);
        }
        line("__syncthreads();");
        line(fmt::format("const int buf = i % {};", s_.stages));
        comment("lane words and value starts of the warp's A tiles first: the scans overlap");
        // wgmma: every quarter's A of the step first, then the step's multiplies back to back (a
        // wgmma is a warpgroup barrier: one per step, not one per quarter)
        line(fmt::format("unsigned w[{}], addr[{}], a[{}];", MT * KT, MT * KT,
                         (wgmma_ ? 4 * KT : 1) * 4 * MT));
        // one scan per two k tiles of a row tile (see bitmap_tc_lanes for the measurements)
        call_stmt(tmpl::bitmap_tc_lanes,
                  targs(IntArg{MT * KT}, IntArg{smem_.a_tile}, IntArg{KT >= 2 ? 1 : 0},
                        IntArg{pairs_ ? 1 : 0}),
                  u32(a_tile("buf", fmt::format("warp * {}", MT * KT))), i32("lane"), ptr_u32("w"),
                  ptr_u32("addr"));
        line("#pragma unroll");
        {
          auto uq = block(fmt::format("for (int uq = 0; uq < {}; ++uq)", 4 * KT));
          line("const int u = uq >> 2, q = uq & 3;  // tile of the step, quarter of the tile");
          const std::string aq = wgmma_ ? fmt::format("a + uq * {}", 4 * MT) : "a";
          line("#pragma unroll");
          line(fmt::format("for (int mt = 0; mt < {}; ++mt)", MT));
          line("  " +
               decode_quarter_call(fmt::format("w[mt * {} + u]", KT),
                                   fmt::format("addr + mt * {} + u", KT), aq + " + 4 * mt") +
               ";");
          if (!wgmma_) {
            comment("B rows 16·uq .. 16·uq + 15 of the step");
            call_stmt(
                tmpl::bitmap_tc_mma_quarter,
                targs(TypeArg{"T"}, IntArg{NT_}, IntArg{MT}, IntArg{bitmap_tc_b_row_bytes(p_, s_)}),
                u32(stage_b("buf")), i32("uq"), i32("lane"), cptr_u32("a"), ptr_f32("acc"));
          }
        }
        if (wgmma_) {
          comment("the step's 4·kt quarters x mt multiplies; they have completed when it returns");
          call_stmt(tmpl::bitmap_tc_wgmma_step,
                    targs(TypeArg{"T"}, IntArg{NT_}, IntArg{MT}, IntArg{4 * KT}),
                    u32(stage_b("buf")), cptr_u32("a"), ptr_f32("acc"));
        }
        comment("the buffer is refilled by the next step's issue()");
        line("__syncthreads();");
      }
      emit_finish();
    }
    if (!atomic_) return;
    const bool row_major = p_.c_layout == Layout::RowMajor;
    const std::string rs = std::to_string(row_major ? p_.n : 1);
    const std::string cs = std::to_string(row_major ? 1 : p_.m);
    comment("the last block of this row block to finish rounds ws into C and re-zeroes ws");
    call_stmt(tmpl::bitmap_tc_split_finish,
              targs(TypeArg{"T"}, IntArg{p_.n}, IntArg{RTB_ * 16}, IntArg{THREADS_}), ptr_t("C"),
              ptr_f32("ws"),
              ptr_u32(fmt::format("reinterpret_cast<unsigned*>(ws + {})", counters_offset())),
              i32(fmt::format("bx * {}", RTB_ * 16)), i32(std::to_string(p_.m)), i32(rs), i32(cs),
              f32("beta"), i32(std::to_string(s_.ksplit)), i32("tid"));
  }

  // The warp's row tiles from its accumulators acc (stored, or added into ws when K is split).
  void emit_finish(const std::string& acc_name = "acc", bool guard_steps = true) {
    const int MT = s_.m_tiles;
    const bool row_major = p_.c_layout == Layout::RowMajor;
    const std::string rs = std::to_string(row_major ? p_.n : 1);
    const std::string cs = std::to_string(row_major ? 1 : p_.m);
    const auto finish = [&](const std::string& acc, const std::string& step) {
      line("#pragma unroll");
      line(fmt::format("for (int mt = 0; mt < {}; ++mt)", MT));
      line("  " +
           call(tmpl::bitmap_tc_finish, targs(TypeArg{"T"}, IntArg{NT_}, IntArg{atomic_ ? 1 : 0}),
                ptr_t("C"), ptr_f32(atomic_ ? "ws" : "static_cast<float*>(nullptr)"),
                tmpl::cptr_f32(fmt::format("{} + mt * {}", acc, step)),
                i32(fmt::format("(bx * {} + warp * {} + mt) * 16", RTB_, MT)),
                i32(std::to_string(p_.m)), i32(rs), i32(cs), f32("alpha"), f32("beta"), i32("lane"))
               .text +
           ";");
    };
    {
      // split K: a block with an empty K part has nothing to add (but is still counted below).
      // pipe=bulk (K > 0: every ksplit = 1 block has steps): the accumulators are read only on
      // the path where a wgmma wrote them, since ptxas serialises the wgmma pipeline when a path
      // from their zeroing to their use skips it.
      auto guard = guard_steps && (atomic_ || bulk_) ? block("if (tiles > 0)") : block();
      finish(acc_name, std::to_string(NT_ * 4));
    }
  }

  // Floats before the per-row-block counters in the workspace: M·N, rounded to 4 (16 bytes).
  int64_t counters_offset() const { return (p_.m * p_.n + 3) / 4 * 4; }

  std::string assemble() const {
    return kernel_source(fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const T* __restrict__ values,\n    const T* __restrict__ B,\n"
        "    T* __restrict__ C,\n    float alpha,\n    float beta,\n"
        "    const unsigned* __restrict__ masks,\n    const int* __restrict__ tile_ptr{}{}) {{\n",
        THREADS_, opt_.kernel_name, atomic_ ? ",\n    float* __restrict__ ws" : "",
        !bulk_ ? ""
        : map_ ? ",\n    const __grid_constant__ sg::TensorMap b_map"
               : ",\n    const unsigned* __restrict__ bw"));
  }

  KernelSignature signature() const {
    const KernelParam c = {"C", ParamKind::C, "C", {}};
    const KernelParam ws = {"ws", ParamKind::Workspace, "workspace", {}};
    const KernelParam beta = {"beta", ParamKind::Beta, "beta", {}};
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = {
        {"values", ParamKind::Values, "bitmap.values", {}},
        {"B", ParamKind::B, "B", {}},
        c,
        {"alpha", ParamKind::Alpha, "alpha", {}},
        beta,
        scatter_ ? KernelParam{"masks", ParamKind::U32Table, "bitmap.scatter offsets",
                               bitmap_scatter_offsets(f_)}
        : step_copy_
            ? KernelParam{"masks", ParamKind::U32Table, "bitmap.masks with lane starts",
                          bitmap_mask_words_with_starts(f_)}
            : KernelParam{"masks", ParamKind::U32Table, "bitmap.masks", bitmap_mask_words(f_)},
        {"tile_ptr", ParamKind::I32Table, "bitmap.tile_ptr", f_.tile_ptr}};
    sig.launch.grid_x = bitmap_tc_grid_x(p_, s_);
    sig.launch.grid_y = bitmap_tc_grid_y(p_, s_);
    sig.launch.block_threads = THREADS_;
    sig.launch.cluster_x = cluster_;
    if (s_.cluster_k()) {
      // a row block's K parts as one cluster of consecutive blocks along x
      sig.launch.grid_x *= s_.ksplit;
      sig.launch.grid_y = 1;
      sig.launch.cluster_x = s_.ksplit;
    }
    sig.launch.dynamic_shared_bytes = smem_.total;
    sig.b_alignment = 16;  // 16-byte cp.async of B rows
    if (atomic_) {
      sig.params.push_back(ws);
      // M·N fp32 sums, then one counter per row block (bitmap_tc_split_finish); zero between runs.
      sig.workspace_bytes = 4 * counters_offset() + (sig.launch.grid_x * 4 + 15) / 16 * 16;
      sig.workspace_zeroed = true;
    }
    if (map_) {
      // B read in place by TMA: boxes of 64 rows (K) x min(N, 64) columns, row-major B, in the
      // swizzle of their rows (bitmap_tc_copy_b); rows at or beyond K arrive as zeros.
      TensorMapShape m;
      m.inner = p_.n;
      m.outer = p_.k;
      m.row_elems = p_.n;
      m.box_inner = std::min<int64_t>(p_.n, 64);
      m.box_outer = kBitmapTileCols;
      m.elem_bytes = 2;
      m.swizzle_bytes = m.box_inner * 2;
      sig.params.push_back({"b_map", ParamKind::BTensorMap, "B", m.to_data()});
    } else if (bulk_) {
      // A plain launch after the b_transform: started programmatically, the main kernel's
      // blocks were placed beside the arrangement's and shared SMs (12288², N = 64, H200: 197
      // against 154 µs), while the overlap saves only the arrangement's few microseconds.
      sig.params.push_back({"bw", ParamKind::BWork, "B as the stages hold it", {}});
      sig.b_work_bytes = bitmap_tc_b_work_bytes(p_, s_);
      sig.b_transform = arrange_;
    }
    return sig;
  }

  // pipe=bulk's b_transform: B into BWork, one column tile's column groups after another
  // (bitmap_tc_arrange_b), a thread per 16-byte piece.
  AuxKernel emit_arrange_b() {
    constexpr int kThreads = 256;
    const std::string name = opt_.kernel_name + "_arrange_b";
    const std::string k = std::to_string(p_.k), ct = std::to_string(CT_);
    const auto c =
        wgmma_ ? call(tmpl::bitmap_tc_arrange_b, targs(TypeArg{"T"}, IntArg{NT_}), cptr_t("B"),
                      ptr_u32("bw"), i32(k), i32(ct))
               : call(tmpl::bitmap_tc_arrange_b_rows,
                      targs(TypeArg{"T"}, IntArg{NT_}, IntArg{bitmap_tc_b_row_bytes(p_, s_) / 16}),
                      cptr_t("B"), ptr_u32("bw"), i32(k), i32(ct));
    decl(fmt::format(
        "// b_transform: B as a stage holds it ({}), per 64-row column tile, so that a step's B\n"
        "// is one bulk copy\n"
        "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
        "    const T* __restrict__ B,\n    unsigned* __restrict__ bw) {{\n  {};\n}}",
        wgmma_ ? "the wgmma descriptor's 16-byte column groups" : "rows padded for ldmatrix",
        kThreads, name, c.text));
    AuxKernel t;
    t.name = name;
    t.params = {{"B", ParamKind::B, "B", {}},
                {"bw", ParamKind::BWork, "B as the stages hold it", {}}};
    const int64_t pieces = bitmap_tc_b_work_bytes(p_, s_) / 16;
    t.launch.grid_x = std::max<int64_t>(1, (pieces + kThreads - 1) / kThreads);
    t.launch.grid_y = 1;
    t.launch.block_threads = kThreads;
    return t;
  }

  const Problem& p_;
  const BitmapTcSchedule& s_;
  const BitmapTileFormat& f_;
  const EmitOptions& opt_;
  const BitmapTcSmem smem_;
  int NT_ = 1, RTB_ = 1, THREADS_ = 128;
  int64_t CT_ = 1, PT_ = 1;
  bool atomic_ = false;
  bool wgmma_ = false;
  bool pairs_ = false;      // vals=pair: one 32-bit load per A register
  bool bulk_ = false;       // pipe=bulk: bulk copies on mbarriers, B arranged by an aux kernel
  bool map_ = false;        // b=map: B by TMA through a tensor map, no aux kernel
  bool step_copy_ = false;  // copy=step: a step's lane words and values in one copy each
  bool scatter_ = false;    // decode=scatter: A stored into dense shared tiles, wgmma reads them
  int cluster_ = 1;         // copy=step: row blocks sharing B by multicast
  AuxKernel arrange_;       // pipe=bulk's b_transform
};

}  // namespace

std::vector<int64_t> bitmap_mask_words(const BitmapTileFormat& f) {
  std::vector<int64_t> words(static_cast<size_t>(f.tiles() * kBitmapLanes));
  // Tiles are independent; a 100M-nonzero weight has ~200K of them (work: their set bits).
  parallel_for(f.tiles(), f.nnz, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const auto w = bitmap_lane_words(f, t);
      std::copy(w.begin(), w.end(), words.begin() + t * kBitmapLanes);
    }
  });
  return words;
}

std::vector<int64_t> bitmap_mask_words_with_starts(const BitmapTileFormat& f) {
  constexpr int64_t kRecord = kStepRecord / 4;
  std::vector<int64_t> words(static_cast<size_t>(f.tiles() * kRecord));
  // Row tile rt's step along K (column tile ct) is its group's tiles of ct, consecutive from the
  // tile of the group's first row tile (bitmap_tile_index): a start counts from that tile's
  // values, so a kernel finds a lane's values at the step's values + start, with no tile pointer.
  parallel_for(f.row_tiles, f.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t rt = r0; rt < r1; ++rt) {
      const int64_t g0 = rt / f.group * f.group;
      for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
        const int64_t t = bitmap_tile_index(f, rt, ct);
        const int64_t before = f.tile_ptr[static_cast<size_t>(t)] -
                               f.tile_ptr[static_cast<size_t>(bitmap_tile_index(f, g0, ct))];
        const auto w = bitmap_lane_words(f, t);
        const auto start = bitmap_lane_starts(w, f.layout);
        if (before + start[kBitmapLanes] > 0xffff)
          throw UserError(fmt::format(
              "bitmap_tc copy=step: row tile {}'s values end {} entries into its step (column "
              "tile {}), beyond the 16-bit lane starts",
              rt, before + start[kBitmapLanes], ct));
        const auto out = words.begin() + t * kRecord;
        std::copy(w.begin(), w.end(), out);
        for (int i = 0; i < kBitmapLanes / 2; ++i)
          out[kBitmapLanes + i] =
              static_cast<int64_t>(static_cast<uint32_t>(before + start[2 * i]) |
                                   static_cast<uint32_t>(before + start[2 * i + 1]) << 16);
      }
    }
  });
  return words;
}

int bitmap_scatter_offset(int r, int c) {
  return r * 128 + (((c >> 3) ^ (r & 7)) << 4) + (c & 7) * 2;
}

std::vector<int64_t> bitmap_scatter_offsets(const BitmapTileFormat& f) {
  SG_ASSERT(f.layout == BitmapValues::Slot, "bitmap_scatter_offsets: vals=slot packs only");
  std::vector<int64_t> words(static_cast<size_t>((f.slots() + 1) / 2));
  // Tiles are independent: each writes the words of its own slots (a tile starts at a multiple of
  // kBitmapValueAlign slots, so no word is shared).
  parallel_for(f.tiles(), f.nnz, [&](int64_t t0, int64_t t1) {
    std::vector<uint16_t> off;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t s0 = f.tile_ptr[static_cast<size_t>(t)];
      const int64_t s1 = f.tile_ptr[static_cast<size_t>(t) + 1];
      off.assign(static_cast<size_t>(s1 - s0), 0);
      const auto w = bitmap_lane_words(f, t);
      const auto start = bitmap_lane_starts(w, BitmapValues::Slot);
      std::array<bool, kBitmapTileRows * kBitmapTileCols> stored{};
      for (int lane = 0; lane < kBitmapLanes; ++lane) {
        int k = start[static_cast<size_t>(lane)];
        for (uint32_t m = w[static_cast<size_t>(lane)]; m != 0; m &= m - 1) {
          const auto [r, c] = bitmap_fragment_position(lane, std::countr_zero(m));
          stored[static_cast<size_t>(r * kBitmapTileCols + c)] = true;
          off[static_cast<size_t>(k++)] = static_cast<uint16_t>(bitmap_scatter_offset(r, c));
        }
      }
      const int64_t used = start[kBitmapLanes];
      if (used < s1 - s0) {
        // the fill's stores of 0 go to a position no entry of this tile writes
        int free_pos = 0;
        while (stored[static_cast<size_t>(free_pos)]) ++free_pos;
        const uint16_t o = static_cast<uint16_t>(
            bitmap_scatter_offset(free_pos / static_cast<int>(kBitmapTileCols),
                                  free_pos % static_cast<int>(kBitmapTileCols)));
        std::fill(off.begin() + used, off.end(), o);
      }
      for (int64_t j = 0; j < s1 - s0; j += 2)
        words[static_cast<size_t>((s0 + j) / 2)] = static_cast<int64_t>(
            off[static_cast<size_t>(j)] |
            (j + 1 < s1 - s0 ? static_cast<uint32_t>(off[static_cast<size_t>(j + 1)]) << 16 : 0u));
    }
  });
  return words;
}

GeneratedKernel emit_bitmap_tc(const Problem& problem, const Schedule& schedule,
                               const BitmapTileFormat& f, const EmitOptions& opt) {
  // The schedule's own accessor asserts its family.
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_bitmap_tc";
  BitmapTcEmitter e(problem, schedule.as<BitmapTcSchedule>(), f, o);
  return e.run();
}

const CodegenFamily& bitmap_tc_codegen_family() {
  static const EmitFunction<BitmapTcSchedule, BitmapTileFormat, emit_bitmap_tc> f;
  return f;
}

}  // namespace sparsegen::codegen
