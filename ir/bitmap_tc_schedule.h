// bitmap_tc schedule family helpers: validation against a problem, the SPEC text and its parser,
// launch-shape facts, the verifier's limits and the enumeration (its IrFamily is in
// ir/bitmap_tc_family.cpp).
//
//   bitmap_tc;warps=4;mt=1;kt=1;ksplit=1;stages=2;mma=sync
//     warps   warps per block (1, 2, 4, 8)          mt      16-row tiles per warp (1, 2)
//     kt      64-column tiles per step (1, 2, 4)    ksplit  K parts, grid.y (1..64)
//     stages  buffers in flight (2, 3; pipe=bulk 2..6) mma  sync (mma.sync) or wgmma (sm_90a)
//     vals    value layout: slot (default, not printed) or pair (ir/bitmap_format.h)
//     copy    pipe=bulk: tile (default, not printed: a copy per row tile) or step (a copy of a
//             step's lane words and one of its values: the pack grouped by the block's rows)
//     cluster pipe=bulk, copy=step: row blocks per thread-block cluster (1, 2, 4; printed when
//             > 1). The cluster's first block copies each step's B into all of them with one
//             multicast copy, so the L2 serves B once per cluster·rows_per_block rows; the grid
//             is rounded up to whole clusters (blocks past M copy no A and store nothing)
//     b       pipe=bulk, mma=wgmma: how a step's B reaches its stage. arranged (default, not
//             printed): one bulk copy of B as an aux kernel laid it out beforehand (16-byte
//             column groups, BitmapBLoad); map: one TMA copy per 64 columns straight from B
//             through a tensor map, in the swizzle wgmma reads (N = 16..128; no aux kernel)
//     decode  pipe=bulk, mma=wgmma, copy=step, b=map, mt=1, vals=slot: how A reaches the tensor
//             cores. regs (default, not printed): each lane decodes its A operand into registers
//             from the lane words. scatter: each warp zeroes its 16 rows of a dense A tile in
//             shared memory (the 128-byte swizzle) and stores its values there by 16-bit offsets
//             the pack computed; wgmma reads A and B from shared memory (BitmapDecode)
//     kred    ksplit > 1: how the K parts' sums meet. ws (default, not printed): atomic adds into
//             an fp32 workspace, the last block of a row block rounds it into C. cluster
//             (pipe=bulk, ksplit 2..8, no row-block clusters): a row block's K parts run as one
//             thread-block cluster; each block leaves its sums in its shared memory, and after a
//             cluster barrier each warp's rows are added up over distributed shared memory by one
//             block and stored (no workspace, no atomics, no counter)
//     pipe    how a step's tiles reach shared memory: async (default, not printed: every thread's
//             cp.async copies and two block barriers a step) or bulk (kt=1, sm_90: a producer
//             warp beyond `warps` issues each step's A tiles and B rows as cp.async.bulk copies
//             on the stage's full mbarrier, the computing warps release a stage on its empty
//             one, no block barrier in the loop; B laid out beforehand, as the stage holds it,
//             by an aux kernel; with mma=wgmma a step's A is decoded while the last step's
//             multiplies run)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/bitmap_format.h"
#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Which tensor-core instruction a bitmap_tc kernel multiplies with: mma.sync per warp (sm_80 on),
// or wgmma per warpgroup of four warps (sm_90a: B read from shared memory once per warpgroup).
enum class MmaKind { Sync, Wgmma };
std::string_view to_string(MmaKind m);  // "sync", "wgmma"
std::optional<MmaKind> parse_mma(std::string_view s);

