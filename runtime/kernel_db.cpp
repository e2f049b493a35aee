#include "runtime/kernel_db.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include "runtime/sha256.h"

namespace sparsegen::kdb {
namespace {

constexpr int kBusyTimeoutMs = 30000;

// Schema steps: kMigrations[v] brings version v to v + 1. Version 0 is an empty file.
const char* const kMigrations[] = {
    // 0 -> 1
    R"sql(
CREATE TABLE kernels(
  key            TEXT PRIMARY KEY NOT NULL,  -- kernel_key (SHA-256 hex)
  tuning_key     TEXT NOT NULL,              -- the same parts without the schedule
  key_text       TEXT NOT NULL,              -- the key parts, one per line
  schedule       TEXT NOT NULL,
  source         TEXT NOT NULL,              -- CUDA source given to NVRTC
  arch           TEXT NOT NULL,              -- sm_XY (cubin) or compute_XY (PTX)
  image          BLOB NOT NULL,
  image_is_cubin INTEGER NOT NULL,
  compile_ms     REAL NOT NULL,
  predicted_ms   REAL,                       -- cost model; NULL when none
  measured_ms    REAL,                       -- median of times_ms; NULL when not measured
  times_ms       TEXT NOT NULL,              -- comma-separated timed runs
  created_at     INTEGER NOT NULL            -- Unix seconds
);
CREATE INDEX kernels_by_tuning ON kernels(tuning_key);
CREATE TABLE tunings(
  tuning_key TEXT PRIMARY KEY NOT NULL,
  key_text   TEXT NOT NULL,
  best_key   TEXT NOT NULL REFERENCES kernels(key),
  top_k      INTEGER NOT NULL,
  candidates INTEGER NOT NULL,
  ranking    TEXT NOT NULL,
  search_ms  REAL NOT NULL,
  created_at INTEGER NOT NULL
);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

std::string hint_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return "; this is not a sparsegen kernel database: remove it or choose another cache "
             "(--cache-dir, SPARSEGEN_CACHE_DIR)";
    case SQLITE_CORRUPT:
      return "; the kernel database is damaged: remove the file (it is only a cache) or choose "
             "another cache (--cache-dir, SPARSEGEN_CACHE_DIR)";
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return "; check the permissions of the file and its folder, or choose another cache "
             "(--cache-dir, SPARSEGEN_CACHE_DIR)";
    default:
      return "";
  }
}

// A prepared statement; every step/bind failure throws KernelDbError naming the file.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path), sql_(sql) {
    const int rc = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr);
    if (rc != SQLITE_OK) fail(rc, "prepare");
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& s) {
    check(sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(st_, i, v));
    return *this;
  }
  Stmt& bind(int i, double v) {
    check(sqlite3_bind_double(st_, i, v));
    return *this;
  }
  Stmt& bind(int i, const std::optional<double>& v) {
    if (v) return bind(i, *v);
    check(sqlite3_bind_null(st_, i));
    return *this;
  }
  Stmt& bind_blob(int i, const std::vector<char>& b) {
    // A zero-length blob must still be non-NULL (the column is NOT NULL).
    check(sqlite3_bind_blob64(st_, i, b.empty() ? "" : b.data(), b.size(), SQLITE_TRANSIENT));
    return *this;
  }
  // True while rows come back.
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(rc, "step");
  }
  void run() {
    while (step()) {
    }
  }
  // Ready for new bindings and another run.
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p == nullptr ? std::string()
                        : std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, c)));
  }
  std::int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  double f64(int c) const { return sqlite3_column_double(st_, c); }
  std::optional<double> opt(int c) const {
    if (sqlite3_column_type(st_, c) == SQLITE_NULL) return std::nullopt;
    return f64(c);
  }
  std::vector<char> blob(int c) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(st_, c));
    const int n = sqlite3_column_bytes(st_, c);
    return p == nullptr ? std::vector<char>() : std::vector<char>(p, p + n);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(rc, "bind");
  }
  [[noreturn]] void fail(int rc, const char* what) {
    throw KernelDbError(path_,
                        fmt::format("SQLite {} failed ({}: {}) for: {}{}", what, sqlite3_errstr(rc),
                                    sqlite3_errmsg(db_), first_line(), hint_for(rc)));
  }
  std::string first_line() const {
    std::string_view s(sql_);
    const size_t b = s.find_first_not_of("\n ");
    if (b == std::string_view::npos) return {};
    s = s.substr(b);
    return std::string(s.substr(0, s.find('\n')));
  }
  sqlite3* db_;
  const std::string& path_;
  const char* sql_;
  sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw KernelDbError(
        path, fmt::format("SQLite error ({}: {}){}", sqlite3_errstr(rc), msg, hint_for(rc)));
  }
}

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed without commit().
class WriteTxn {
 public:
  WriteTxn(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db_, path_, "BEGIN IMMEDIATE");
  }
  ~WriteTxn() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

