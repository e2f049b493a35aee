// `sparsegen cache list|show KEY|clear|export FILE|import OTHER [--cache-dir D] [--json]`:
// the kernel database (runtime/kernel_db.h).
//   list           one line per kernel: key prefix, best-of-a-tuning mark, arch, image size,
//                  predicted / measured time, schedule
//   show KEY       every field of one kernel (KEY: the full key or a unique prefix of 6+ hex
//                  characters); --source prints the CUDA source too
//   clear          deletes every record
//   export FILE    FILE ending in .json: every record as JSON (images base64); anything else: a
//                  consistent SQLite copy (VACUUM INTO), usable as another --cache-dir's kernels.db
//   import OTHER   merges another kernel database (an SQLite file, or a cache folder holding
//                  kernels.db) into this one: its kernels and tunings are added, a tuning replaces
//                  ours only when it measured more candidates (runtime/kernel_db.h)
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"
#include "runtime/kernel_db.h"
#include "tools/commands.h"

namespace sparsegen::cli {
namespace {

struct CacheArgs {
  std::string cache_dir;
  std::string key;
  std::string file;
  bool json = false;
  bool source = false;
};

std::string base64(const std::vector<char>& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += t[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < in.size() ? t[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string when(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json record_json(const kdb::KernelRecord& k, bool with_blobs) {
  nlohmann::json j{{"key", k.key},
                   {"tuning_key", k.tuning_key},
                   {"key_text", k.key_text},
                   {"schedule", k.schedule},
                   {"arch", k.arch},
                   {"image_is_cubin", k.image_is_cubin},
                   {"image_bytes", k.image.size()},
                   {"compile_ms", k.compile_ms},
                   {"predicted_ms", opt_json(k.predicted_ms)},
                   {"measured_ms", opt_json(k.measured_ms)},
                   {"times_ms", k.times_ms},
                   {"created_at", when(k.created_at)}};
  if (with_blobs) {
    j["source"] = k.source;
    j["image_base64"] = base64(k.image);
  }
  return j;
}

// Runs `f` on the database; database errors become UserError (exit 1) naming the file.
template <class F>
void with_db(const CacheArgs& a, bool must_exist, F&& f) {
  const std::filesystem::path path = kdb::db_path(a.cache_dir);
  if (must_exist && !std::filesystem::exists(path)) {
    if (a.json)
      std::printf("{\"cache\": %s, \"kernels\": []}\n",
                  nlohmann::json(path.string()).dump().c_str());
    else
      std::printf("no kernel database at %s (nothing cached yet)\n", path.string().c_str());
    return;
  }
  try {
    kdb::KernelDb db(path, !must_exist);
    f(db);
  } catch (const kdb::KernelDbError& e) {
    throw UserError(std::string("kernel cache ") + e.what());
  }
}

void run_list(const CacheArgs& a) {
  with_db(a, true, [&](kdb::KernelDb& db) {
    const auto rows = db.list();
    if (a.json) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& k : rows)
        arr.push_back({{"key", k.key},
                       {"tuning_key", k.tuning_key},
                       {"best", k.is_best},
                       {"schedule", k.schedule},
                       {"arch", k.arch},
                       {"image_bytes", k.image_bytes},
                       {"predicted_ms", opt_json(k.predicted_ms)},
                       {"measured_ms", opt_json(k.measured_ms)},
                       {"created_at", when(k.created_at)}});
      std::printf("%s\n",
                  nlohmann::json{{"cache", db.path().string()}, {"kernels", arr}}.dump(2).c_str());
      return;
    }
    std::printf("%s: %zu kernel%s (* = chosen by a tuning)\n", db.path().string().c_str(),
                rows.size(), rows.size() == 1 ? "" : "s");
    for (const auto& k : rows)
      std::printf("%.12s %s %-10s %8lld B  pred %-11s meas %-11s %s\n", k.key.c_str(),
                  k.is_best ? "*" : " ", k.arch.c_str(), static_cast<long long>(k.image_bytes),
                  k.predicted_ms ? fmt::format("{:.4f}ms", *k.predicted_ms).c_str() : "-",
                  k.measured_ms ? fmt::format("{:.4f}ms", *k.measured_ms).c_str() : "-",
                  k.schedule.c_str());
  });
}

void run_show(const CacheArgs& a) {
  with_db(a, true, [&](kdb::KernelDb& db) {
    const auto k = db.kernel(a.key);
    if (!k)
      throw UserError(
          fmt::format("cache show: no kernel with key '{}' in {}", a.key, db.path().string()));
    if (a.json) {
      std::printf("%s\n", record_json(*k, a.source).dump(2).c_str());
      return;
    }
    std::printf("key        %s\ntuning     %s\nschedule   %s\narch       %s (%s, %zu bytes)\n",
                k->key.c_str(), k->tuning_key.c_str(), k->schedule.c_str(), k->arch.c_str(),
                k->image_is_cubin ? "cubin" : "PTX", k->image.size());
    std::printf("compile    %.1f ms\npredicted  %s\nmeasured   %s (%zu runs)\ncreated    %s\n",
                k->compile_ms,
                k->predicted_ms ? fmt::format("{:.4f} ms", *k->predicted_ms).c_str() : "-",
                k->measured_ms ? fmt::format("{:.4f} ms", *k->measured_ms).c_str() : "-",
                k->times_ms.size(), when(k->created_at).c_str());
    std::printf("key parts\n");
    std::string line;
    for (char c : k->key_text) {
      if (c == '\n') {
        std::printf("  %s\n", line.c_str());
        line.clear();
      } else {
        line += c;
      }
    }
    if (a.source) std::printf("--- source ---\n%s\n", k->source.c_str());
  });
}

void run_clear(const CacheArgs& a) {
  with_db(a, true, [&](kdb::KernelDb& db) {
    const auto n = db.clear();
    std::printf("removed %lld kernel%s from %s\n", static_cast<long long>(n), n == 1 ? "" : "s",
                db.path().string().c_str());
  });
}

void run_export(const CacheArgs& a) {
  with_db(a, false, [&](kdb::KernelDb& db) {
    const std::filesystem::path out(a.file);
    if (out.extension() == ".json") {
      nlohmann::json j;
      j["format"] = "sparsegen-kernel-cache";
      j["schema_version"] = db.schema_version();
      j["cache"] = db.path().string();
      nlohmann::json ks = nlohmann::json::array();
      for (const auto& s : db.list())
        if (auto k = db.kernel(s.key)) ks.push_back(record_json(*k, true));
      j["kernels"] = ks;
      nlohmann::json ts = nlohmann::json::array();
      for (const auto& t : db.tunings())
        ts.push_back({{"tuning_key", t.tuning_key},
                      {"key_text", t.key_text},
                      {"best_key", t.best_key},
                      {"top_k", t.top_k},
                      {"candidates", t.candidates},
                      {"ranking", t.ranking},
                      {"search_ms", t.search_ms},
                      {"created_at", when(t.created_at)}});
      j["tunings"] = ts;
      std::ofstream f(out);
      f << j.dump(2) << "\n";
      if (!f) throw UserError(fmt::format("{}: cannot write", a.file));
      std::printf("exported %zu kernels, %zu tunings to %s\n", ks.size(), ts.size(),
                  a.file.c_str());
    } else {
      db.export_copy(out);
      std::printf("exported %s to %s (SQLite copy)\n", db.path().string().c_str(), a.file.c_str());
    }
  });
}

void run_import(const CacheArgs& a) {
  std::filesystem::path other(a.file);
  std::error_code ec;
  if (std::filesystem::is_directory(other, ec)) other /= "kernels.db";
  if (other.extension() == ".json")
    throw UserError(fmt::format("cache import {}: expected an SQLite kernel database (`cache "
                                "export` without .json writes one), not JSON",
                                a.file));
  with_db(a, false, [&](kdb::KernelDb& db) {
    const kdb::KernelDb::ImportStats st = db.import_from(other);
    std::printf("imported %s into %s: %lld kernel%s added, %lld updated with a measurement, "
                "%lld already present; %lld tuning%s added, %lld replaced (more candidates "
                "measured), %lld kept\n",
                other.string().c_str(), db.path().string().c_str(),
                static_cast<long long>(st.kernels_added), st.kernels_added == 1 ? "" : "s",
                static_cast<long long>(st.kernels_updated),
                static_cast<long long>(st.kernels_kept), static_cast<long long>(st.tunings_added),
                st.tunings_added == 1 ? "" : "s", static_cast<long long>(st.tunings_replaced),
                static_cast<long long>(st.tunings_kept));
  });
}

}  // namespace

void register_cache(CLI::App& app) {
  auto args = std::make_shared<CacheArgs>();
  CLI::App* cmd =
      app.add_subcommand("cache", "List, show, clear, export or import the kernel database");
  cmd->require_subcommand(1);
  auto add_common = [&](CLI::App* c) {
    c->add_option("--cache-dir", args->cache_dir,
                  "kernel database folder (default $SPARSEGEN_CACHE_DIR, else "
                  "$XDG_CACHE_HOME/sparsegen, else ~/.cache/sparsegen)");
  };
  CLI::App* list = cmd->add_subcommand("list", "One line per cached kernel");
  add_common(list);
  list->add_flag("--json", args->json, "print JSON");
  list->callback([args] { run_list(*args); });
  CLI::App* show = cmd->add_subcommand("show", "Every field of one cached kernel");
  add_common(show);
  show->add_option("key", args->key, "kernel key or a unique prefix (6+ hex characters)")
      ->required();
  show->add_flag("--source", args->source, "print the CUDA source (with --json: source and image)");
  show->add_flag("--json", args->json, "print JSON");
  show->callback([args] { run_show(*args); });
  CLI::App* clear = cmd->add_subcommand("clear", "Delete every cached kernel");
  add_common(clear);
  clear->callback([args] { run_clear(*args); });
  CLI::App* exp =
      cmd->add_subcommand("export", "Export the database (FILE.json: JSON; else SQLite)");
  add_common(exp);
  exp->add_option("file", args->file, "output file (must not exist for an SQLite copy)")
      ->required();
  exp->callback([args] { run_export(*args); });
  CLI::App* imp = cmd->add_subcommand(
      "import", "Merge another kernel database (SQLite file or cache folder) into this one");
  add_common(imp);
  imp->add_option("file", args->file, "the other database (kernels.db, an export, or its folder)")
      ->required();
  imp->callback([args] { run_import(*args); });
}

}  // namespace sparsegen::cli
