// The kernel database: an SQLite file of compiled kernels and tuning decisions, so that a matrix
// is tuned once and its kernel reused by every later process.
//
// The runtime does not know the IR: every record is opaque text or bytes (schedule text, CUDA
// source, cubin/PTX image, times). compiler/tune.h decides what goes in.
//
//   KernelDb db(default_db_path());                       // creates / migrates / validates
//   std::string key = kernel_key(parts);                  // SHA-256 over every key part
//   if (auto t = db.tuning(tuning_key(parts))) { ... db.kernel(t->best_key) ... }
//   db.put({record}, tuning);                             // one BEGIN IMMEDIATE transaction
//
// Keys. kernel_key = SHA-256 over (operation, matrix structure fingerprint, N, dtypes, schedule,
// device name + compute capability, NVRTC version, generator version), each part length-prefixed
// so that no two part lists hash the same text. tuning_key = the same without the schedule: it
// names "the best kernel for this (matrix structure, problem, device, toolchain)".
//
// File format. application_id = kApplicationId ('SGKD'), user_version = schema version; WAL
// journal (readers never block the writer); busy_timeout 30 s; writes in BEGIN IMMEDIATE (the
// write lock is taken up front, so two writers never deadlock upgrading read locks). Schema
// version 0 is an empty SQLite file (or a zero-length one); migrate() brings any older version to
// kSchemaVersion inside one transaction. A file that is not SQLite, an SQLite file of another
// application, a file of a newer schema, or a damaged one throws KernelDbError naming the file —
// never a crash, and a foreign file is never modified.
//
// Location: $SPARSEGEN_CACHE_DIR, else $XDG_CACHE_HOME/sparsegen, else ~/.cache/sparsegen; the
// file is kernels.db inside it (the CLI's --cache-dir overrides both).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace sparsegen::kdb {

// Any failure of the database: message starts with the file's path.
class KernelDbError : public std::runtime_error {
 public:
  KernelDbError(const std::string& path, const std::string& what)
      : std::runtime_error(path + ": " + what), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline constexpr int kSchemaVersion = 1;
inline constexpr std::int32_t kApplicationId = 0x53474b44;  // "SGKD"

// What identifies a kernel. Every field is opaque text to the runtime.
struct KeyParts {
  std::string operation;          // "spmm b=row c=row"
  std::string matrix;             // structure fingerprint text (compiler/fingerprint.h)
  std::int64_t n = 0;             // dense columns
  std::string dtypes;             // "a=fp16 b=fp16 c=fp16 acc=fp32"
  std::string schedule;           // schedule text (ignored by tuning_key)
  std::string device;             // "NVIDIA H100 80GB HBM3 sm_90" or "offline sm_90"
  std::string nvrtc_version;      // "13.0"
  std::string generator_version;  // sparsegen's code generator version
};

std::string kernel_key(const KeyParts& k);
std::string tuning_key(const KeyParts& k);
// One line per part ("operation: spmm b=row c=row"), stored with the record for `cache show`.
std::string describe(const KeyParts& k, bool with_schedule = true);

struct KernelRecord {
  std::string key;         // kernel_key
  std::string tuning_key;  // tuning_key of the same parts
  std::string key_text;    // describe()
  std::string schedule;
  std::string source;  // CUDA source
  std::string arch;    // "sm_90" (cubin) or "compute_90" (PTX)
  std::vector<char> image;
  bool image_is_cubin = false;
  double compile_ms = 0;
  std::optional<double> predicted_ms;  // cost model
  std::optional<double> measured_ms;   // median of times_ms
  std::vector<double> times_ms;        // every timed run (L2 flushed)
  std::int64_t created_at = 0;         // Unix seconds (set by put() when 0)
};

struct TuningRecord {
  std::string tuning_key;
  std::string key_text;  // describe(parts, false)
  std::string best_key;  // kernel_key of the chosen kernel (present in the kernels table)
  int top_k = 0;         // candidates measured on the GPU (0: model only)
  int candidates = 0;    // schedules enumerated
  std::string ranking;   // how candidates were ordered ("cost model ...", "enumeration order")
  double search_ms = 0;
  std::int64_t created_at = 0;
};

// A row of `list()`: the record without source and image.
struct KernelSummary {
  std::string key;
  std::string tuning_key;
  std::string schedule;
  std::string arch;
  std::int64_t image_bytes = 0;
  std::optional<double> predicted_ms;
  std::optional<double> measured_ms;
  std::int64_t created_at = 0;
  bool is_best = false;  // chosen by a tuning
};

// $SPARSEGEN_CACHE_DIR, $XDG_CACHE_HOME/sparsegen, ~/.cache/sparsegen (in that order).
std::filesystem::path default_cache_dir();
// <dir>/kernels.db; `dir` empty means default_cache_dir().
std::filesystem::path db_path(const std::string& dir = "");

class KernelDb {
 public:
  // Opens (creating the folder and file when missing, unless create == false: then a missing
  // file throws). Validates and migrates as described above.
  explicit KernelDb(std::filesystem::path file, bool create = true);
  ~KernelDb();
  KernelDb(const KernelDb&) = delete;
  KernelDb& operator=(const KernelDb&) = delete;

  // Inserts (or replaces, by key) the kernels and, when given, the tuning, in one transaction.
  // Preconditions: tuning->best_key is among `kernels` or already stored.
  void put(const std::vector<KernelRecord>& kernels,
           const std::optional<TuningRecord>& tuning = std::nullopt);

  // By full key, or by a unique prefix of at least 6 hex characters (for `cache show`); nullopt
  // when none. An ambiguous prefix throws.
  std::optional<KernelRecord> kernel(const std::string& key_or_prefix);
  std::optional<TuningRecord> tuning(const std::string& tuning_key);

  std::vector<KernelSummary> list();  // newest first
  std::vector<TuningRecord> tunings();
  std::int64_t kernel_count();
  // Deletes every record; returns how many kernels were removed.
  std::int64_t clear();
  // PRAGMA integrity_check's answer ("ok" when sound).
  std::string integrity_check();
  // A consistent copy of the whole database (VACUUM INTO); `out` must not exist.
  void export_copy(const std::filesystem::path& out);

  // What import_from did.
  struct ImportStats {
    std::int64_t kernels_added = 0;    // keys this database lacked
    std::int64_t kernels_updated = 0;  // present here without a measurement, measured there
    std::int64_t kernels_kept = 0;     // present here already (same key: the same kernel)
    std::int64_t tunings_added = 0;
    std::int64_t tunings_replaced = 0;  // the other measured more candidates (larger top_k)
    std::int64_t tunings_kept = 0;      // ours measured as many or more
  };
  // Merges another kernel database (e.g. one tuned on another host, or `cache export`'s copy)
  // into this one, in one BEGIN IMMEDIATE transaction: kernels it has and this one lacks are
  // added; a tuning is added when absent here and replaces ours only when it measured more
  // candidates (a kernel key names one kernel exactly, so equal keys are the same kernel). The
  // other file is only read. Throws KernelDbError naming the other file when it is missing, not
  // a sparsegen kernel database, of another schema version, or this very database.
  ImportStats import_from(const std::filesystem::path& other);

  const std::filesystem::path& path() const { return path_; }
  int schema_version();

 private:
  void open_and_validate(bool create);
  void migrate(int from);
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace sparsegen::kdb