// How a step's B rows and A tiles reach shared memory (see the SPEC fields above).
enum class BitmapPipe { Async, Bulk };
std::string_view to_string(BitmapPipe p);  // "async", "bulk"
// pipe=bulk: what one bulk copy of A carries. tile: a row tile's lane words or values (two
// copies per row tile a step, issued lane by lane; the row-tile-major pack). step: the block's
// row tiles' lane words, or their values, of one step (three copies a step from one lane; the
// pack in groups of the block's row tiles, bitmap_tc_tile_group).
enum class BitmapCopy { Tile, Step };
std::string_view to_string(BitmapCopy c);  // "tile", "step"
// pipe=bulk, mma=wgmma: where a step's B is copied from. arranged: BWork, which an aux kernel
// (bitmap_tc_arrange_b) writes before the main kernel, a column tile as the stage holds it (one
// 1-D bulk copy a step). map: B itself, by TMA boxes of 64 rows x min(N, 64) columns that land
// in the 32/64/128-byte swizzle an N-major wgmma descriptor reads (one launch, no BWork).
enum class BitmapBLoad { Arranged, Map };
std::string_view to_string(BitmapBLoad b);  // "arranged", "map"
// pipe=bulk, mma=wgmma: how a step's A reaches the multiplies. regs: each lane walks its lane
// word and its values into the A operand registers (a predicated load per register, whatever the
// density). scatter: each stored value comes with the 16-bit byte offset of its position in a
// dense 16 x 64 tile in the 128-byte swizzle (bitmap_scatter_offsets); a warp zeroes its tile,
// stores its values at their offsets and the warpgroup's wgmma reads A from shared memory. Its
// work is per stored value, not per position; a stored value costs 4 bytes (value + offset).
enum class BitmapDecode { Registers, Scatter };
std::string_view to_string(BitmapDecode d);  // "regs", "scatter"
// ksplit > 1: where the K parts' partial sums are added (see kred above).
enum class BitmapKReduce { Workspace, Cluster };
std::string_view to_string(BitmapKReduce k);  // "ws", "cluster"

// ─── Bitmap tiles on tensor cores (family "bitmap_tc") ───────────────────────────────────────
// Over the bitmap-tile format (ir/bitmap_format.h: 16 x 64 tiles, a 64-bit mask per tile row and
// the tile's values packed): "load as sparse, compute as dense". A warp owns `m_tiles` row tiles
// (16 rows each) and walks its block's column range one 64-column tile at a time; per tile it
// expands each 16 x 16 quarter into an mma.m16n8k16 A operand straight from the mask and the
// values (popcounts, no dense copy), and multiplies it with B fragments that the block staged in
// shared memory (cp.async, `stages` buffers in flight, shared by the block's warps). Products are
// accumulated in fp32 registers (N/8 n8 tiles per row tile). The K range is cut into `ksplit`
// parts (grid.y): with ksplit = 1 each row is finished by one warp and stored (alpha·acc +
// beta·C); with ksplit > 1 the parts add into an fp32 workspace (OutputMode::Atomic) and the
// last block of each row block to finish stores C = ws + beta·C and re-zeroes ws (no extra
// kernels: the workspace is zeroed once at allocation and left zero by every run). Needs fp16/bf16,
// row-major B and N a multiple of 8 (<= 128). Known limitation (dense compute): an absent entry is
// a 0 in the mma, so where B holds ±Inf or NaN, every row whose tile spans that B row gets NaN,
// also rows with no entry in that column (CSR arithmetic would skip the product). Finite inputs are
// unaffected. A pipeline step covers `k_tiles` column tiles (64·k_tiles columns): one barrier pair
// and one cp.async wait per step, and k_tiles independent decode chains per warp to overlap. SPEC:
// bitmap_tc;warps=4;mt=1;kt=1;ksplit=1;stages=2;mma=sync
struct BitmapTcSchedule {
  static constexpr std::string_view kFamily = "bitmap_tc";

