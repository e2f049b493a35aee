// slide schedule family: SlideSparse weights ((2N−2):2N, ir/slide_format.h) on the 2:4 sparse
// tensor cores (mma.sp). Its IrFamily is in ir/slide_family.cpp.
//
//   slide;pattern=6:8;split=k;lift=kernel;warps=4;mt=1;nt=1;unroll=2
//     pattern  (2N−2):2N of the weight (2:4 … 14:16)
//     split    how the block's warps share the work: k (the chunks; all warps on the block's
//              rows), rows (each warp its own rows; B staged in shared memory per block) or wg
//              (sm_90a: each warpgroup of 4 warps its own 64 rows, one wgmma.sp per chunk
//              reading B from shared memory; warps 4 or 8, mt 1, lift=kernel, fp16/bf16/int8)
//     lift     kernel (a b_transform kernel lifts B first) or fused (fp16/bf16, one launch):
//              split=k reads B through the lift map itself; split=wg (6:8, column-major B, K a
//              multiple of 8) packs its windows raw-first (ir/slide_fragments.h) and has
//              stages + 1 producer warps that copy each step's original columns from B (TMA)
//              and build the overlapping windows from them in shared memory (a step is then
//              unroll runs of 8 groups: 3 chunks each)
//     warps    warps per block (1, 2, 4, 8)              mt  16-row tiles per warp-row group
//     nt       8-column tiles of N per block             unroll  chunks per load step (1, 2, 4)
//     ksplit   K parts (1..64; printed when > 1): blocks take the chunks of one part; the parts add
//              into an fp32 workspace and the last block of each output tile rounds it into C
//     stages   load steps in flight per warp (1 or 2; printed when 2): with 2 a warp loads the
//              next step's A and metadata (and, split=k, B) before this step's mma.sp; split=wg
//              (1..4, with lift=fused 2..6; printed when > 1): whole steps (A, metadata and B)
//              in flight in the block's shared-memory ring
//     prefetch chunks of A (values and metadata) per row tile a block asks the L2 for before it
//              waits for the lift kernel (0..4096; printed when > 0; lift=kernel, sm_90): the
//              main kernel starts while the lift runs (programmatic dependent launch) and streams
//              its first A meanwhile. Given by SPEC only: not enumerated until measured.
//     cluster  split=wg: row blocks per thread-block cluster (1, 2, 4; printed when > 1). The
//              cluster's first block stages each step's B into all of them with one multicast
//              bulk copy (lift=fused: each block copies a slice of each box's tokens into all of
//              them), so the L2 serves B once per cluster·warps·16 rows; the grid is rounded up
//              to whole clusters. Given by SPEC only: on an H200 it ran at best within 1 % of
//              cluster=1 (lift=fused, cluster=2) and up to 8 % slower elsewhere, since B's L2
//              reads were not what limits these kernels; clusters of 4 also fit only 30 at a
//              time on 132 SMs.
//     spread   split=wg with lift=fused and one K part: the grid's block count (printed when > 0).
//              Its blocks share the row blocks x runs equally, stream-K style: a block takes a
//              few segments of consecutive runs, stores C for a segment that covers its row
//              block and otherwise stores its partial sums in its own fp32 slot of each tile;
//              the tile's last block adds the slots in slot order (the same result whichever
//              block ends last) into C; so every multiprocessor gets the same share when the row
//              blocks do not divide among them (14336 rows: 112 row blocks of 128 on 132
//              multiprocessors). Given by SPEC only: on an H200 spread=132 ran 42.7 us against 38.7
//              us for the 112 plain blocks (14336x4096, N = 64), and even spread=112, the plain
//              blocks' own split, 40.5 us, so not enumerated; tiles (below) is the measured way
//              to fill the multiprocessors.
//     tiles    split=wg: 16-row tiles per block, warps − 3 … warps − 1 (printed when set; the
//              default is warps): the last warpgroup's last warps multiply zeros and store
//              nothing, so that the row blocks fill the multiprocessors when warps tiles would
//              leave many idle (14336 rows: 128 blocks of 7 tiles on 132 SMs, not 112 of 8;
//              18944 rows: 237 blocks of 5 in two full waves, not 148 of 8). On an H200 at N = 64
//              that gained 2 % and 12 % there. Enumerated: the count that fills the most slots.
//              Not with producer (not verified on a GPU together).
//     producer split=wg: 1 adds a warp that only stages the steps (bulk copies into a ring whose
//              buffers the multiplying warps release through barriers), so that the warpgroups
//              never wait at a block barrier or for a copy's issue (printed when 1). Given by SPEC
//              only: on an H200 it paid only where one block per multiprocessor waits on memory
//              (4096x4096, N = 64, one K part: 37.7 against 46.9 us) and lost where two blocks
//              share one (14336x4096: 52.0-81.5 against 49.2 us), so not enumerated.
//
// Two kernels per run (one with lift=fused):
//   b_transform  lifts B into the sliding windows (Ψ) and, for int8 / fp8, quantizes it per token
//                (ir/quantize.h), writing it in the mma.sp B fragment order (BWork); the token
//                scales go to TokenScales.
//   main         split=k: block (x, y) owns row tiles x·mt … and column tiles y·nt …; its warps
//                take the K chunks in turn (warp w: chunks w·unroll …, then + warps·unroll), each
//                chunk one mma.sp per row tile and column tile, A values and metadata read
//                straight from the fragment-ordered pack (16 bytes + one word per lane); the
//                warps' fp32 (int32 for int8) sums are added in shared memory and warp 0 stores
//                C = alpha·acc·(row scale · token scale) + beta·C.
//                split=rows: block x owns warps·mt row tiles (mt per warp), every warp walks all
//                chunks, and the block stages each step's B fragments in shared memory
//                (cp.async, double-buffered): B is read once per warps·mt·16 rows, not per 16.
//                split=wg: as rows with mt = 1, A and metadata staged too, the lifted B in
//                wgmma.sp's K-major core order, and one wgmma.sp m64n(8·nt) per chunk and
//                warpgroup instead of an mma.sp per warp and 8 columns.
//
// Value types: fp16, bf16 (mma.sp m16n8k32, 32 lifted columns per chunk) and int8, fp8 e4m3
// (m16n8k64, 64 per chunk; e4m3 needs sm_89 or newer), B and C in the problem's layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/slide_format.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// How a slide block's warps share its work (one name table: SPEC, printer, cache key).
enum class SlideSplit { K, Rows, Group };
std::string_view to_string(SlideSplit s);  // "k", "rows", "wg"
std::optional<SlideSplit> parse_slide_split(std::string_view s);

