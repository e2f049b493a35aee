// Libraries loaded at run time (dlopen) so that sparsegen links none of them and runs where they
// are missing: the first of a list of paths that opens and resolves its entry points, chosen again
// when the environment variable naming an explicit path changes. Used by runtime/cublaslt.cpp and
// runtime/cusparselt.cpp for their API tables.
//
//   struct Api { std::string path; decltype(&fooInit) Init = nullptr; ... };
//   const Api* open_api(const std::string& path, std::string* why);  // dynlib::open + resolve
//   const Api* load(std::string* why) {
//     static dynlib::Loader<Api> loader("libfoo", "SPARSEGEN_FOO", default_paths, open_api);
//     return loader.get(why);
//   }
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sparsegen::dynlib {

// dlopen(path, RTLD_NOW | RTLD_LOCAL); null with dlerror()'s reason in *why. Never closed: tables
// and plans keep pointers into the library.
void* open(const std::string& path, std::string* why);

// Resolves `name` into `fn`; a missing symbol is appended to `missing` (fn stays null).
template <class F>
void resolve(void* lib, const char* name, F& fn, std::vector<std::string>& missing) {
  void* sym = dlsym(lib, name);
  if (sym == nullptr) missing.emplace_back(name);
  fn = reinterpret_cast<F>(sym);
}

// "missing symbols: a, b" for a non-empty `missing`.
std::string missing_text(const std::vector<std::string>& missing);

// The first table `open_table` makes from $env (when set and non-empty) or else from
// `default_paths()`, in order; thread-safe, tried once per value of $env. Tables are never freed.
template <class Api>
class Loader {
 public:
  using OpenTable = const Api* (*)(const std::string& path, std::string* why);
  Loader(std::string label, const char* env, std::function<std::vector<std::string>()> defaults,
         OpenTable open_table)
      : label_(std::move(label)), env_(env), defaults_(std::move(defaults)), open_(open_table) {}

  // The table, or null with "<label> not loaded (<how>); tried: <path>: <reason>; ..." in *why.
  const Api* get(std::string* why) {
    std::lock_guard lock(mu_);
    const char* env_c = std::getenv(env_);
    std::optional<std::string> env;
    if (env_c != nullptr && *env_c != 0) env = env_c;
    if (!attempted_ || env != env_value_) {
      attempted_ = true;
      env_value_ = env;
      api_ = nullptr;
      const std::vector<std::string> paths = env ? std::vector<std::string>{*env} : defaults_();
      std::vector<std::string> tried;
      for (const std::string& p : paths) {
        std::string reason;
        if (const Api* api = open_(p, &reason)) {
          api_ = api;
          break;
        }
        tried.push_back(p + ": " + reason);
      }
      why_ = api_ != nullptr ? "" : failure_text(env.has_value(), tried);
    }
    if (api_ == nullptr && why != nullptr) *why = why_;
    return api_;
  }

 private:
  std::string failure_text(bool from_env, const std::vector<std::string>& tried) const {
    std::string out = label_ + " not loaded (" +
                      (from_env ? "from $" + std::string(env_) : std::string("default search")) +
                      "); tried: ";
    for (size_t i = 0; i < tried.size(); ++i) out += (i > 0 ? "; " : "") + tried[i];
    return out;
  }

  std::string label_;
  const char* env_;
  std::function<std::vector<std::string>()> defaults_;
  OpenTable open_;
  std::mutex mu_;
  bool attempted_ = false;
  std::optional<std::string> env_value_;  // $env at the last attempt
  const Api* api_ = nullptr;
  std::string why_;
};

}  // namespace sparsegen::dynlib
