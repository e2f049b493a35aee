// Where the cost model comes from when the caller does not name one: the fitted models shipped in
// costmodel/models/*.json (one per device, written by `sparsegen calibrate --out`), so a user never
// has to calibrate first, with a roofline fallback when none matches the device.
//
//   ModelChoice c = default_model(device_profile(...));
//   if (!c.warning.empty()) fprintf(stderr, "sparsegen: warning: %s\n", c.warning.c_str());
//   auto ranked = rank_schedules(p, candidates, a, mf, c.model);
//
// Lookup order (the first match wins):
//   1. $SPARSEGEN_MODEL: a model file (used even for another device, with a warning; an unreadable
//      or foreign file is a UserError, since the user asked for it) or a folder searched as below;
//   2. folders on disk: <folder of the executable>/models, <exe>/../costmodel/models,
//      <exe>/../../costmodel/models, and the source tree's costmodel/models (compile-time path);
//   3. the models embedded in the library at build time (costmodel/models/*.json when CMake ran).
// Within each place: a model of the same device name and compute capability; failing that, one of
// the same compute capability (warning: scale may differ); failing everything, the roofline model
// for the device (note says so). Unreadable files found by the search are skipped with a warning.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "costmodel/linear_model.h"

namespace sparsegen {

struct ModelChoice {
  CostModel model;
  std::string note;     // where it came from, one line
  std::string warning;  // empty, or a device mismatch / skipped file
};

ModelChoice default_model(const DeviceProfile& target);

// For a machine without a GPU (compiling offline for an architecture): the same lookup, matching
// the compute capability of `arch` only (there is no device whose name could differ), so a model
// shipped for another board of that architecture is used without a device-mismatch warning. The
// note ("the cost model shipped for NVIDIA H200 (sm_90), no GPU present (file, date)") says which
// device the model was fitted on and that no GPU is present; failing every model, the roofline
// estimate of `arch` (note says so). Only a model named by $SPARSEGEN_MODEL for another
// architecture warns.
ModelChoice offline_model(const DeviceProfile& arch);

// File name for a device's model: the name with every non-alphanumeric run replaced by '_',
// plus the arch: "NVIDIA_H200_sm_90.json".
std::string model_file_name(const DeviceProfile& d);

// The models compiled into the library: (file name, JSON text).
std::vector<std::pair<std::string, std::string>> embedded_models();

}  // namespace sparsegen