// Where B is lifted into the sliding windows: a b_transform kernel, or inside the main kernel.
enum class SlideLift { Kernel, Fused };
std::string_view to_string(SlideLift l);  // "kernel", "fused"
std::optional<SlideLift> parse_slide_lift(std::string_view s);

// The largest prefetch field: chunks of A per row tile.
inline constexpr int kSlideMaxPrefetch = 4096;

struct SlideSchedule {
  static constexpr std::string_view kFamily = "slide";

  int pattern = 4;                     // N of (2N−2):2N: 2 … 8
  SlideSplit split = SlideSplit::K;    // warps split the chunks (k) or own rows (rows)
  SlideLift lift = SlideLift::Kernel;  // a b_transform kernel, or fused into the main kernel
  int warps = 4;                       // 1, 2, 4, 8
  int m_tiles = 1;                     // 16-row tiles per block: 1, 2, 4
  int n_tiles = 1;                     // 8-column tiles of N per block: 1, 2, 4, 8
  int unroll = 2;                      // chunks in flight per warp: 1, 2, 4
  int ksplit = 1;                      // K parts, each its own blocks (grid.y): 1..64
  int stages = 1;                      // load steps in flight per warp: 1, 2
  int prefetch = 0;                    // chunks of A per row tile prefetched before the lift ends
  int cluster = 1;                     // split=wg: row blocks sharing B by multicast: 1, 2, 4
  int producer = 0;                    // split=wg: 1 adds a producer warp that stages the steps
  int spread = 0;                      // split=wg lift=fused: grid blocks sharing the work, or 0
  int tiles = 0;  // split=wg: 16-row tiles per block (warps − 3 … warps − 1), 0: warps

