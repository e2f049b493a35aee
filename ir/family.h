// The ir/ layer of a schedule family: what every family (general, macko, bitmap_tc, ...) provides
// so that shared code can print, parse, validate, verify, enumerate, pack and interpret its
// schedules without naming it. A family implements IrFamily in its own files and registers it
// with one line in ir/families.def; the other layers have the same shape (codegen/family.h,
// costmodel/family.h, compiler/family.h).
//
//   const IrFamily& f = schedule.family();        // the registered family of a schedule
//   auto why = f.verify(p, schedule, f.format_stats(a, p, schedule), DeviceLimits::sm90());
//   auto packed = f.pack(a, p, schedule);          // the family's own arrays, opaque here
//   f.interpret(p, schedule, *packed, b, c, alpha, beta);
//
// Every hook is required (pure virtual), so a family that misses one does not compile; the
// family conformance suite (tests/conformance/) runs every registered family through all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct EnumerateOptions;

// Family-specific figures behind FormatStats (e.g. MACKO's slot counts per delta width, the
// bitmap tiles' largest tile): the family's verifier reads them back with a downcast.
struct FamilyStats {
  virtual ~FamilyStats() = default;
};

// Family-neutral O(rows)-ish summary of how a schedule stores a matrix, for the verifier, the
// cost model and the pipeline's logs (no arrays built).
struct FormatStats {
  int64_t rows = 0;            // rows the kernel walks (empty rows excluded where it skips them)
  int64_t nnz = 0;             // real nonzeros
  int64_t nnz_padded = 0;      // stored value slots (>= nnz)
  int64_t block_tasks = 0;     // grid.x
  int64_t col_tiles = 0;       // grid.y
  int64_t max_row_length = 0;  // of the original matrix
  std::shared_ptr<const FamilyStats> detail;  // the family's own figures, or null
  double pad_overhead() const { return nnz == 0 ? 0.0 : double(nnz_padded - nnz) / double(nnz); }
};

// A matrix packed into a family's format: its arrays are the family's business; shared code
// needs only the fp32 master values (converted to the problem dtype for the device), the column
// indices a kernel reads as a plain array (empty when the format keeps them elsewhere), the
// statistics and a one-line description for the pipeline log.
struct PackedMatrix {
  virtual ~PackedMatrix() = default;
  virtual const std::vector<float>& master_values() const = 0;
  virtual const std::vector<int32_t>& column_indices() const = 0;
  // Moves the column indices out (the pack's owner, once it needs them no more).
  virtual std::vector<int32_t> take_column_indices() = 0;
  // Moves the master values out (an fp32 build adopting them as its device values, once its
  // emit has run); empty where the family keeps them (the build then converts a copy).
  virtual std::vector<float> take_master_values() { return {}; }
  virtual FormatStats stats() const = 0;
  virtual std::string describe() const = 0;
};

// The family's format type T wrapped as a PackedMatrix (families implement the hooks with it).
template <class T>
struct Packed : PackedMatrix {
  T format;
  explicit Packed(T f) : format(std::move(f)) {}
};

// What a family's format makes of a matrix, for `sparsegen inspect`: a text line and the same
// figures as named fields (JSON).
struct FormatSummary {
  std::string key;    // JSON key: "macko"
  std::string label;  // text report label: "MACKO (b=4)"
  std::string text;   // "effective density 0.5312 (... bytes, ...)"
  std::vector<std::pair<std::string, std::variant<int64_t, double>>> fields;
};

class IrFamily {
 public:
  virtual ~IrFamily() = default;

  // The SPEC's first field and the family's name in every table ("macko").
  virtual std::string_view name() const = 0;
  // True for a family whose space covers every problem (enumerated even without
  // EnumerateOptions::include_specialised); false for specialised ones.
  virtual bool general_purpose() const = 0;
  // True for a library candidate that computes the problem densely: the yardstick the tuners
  // report their pick against ("the dense FFN 1.93 ms").
  virtual bool dense_baseline() const { return false; }
  // True for a library candidate (a vendor library computes the product, no kernel of ours):
  // the tuner measures it next to the model's ranked candidates instead of ranking it, and says
  // when it won. Every dense baseline is one.
  virtual bool library() const { return dense_baseline(); }

  // One-line SPEC ("macko;delta=4;...") and the multi-line form for golden tests.
  virtual std::string spec(const Schedule& s) const = 0;
  virtual std::string print(const Schedule& s) const = 0;
  // Parses the KEY=VALUE fields after the family name (parts[0] is the name). Throws UserError
  // naming the bad field, or listing the reasons an illegal combination is refused.
  virtual Schedule parse(std::string_view spec,
                         const std::vector<std::string_view>& parts) const = 0;

