#include "ir/verifier.h"

#include "ir/family.h"

namespace sparsegen {

int estimate_registers(const Problem& p, const Schedule& s) {
  return s.family().registers(p, s);
}

int64_t estimate_shared_bytes(const Problem& p, const Schedule& s) {
  return s.family().shared_bytes(p, s);
}

std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats& st,
                                const DeviceLimits& dev) {
  std::vector<std::string> why = validate(p, s);
  if (!why.empty()) return why;
  return s.family().verify(p, s, st, dev);
}

}  // namespace sparsegen
