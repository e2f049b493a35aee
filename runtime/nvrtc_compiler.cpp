#include "runtime/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#ifndef SPARSEGEN_CUDA_INCLUDE_DIRS
#define SPARSEGEN_CUDA_INCLUDE_DIRS "/usr/local/cuda/include"
#endif

namespace sparsegen::nvrtc {
namespace {

[[noreturn]] void throw_nvrtc(nvrtcResult r, const char* call, const std::string& context,
                              std::string log = {}) {
  std::string name = nvrtcGetErrorString(r);
  std::string msg = fmt::format("{} failed: {}", call, name);
  if (!context.empty()) msg += ": " + context;
  throw NvrtcError(msg, call, static_cast<int>(r), std::move(name), std::move(log));
}

void check(nvrtcResult r, const char* call, const std::string& context = {}) {
  if (r != NVRTC_SUCCESS) throw_nvrtc(r, call, context);
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

// "sm_90" -> {true, 90}, "compute_90a" -> {false, 90}. Throws for anything else.
bool parse_arch(const std::string& arch) {
  auto digits_ok = [](std::string_view rest) {
    std::size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    if (n < 2 || n > 3) return false;
    rest.remove_prefix(n);
    return rest.empty() || rest == "a" || rest == "f";
  };
  std::string_view a = arch;
  if (a.substr(0, 3) == "sm_" && digits_ok(a.substr(3))) return true;
  if (a.substr(0, 8) == "compute_" && digits_ok(a.substr(8))) return false;
  throw NvrtcError(fmt::format("invalid NVRTC target architecture '{}' (expected sm_XY[a] for a "
                               "cubin or compute_XY[a] for PTX)",
                               arch),
                   "nvrtcCompileProgram", static_cast<int>(NVRTC_ERROR_INVALID_OPTION),
                   "NVRTC_ERROR_INVALID_OPTION", "");
}

std::vector<std::string> split_paths(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The first "<program>(LINE): error" in the log, or 0.
int first_error_line(const std::string& log, const std::string& program) {
  const std::string key = program + "(";
  for (std::size_t pos = log.find(key); pos != std::string::npos; pos = log.find(key, pos + 1)) {
    std::size_t p = pos + key.size();
    int line = 0;
    while (p < log.size() && log[p] >= '0' && log[p] <= '9') {
      line = line * 10 + (log[p] - '0');
      ++p;
      if (line > 100000000) break;
    }
    if (p < log.size() && log[p] == ')' && log.compare(p, 8, "): error") == 0) return line;
  }
  return 0;
}

// Numbered source lines around `line` (or the first lines when line is 0), for error messages.
std::string source_excerpt(std::string_view source, int line) {
  int from = line > 0 ? std::max(1, line - 4) : 1;
  int to = line > 0 ? line + 4 : 20;
  std::string out;
  int n = 1;
  std::size_t start = 0;
  while (start < source.size() && n <= to) {
    std::size_t end = source.find('\n', start);
    if (end == std::string_view::npos) end = source.size();
    if (n >= from) {
      out +=
          fmt::format("{}{:5} | {}\n", n == line ? ">" : " ", n, source.substr(start, end - start));
    }
    if (end == source.size()) break;
    start = end + 1;
    ++n;
  }
  return out;
}

}  // namespace

std::vector<std::string> cuda_include_dirs() {
  if (const char* env = std::getenv("SPARSEGEN_CUDA_INCLUDE"); env && *env) {
    return split_paths(env);
  }
  return split_paths(SPARSEGEN_CUDA_INCLUDE_DIRS);
}

Version version() {
  Version v;
  check(nvrtcVersion(&v.major, &v.minor), "nvrtcVersion");
  return v;
}

std::string version_string() {
  Version v = version();
  return fmt::format("{}.{}", v.major, v.minor);
}

std::vector<int> supported_archs() {
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

namespace {
std::string arch_name(const char* prefix, int major, int minor, bool arch_specific) {
  if (major < 1 || major > 99 || minor < 0 || minor > 9) {
    throw NvrtcError(fmt::format("invalid compute capability {}.{}", major, minor), "sm_arch_for",
                     static_cast<int>(NVRTC_ERROR_INVALID_OPTION), "NVRTC_ERROR_INVALID_OPTION",
                     "");
  }
  return fmt::format("{}{}{}{}", prefix, major, minor, arch_specific ? "a" : "");
}
}  // namespace

std::string sm_arch_for(int major, int minor, bool arch_specific) {
  return arch_name("sm_", major, minor, arch_specific);
}

std::string compute_arch_for(int major, int minor, bool arch_specific) {
  return arch_name("compute_", major, minor, arch_specific);
}

std::string arch_specific_variant(const std::string& arch) {
  parse_arch(arch);  // throws for a malformed name
  const char last = arch.back();
  if (last == 'a') return arch;
  if (last == 'f') return arch.substr(0, arch.size() - 1) + "a";
  return arch + "a";
}

CompileResult compile(std::string_view source, const CompileOptions& opt) {
  CompileResult result;
  result.arch = opt.arch;
  result.is_cubin = parse_arch(opt.arch);

  // Header names and contents must outlive nvrtcCreateProgram only; keep them in vectors.
  std::vector<const char*> header_names;
  std::vector<const char*> header_contents;
  for (const auto& [name, content] : opt.headers) {
    header_names.push_back(name.c_str());
    header_contents.push_back(content.c_str());
  }
  const std::string src(source);  // NVRTC wants a NUL-terminated string
  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram(nullptr));
  check(nvrtcCreateProgram(prog.get(), src.c_str(), opt.program_name.c_str(),
                           static_cast<int>(header_names.size()), header_contents.data(),
                           header_names.data()),
        "nvrtcCreateProgram", opt.program_name);
  for (const std::string& expr : opt.name_expressions) {
    check(nvrtcAddNameExpression(*prog, expr.c_str()), "nvrtcAddNameExpression", expr);
  }

  std::vector<std::string>& o = result.options;
  o.push_back("--gpu-architecture=" + opt.arch);
  o.push_back("-std=" + opt.language_standard);
  if (opt.fast_math) o.push_back("--use_fast_math");
  if (opt.line_info) o.push_back("-lineinfo");
  if (opt.device_debug) o.push_back("-G");
  for (const std::string& d : opt.defines) o.push_back("-D" + d);
  for (const std::string& d : opt.include_dirs) o.push_back("-I" + d);
  if (opt.cuda_include) {
    for (const std::string& d : cuda_include_dirs()) o.push_back("-I" + d);
  }
  for (const std::string& e : opt.extra_options) o.push_back(e);
  std::vector<const char*> argv;
  for (const std::string& s : o) argv.push_back(s.c_str());

  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult compiled = nvrtcCompileProgram(*prog, static_cast<int>(argv.size()), argv.data());
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::size_t log_size = 0;
  check(nvrtcGetProgramLogSize(*prog, &log_size), "nvrtcGetProgramLogSize");
  std::string log(log_size, '\0');
  if (log_size > 0) check(nvrtcGetProgramLog(*prog, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();

  if (compiled != NVRTC_SUCCESS) {
    std::string options;
    for (const std::string& s : o) options += " " + s;
    int line = first_error_line(log, opt.program_name);
    std::string msg =
        fmt::format("NVRTC could not compile {} for {} ({}).\noptions:{}\nlog:\n{}\nsource {}:\n{}",
                    opt.program_name, opt.arch, nvrtcGetErrorString(compiled), options, log,
                    line > 0 ? fmt::format("around line {}", line) : std::string("(first lines)"),
                    source_excerpt(src, line));
    throw NvrtcError(msg, "nvrtcCompileProgram", static_cast<int>(compiled),
                     nvrtcGetErrorString(compiled), log);
  }
  result.log = std::move(log);

  for (const std::string& expr : opt.name_expressions) {
    const char* lowered = nullptr;
    check(nvrtcGetLoweredName(*prog, expr.c_str(), &lowered), "nvrtcGetLoweredName", expr);
    result.lowered_names[expr] = lowered;
  }

  std::size_t size = 0;
  if (result.is_cubin) {
    check(nvrtcGetCUBINSize(*prog, &size), "nvrtcGetCUBINSize");
    result.image.resize(size);
    check(nvrtcGetCUBIN(*prog, result.image.data()), "nvrtcGetCUBIN");
  } else {
    check(nvrtcGetPTXSize(*prog, &size), "nvrtcGetPTXSize");  // includes the NUL
    result.image.resize(size);
    check(nvrtcGetPTX(*prog, result.image.data()), "nvrtcGetPTX");
  }
  return result;
}

}  // namespace sparsegen::nvrtc
