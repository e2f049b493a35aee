// Typed descriptions of the device helpers in templates/*.cuh, and the checked call syntax the
// emitters use to call them.
//
// The build-time template indexer (tools/template_indexer) parses templates/*.cuh with Clang and
// generates <build>/generated/templates/template_index.h: one descriptor type per helper whose
// parameter kinds come from the real signature. The emitters call helpers only through
// `call(tmpl::<helper>, targs(...), args...)`; when a template's signature changes, the generated
// descriptor changes and every emitted call that no longer matches fails to compile here, with a
// static_assert naming the mismatch (the compiler's note shows the helper's descriptor type).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace sparsegen::tmpl {

// Kind of a helper parameter or return value. "T" means a pointer to a template type parameter
// (the element dtype the emitter substitutes).
enum class Kind {
  kVoid,
  kBool,
  kI32,
  kU32,
  kF32,
  kPtrF32,
  kConstPtrF32,
  kPtrI32,
  kConstPtrI32,
  kPtrU32,
  kConstPtrU32,
  kPtrT,
  kConstPtrT,
  kConstPtrTensorMap,  // const sg::TensorMap*: the address of a __grid_constant__ tensor map
};

// Kind of a template parameter.
enum class TKind { kType, kInt };

template <Kind... Ks>
struct KindList {
  static constexpr std::size_t size = sizeof...(Ks);
};
template <TKind... Ks>
struct TKindList {
  static constexpr std::size_t size = sizeof...(Ks);
};

// A C++ expression of a known kind, as emitted text.
template <Kind K>
struct Expr {
  std::string text;
  static constexpr Kind kind = K;
};

// Template arguments: a type (e.g. "__half") or an integer constant.
struct TypeArg {
  std::string text;
  static constexpr TKind kind = TKind::kType;
};
struct IntArg {
  long long value;
  static constexpr TKind kind = TKind::kInt;
};

template <class... Ts>
struct TArgs {
  std::tuple<Ts...> args;
};
template <class... Ts>
TArgs<Ts...> targs(Ts... ts) {
  return TArgs<Ts...>{std::tuple<Ts...>(std::move(ts)...)};
}

// Expression constructors, one per kind the emitters use.
inline Expr<Kind::kF32> f32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kI32> i32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kU32> u32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kBool> boolean(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kPtrF32> ptr_f32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kConstPtrF32> cptr_f32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kPtrI32> ptr_i32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kConstPtrI32> cptr_i32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kPtrU32> ptr_u32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kConstPtrU32> cptr_u32(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kPtrT> ptr_t(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kConstPtrT> cptr_t(std::string s) {
  return {std::move(s)};
}
inline Expr<Kind::kConstPtrTensorMap> cptr_tmap(std::string s) {
  return {std::move(s)};
}

namespace detail {

// Pack lengths are compared first: a fold over packs of different lengths is a hard error.
template <bool SameLength, class List, class... Args>
struct ArgsMatchImpl : std::false_type {};
template <Kind... Ks, Kind... As>
struct ArgsMatchImpl<true, KindList<Ks...>, Expr<As>...> : std::bool_constant<((Ks == As) && ...)> {
};
template <class List, class... Args>
struct ArgsMatch : std::false_type {};
template <Kind... Ks, class... Args>
struct ArgsMatch<KindList<Ks...>, Args...>
    : ArgsMatchImpl<sizeof...(Ks) == sizeof...(Args), KindList<Ks...>, Args...> {};

template <bool SameLength, class List, class... Ts>
struct TArgsMatchImpl : std::false_type {};
template <TKind... Ks, class... Ts>
struct TArgsMatchImpl<true, TKindList<Ks...>, Ts...>
    : std::bool_constant<((Ks == Ts::kind) && ...)> {};
template <class List, class... Ts>
struct TArgsMatch : std::false_type {};
template <TKind... Ks, class... Ts>
struct TArgsMatch<TKindList<Ks...>, Ts...>
    : TArgsMatchImpl<sizeof...(Ks) == sizeof...(Ts), TKindList<Ks...>, Ts...> {};

inline std::string targ_text(const TypeArg& a) {
  return a.text;
}
inline std::string targ_text(const IntArg& a) {
  return std::to_string(a.value);
}

}  // namespace detail

// True when a call with these template arguments and arguments matches H's signature (the
// condition call() asserts; exposed so tests can check that a wrong call is rejected).
template <class H, class TA, class... Args>
inline constexpr bool call_matches = false;
template <class H, class... Ts, class... Args>
inline constexpr bool call_matches<H, TArgs<Ts...>, Args...> =
    detail::TArgsMatch<typename H::TemplateParams, Ts...>::value&&
        detail::ArgsMatch<typename H::Params, Args...>::value;

// Renders a call to helper H, checked against H's generated signature at compile time.
template <class H, class... Ts, class... Args>
Expr<H::kReturn> call(const H& /*helper*/, const TArgs<Ts...>& t, const Args&... args) {
  static_assert(sizeof...(Ts) == H::TemplateParams::size,
                "emitted call: template argument count does not match the helper's template "
                "(see the descriptor in generated/templates/template_index.h)");
  static_assert(detail::TArgsMatch<typename H::TemplateParams, Ts...>::value,
                "emitted call: a template argument has the wrong kind (type vs integer)");
  static_assert(sizeof...(Args) == H::Params::size,
                "emitted call: argument count does not match the helper's signature "
                "(see the descriptor in generated/templates/template_index.h)");
  static_assert(detail::ArgsMatch<typename H::Params, Args...>::value,
                "emitted call: an argument kind does not match the helper's parameter type");
  std::string s(H::kQualifiedName);
  if constexpr (sizeof...(Ts) > 0) {
    s += '<';
    std::apply(
        [&s](const auto&... a) {
          bool first = true;
          ((s += (first ? "" : ", ") + detail::targ_text(a), first = false), ...);
        },
        t.args);
    s += '>';
  }
  s += '(';
  bool first = true;
  ((s += (first ? "" : ", ") + args.text, first = false), ...);
  s += ')';
  return Expr<H::kReturn>{std::move(s)};
}

// Call of a helper without template parameters.
template <class H, class... Args>
Expr<H::kReturn> call(const H& h, const Args&... args) {
  return call(h, TArgs<>{}, args...);
}

}  // namespace sparsegen::tmpl
