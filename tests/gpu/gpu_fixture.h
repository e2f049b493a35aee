// The fixture of the family device tests: skipped (never passed) where no GPU can be used, else a
// context on device 0 and that device's compile target.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/pipeline.h"
#include "runtime/cuda_driver.h"

namespace sparsegen::testing {

class GpuFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_shared<cuda::Context>(0);
    target_ = detect_target(0);
  }
  std::shared_ptr<cuda::Context> ctx_;
  CompileTarget target_;
};

}  // namespace sparsegen::testing