  int warps_per_block = 4;      // 1, 2, 4, 8: the block's row tiles are warps x m_tiles
  int m_tiles = 1;              // 16-row tiles per warp: 1, 2 (B fragments reused across them)
  int k_tiles = 1;              // 64-column tiles per pipeline step: 1, 2, 4
  int ksplit = 1;               // K parts (grid.y): 1..64
  int stages = 2;               // shared-memory buffers of the cp.async pipeline: 2, 3
  MmaKind mma = MmaKind::Sync;  // wgmma: warps 4 or 8, N in {8, 16, 32, 64, 128}, sm_90 only
  // The pack's value layout: pair loads a register of A with one 32-bit load (more bytes).
  BitmapValues values = BitmapValues::Slot;
  // bulk: kt=1, stages 2..6, sm_90; a producer warp beyond the `warps` that compute
  BitmapPipe pipe = BitmapPipe::Async;
  // pipe=bulk: one copy per row tile or per step (BitmapCopy)
  BitmapCopy copy = BitmapCopy::Tile;
  // pipe=bulk, copy=step: row blocks sharing each step's B by multicast: 1, 2, 4
  int cluster = 1;
  // pipe=bulk, mma=wgmma: B from the arranged BWork or through a tensor map (BitmapBLoad)
  BitmapBLoad b_load = BitmapBLoad::Arranged;
  // pipe=bulk, mma=wgmma, copy=step, b=map: A decoded into registers or scattered (BitmapDecode)
  BitmapDecode decode = BitmapDecode::Registers;
  // ksplit > 1: the K parts add through a workspace or within a cluster (BitmapKReduce)
  BitmapKReduce kred = BitmapKReduce::Workspace;

  int rows_per_block() const { return warps_per_block * m_tiles * 16; }
  int threads_per_block() const {
    return (warps_per_block + (pipe == BitmapPipe::Bulk ? 1 : 0)) * kWarpSize;
  }
  OutputMode output() const {
    return ksplit > 1 && kred == BitmapKReduce::Workspace ? OutputMode::Atomic : OutputMode::Store;
  }
  // kred=cluster: the K parts of a row block form one cluster of consecutive blocks
  bool cluster_k() const { return ksplit > 1 && kred == BitmapKReduce::Cluster; }
  bool operator==(const BitmapTcSchedule&) const = default;
};

// Problem-independent legality of a body: every reason it is illegal (empty = legal).
std::vector<std::string> validate(const BitmapTcSchedule& s);
// Problem-dependent legality: fp16/bf16, row-major B, N a multiple of 8 in 8..128 (mma=wgmma:
// 8, 16, 32, 64 or 128; b=map: 16..128), ksplit no more than the column tiles.
std::vector<std::string> validate_bitmap_tc(const Problem& p, const BitmapTcSchedule& s);

std::string bitmap_tc_spec(const BitmapTcSchedule& s);
std::string print_bitmap_tc(const BitmapTcSchedule& s);
// Parses the fields after "bitmap_tc". Throws UserError naming the field.
BitmapTcSchedule parse_bitmap_tc_fields(std::string_view spec,
                                        const std::vector<std::string_view>& parts);

// The tile order (BitmapTileFormat::group) a schedule's kernel reads: with copy=step groups of
// the block's row tiles, so that a block's tiles of one step are consecutive (one copy of lane
// words, one of values); else 1 (row-tile major).
int64_t bitmap_tc_tile_group(const BitmapTcSchedule& s);

