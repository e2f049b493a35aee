// Shared pieces of the schedule SPEC parsers (parse_schedule in ir/schedule.cpp and each family's
// parse_*_fields): the one error format, integers in a range, the walk over KEY=VALUE fields and
// the final legality check, so every family reports bad input the same way:
//   --schedule: field 'warps': expected an integer in 1..32, found 'x'
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen::spec_fields {

// Throws UserError "--schedule: field 'FIELD': expected EXPECTED, found 'FOUND'".
[[noreturn]] void error(std::string_view field, std::string_view expected, std::string_view found);

// v as an integer in lo..hi, else error() naming the field and the range.
int64_t parse_int(std::string_view field, std::string_view v, int64_t lo, int64_t hi);

// Calls on_field(key, value) for every KEY=VALUE part of parts[1..] (parts[0] is the family).
// Empty parts (a trailing ';') are skipped; a part without '=' or a key given twice is an error.
void for_each_field(
    const std::vector<std::string_view>& parts,
    const std::function<void(std::string_view key, std::string_view value)>& on_field);

// A name table's entry for s as the enum E (entry i is E(i)), or nullopt.
template <typename E, size_t N>
std::optional<E> lookup(const std::string_view (&names)[N], std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}
// "a, b or c": a name table's entries for messages.
template <size_t N>
std::string alternatives(const std::string_view (&names)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    out += (i ? (i + 1 == N ? " or " : ", ") : "") + std::string(names[i]);
  return out;
}
// Field `field`'s value v as the enum E of a name table, else error() naming the alternatives.
template <typename E, size_t N>
E parse_enum(std::string_view field, const std::string_view (&names)[N], std::string_view v) {
  const std::optional<E> e = lookup<E>(names, v);
  if (!e) error(field, alternatives(names), v);
  return *e;
}
// Throws UserError "--schedule 'SPEC' is illegal:" with one line per reason, when there are any.
void check_legal(std::string_view spec, const std::vector<std::string>& why);

}  // namespace sparsegen::spec_fields
