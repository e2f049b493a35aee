// The benchmarks' floor probes compile with NVRTC (no GPU needed): a template change that breaks
// one fails here rather than on the device.
#include "benchmarks/floor_probes.h"

#include <gtest/gtest.h>

#include <string>

namespace sparsegen::bench {
namespace {

std::string ptx_of(const ProbeProgram& prog) {
  const nvrtc::CompileResult r =
      nvrtc::compile(prog.source, probe_compile_options("compute_90", "probe_test.cu"));
  EXPECT_FALSE(r.is_cubin);
  return std::string(r.image.data());
}

TEST(FloorProbes, RowChainCompiles) {
  const ProbeProgram prog = row_chain_program();
  ASSERT_EQ(prog.kernels.size(), 1u);
  const std::string ptx = ptx_of(prog);
  EXPECT_NE(ptx.find(".entry " + prog.kernels[0]), std::string::npos);
  EXPECT_NO_THROW(nvrtc::compile(prog.source, probe_compile_options("sm_90", "probe_test.cu")));
}

TEST(FloorProbes, StreamKernelsCompileWithTheirReadPatterns) {
  const ProbeProgram prog = stream_program();
  ASSERT_EQ(prog.kernels.size(), std::size(kStreamLoads) + std::size(kStreamBulkKib));
  const std::string ptx = ptx_of(prog);
  for (const std::string& k : prog.kernels)
    EXPECT_NE(ptx.find(".entry " + k), std::string::npos) << k;
  EXPECT_EQ(prog.kernels.front(), stream_warps_kernel(kStreamLoads[0]));
  EXPECT_EQ(prog.kernels.back(), stream_bulk_kernel(kStreamBulkKib[std::size(kStreamBulkKib) - 1]));
  // the warp pattern streams with evict-first 16-byte loads; the bulk pattern copies into shared
  // memory behind mbarriers
  EXPECT_NE(ptx.find("ld.global.cs.v4"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
            std::string::npos);
  EXPECT_NE(ptx.find("mbarrier.try_wait.parity.shared::cta.b64"), std::string::npos);
  EXPECT_NO_THROW(nvrtc::compile(prog.source, probe_compile_options("sm_90", "probe_test.cu")));
}

}  // namespace
}  // namespace sparsegen::bench
