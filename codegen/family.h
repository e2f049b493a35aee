// The codegen/ layer of a schedule family: turning a schedule and its packed format into CUDA
// source plus the KernelSignature that says how to launch it. A family implements CodegenFamily
// in its own files and registers it with one line in codegen/families.def; shared code calls
// emit_kernel() and never names a family.
//
//   auto packed = s.family().pack(a, p, s);                 // ir/family.h
//   GeneratedKernel k = emit_kernel(p, s, *packed);          // the family's emitter
//   nvrtc::compile(k.source, {.arch = "sm_90", .headers = k.headers});
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_signature.h"
#include "ir/family.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen::codegen {

struct GeneratedKernel {
  std::string source;                          // one translation unit
  std::map<std::string, std::string> headers;  // the templates/*.cuh it includes, name -> content
  KernelSignature signature;
  // Uses instructions of the arch-specific target only (wgmma: sm_90a, not sm_90): compiled for
  // the target's "a" variant (nvrtc::arch_specific_variant).
  bool arch_specific = false;
};

struct EmitOptions {
  std::string kernel_name;  // empty: "sparsegen_" + the family's name
};

class CodegenFamily {
 public:
  virtual ~CodegenFamily() = default;
  // The IrFamily::name() this emitter serves.
  virtual std::string_view name() const = 0;
  // Precondition: validate(p, s) is empty and `packed` is s.family().pack(a, p, s) (or a pack of
  // a schedule with the same pack_key). Throws UserError when the packed format does not fit the
  // kernel (e.g. positions beyond 32 bits).
  virtual GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                               const EmitOptions& opt) const = 0;
};

// The registered emitters, in registration order (codegen/families.def).
const std::vector<const CodegenFamily*>& codegen_families();
// The emitter of s's family; throws UserError when the family has none registered.
const CodegenFamily& codegen_family(const Schedule& s);
// codegen_family(s).emit(p, s, packed, opt).
GeneratedKernel emit_kernel(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                            const EmitOptions& opt = {});

// The family's format inside a PackedMatrix (ir/family.h's Packed<T>); asserts the type.
template <class T>
const T& packed_format(const PackedMatrix& packed) {
  return dynamic_cast<const Packed<T>&>(packed).format;
}

// The CodegenFamily of a family whose emitter is one function of its schedule body's family and
// packed format `Format`, e.g.
//   const CodegenFamily& macko_codegen_family() {
//     static const EmitFunction<MackoSchedule, MackoFormat, emit_macko> f;
//     return f;
//   }
template <class Body, class Format,
          GeneratedKernel (*Emit)(const Problem&, const Schedule&, const Format&,
                                  const EmitOptions&)>
class EmitFunction final : public CodegenFamily {
 public:
  std::string_view name() const override { return Body::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                       const EmitOptions& opt) const override {
    return Emit(p, s, packed_format<Format>(packed), opt);
  }
};

}  // namespace sparsegen::codegen
