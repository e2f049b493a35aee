#include "codegen/emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <utility>

#include "codegen/template_library.h"
#include "ir/diagnostics.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {

namespace {

// Elementwise kernels loop over their elements with one wave of blocks (1024 x 256 threads fill
// the largest sm_90 part) rather than one block per 256 elements: the grid-dependency
// instructions cost each block a fixed time, which a 32M-element C paid over 131k blocks
// (tens of microseconds, measured on an H200).
constexpr int64_t kElementwiseThreads = 256;
constexpr int64_t kElementwiseMaxBlocks = 1024;

}  // namespace

Emitter::Emitter() {
  scopes_.emplace_back();
}

Emitter::Scope::Scope(Scope&& other) noexcept
    : e_(std::exchange(other.e_, nullptr)), closer_(std::move(other.closer_)) {}

Emitter::Scope::~Scope() {
  if (e_ != nullptr) e_->close_scope(closer_);
}

void Emitter::line(std::string_view text) {
  body_ << std::string(static_cast<size_t>(2 * depth()), ' ') << text << '\n';
}

void Emitter::blank() {
  body_ << '\n';
}

void Emitter::comment(std::string_view text) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const std::string_view piece =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    std::string l = "//";
    if (!piece.empty()) l.append(" ").append(piece);
    line(l);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

Emitter::Scope Emitter::block(std::string_view head, std::string_view tail) {
  std::string opener(head);
  opener.append(" {");
  line(opener);
  open_scope();
  std::string closer = "}";
  closer.append(tail);
  return Scope(this, std::move(closer));
}

Emitter::Scope Emitter::block() {
  line("{");
  open_scope();
  return Scope(this, "}");
}

void Emitter::decl(std::string_view text) {
  decls_ << text << '\n';
}

bool Emitter::used(const std::string& name) const {
  for (const auto& s : scopes_)
    if (s.count(name) != 0) return true;
  return false;
}

std::string Emitter::fresh(std::string_view base) {
  SG_ASSERT(!base.empty(), "fresh() needs a non-empty base name");
  std::string name(base);
  for (int i = 1; used(name); ++i) name = std::string(base) + "_" + std::to_string(i);
  scopes_.back().insert(name);
  return name;
}

void Emitter::reserve(std::string_view name) {
  scopes_.front().insert(std::string(name));
}

void Emitter::open_scope() {
  scopes_.emplace_back();
}

void Emitter::close_scope(const std::string& closer) {
  SG_ASSERT(scopes_.size() > 1, "scope closed twice");
  scopes_.pop_back();
  line(closer);
}

void Emitter::elementwise_kernel(std::string_view comment, std::string_view name,
                                 std::string_view decls, int64_t count, std::string_view stmt) {
  decl(comment);
  decl(fmt::format("extern \"C\" __global__ void {}({}) {{", name, decls));
  // The next kernel of the sequence may start now; C is touched only after the one before ends.
  decl("  " + call(tmpl::launch_dependents).text + ";");
  decl("  " + call(tmpl::grid_dependency_wait).text + ";");
  decl("  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;");
  decl(fmt::format(
      "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; "
      "i < {}LL; i += stride) {};",
      count, stmt));
  decl("}");
}

LaunchShape elementwise_launch(int64_t count) {
  LaunchShape shape;
  shape.grid_x = std::clamp<int64_t>((count + kElementwiseThreads - 1) / kElementwiseThreads, 1,
                                     kElementwiseMaxBlocks);
  shape.grid_y = 1;
  shape.block_threads = kElementwiseThreads;
  shape.programmatic_wait = true;  // waits before its first access (elementwise_kernel)
  return shape;
}

std::string Emitter::source() const {
  std::string s;
  for (const auto& h : headers_) s += "#include \"" + h + "\"\n";
  if (!headers_.empty()) s += '\n';
  s += decls_.str();
  if (!decls_.str().empty()) s += '\n';
  s += body_.str();
  return s;
}

std::string Emitter::kernel_source(const std::string& head) const {
  std::string src;
  for (const auto& h : headers_) src += "#include \"" + h + "\"\n";
  if (headers_.count("sg_dtype.cuh") == 0) src += "#include \"sg_dtype.cuh\"\n";
  src.push_back('\n');  // appends, not operator+: GCC 12 warns falsely (-Wrestrict) on the chain
  src.append(decls_.str()).push_back('\n');
  src.append(head);
  const std::string b = body_.str();
  size_t start = 0;
  while (start < b.size()) {
    const size_t end = b.find('\n', start);
    const std::string l = b.substr(start, end - start);
    if (!l.empty()) src.append("  ").append(l);
    src.push_back('\n');
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return src + "}\n";
}

std::map<std::string, std::string> Emitter::header_sources() const {
  // The used headers and, transitively, the template headers they #include (NVRTC sees only
  // the sources it is given).
  std::set<std::string> want(headers_.begin(), headers_.end());
  want.insert("sg_dtype.cuh");
  std::map<std::string, std::string> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& h : embedded_template_headers()) {
      const std::string name(h.name);
      if (want.count(name) == 0 || out.count(name) != 0) continue;
      out.emplace(name, std::string(h.content));
      grew = true;
      const std::string_view text = h.content;
      for (size_t at = text.find("#include \""); at != std::string_view::npos;
           at = text.find("#include \"", at + 1)) {
        const size_t b = at + 10, e = text.find('"', b);
        if (e != std::string_view::npos) want.insert(std::string(text.substr(b, e - b)));
      }
    }
  }
  return out;
}

}  // namespace sparsegen::codegen
