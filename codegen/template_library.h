// The device helpers of templates/*.cuh, embedded at build time (templates/CMakeLists.txt), for
// the runtime to hand to NVRTC as named headers ("sg_dtype.cuh", ...).
#pragma once

#include <span>
#include <string_view>

namespace sparsegen {

struct EmbeddedHeader {
  std::string_view name;     // include name, e.g. "sg_warp_reduce.cuh"
  std::string_view content;  // the file's bytes
};

// Every templates/*.cuh, in the order templates/CMakeLists.txt lists them.
std::span<const EmbeddedHeader> embedded_template_headers();

}  // namespace sparsegen
