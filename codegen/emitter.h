// Emitter base: the bookkeeping every CUDA emitter needs, independent of the schedule family.
//
//   - two streams: declarations (includes, constants, helper structs: emitted before the kernel)
//     and the body (the kernel itself);
//   - indentation and `{ }` blocks through RAII scope guards, so a block can never be left open;
//   - unique names: fresh(base) returns base, base_1, ... unique in the enclosing scopes, so
//     nested emitters (block -> warp -> thread) never shadow each other's variables;
//   - calls to templates/*.cuh helpers only through the typed table (codegen/template_types.h),
//     recording which headers the source must include.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_signature.h"
#include "codegen/template_types.h"

namespace sparsegen::codegen {

class Emitter {
 public:
  Emitter();
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;
  virtual ~Emitter() = default;

  // Closes a `{ }` block (and its name scope) on destruction.
  class [[nodiscard]] Scope {
   public:
    Scope(Scope&& other) noexcept;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class Emitter;
    Scope(Emitter* e, std::string closer) : e_(e), closer_(std::move(closer)) {}
    Emitter* e_;
    std::string closer_;
  };

  // Writes one line of the body at the current indentation.
  void line(std::string_view text);
  // Writes a blank line.
  void blank();
  // Writes a `// ...` comment line (each line of text gets its own `//`).
  void comment(std::string_view text);
  // Writes `head {` and returns a guard that writes `}` (plus `tail`, e.g. ";") when it dies.
  Scope block(std::string_view head, std::string_view tail = "");
  // A bare `{ }` block that only opens a name scope.
  Scope block();

  // Declaration stream (before the kernel; not indented by the body's scopes).
  void decl(std::string_view text);

  // A name not yet used in any enclosing scope (nor globally reserved), registered in the
  // innermost scope: base, base_1, base_2, ...
  std::string fresh(std::string_view base);
  // Registers a fixed name (kernel parameters, builtins) so fresh() never returns it.
  void reserve(std::string_view name);

  // Renders a typed helper call and records the helper's header for the include list.
  template <class H, class... Rest>
  auto call(const H& helper, const Rest&... rest) {
    headers_.insert(std::string(H::kHeader));
    return tmpl::call(helper, rest...);
  }
  // Emits `<call>;` as a statement (for helpers returning void).
  template <class H, class... Rest>
  void call_stmt(const H& helper, const Rest&... rest) {
    line(call(helper, rest...).text + ";");
  }

  // Headers of every helper called so far (sorted, unique).
  const std::set<std::string>& used_headers() const { return headers_; }
  // Name -> content of the embedded templates/*.cuh this kernel needs (the used helpers' headers
  // plus sg_dtype.cuh, which every kernel includes for its value type): NVRTC's named headers.
  std::map<std::string, std::string> header_sources() const;
  int depth() const { return static_cast<int>(scopes_.size()) - 1; }

  // Declares an elementwise helper kernel of the module (a prologue or epilogue over C), launched
  // with elementwise_launch(count), its threads striding over the elements:
  // DECLS must not mark pointers __restrict__: the kernel may start before the one before it has
  // finished (programmatic launch), and a const __restrict__ load may be moved above the wait.
  //   extern "C" __global__ void NAME(DECLS) {
  //     sg::launch_dependents();     // the next kernel of the sequence may start
  //     sg::grid_dependency_wait();  // the kernel before this one has finished
  //     const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  //     for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < COUNT; i += stride) STMT;
  //   }
  void elementwise_kernel(std::string_view comment, std::string_view name, std::string_view decls,
                          int64_t count, std::string_view stmt);

  // The whole translation unit: #includes of used helpers, declarations, then the body.
  std::string source() const;
  // The translation unit of one kernel: #includes of the used helpers (sg_dtype.cuh always), a
  // blank line, the declarations, a blank line, then `head` (the kernel's signature, ending in
  // "{\n"), the body indented one level, and the closing brace.
  std::string kernel_source(const std::string& head) const;
  std::string body() const { return body_.str(); }
  std::string declarations() const { return decls_.str(); }

 private:
  void open_scope();
  void close_scope(const std::string& closer);
  bool used(const std::string& name) const;

  std::ostringstream body_;
  std::ostringstream decls_;
  std::vector<std::set<std::string>> scopes_;  // names declared per open scope; [0] = global
  std::set<std::string> headers_;
};

// The launch shape of an elementwise_kernel over `count` elements: 256 threads a block, one
// block per 256 elements up to 1024 blocks (then each thread takes several).
LaunchShape elementwise_launch(int64_t count);

}  // namespace sparsegen::codegen