// Column tiles per K part: ceil(col_tiles / ksplit) (part z covers [z·P, min((z+1)·P, tiles))).
int64_t bitmap_tc_part_tiles(int64_t col_tiles, int ksplit);
// ceil(M / rows_per_block), rounded up to whole clusters
int64_t bitmap_tc_grid_x(const Problem& p, const BitmapTcSchedule& s);
int64_t bitmap_tc_grid_y(const Problem& p, const BitmapTcSchedule& s);  // ksplit
// Bytes per row of a staged B tile. mma=sync: an odd number of 16-byte units >= N·2, so the
// eight rows an ldmatrix reads fall in distinct banks. mma=wgmma: N·2, no padding (the tile is
// stored in 16-byte column groups, see sg_wgmma.cuh; only its size is counted here).
int64_t bitmap_tc_b_row_bytes(const Problem& p, const BitmapTcSchedule& s);
// Dynamic shared memory of the kernel, in bytes (all multiples of 16):
//   [tile pointers: rows_per_block/16 row tiles x (part tiles + 1) ints; copy=step: part tiles
//    x (row tiles + 1), a step's tiles consecutive]
//   [pipe=bulk: two 8-byte mbarriers per stage (full, empty; cluster > 1: and the cluster's
//    empty, which the first block's producer waits on), rounded to 16]
//   stages x k_tiles x [B tile: 64 x b_row | per row tile of the block: 32 lane words (128) |
//   values]; copy=step: stages x [B tile | the row tiles' lane words and lane starts | their
//   values, packed]; decode=scatter: stages x [B tile | values, packed | their offsets, packed]
//   then two dense A buffers of rows_per_block x 128 bytes (1024-byte aligned)
struct BitmapTcSmem {
  int64_t tile_ptrs = 0;  // bytes of the tile-pointer table
  int64_t barriers = 0;   // pipe=bulk: the stages' full and empty mbarriers
  int64_t b_tile = 0;     // 64 rows x bitmap_tc_b_row_bytes
  int64_t a_values = 0;   // one row tile's value buffer: max_tile_values x 2, rounded to 16
  int64_t a_tile = 0;     // 128 mask bytes (copy=step: + 64 of lane starts) + a_values
  int64_t b_step = 0;     // a step's B rows: k_tiles x b_tile (+ 16 per column group, wgmma
                          // arranged)
  int64_t stage = 0;      // b_step + k_tiles x (row tiles per block) x a_tile (b=map: rounded
                          // to 1024 bytes, the swizzle atoms' alignment)
  int64_t align = 0;      // b=map: bytes allotted to round the first stage up to 1024
  int64_t offsets = 0;    // decode=scatter: the offsets' place in a stage (after the values)
  int64_t dense = 0;      // decode=scatter: one dense A buffer (rows_per_block x 128 bytes)
  int64_t partials = 0;   // kred=cluster: the block's fp32 sums after the loop, over the stages
                          // (the total grows where the stages are smaller)
  int64_t total = 0;      // tile_ptrs + barriers + align + stages x stage + 2 x dense
};
// pipe=bulk: bytes of B as the aux kernel lays it out (BWork), per 64-row column tile as the
// stage holds it: mma=wgmma, N/8 column groups of bitmap_tc_b_group<64>() bytes (64 rows of 16
// bytes, then 16 bytes of pad); mma=sync, 64 rows of bitmap_tc_b_row_bytes; b=map: 0 (no BWork).
int64_t bitmap_tc_b_work_bytes(const Problem& p, const BitmapTcSchedule& s);
// max_step_values (decode=scatter, when known: the pack's largest step, bitmap_max_step_values)
// sizes a stage's values and offsets; otherwise the block's row tiles x max_tile_values do.
BitmapTcSmem bitmap_tc_smem(const Problem& p, const BitmapTcSchedule& s, int64_t max_tile_values,
                            int64_t max_step_values = -1);
int64_t bitmap_tc_shared_bytes(const Problem& p, const BitmapTcSchedule& s,
                               int64_t max_tile_values);
int bitmap_tc_registers(const Problem& p, const BitmapTcSchedule& s);  // per-thread estimate

// Hardware limits (shared memory, 32-bit value offsets, wgmma only on sm_90). Empty = runs.
std::vector<std::string> verify_bitmap_tc(const Problem& p, const BitmapTcSchedule& s,
                                          const BitmapTileStats& st, const DeviceLimits& dev);

// Every legal, verified bitmap_tc schedule for the problem (empty unless fp16/bf16, row-major B
// and N a multiple of 8 in 8..128): warps {4, 8} x mt {1, 2} x kt {1, 2, 4} x ksplit from 1
// doubling while the grid is smaller than four waves of dev.multiprocessors blocks; stages 2;
// mma=sync; and on sm_90 at N = 32, 64, 128 the bulk wgmma kernels (pair values, B by TMA
// (b=map), both copy kinds, four-warp copy=step also in clusters of 2 and 4 row blocks, eight-warp
// copy=step with 2 or 4 K parts also with kred=cluster; see the .cpp).
std::vector<Schedule> enumerate_bitmap_tc_schedules(const Problem& p, const CsrMatrix& a,
                                                    const DeviceLimits& dev);

}  // namespace sparsegen