  // Problem-independent legality of the schedule's body; empty = legal.
  virtual std::vector<std::string> validate(const Schedule& s) const = 0;
  // Problem-dependent legality (dtype, N, layouts); empty = legal.
  virtual std::vector<std::string> validate(const Problem& p, const Schedule& s) const = 0;

  // Every legal schedule of the family for the problem (verified against opt.device when
  // opt.verify), in the family's preferred order; empty when the problem does not fit it.
  virtual std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                          const EnumerateOptions& opt) const = 0;
  // Why the family has no schedule at all for this problem and matrix (the op, the dtype, N, a
  // matrix without the structure it needs, with the first place that breaks it); empty when it
  // may have some (enumerate decides). What `sparsegen schedules` prints for a missing family.
  virtual std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const = 0;

  // Schedules with equal keys pack the matrix identically (share stats and packs); e.g. MACKO's
  // delta width. Compared only within one family. nullopt: the packing depends on the whole
  // schedule, there is nothing to share.
  virtual std::optional<std::string> pack_key(const Schedule& s) const = 0;
  // Schedules with equal stats keys have the same launch-independent FormatStats (restat()
  // derives the rest): the tuner's ranking computes format_stats once per key. Default: the pack
  // key (equal packs have equal stats); a family whose statistics depend on fewer fields than
  // its packing (the general family: the row padding) says so here.
  virtual std::optional<std::string> stats_key(const Schedule& s) const { return pack_key(s); }
  // FormatStats of the schedule's packing, without building arrays where the family can.
  virtual FormatStats format_stats(const CsrMatrix& a, const Problem& p,
                                   const Schedule& s) const = 0;
  // `shared`: format_stats of another schedule with the same pack_key (or of the pack itself):
  // its launch-independent figures are reused, only grid sizes are recomputed.
  virtual FormatStats restat(const FormatStats& shared, const Problem& p,
                             const Schedule& s) const = 0;
  // Hardware limits for the target (threads, registers, shared memory, grid, 32-bit offsets).
  // Reasons, never throws. Precondition: validate(p, s) is empty.
  virtual std::vector<std::string> verify(const Problem& p, const Schedule& s,
                                          const FormatStats& st, const DeviceLimits& dev) const = 0;
  // Per-thread register estimate and static shared memory of the main kernel.
  virtual int registers(const Problem& p, const Schedule& s) const = 0;
  virtual int64_t shared_bytes(const Problem& p, const Schedule& s) const = 0;

  // Packs canonical CSR into the family's format. Throws UserError for a matrix that does not
  // match the problem or the format.
  virtual std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                             const Schedule& s) const = 0;
  // Executes the schedule over the packed format on the host, with the kernel's arithmetic
  // (fp32 products and sums, fp32 alpha·acc + beta·C, one rounding to the dtype):
  // c = alpha·A·b + beta·c, b and c in the problem's layouts.
  virtual void interpret(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                         std::span<const float> b, std::span<float> c, float alpha,
                         float beta) const = 0;
  // The family's format figures for a matrix (any shape, not complex), or nullopt when the
  // family has nothing to say beyond the CSR.
  virtual std::optional<FormatSummary> summarize(const CsrMatrix& a) const = 0;
  // fp32 additions a row's partial results go through after its products are summed (atomic
  // adds of split rows or split K parts, a workspace prologue): part of the error bound's L.
  virtual int64_t output_adds(const Problem& p, const Schedule& s, int64_t row_length) const = 0;
  // The error a library's reduced-precision accumulation may add beyond the fp32 bound, relative
  // to the magnitude of the products (ElementBoundTerms::accumulation_eps). 0 (the default): the
  // sums are fp32.
  virtual double accumulation_error(const Problem&, const Schedule&) const { return 0.0; }
  // A library candidate whose algorithm is searched when its kernel is loaded: the schedule with
  // the choices the load found (the library steps' own words, in step order), so that a tuner
  // stores the choice with the kernel and a later load plans it without searching. nullopt: the
  // schedule names no search (the default).
  virtual std::optional<Schedule> with_library_choices(
      const Schedule&, const std::vector<std::string>& /*choices*/) const {
    return std::nullopt;
  }
};

[[noreturn]] void throw_unregistered(std::string_view family, std::string_view what);
// The entry of a layer's registry (`all`, each with a name()) serving family `name`; throws
// UserError "schedule family 'x' has no <what>" when the layer has none registered.
template <class Layer>
const Layer& registered_for(const std::vector<const Layer*>& all, std::string_view name,
                            std::string_view what) {
  for (const Layer* l : all)
    if (l->name() == name) return *l;
  throw_unregistered(name, what);
}

// The registered families, in registration order (ir/families.def).
const std::vector<const IrFamily*>& ir_families();
// The family named `name`, or null.
const IrFamily* find_ir_family(std::string_view name);
// "general, macko, bitmap_tc or slide": for messages.
std::string ir_family_names();

}  // namespace sparsegen
