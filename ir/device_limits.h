// Hardware limits the verifier checks a schedule against. A plain struct: compiler/ fills it from
// the runtime's device query; sm80()/sm90() are the documented defaults for A100 and H100.
#pragma once

#include <cstdint>
#include <string>

namespace sparsegen {

struct DeviceLimits {
  std::string name = "sm_90";
  int max_threads_per_block = 1024;
  int64_t max_shared_per_block = 227 * 1024;  // opt-in dynamic shared memory
  int max_registers_per_thread = 255;
  int registers_per_block = 65536;
  int64_t max_grid_x = 2147483647;
  int64_t max_grid_y = 65535;
  int multiprocessors = 132;  // H100 SXM / H200; sizes grids that stage data once per block
  // Per multiprocessor, for how many blocks of a shape are resident at once (one-wave grids).
  int max_threads_per_multiprocessor = 2048;
  int64_t max_shared_per_multiprocessor = 228 * 1024;
  int64_t shared_reserved_per_block = 1024;  // the driver's own share of each block's
  int registers_per_multiprocessor = 65536;
  int max_blocks_per_multiprocessor = 32;
  bool wgmma = true;  // warpgroup MMA (compute capability 9.0 exactly: the sm_90a target)

  // The compute capability in the name: "sm_90" -> 90, "sm_90a" -> 90 (0 when it has no digits).
  int sm() const {
    int v = 0;
    for (char c : name)
      if (c >= '0' && c <= '9') v = v * 10 + (c - '0');
    return v;
  }

  static DeviceLimits sm90() { return {}; }
  static DeviceLimits sm80() {
    DeviceLimits d;
    d.name = "sm_80";
    d.max_shared_per_block = 163 * 1024;
    d.max_shared_per_multiprocessor = 164 * 1024;
    d.multiprocessors = 108;
    d.wgmma = false;
    return d;
  }
};

}  // namespace sparsegen