  // split=wg with lift=fused: the kernel that copies B's original columns itself (TMA) over
  // raw-first windows (see lift above).
  bool fused_wg() const { return split == SlideSplit::Group && lift == SlideLift::Fused; }
  // Warps that only stage steps: split=wg's producer field, or with lift=fused one per buffer of
  // its ring (stages + 1).
  int producer_warps() const { return fused_wg() ? stages + 1 : producer; }
  // split=wg: the block's 16-row tiles (its last warps multiply zeros when fewer than warps).
  int wg_tiles() const { return tiles > 0 ? tiles : warps; }
  // warps multiply; the producer warps stage
  int threads_per_block() const { return (warps + producer_warps()) * kWarpSize; }

  bool operator==(const SlideSchedule&) const = default;
};

// The mma.sp shape of a value type: lifted columns per chunk (one mma), elements per 32-bit
// register, lanes per quad that supply metadata.
struct SlideMma {
  int elem_bytes = 2;  // bytes of a stored A value and of a lifted B element
  int chunk = 32;      // 32 (16-bit types, m16n8k32) or 64 (8-bit types, m16n8k64)
  int per_reg = 2;     // elements per 32-bit fragment register (e4m3's kernel form: once converted)
  int meta_lanes = 2;  // lanes t of each quad whose metadata word the instruction reads
  int meta_words() const { return 8 * meta_lanes; }            // per 16-row tile and chunk
  int lane_bytes() const { return 4 * per_reg * elem_bytes; }  // of A or B, per lane and chunk
};
// Which mma.sp the operands are laid out for. Kernel: the generated slide kernel's, where e4m3
// runs on the fp16 mma.sp (m16n8k32): A and the lifted B hold 1-byte e4m3 values in the fp16
// fragment order (8 bytes per lane and chunk), converted to fp16 in registers (exactly), because
// sm_90 has no native mma.sp for e4m3 (ptxas lowers it to fp16 mma.sp behind shuffles and
// conversions, 2-4x slower than int8).
// Library: the type's own m16n8k64 form, whose lifted e4m3 B the 2:4 library (cuSPARSELt) and
// the dense 8-bit GEMM read. The two differ only for e4m3.
enum class SlideForm { Kernel, Library };
// Precondition: dtype is fp16, bf16, int8 or e4m3.
SlideMma slide_mma(DType dtype, SlideForm form = SlideForm::Kernel);

// The order of the lifted windows along K' (ir/slide_fragments.h): sliding (group after group) or
// raw-first (per run of 8 groups their even windows, i.e. the original columns, then the odd ones).
enum class SlideWindowOrder { Sliding, RawFirst };
std::string_view to_string(SlideWindowOrder o);  // "sliding", "raw-first"
// Groups of 2N original columns per run of the raw-first order.
inline constexpr int kSlideRunGroups = 8;
// Chunks of `chunk` lifted columns per row for k original columns in the order (raw-first: whole
// runs of N − 1 chunks; it needs an even N and 32-column chunks).
int64_t slide_order_chunks(int pattern, SlideWindowOrder o, int64_t k, int chunk);

std::vector<std::string> validate(const SlideSchedule& s);
// fp16/bf16/int8/e4m3 SpMM or SpMV with a static weight; nt no more than N's 8-column tiles.
std::vector<std::string> validate_slide(const Problem& p, const SlideSchedule& s);

// The SPEC's pattern field ("6:8") as N (4); spec_fields::error naming `key` otherwise.
int parse_slide_pattern_field(std::string_view key, std::string_view v);
// Why a matrix has no (2N−2):2N pattern up to 14:16 (the first row and columns that break it),
// or nullopt when it has one.
std::optional<std::string> slide_pattern_why_not(const CsrMatrix& a);

std::string slide_spec(const SlideSchedule& s);
std::string print_slide(const SlideSchedule& s);
SlideSchedule parse_slide_fields(std::string_view spec, const std::vector<std::string_view>& parts);