std::string join_times(const std::vector<double>& t) {
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) s += fmt::format("{}{:.6g}", i ? "," : "", t[i]);
  return s;
}

std::vector<double> split_times(const std::string& s) {
  std::vector<double> out;
  const char* p = s.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) break;
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

void hash_part(Sha256& h, std::string_view name, std::string_view value) {
  // Length-prefixed name and value: ("ab","c") and ("a","bc") never hash alike.
  const std::string head = fmt::format("{}:{}:{}:", name.size(), name, value.size());
  h.update(head);
  h.update(value);
}

std::int64_t now_seconds() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

}  // namespace

std::string describe(const KeyParts& k, bool with_schedule) {
  std::string s = fmt::format("operation: {}\nmatrix: {}\nn: {}\ndtypes: {}\n", k.operation,
                              k.matrix, k.n, k.dtypes);
  if (with_schedule) s += fmt::format("schedule: {}\n", k.schedule);
  s += fmt::format("device: {}\nnvrtc: {}\ngenerator: {}\n", k.device, k.nvrtc_version,
                   k.generator_version);
  return s;
}

namespace {
std::string key_of(const KeyParts& k, bool with_schedule) {
  Sha256 h;
  hash_part(h, "kind", with_schedule ? "kernel" : "tuning");
  hash_part(h, "operation", k.operation);
  hash_part(h, "matrix", k.matrix);
  hash_part(h, "n", std::to_string(k.n));
  hash_part(h, "dtypes", k.dtypes);
  if (with_schedule) hash_part(h, "schedule", k.schedule);
  hash_part(h, "device", k.device);
  hash_part(h, "nvrtc", k.nvrtc_version);
  hash_part(h, "generator", k.generator_version);
  return h.hex();
}
}  // namespace

std::string kernel_key(const KeyParts& k) {
  return key_of(k, true);
}
std::string tuning_key(const KeyParts& k) {
  return key_of(k, false);
}

std::filesystem::path default_cache_dir() {
  const char* env = std::getenv("SPARSEGEN_CACHE_DIR");
  if (env != nullptr && *env != '\0') return env;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::filesystem::path(xdg) / "sparsegen";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::filesystem::path(home) / ".cache" / "sparsegen";
  return std::filesystem::temp_directory_path() / "sparsegen-cache";
}

std::filesystem::path db_path(const std::string& dir) {
  return (dir.empty() ? default_cache_dir() : std::filesystem::path(dir)) / "kernels.db";
}

