#include "runtime/dynamic_library.h"

#include <fmt/format.h>

namespace sparsegen::dynlib {

void* open(const std::string& path, std::string* why) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    *why = e != nullptr ? e : "dlopen failed";
  }
  return lib;
}

std::string missing_text(const std::vector<std::string>& missing) {
  return fmt::format("missing symbols: {}", fmt::join(missing, ", "));
}

}  // namespace sparsegen::dynlib
