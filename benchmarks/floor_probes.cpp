#include "benchmarks/floor_probes.h"

#include <fmt/format.h>

#include "codegen/template_library.h"

namespace sparsegen::bench {

ProbeProgram row_chain_program() {
  return {
      "#include \"sg_probe.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__(256) sg_row_chain(\n"
      "    const int* starts, const float* lines, float* out, int rows) {\n"
      "  sg::probe_row_chain(starts, lines, out, rows);\n"
      "}\n",
      {"sg_row_chain"}};
}

std::string stream_warps_kernel(int loads) {
  return fmt::format("sg_stream_warps{}", loads);
}
std::string stream_bulk_kernel(int kib) {
  return fmt::format("sg_stream_bulk{}", kib);
}

namespace {

// Adds the kernel `name`(const unsigned* src, int vecs, unsigned* out) with `body` to `p`.
void add_stream_kernel(ProbeProgram& p, const std::string& name, const std::string& body) {
  p.source += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(256) {}(\n"
      "    const unsigned* src, int vecs, unsigned* out) {{\n{}}}\n",
      name, body);
  p.kernels.push_back(name);
}

}  // namespace

ProbeProgram stream_program() {
  ProbeProgram p;
  p.source = "#include \"sg_probe.cuh\"\n";
  for (int q : kStreamLoads)
    add_stream_kernel(p, stream_warps_kernel(q),
                      fmt::format("  sg::probe_stream_warps<{}>(src, vecs, out);\n", q));
  for (int kib : kStreamBulkKib)
    add_stream_kernel(p, stream_bulk_kernel(kib),
                      fmt::format("  extern __shared__ __align__(128) unsigned ring[];\n"
                                  "  sg::probe_stream_bulk<{} * 1024, 4>(src, vecs, out, ring);\n",
                                  kib));
  return p;
}

nvrtc::CompileOptions probe_compile_options(const std::string& arch,
                                            const std::string& program_name) {
  nvrtc::CompileOptions co;
  co.arch = arch;
  co.program_name = program_name;
  for (const EmbeddedHeader& h : embedded_template_headers())
    if (h.name == "sg_probe.cuh" || h.name == "sg_bulk_copy.cuh")
      co.headers.emplace(std::string(h.name), std::string(h.content));
  return co;
}

}  // namespace sparsegen::bench
