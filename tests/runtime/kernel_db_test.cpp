// The kernel database (runtime/kernel_db.h) and SHA-256: round trip, keys, schema version and
// migration, corrupt / foreign / newer files (clear errors, never a crash, foreign files left
// untouched), and several processes writing at once.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernel_db.h"
#include "runtime/sha256.h"

namespace sparsegen::kdb {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test under the system temp dir.
fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("sg_kdb_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

KeyParts parts(int i = 0) {
  KeyParts k;
  k.operation = "spmm b=row c=row";
  k.matrix = "csr 4x5 nnz=7 rows=0123456789abcdef:cols=fedcba9876543210 values=fp16";
  k.n = 8;
  k.dtypes = "a=fp16 b=fp16 c=fp16 acc=fp32";
  k.schedule = "general;block=row;i=" + std::to_string(i);
  k.device = "NVIDIA H100 80GB HBM3 sm_90 arch=sm_90";
  k.nvrtc_version = "13.0";
  k.generator_version = "test";
  return k;
}

KernelRecord record(int i, size_t image_bytes = 64) {
  const KeyParts k = parts(i);
  KernelRecord r;
  r.key = kernel_key(k);
  r.tuning_key = tuning_key(k);
  r.key_text = describe(k);
  r.schedule = k.schedule;
  r.source = "extern \"C\" __global__ void k" + std::to_string(i) + "() {}";
  r.arch = "sm_90";
  r.image.resize(image_bytes);
  for (size_t j = 0; j < image_bytes; ++j) r.image[j] = static_cast<char>((j * 31 + i) & 0xff);
  r.image_is_cubin = true;
  r.compile_ms = 12.5;
  r.predicted_ms = 0.25 + i;
  if (i % 2 == 0) {
    r.measured_ms = 0.5;
    r.times_ms = {0.5, 0.625, 0.4375};
  }
  return r;
}

void make_sqlite(const fs::path& p, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', fed in uneven pieces (exercises the partial-block buffer).
  Sha256 h;
  const std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(KernelKey, EveryPartChangesTheKey) {
  const KeyParts base = parts();
  const std::string k0 = kernel_key(base), t0 = tuning_key(base);
  EXPECT_EQ(k0.size(), 64u);
  EXPECT_NE(k0, t0);
  std::vector<KeyParts> variants(8, base);
  variants[0].operation = "spmm b=col c=row";
  variants[1].matrix += "x";
  variants[2].n = 9;
  variants[3].dtypes = "a=bf16 b=bf16 c=bf16 acc=fp32";
  variants[4].schedule += ";x";
  variants[5].device = "NVIDIA H200 sm_90 arch=sm_90";
  variants[6].nvrtc_version = "13.1";
  variants[7].generator_version = "test2";
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(kernel_key(variants[i]), k0) << "part " << i;
    // The tuning key ignores only the schedule.
    if (i == 4)
      EXPECT_EQ(tuning_key(variants[i]), t0);
    else
      EXPECT_NE(tuning_key(variants[i]), t0) << "part " << i;
  }
  // Length-prefixed parts: moving text between two parts changes the key.
  KeyParts a = base, b = base;
  a.operation = "spmm";
  a.matrix = "x" + base.matrix;
  b.operation = "spmmx";
  b.matrix = base.matrix;
  EXPECT_NE(kernel_key(a), kernel_key(b));
}

TEST(KernelDb, RoundTrip) {
  const fs::path dir = temp_dir("roundtrip");
  const fs::path file = dir / "sub" / "kernels.db";  // the folder is created
  KernelDb db(file);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  const KernelRecord r0 = record(0), r1 = record(1, 0);  // r1: empty image, no measurement
  TuningRecord t;
  t.tuning_key = r0.tuning_key;
  t.key_text = "tuning";
  t.best_key = r0.key;
  t.top_k = 4;
  t.candidates = 212;
  t.ranking = "cost model";
  t.search_ms = 1234.5;
  db.put({r0, r1}, t);

  const auto g0 = db.kernel(r0.key);
  ASSERT_TRUE(g0.has_value());
  EXPECT_EQ(g0->tuning_key, r0.tuning_key);
  EXPECT_EQ(g0->key_text, r0.key_text);
  EXPECT_EQ(g0->schedule, r0.schedule);
  EXPECT_EQ(g0->source, r0.source);
  EXPECT_EQ(g0->arch, r0.arch);
  EXPECT_EQ(g0->image, r0.image);
  EXPECT_TRUE(g0->image_is_cubin);
  EXPECT_DOUBLE_EQ(g0->compile_ms, 12.5);
  EXPECT_DOUBLE_EQ(*g0->predicted_ms, 0.25);
  EXPECT_DOUBLE_EQ(*g0->measured_ms, 0.5);
  EXPECT_EQ(g0->times_ms, r0.times_ms);
  EXPECT_GT(g0->created_at, 0);
  const auto g1 = db.kernel(r1.key.substr(0, 10));  // unique prefix
  ASSERT_TRUE(g1.has_value());
  EXPECT_TRUE(g1->image.empty());
  EXPECT_FALSE(g1->measured_ms.has_value());
  EXPECT_TRUE(g1->times_ms.empty());
  EXPECT_FALSE(db.kernel(std::string(64, '0')).has_value());
  EXPECT_THROW(db.kernel("xyz"), KernelDbError);  // not a key

  const auto gt = db.tuning(r0.tuning_key);
  ASSERT_TRUE(gt.has_value());
  EXPECT_EQ(gt->best_key, r0.key);
  EXPECT_EQ(gt->top_k, 4);
  EXPECT_EQ(gt->candidates, 212);
  EXPECT_EQ(gt->ranking, "cost model");
  EXPECT_DOUBLE_EQ(gt->search_ms, 1234.5);

  const auto rows = db.list();
  ASSERT_EQ(rows.size(), 2u);
  int best = 0;
  for (const auto& s : rows) best += s.is_best ? 1 : 0;
  EXPECT_EQ(best, 1);
  EXPECT_EQ(db.tunings().size(), 1u);

  // Replacing by key keeps one row.
  KernelRecord r0b = r0;
  r0b.measured_ms = 0.25;
  db.put({r0b});
  EXPECT_EQ(db.kernel_count(), 2);
  EXPECT_DOUBLE_EQ(*db.kernel(r0.key)->measured_ms, 0.25);

  // A consistent copy opens as a database of its own.
  db.export_copy(dir / "copy.db");
  EXPECT_THROW(db.export_copy(dir / "copy.db"), KernelDbError);  // exists
  {
    KernelDb copy(dir / "copy.db", false);
    EXPECT_EQ(copy.kernel_count(), 2);
  }
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(db.clear(), 2);
  EXPECT_EQ(db.kernel_count(), 0);
  EXPECT_FALSE(db.tuning(r0.tuning_key).has_value());
  fs::remove_all(dir);
}

TEST(KernelDb, MigratesVersion0Files) {
  const fs::path dir = temp_dir("v0");
  // Version 0: an SQLite file with no schema (user_version 0) ...
  make_sqlite(dir / "v0.db", "CREATE TABLE t(x); DROP TABLE t;");
  {
    KernelDb db(dir / "v0.db");
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
    db.put({record(0)});
    EXPECT_EQ(db.kernel_count(), 1);
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "v0.db").string().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA application_id", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), kApplicationId);
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }
  // ... or a zero-length file.
  std::ofstream(dir / "empty.db").close();
  KernelDb db(dir / "empty.db");
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  // Reopening a current file is not a migration (nothing changes).
  KernelDb again(dir / "empty.db");
  EXPECT_EQ(again.schema_version(), kSchemaVersion);
  fs::remove_all(dir);
}

// Opening `file` and reading every record throws KernelDbError naming the file.
void expect_db_error(const fs::path& file, const std::string& needle) {
  try {
    KernelDb db(file);
    for (const auto& s : db.list()) (void)db.kernel(s.key);
    (void)db.tunings();
    const std::string ic = db.integrity_check();
    if (ic != "ok") throw KernelDbError(file.string(), ic);
    FAIL() << "no error for " << file;
  } catch (const KernelDbError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(KernelDb, RandomBytesAreNotADatabase) {
  const fs::path dir = temp_dir("random");
  std::mt19937 rng(42);
  for (size_t size : {1u, 15u, 100u, 4096u, 70000u}) {
    const fs::path f = dir / ("random" + std::to_string(size));
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    std::ofstream(f, std::ios::binary) << bytes;
    expect_db_error(f, "not a SQLite database");
    EXPECT_EQ(read_all(f), bytes) << "the file was modified";
  }
  // The SQLite header followed by garbage.
  std::string fake = std::string("SQLite format 3", 16) + std::string(5000, '\x5a');
  std::ofstream(dir / "fake", std::ios::binary) << fake;
  expect_db_error(dir / "fake", "");
  fs::remove_all(dir);
}

TEST(KernelDb, ForeignSqliteFileIsLeftUntouched) {
  const fs::path dir = temp_dir("foreign");
  const fs::path f = dir / "other.db";
  make_sqlite(f,
              "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); "
              "INSERT INTO users(name) VALUES('ada');");
  const std::string before = read_all(f);
  expect_db_error(f, "another application");
  EXPECT_EQ(read_all(f), before);
  EXPECT_FALSE(fs::exists(dir / "other.db-wal"));
  // Another application_id, even without tables.
  make_sqlite(dir / "app.db", "PRAGMA application_id = 1234; CREATE TABLE t(x); DROP TABLE t;");
  expect_db_error(dir / "app.db", "another application");
  fs::remove_all(dir);
}

TEST(KernelDb, NewerSchemaIsRefused) {
  const fs::path dir = temp_dir("newer");
  make_sqlite(dir / "k.db", "PRAGMA application_id = " + std::to_string(kApplicationId) +
                                "; PRAGMA user_version = 99; CREATE TABLE kernels(x);");
  expect_db_error(dir / "k.db", "newer");
  // Ours, current version, but the tables are gone.
  make_sqlite(dir / "gone.db", "PRAGMA application_id = " + std::to_string(kApplicationId) +
                                   "; PRAGMA user_version = " + std::to_string(kSchemaVersion) +
                                   "; CREATE TABLE unrelated(x);");
  expect_db_error(dir / "gone.db", "lacks its tables");
  fs::remove_all(dir);
}

TEST(KernelDb, TruncatedFileGivesAClearError) {
  const fs::path dir = temp_dir("truncated");
  const fs::path f = dir / "kernels.db";
  {
    KernelDb db(f);
    std::vector<KernelRecord> recs;
    for (int i = 0; i < 40; ++i) recs.push_back(record(i, 8192));
    db.put(recs);
  }  // the last connection checkpoints the WAL into the file
  ASSERT_FALSE(fs::exists(dir / "kernels.db-wal"));
  const auto size = fs::file_size(f);
  ASSERT_GT(size, 100000u);
  for (double frac : {0.5, 0.1}) {
    fs::copy_file(f, dir / "t.db", fs::copy_options::overwrite_existing);
    fs::resize_file(dir / "t.db", static_cast<uintmax_t>(static_cast<double>(size) * frac));
    expect_db_error(dir / "t.db", "damaged");
    fs::remove(dir / "t.db-wal");
    fs::remove(dir / "t.db-shm");
  }
  fs::remove_all(dir);
}

TEST(KernelDb, FolderInsteadOfFile) {
  const fs::path dir = temp_dir("folder");
  fs::create_directories(dir / "kernels.db");
  EXPECT_THROW(KernelDb(dir / "kernels.db"), KernelDbError);
  EXPECT_THROW(KernelDb(dir / "missing.db", /*create=*/false), KernelDbError);
  fs::remove_all(dir);
}

TEST(KernelDb, CacheDirFromEnvironment) {
  setenv("SPARSEGEN_CACHE_DIR", "/tmp/sg-env-cache", 1);
  EXPECT_EQ(default_cache_dir(), fs::path("/tmp/sg-env-cache"));
  EXPECT_EQ(db_path(), fs::path("/tmp/sg-env-cache/kernels.db"));
  EXPECT_EQ(db_path("/x"), fs::path("/x/kernels.db"));
  unsetenv("SPARSEGEN_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(default_cache_dir(), fs::path("/tmp/xdg/sparsegen"));
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string saved = home != nullptr ? home : "";
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_cache_dir(), fs::path("/home/u/.cache/sparsegen"));
  if (home != nullptr)
    setenv("HOME", saved.c_str(), 1);
  else
    unsetenv("HOME");
}

// Several processes create, write and read the same (initially missing) database at once; every
// record must be there afterwards and the file sound.
TEST(KernelDb, ConcurrentProcesses) {
  const fs::path dir = temp_dir("concurrent");
  const fs::path f = dir / "kernels.db";
  constexpr int kProcs = 6, kPerProc = 25;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        KernelDb db(f);
        for (int i = 0; i < kPerProc; ++i) {
          const int id = p * 1000 + i;
          KernelRecord r = record(id, 2048);
          TuningRecord t;
          t.tuning_key = r.tuning_key + std::to_string(id);  // one tuning per record
          t.key_text = "t";
          t.best_key = r.key;
          t.ranking = "test";
          db.put({r}, t);
          // Read back our own write and something of the others'.
          if (!db.kernel(r.key)) rc = 2;
          (void)db.list();
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());
        rc = 1;
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  KernelDb db(f);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(db.kernel_count(), kProcs * kPerProc);
  EXPECT_EQ(static_cast<int>(db.tunings().size()), kProcs * kPerProc);
  for (int p = 0; p < kProcs; ++p)
    for (int i = 0; i < kPerProc; ++i) {
      const KernelRecord want = record(p * 1000 + i, 2048);
      const auto got = db.kernel(want.key);
      ASSERT_TRUE(got.has_value()) << p << "/" << i;
      EXPECT_EQ(got->image, want.image);
    }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsegen::kdb