int64_t slide_row_tiles(const Problem& p);           // ceil(M / 16)
int64_t slide_col_tiles(const Problem& p);           // ceil(N / 8)
int64_t slide_chunks(const Problem& p, int pattern,  // lifted K / chunk, rounded up
                     SlideForm form = SlideForm::Kernel);
// The chunks of the schedule's window order (slide_pack_order).
int64_t slide_chunks(const Problem& p, const SlideSchedule& s);
// Chunks per load step: unroll, or for split=wg with lift=fused unroll runs of N − 1 chunks.
int slide_step_chunks(const SlideSchedule& s);
// ceil(row tiles / rows per block), rounded up to whole clusters
int64_t slide_grid_x(const Problem& p, const SlideSchedule& s);
int64_t slide_col_blocks(const Problem& p, const SlideSchedule& s);  // ceil(col tiles / nt)
int64_t slide_grid_y(const Problem& p, const SlideSchedule& s);      // column blocks x ksplit
// Chunks per K part: ceil(chunks / ksplit) rounded up to a multiple of `align` (part z covers
// [z·P, min((z+1)·P, chunks))).
int64_t slide_part_chunks(int64_t chunks, int ksplit, int align = 1);
// The schedule's part: aligned to whole runs for split=wg with lift=fused.
int64_t slide_part_chunks(const Problem& p, const SlideSchedule& s);
// spread: the runs of work (row blocks x runs of 3 chunks) its blocks share.
int64_t slide_spread_work(const Problem& p, const SlideSchedule& s);
// spread: the most blocks whose runs meet one row block, R / (W / spread) + 2 (R runs per row
// block, W the work): each 16-row tile has that many slots for the blocks' partial sums.
int64_t slide_spread_slots(const Problem& p, const SlideSchedule& s);
// Floats of the workspace before its counters, and its bytes. ksplit > 1: the sums of whole
// 16 x 8 tiles in the mma C fragment order, added into by the parts; one counter per output tile
// of a block (grid.x x column blocks). spread: per 16-row tile (of whole row blocks) and column
// block, slide_spread_slots slots of nt·128 floats (fragment order), then one counter each.
int64_t slide_counters_offset(const Problem& p, const SlideSchedule& s);
int64_t slide_workspace_bytes(const Problem& p, const SlideSchedule& s);
int64_t slide_shared_bytes(const Problem& p, const SlideSchedule& s);  // the warps' partial sums
int slide_registers(const Problem& p, const SlideSchedule& s);
// The row tiles per block of the pack's slot order the schedule reads (ir/slide_fragments.h):
// split=wg stages a block's tiles of a step with one copy (warps), the others 1.
int slide_pack_group(const SlideSchedule& s);
// The pack's window order the schedule reads: raw-first for split=wg with lift=fused.
SlideWindowOrder slide_pack_order(const SlideSchedule& s);
// Bytes of the lifted B in fragment order (BWork); 0 for lift=fused.
int64_t slide_b_work_bytes(const Problem& p, int pattern);
int64_t slide_b_work_bytes(const Problem& p, const SlideSchedule& s);

// Hardware limits: mma.sp (sm_80+), e4m3 (sm_89+), threads, shared memory, registers, grid.
std::vector<std::string> verify_slide(const Problem& p, const SlideSchedule& s,
                                      const DeviceLimits& dev);

// Every legal schedule for the matrix's smallest pattern (none when it has none: why_not says
// where it breaks): split k: warps {2, 4, 8} x mt {1, 2}; split rows: warps {4, 8} x mt {1, 2};
// each x nt {1, 2, 4, 8 up to N's tiles} x unroll {1, 2, 4} x stages {1, 2}, within 160
// registers and 48 KiB of shared memory; split wg (an sm_90 device, 16-byte lanes): warps {4, 8},
// mt 1, lift=kernel with unroll {1, 2, 4} and stages {2, 3, 4} or (6:8, 16-bit, column-major B,
// K % 8 == 0) lift=fused with unroll {1, 2} and stages {2 … 6}, within the shared memory per block;
// x ksplit from 1, doubling while the grid is short of two waves (of 4 blocks per multiprocessor)
// and each part keeps at least 4 load steps per warp.
std::vector<Schedule> enumerate_slide_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev);

}  // namespace sparsegen
