#include "compiler/bitmap_tc_build.h"

#include <fmt/format.h>

#include "codegen/bitmap_tc.h"
#include "compiler/pipeline_steps.h"
#include "ir/bitmap_format.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/diagnostics.h"

namespace sparsegen {

BitmapPacked pack_bitmap_values(const CsrMatrix& a, DType dtype) {
  return share_pack(pack_bitmap_tiles(a), a, dtype);
}

KernelBuild build_bitmap_tc_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                   const CompileTarget& target, bool line_info,
                                   const BitmapPacked* packed) {
  SG_ASSERT(s.family() == ScheduleFamily::BitmapTc,
            "build_bitmap_tc_kernel needs a bitmap_tc schedule");
  KernelBuild b = start_build(a, p, s, target);
  {
    PipelineStep st(3, "verify", &b.step_log);
    const BitmapTileStats bs =
        packed != nullptr ? bitmap_tile_stats(packed->format) : bitmap_tile_stats(a);
    const auto reasons = verify_bitmap_tc(p, s.bitmap_tc(), bs, target.limits);
    if (!reasons.empty())
      throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                  target.limits.name, to_string(p), fmt::join(reasons, "; ")));
    st.finish(target.limits.name);
  }
  if (packed != nullptr) {
    shared_pack_step(b, *packed, fmt::format("{} tiles", packed->format.tiles()));
    emit_step(b, [&] { return codegen::emit_bitmap_tc(p, s, packed->format); });
    compile_step(b, target, "sparsegen_bitmap_tc.cu", line_info);
    return b;
  }
  BitmapTileFormat f;
  {
    PipelineStep st(4, "pack", &b.step_log);
    f = pack_bitmap_tiles(a);
    st.finish(fmt::format("{} tiles of {}x{}, {} value slots ({} real), largest tile {}", f.tiles(),
                          kBitmapTileRows, kBitmapTileCols, f.slots(), f.nnz, f.max_tile_values));
  }
  values_step(b, a, f.values);
  emit_step(b, [&] { return codegen::emit_bitmap_tc(p, s, f); });
  compile_step(b, target, "sparsegen_bitmap_tc.cu", line_info);
  return b;
}

}  // namespace sparsegen