KernelDb::KernelDb(std::filesystem::path file, bool create) : path_(std::move(file)) {
  try {
    open_and_validate(create);
  } catch (...) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

KernelDb::~KernelDb() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

void KernelDb::open_and_validate(bool create) {
  const std::string p = path_.string();
  std::error_code ec;
  const bool exists = std::filesystem::exists(path_, ec);
  if (!exists && !create) throw KernelDbError(p, "no kernel database here");
  if (exists) {
    if (std::filesystem::is_directory(path_, ec))
      throw KernelDbError(p, "is a folder, expected a kernel database file");
    // Check the magic ourselves: SQLite would accept some non-database files until the first
    // query, and we never want to write to a file that is not ours.
    const auto size = std::filesystem::file_size(path_, ec);
    if (!ec && size > 0) {
      std::ifstream in(path_, std::ios::binary);
      char head[16] = {};
      in.read(head, sizeof head);
      if (in.gcount() < 16 || std::memcmp(head, "SQLite format 3\0", 16) != 0)
        throw KernelDbError(
            p, fmt::format("not a SQLite database (its first {} bytes are not the SQLite header); "
                           "this is not a sparsegen kernel database: remove it or choose another "
                           "cache (--cache-dir, SPARSEGEN_CACHE_DIR)",
                           std::min<std::int64_t>(16, static_cast<std::int64_t>(size))));
    }
  } else if (path_.has_parent_path()) {
    std::filesystem::create_directories(path_.parent_path(), ec);
    if (ec)
      throw KernelDbError(p, fmt::format("cannot create the cache folder {}: {}",
                                         path_.parent_path().string(), ec.message()));
  }
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(p.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK)
    throw KernelDbError(p, fmt::format("cannot open ({}){}", sqlite3_errstr(rc), hint_for(rc)));
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);

  auto read_header = [&](std::int64_t* app, std::int64_t* version, std::int64_t* tables) {
    {
      Stmt s(db_, p, "PRAGMA application_id");
      *app = s.step() ? s.i64(0) : 0;
    }
    {
      Stmt s(db_, p, "PRAGMA user_version");
      *version = s.step() ? s.i64(0) : 0;
    }
    Stmt s(db_, p, "SELECT count(*) FROM sqlite_master");
    *tables = s.step() ? s.i64(0) : 0;
  };
  auto check_ours = [&](std::int64_t app, std::int64_t version, std::int64_t tables) {
    if (app == 0 && version == 0 && tables == 0) return;  // empty: schema version 0
    if (app != kApplicationId)
      throw KernelDbError(p, fmt::format("an SQLite database of another application "
                                         "(application_id {:#x}, {} schema objects), not a "
                                         "sparsegen kernel database; it was left untouched: "
                                         "choose another cache (--cache-dir, SPARSEGEN_CACHE_DIR)",
                                         app, tables));
    if (version > kSchemaVersion)
      throw KernelDbError(p, fmt::format("kernel database schema version {} is newer than this "
                                         "sparsegen reads (up to {}); use a newer sparsegen or "
                                         "another cache (--cache-dir, SPARSEGEN_CACHE_DIR)",
                                         version, kSchemaVersion));
  };

  std::int64_t app = 0, version = 0, tables = 0;
  // One read transaction, so the three reads are one snapshot: read one by one, they could see
  // another process's schema creation half done (tables present, application_id not yet).
  exec(db_, p, "BEGIN");
  try {
    read_header(&app, &version, &tables);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  exec(db_, p, "COMMIT");
  check_ours(app, version, tables);
  if (version < kSchemaVersion) {
    WriteTxn txn(db_, p);
    // Another process may have migrated between our read and the lock: read again.
    read_header(&app, &version, &tables);
    check_ours(app, version, tables);
    if (version < kSchemaVersion) migrate(static_cast<int>(version));
    txn.commit();
  }
  {
    Stmt s(db_, p,
           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('kernels', "
           "'tunings')");
    if (!s.step() || s.i64(0) != 2)
      throw KernelDbError(p,
                          "kernel database lacks its tables (kernels, tunings); remove the file "
                          "(it is only a cache)");
  }
  // WAL only once the file is known to be ours. Changing the journal mode needs a moment without
  // other connections in a transaction, and SQLite reports BUSY for it without waiting: retry.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    char* err = nullptr;
    const int r = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
    sqlite3_free(err);
    if (r == SQLITE_OK) break;
    if ((r & 0xff) != SQLITE_BUSY && (r & 0xff) != SQLITE_LOCKED)
      exec(db_, p, "PRAGMA journal_mode=WAL");
    if (std::chrono::steady_clock::now() > deadline)
      throw KernelDbError(p, "could not switch to WAL mode: the database stayed busy for 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  exec(db_, p, "PRAGMA synchronous=NORMAL");  // safe with WAL: a crash loses at most the last write
}

void KernelDb::migrate(int from) {
  // Runs inside the caller's BEGIN IMMEDIATE transaction: all steps or none.
  for (int v = from; v < kSchemaVersion; ++v) exec(db_, path_.string(), kMigrations[v]);
  exec(db_, path_.string(), fmt::format("PRAGMA application_id = {}", kApplicationId).c_str());
  exec(db_, path_.string(), fmt::format("PRAGMA user_version = {}", kSchemaVersion).c_str());
}

int KernelDb::schema_version() {
  Stmt s(db_, path_.string(), "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.i64(0)) : 0;
}

void KernelDb::put(const std::vector<KernelRecord>& kernels,
                   const std::optional<TuningRecord>& tuning) {
  const std::string p = path_.string();
  WriteTxn txn(db_, p);
  const std::int64_t now = now_seconds();
  {
    Stmt s(db_, p,
           "INSERT OR REPLACE INTO kernels(key, tuning_key, key_text, schedule, source, arch, "
           "image, image_is_cubin, compile_ms, predicted_ms, measured_ms, times_ms, created_at) "
           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    for (const KernelRecord& k : kernels) {
      s.bind(1, k.key).bind(2, k.tuning_key).bind(3, k.key_text).bind(4, k.schedule);
      s.bind(5, k.source).bind(6, k.arch).bind_blob(7, k.image);
      s.bind(8, std::int64_t{k.image_is_cubin ? 1 : 0}).bind(9, k.compile_ms);
      s.bind(10, k.predicted_ms).bind(11, k.measured_ms).bind(12, join_times(k.times_ms));
      s.bind(13, k.created_at != 0 ? k.created_at : now);
      s.run();
      s.reset();
    }
  }
  if (tuning) {
    Stmt s(db_, p,
           "INSERT OR REPLACE INTO tunings(tuning_key, key_text, best_key, top_k, candidates, "
           "ranking, search_ms, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    s.bind(1, tuning->tuning_key).bind(2, tuning->key_text).bind(3, tuning->best_key);
    s.bind(4, std::int64_t{tuning->top_k}).bind(5, std::int64_t{tuning->candidates});
    s.bind(6, tuning->ranking).bind(7, tuning->search_ms);
    s.bind(8, tuning->created_at != 0 ? tuning->created_at : now);
    s.run();
  }
  txn.commit();
}

namespace {

KernelRecord read_kernel(const Stmt& s) {
  KernelRecord k;
  k.key = s.text(0);
  k.tuning_key = s.text(1);
  k.key_text = s.text(2);
  k.schedule = s.text(3);
  k.source = s.text(4);
  k.arch = s.text(5);
  k.image = s.blob(6);
  k.image_is_cubin = s.i64(7) != 0;
  k.compile_ms = s.f64(8);
  k.predicted_ms = s.opt(9);
  k.measured_ms = s.opt(10);
  k.times_ms = split_times(s.text(11));
  k.created_at = s.i64(12);
  return k;
}

constexpr const char* kKernelColumns =
    "SELECT key, tuning_key, key_text, schedule, source, arch, image, image_is_cubin, "
    "compile_ms, predicted_ms, measured_ms, times_ms, created_at FROM kernels ";

TuningRecord read_tuning(const Stmt& s) {
  TuningRecord t;
  t.tuning_key = s.text(0);
  t.key_text = s.text(1);
  t.best_key = s.text(2);
  t.top_k = static_cast<int>(s.i64(3));
  t.candidates = static_cast<int>(s.i64(4));
  t.ranking = s.text(5);
  t.search_ms = s.f64(6);
  t.created_at = s.i64(7);
  return t;
}

constexpr const char* kTuningColumns =
    "SELECT tuning_key, key_text, best_key, top_k, candidates, ranking, search_ms, created_at "
    "FROM tunings ";

}  // namespace

std::optional<KernelRecord> KernelDb::kernel(const std::string& key_or_prefix) {
  const std::string p = path_.string();
  if (key_or_prefix.size() < 6 || key_or_prefix.size() > 64 ||
      key_or_prefix.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw KernelDbError(p, fmt::format("'{}' is not a kernel key: expected 6 to 64 lower-case hex "
                                       "characters (a key or a unique prefix, as `sparsegen cache "
                                       "list` shows)",
                                       key_or_prefix));
  if (key_or_prefix.size() == 64) {
    Stmt s(db_, p, (std::string(kKernelColumns) + "WHERE key = ?1").c_str());
    s.bind(1, key_or_prefix);
    if (!s.step()) return std::nullopt;
    return read_kernel(s);
  }
  Stmt s(db_, p, (std::string(kKernelColumns) + "WHERE key >= ?1 AND key < ?2 LIMIT 2").c_str());
  s.bind(1, key_or_prefix).bind(2, key_or_prefix + "g");  // 'g' sorts after every hex digit
  if (!s.step()) return std::nullopt;
  KernelRecord k = read_kernel(s);
  if (s.step())
    throw KernelDbError(p, fmt::format("key prefix '{}' matches several kernels: give more "
                                       "characters",
                                       key_or_prefix));
  return k;
}

std::optional<TuningRecord> KernelDb::tuning(const std::string& key) {
  Stmt s(db_, path_.string(), (std::string(kTuningColumns) + "WHERE tuning_key = ?1").c_str());
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return read_tuning(s);
}

std::vector<KernelSummary> KernelDb::list() {
  Stmt s(db_, path_.string(),
         "SELECT k.key, k.tuning_key, k.schedule, k.arch, length(k.image), k.predicted_ms, "
         "k.measured_ms, k.created_at, EXISTS(SELECT 1 FROM tunings t WHERE t.best_key = k.key) "
         "FROM kernels k ORDER BY k.created_at DESC, k.key");
  std::vector<KernelSummary> out;
  while (s.step()) {
    KernelSummary k;
    k.key = s.text(0);
    k.tuning_key = s.text(1);
    k.schedule = s.text(2);
    k.arch = s.text(3);
    k.image_bytes = s.i64(4);
    k.predicted_ms = s.opt(5);
    k.measured_ms = s.opt(6);
    k.created_at = s.i64(7);
    k.is_best = s.i64(8) != 0;
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<TuningRecord> KernelDb::tunings() {
  Stmt s(db_, path_.string(),
         (std::string(kTuningColumns) + "ORDER BY created_at DESC, tuning_key").c_str());
  std::vector<TuningRecord> out;
  while (s.step()) out.push_back(read_tuning(s));
  return out;
}

std::int64_t KernelDb::kernel_count() {
  Stmt s(db_, path_.string(), "SELECT count(*) FROM kernels");
  return s.step() ? s.i64(0) : 0;
}

std::int64_t KernelDb::clear() {
  const std::string p = path_.string();
  WriteTxn txn(db_, p);
  std::int64_t n = 0;
  {
    Stmt s(db_, p, "SELECT count(*) FROM kernels");
    n = s.step() ? s.i64(0) : 0;
  }
  exec(db_, p, "DELETE FROM tunings; DELETE FROM kernels;");
  txn.commit();
  return n;
}

std::string KernelDb::integrity_check() {
  Stmt s(db_, path_.string(), "PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out.push_back('\n');
    out.append(s.text(0));
  }
  return out;
}

void KernelDb::export_copy(const std::filesystem::path& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec))
    throw KernelDbError(out.string(), "exists already: export writes a new file");
  Stmt s(db_, path_.string(), "VACUUM INTO ?1");
  s.bind(1, out.string());
  s.run();
}

namespace {

// Read-only checks of a database to import: SQLite, ours, the current schema. Opened read-only,
// so a file on a read-only medium imports too and nothing in it is touched.
void check_importable(const std::filesystem::path& other) {
  const std::string p = other.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(other, ec))
    throw KernelDbError(p, "no such file (expected a sparsegen kernel database, e.g. another "
                           "cache's kernels.db or `sparsegen cache export` output)");
  {
    std::ifstream in(other, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    if (in.gcount() < 16 || std::memcmp(head, "SQLite format 3\0", 16) != 0)
      throw KernelDbError(p, "not a SQLite database, so not a sparsegen kernel database");
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  struct Close {
    sqlite3*& db;
    ~Close() { sqlite3_close_v2(db); }
  } close{db};
  if (rc != SQLITE_OK) throw KernelDbError(p, fmt::format("cannot open ({})", sqlite3_errstr(rc)));
  std::int64_t app = 0, version = 0, tables = 0;
  {
    Stmt s(db, p, "PRAGMA application_id");
    app = s.step() ? s.i64(0) : 0;
  }
  {
    Stmt s(db, p, "PRAGMA user_version");
    version = s.step() ? s.i64(0) : 0;
  }
  {
    Stmt s(db, p,
           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('kernels', "
           "'tunings')");
    tables = s.step() ? s.i64(0) : 0;
  }
  if (app != kApplicationId)
    throw KernelDbError(p, fmt::format("an SQLite database of another application "
                                       "(application_id {:#x}), not a sparsegen kernel database",
                                       app));
  if (version != kSchemaVersion || tables != 2)
    throw KernelDbError(p, fmt::format("kernel database schema version {} (with {} of its 2 "
                                       "tables); this sparsegen imports version {}",
                                       version, tables, kSchemaVersion));
}

constexpr const char* kKernelColumnList =
    "key, tuning_key, key_text, schedule, source, arch, image, image_is_cubin, compile_ms, "
    "predicted_ms, measured_ms, times_ms, created_at";
constexpr const char* kTuningColumnList =
    "tuning_key, key_text, best_key, top_k, candidates, ranking, search_ms, created_at";

}  // namespace

KernelDb::ImportStats KernelDb::import_from(const std::filesystem::path& other) {
  const std::string p = path_.string();
  std::error_code ec;
  if (std::filesystem::equivalent(other, path_, ec))
    throw KernelDbError(other.string(), "is the database being imported into");
  check_importable(other);
  {
    Stmt s(db_, p, "ATTACH DATABASE ?1 AS src");
    s.bind(1, other.string());
    s.run();
  }
  struct Detach {
    sqlite3* db;
    ~Detach() { sqlite3_exec(db, "DETACH DATABASE src", nullptr, nullptr, nullptr); }
  } detach{db_};
  ImportStats st;
  {
    WriteTxn txn(db_, p);
    auto count = [&](const std::string& sql) {
      Stmt s(db_, p, sql.c_str());
      return s.step() ? s.i64(0) : 0;
    };
    auto changes = [&](const std::string& sql) {
      exec(db_, p, sql.c_str());
      return static_cast<std::int64_t>(sqlite3_changes(db_));
    };
    const std::int64_t total = count("SELECT count(*) FROM src.kernels");
    st.kernels_updated = changes(fmt::format(
        "INSERT OR REPLACE INTO main.kernels({0}) SELECT s.key, s.tuning_key, s.key_text, "
        "s.schedule, s.source, s.arch, s.image, s.image_is_cubin, s.compile_ms, s.predicted_ms, "
        "s.measured_ms, s.times_ms, s.created_at FROM src.kernels s JOIN main.kernels m ON "
        "m.key = s.key WHERE m.measured_ms IS NULL AND s.measured_ms IS NOT NULL",
        kKernelColumnList));
    st.kernels_added = changes(fmt::format(
        "INSERT INTO main.kernels({0}) SELECT {0} FROM src.kernels WHERE key NOT IN (SELECT key "
        "FROM main.kernels)",
        kKernelColumnList));
    st.kernels_kept = total - st.kernels_added - st.kernels_updated;
    const std::int64_t tunings = count("SELECT count(*) FROM src.tunings");
    // Only tunings whose chosen kernel is present (always, unless the other file was edited).
    st.tunings_replaced = changes(fmt::format(
        "INSERT OR REPLACE INTO main.tunings({0}) SELECT s.tuning_key, s.key_text, s.best_key, "
        "s.top_k, s.candidates, s.ranking, s.search_ms, s.created_at FROM src.tunings s JOIN "
        "main.tunings m ON m.tuning_key = s.tuning_key WHERE s.top_k > m.top_k AND EXISTS "
        "(SELECT 1 FROM main.kernels k WHERE k.key = s.best_key)",
        kTuningColumnList));
    st.tunings_added = changes(fmt::format(
        "INSERT INTO main.tunings({0}) SELECT {0} FROM src.tunings s WHERE s.tuning_key NOT IN "
        "(SELECT tuning_key FROM main.tunings) AND EXISTS (SELECT 1 FROM main.kernels k WHERE "
        "k.key = s.best_key)",
        kTuningColumnList));
    st.tunings_kept = tunings - st.tunings_added - st.tunings_replaced;
    txn.commit();
  }
  return st;
}

}  // namespace sparsegen::kdb
