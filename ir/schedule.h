// Schedule: HOW a Problem is computed. One value type for every kernel family: a schedule holds
// one family's body (a small struct with value semantics: GeneralSchedule, MackoSchedule, ...)
// behind a type-erased handle, and knows the family (ir/family.h) that prints, parses, validates,
// verifies, enumerates, packs and interprets it. Shared code goes through schedule.family() and
// never names a family; a family's own code reads its body with as<T>() / get_if<T>().
//
//   Schedule s(MackoSchedule{});                 // validating constructor (throws UserError)
//   std::string spec = to_string(s);             // "macko;delta=4;wpr=1;..."
//   Schedule t = parse_schedule(spec);           // t == s
//   if (const auto* m = s.get_if<MackoSchedule>()) use(m->delta_bits);
//
// A body type T declares `static constexpr std::string_view kFamily = "name";`, the name its
// IrFamily registers under (ir/families.def). The shared vocabulary below (levels, work splits,
// reductions, output modes) is the IR's: families use what applies to them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "ir/problem.h"

namespace sparsegen {

class IrFamily;

inline constexpr int kWarpSize = 32;

// Every name table below is the single source for the printer, the CLI and the cache key.
enum class Level { Block, Warp, Thread };
std::string_view to_string(Level l);  // "block", "warp", "thread"
std::optional<Level> parse_level(std::string_view s);

enum class WorkSplit { Row, Rows, Nnz };
std::string_view to_string(WorkSplit s);  // "row", "rows", "nnz"
std::optional<WorkSplit> parse_work_split(std::string_view s);

enum class ReductionKind { None, Total, Bitmap, Segment };
std::string_view to_string(ReductionKind r);  // "none", "total", "bitmap", "segment"
std::optional<ReductionKind> parse_reduction(std::string_view s);
std::string reduction_alternatives();  // "none, total, bitmap or segment"

enum class OutputMode { Store, Atomic };
std::string_view to_string(OutputMode m);  // "store", "atomic"

// How one level cuts its parent's task. amount: 1 for Row, r for Rows, z for Nnz.
struct LevelSplit {
  WorkSplit kind = WorkSplit::Row;
  int64_t amount = 1;

  static LevelSplit row() { return {WorkSplit::Row, 1}; }
  static LevelSplit rows(int64_t r) { return {WorkSplit::Rows, r}; }
  static LevelSplit nnz(int64_t z) { return {WorkSplit::Nnz, z}; }
  bool operator==(const LevelSplit&) const = default;
};
// "row", "rows:4", "nnz:32".
std::string to_string(const LevelSplit& s);

class Schedule {
 public:
  // An empty schedule (no family): only assignable and comparable.
  Schedule() = default;
  // Validating constructor: throws UserError listing every reason the body is illegal.
  template <class Body>
  explicit Schedule(Body body)
      : Schedule(std::make_shared<const Node<Body>>(std::move(body)), Body::kFamily) {}

  bool empty() const { return node_ == nullptr; }
  // The family that owns the body. Precondition: !empty().
  const IrFamily& family() const;
  std::string_view family_name() const;

  // The body when it is a T, else null.
  template <class T>
  const T* get_if() const {
    return node_ != nullptr && node_->type() == typeid(T)
               ? &static_cast<const Node<T>&>(*node_).body
               : nullptr;
  }
  // The body. Precondition (asserted): it is a T.
  template <class T>
  const T& as() const {
    const T* b = get_if<T>();
    if (b == nullptr) bad_access(T::kFamily);
    return *b;
  }

  bool operator==(const Schedule& o) const;

 private:
  struct NodeBase {
    virtual ~NodeBase() = default;
    virtual const std::type_info& type() const = 0;
    virtual bool equals(const NodeBase& o) const = 0;
  };
  template <class T>
  struct Node final : NodeBase {
    T body;
    explicit Node(T b) : body(std::move(b)) {}
    const std::type_info& type() const override { return typeid(T); }
    bool equals(const NodeBase& o) const override {
      return o.type() == typeid(T) && static_cast<const Node&>(o).body == body;
    }
  };
  Schedule(std::shared_ptr<const NodeBase> node, std::string_view family);
  [[noreturn]] void bad_access(std::string_view wanted) const;

  std::shared_ptr<const NodeBase> node_;
  const IrFamily* family_ = nullptr;
};

// Problem-independent legality of the schedule's body (its family's validate). Empty = legal.
std::vector<std::string> validate(const Schedule& s);
// Problem-dependent legality (dense-column tiling against N, dtypes, layouts). Empty = legal.
std::vector<std::string> validate(const Problem& p, const Schedule& s);

// One-line SPEC form: "FAMILY;KEY=VALUE;..." (each family's header documents its fields).
// Stable: used by the CLI (--schedule SPEC), the kernel database key and logs.
// parse_schedule(to_string(s)) == s.
std::string to_string(const Schedule& s);
// Multi-line, stable text form for golden tests and `sparsegen schedules`.
std::string print_schedule(const Schedule& s);
// Parses a SPEC. Fields may come in any order; omitted fields keep the body's defaults. Throws
// UserError naming the bad field ("--schedule: field 'warp': expected row, rows:R or nnz:Z,
// found 'rowz'"), an unknown family, or, for an illegal combination, the validation reasons.
Schedule parse_schedule(std::string_view spec);

}  // namespace sparsegen
