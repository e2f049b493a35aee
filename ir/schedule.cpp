#include "ir/schedule.h"

#include <fmt/format.h>

#include <cstdlib>

#include "ir/diagnostics.h"
#include "ir/family.h"
#include "ir/spec_fields.h"

namespace sparsegen {

namespace {

constexpr std::string_view kLevelNames[] = {"block", "warp", "thread"};
constexpr std::string_view kSplitNames[] = {"row", "rows", "nnz"};
constexpr std::string_view kReduceNames[] = {"none", "total", "bitmap", "segment"};
constexpr std::string_view kOutputNames[] = {"store", "atomic"};

}  // namespace

std::string_view to_string(Level l) {
  return kLevelNames[static_cast<int>(l)];
}
std::optional<Level> parse_level(std::string_view s) {
  return spec_fields::lookup<Level>(kLevelNames, s);
}
std::string_view to_string(WorkSplit s) {
  return kSplitNames[static_cast<int>(s)];
}
std::optional<WorkSplit> parse_work_split(std::string_view s) {
  return spec_fields::lookup<WorkSplit>(kSplitNames, s);
}
std::string_view to_string(ReductionKind r) {
  return kReduceNames[static_cast<int>(r)];
}
std::optional<ReductionKind> parse_reduction(std::string_view s) {
  return spec_fields::lookup<ReductionKind>(kReduceNames, s);
}
std::string reduction_alternatives() {
  return spec_fields::alternatives(kReduceNames);
}
std::string_view to_string(OutputMode m) {
  return kOutputNames[static_cast<int>(m)];
}

std::string to_string(const LevelSplit& s) {
  if (s.kind == WorkSplit::Row) return "row";
  return fmt::format("{}:{}", to_string(s.kind), s.amount);
}

std::vector<std::string> validate(const Schedule& s) {
  return s.family().validate(s);
}

std::vector<std::string> validate(const Problem& p, const Schedule& s) {
  std::vector<std::string> why = validate(s);
  if (!why.empty()) return why;
  return s.family().validate(p, s);
}

Schedule::Schedule(std::shared_ptr<const NodeBase> node, std::string_view family)
    : node_(std::move(node)), family_(find_ir_family(family)) {
  SG_ASSERT(family_ != nullptr, fmt::format("schedule family '{}' is not registered", family));
  std::vector<std::string> why = family_->validate(*this);
  if (!why.empty()) {
    std::string msg = "illegal schedule " + to_string(*this) + ":";
    for (const auto& w : why) msg += "\n  " + w;
    throw UserError(msg);
  }
}

const IrFamily& Schedule::family() const {
  SG_ASSERT(family_ != nullptr, "an empty schedule has no family");
  return *family_;
}

std::string_view Schedule::family_name() const {
  return family_ != nullptr ? family_->name() : std::string_view("(none)");
}

bool Schedule::operator==(const Schedule& o) const {
  if (node_ == nullptr || o.node_ == nullptr) return node_ == o.node_;
  return node_->equals(*o.node_);
}

void Schedule::bad_access(std::string_view wanted) const {
  SG_ASSERT(false,
            fmt::format("schedule of family '{}' read as a '{}' schedule", family_name(), wanted));
  std::abort();
}

std::string to_string(const Schedule& s) {
  return s.family().spec(s);
}

std::string print_schedule(const Schedule& s) {
  return s.family().print(s);
}

Schedule parse_schedule(std::string_view spec) {
  std::vector<std::string_view> parts;
  for (size_t pos = 0;;) {
    size_t semi = spec.find(';', pos);
    parts.push_back(spec.substr(pos, semi == std::string_view::npos ? semi : semi - pos));
    if (semi == std::string_view::npos) break;
    pos = semi + 1;
  }
  const IrFamily* family = find_ir_family(parts[0]);
  if (family == nullptr) spec_fields::error("family", ir_family_names(), parts[0]);
  return family->parse(spec, parts);
}

}  // namespace sparsegen
