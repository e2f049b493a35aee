// `sparsegen tune-model CHECKPOINT [--include GLOB]... [--exclude GLOB]... [-n 1,8]
//  [--dtype fp16,bf16] [--top-k K] [--refine R] [--gpus all|0,1] [--report FILE.json]
//  [--no-share] [--share-candidates C] [--verify-sample S] [--cache-dir D] [--force] [--arch A]`:
// every selected 2-D weight of a checkpoint (a .safetensors file or a shard index) through the
// tuner, into the kernel database (compiler/model_tune.h).
//
// Without --gpus: tuned in this process on device 0. --gpus: one worker process per GPU (this
// binary again, with CUDA_VISIBLE_DEVICES set and a list of tensors), each writing its results as
// JSON lines on a pipe; all share the database (WAL, BEGIN IMMEDIATE). A progress bar (tunings
// done, ETA) goes to stderr when it is a terminal; the summary goes to stdout. Rerunning is
// resumable: what the database holds is a cache hit.
//
// Exit codes (main.cpp): 0 every tensor tuned; 1 bad flag or checkpoint, or some tensor failed
// (each named on stderr and in the report; the others are tuned and stored); 3 GPU error.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/model_tune.h"
#include "compiler/pipeline.h"
#include "ir/diagnostics.h"
#include "ir/io/checkpoint.h"
#include "ir/progress_line.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_db.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

namespace fs = std::filesystem;

struct TuneModelArgs {
  std::string checkpoint;
  std::vector<std::string> include, exclude;
  std::vector<std::string> ns{"1"};
  std::vector<std::string> dtypes{"fp16"};
  int top_k = -1;
  int refine = -1;
  std::string gpus;
  std::string report;
  bool no_share = false;
  int share_candidates = 3;
  int verify_sample = 0;
  std::string cache_dir;
  std::string arch;
  bool force = false;
  // Internal: a worker of --gpus (tensor names from a file, results as JSON lines on stdout).
  std::string worker_tensors;
};

std::vector<std::string> split_commas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    size_t b = 0;
    while (b <= v.size()) {
      const size_t e = std::min(v.find(',', b), v.size());
      if (e > b) out.push_back(v.substr(b, e - b));
      b = e + 1;
    }
  }
  return out;
}

int64_t n_flag(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < 1 || v > (int64_t{1} << 30))
    throw UserError(fmt::format("-n {}: expected comma-separated N of 1 or more, e.g. -n 1,8", s));
  return v;
}

// "all" -> every device; "0,2" -> those (checked against the device count).
// SPARSEGEN_TEST_GPU_COUNT=K (tests only) pretends K devices exist, so that the worker
// orchestration runs on a machine without GPUs (the workers then compile offline, --top-k 0).
std::vector<int> gpus_flag(const std::string& s) {
  int count = 0;
  if (const char* fake = std::getenv("SPARSEGEN_TEST_GPU_COUNT")) {
    count = std::atoi(fake);
  } else {
    std::string why;
    if (!cuda::driver_available(&why))
      throw UserError(fmt::format("--gpus {}: no GPU available ({})", s, why));
    count = cuda::device_count();
  }
  std::vector<int> out;
  if (s == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (const std::string& g : split_commas({s})) {
    char* end = nullptr;
    const long v = std::strtol(g.c_str(), &end, 10);
    if (g.empty() || *end != '\0' || v < 0 || v >= count)
      throw UserError(
          fmt::format("--gpus {}: expected 'all' or device numbers 0 to {}", s, count - 1));
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end())
      out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw UserError(fmt::format("--gpus {}: expected 'all' or 0,1,...", s));
  return out;
}

ModelTuneOptions options_of(const TuneModelArgs& a, const CompileTarget& target) {
  ModelTuneOptions o;
  o.ns.clear();
  for (const std::string& n : split_commas(a.ns)) o.ns.push_back(n_flag(n));
  o.dtypes.clear();
  for (const std::string& d : split_commas(a.dtypes)) o.dtypes.push_back(dtype_flag(d));
  if (a.top_k < -1) throw UserError(fmt::format("--top-k: expected 0 or more, found {}", a.top_k));
  if (a.refine < -1)
    throw UserError(fmt::format("--refine: expected 0 or more, found {}", a.refine));
  if (a.share_candidates < 1)
    throw UserError(
        fmt::format("--share-candidates: expected 1 or more, found {}", a.share_candidates));
  if (a.verify_sample < 0)
    throw UserError(fmt::format("--verify-sample: expected 0 or more, found {}", a.verify_sample));
  o.tune.top_k = a.top_k >= 0 ? a.top_k : (target.has_gpu ? 8 : 0);
  if (!a.arch.empty() && o.tune.top_k > 0)
    throw UserError(
        fmt::format("--top-k {} measures on this machine's GPU, but --arch {} "
                    "compiles offline: use --top-k 0, or drop --arch",
                    o.tune.top_k, a.arch));
  o.tune.refine = a.refine;
  o.tune.cache_dir = a.cache_dir;
  o.tune.force = a.force;
  o.share = !a.no_share;
  o.share_candidates = a.share_candidates;
  o.verify_sample = a.verify_sample;
  return o;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError(SourceLoc{path}, "cannot open the worker's tensor list");
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The results of a whole run, from this process or from the workers.
struct Collected {
  std::vector<nlohmann::json> items, checks;
  std::vector<std::string> worker_errors;
};

void print_summary(const TuneModelArgs& a, const Collected& c, size_t tensors, double wall_s,
                   const std::string& device, const std::string& db) {
  std::map<std::string, int> by_status;
  int slow_shared = 0;
  for (const auto& it : c.items) {
    ++by_status[it["status"].get<std::string>()];
    slow_shared += !it.value("note", std::string()).empty();
  }
  const double minutes = wall_s / 60.0;
  std::printf("tune-model %s: %zu tunings of %zu tensors in %s (%.1f tensors/min; %s)\n",
              a.checkpoint.c_str(), c.items.size(), tensors, ProgressLine::duration(wall_s).c_str(),
              minutes > 0 ? static_cast<double>(tensors) / minutes : 0.0, device.c_str());
  std::printf(
      "  %d full searches (%d of them after a slow shared pick), %d shared (a similar "
      "tensor's fastest measured), %d cache hits, %d errors\n",
      by_status["tuned"], slow_shared, by_status["shared"], by_status["cached"],
      by_status["error"]);
  if (!c.checks.empty()) {
    std::vector<double> r;
    for (const auto& k : c.checks)
      if (k["error"].get<std::string>().empty()) r.push_back(k["ratio"].get<double>());
    std::sort(r.begin(), r.end());
    const auto within = std::count_if(r.begin(), r.end(), [](double x) { return x >= 0.9; });
    if (r.empty())
      std::printf("  picks vs a deeper search: every check failed (see the report)\n");
    else
      std::printf(
          "  picks vs a deeper search (4x top-k): %lld of %zu within 90%% of its best "
          "(min %.3f, median %.3f)\n",
          static_cast<long long>(within), r.size(), r.front(), r[r.size() / 2]);
  }
  std::printf("  database %s\n", db.c_str());
  if (!a.report.empty()) std::printf("  report %s\n", a.report.c_str());
}

// `complete` false: a snapshot while tuning goes on (rewritten every few seconds, so a run that is
// killed leaves what it had done; the database keeps the tunings themselves).
void write_report(const TuneModelArgs& a, const Collected& c, double wall_s,
                  const std::string& device, const std::vector<int>& gpus, bool complete = true) {
  if (a.report.empty()) return;
  nlohmann::json j;
  j["complete"] = complete;
  j["checkpoint"] = a.checkpoint;
  j["device"] = device;
  j["gpus"] = gpus;
  j["ns"] = split_commas(a.ns);
  j["dtypes"] = split_commas(a.dtypes);
  j["wall_s"] = wall_s;
  j["tensors"] = c.items;
  j["checks"] = c.checks;
  j["worker_errors"] = c.worker_errors;
  const std::string tmp = a.report + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(2) << "\n";
    if (!f) throw UserError(fmt::format("--report {}: cannot write", a.report));
  }
  std::error_code ec;
  fs::rename(tmp, a.report, ec);
  if (ec) throw UserError(fmt::format("--report {}: cannot write: {}", a.report, ec.message()));
}

// Calls write_report(..., complete = false) at most every few seconds.
class ReportSnapshots {
 public:
  ReportSnapshots(const TuneModelArgs& a, const std::string& device, const std::vector<int>& gpus)
      : a_(a), device_(device), gpus_(gpus), t0_(std::chrono::steady_clock::now()), last_(t0_) {}
  void maybe_write(const Collected& c) {
    const auto now = std::chrono::steady_clock::now();
    if (a_.report.empty() || now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    write_report(a_, c, std::chrono::duration<double>(now - t0_).count(), device_, gpus_, false);
  }

 private:
  const TuneModelArgs& a_;
  std::string device_;
  std::vector<int> gpus_;
  std::chrono::steady_clock::time_point t0_, last_;
};

// Worker side of --gpus: tunes the listed tensors and writes one JSON line per result.
void run_worker(const TuneModelArgs& a) {
  const CompileTarget target = detect_target(0);
  ModelTuneOptions o = options_of(a, target);
  const Checkpoint ck = open_checkpoint(a.checkpoint);
  const std::vector<std::string> names = read_lines(a.worker_tensors);
  o.on_item = [](const ModelTuneItem& it, int, int) {
    std::printf("%s\n", nlohmann::json{{"item", to_json(it)}}.dump().c_str());
    std::fflush(stdout);
  };
  const ModelTuneReport r = tune_model(ck, names, target, o);
  for (const ModelTuneCheck& c : r.checks)
    std::printf("%s\n", nlohmann::json{{"check", to_json(c)}}.dump().c_str());
  std::printf("%s\n", nlohmann::json{{"done", r.wall_s}}.dump().c_str());
  std::fflush(stdout);
}

struct Worker {
  int gpu = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
  bool done = false;
};

// Forks one worker per GPU, each on its own share of `names`, and gathers their lines.
Collected run_workers(const TuneModelArgs& a, const std::vector<std::string>& names,
                      const std::vector<int>& gpus, ProgressLine& bar, ReportSnapshots& snaps) {
  const fs::path tmp = fs::temp_directory_path() / fmt::format("sparsegen_tune_model_{}", getpid());
  fs::create_directories(tmp);
  std::vector<Worker> workers;
  for (size_t w = 0; w < gpus.size() && w < names.size(); ++w) {
    const std::string list = (tmp / fmt::format("gpu{}.txt", gpus[w])).string();
    {
      std::ofstream f(list);
      for (size_t i = w; i < names.size(); i += gpus.size()) f << names[i] << "\n";
    }
    std::vector<std::string> args{"sparsegen", "tune-model", a.checkpoint, "--worker-tensors",
                                  list};
    for (const std::string& n : a.ns) args.insert(args.end(), {"-n", n});
    for (const std::string& d : a.dtypes) args.insert(args.end(), {"--dtype", d});
    if (a.top_k >= 0) args.insert(args.end(), {"--top-k", std::to_string(a.top_k)});
    if (a.refine >= 0) args.insert(args.end(), {"--refine", std::to_string(a.refine)});
    const int g = static_cast<int>(gpus.size());
    args.insert(args.end(), {"--share-candidates", std::to_string(a.share_candidates),
                             "--verify-sample", std::to_string((a.verify_sample + g - 1) / g)});
    if (!a.cache_dir.empty()) args.insert(args.end(), {"--cache-dir", a.cache_dir});
    if (a.no_share) args.push_back("--no-share");
    if (a.force) args.push_back("--force");
    int fds[2];
    if (pipe(fds) != 0) throw UserError(fmt::format("--gpus: pipe failed: {}", strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0) throw UserError(fmt::format("--gpus: fork failed: {}", strerror(errno)));
    if (pid == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      setenv("CUDA_VISIBLE_DEVICES", std::to_string(gpus[w]).c_str(), 1);
      std::vector<char*> argv;
      for (std::string& s : args) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "sparsegen: error: --gpus: cannot run myself: %s\n", strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    workers.push_back({gpus[w], pid, fds[0], {}, false});
  }
  Collected c;
  int done = 0;
  size_t open_fds = workers.size();
  while (open_fds > 0) {
    std::vector<pollfd> pf;
    std::vector<Worker*> who;
    for (Worker& w : workers)
      if (w.fd >= 0) {
        pf.push_back({w.fd, POLLIN, 0});
        who.push_back(&w);
      }
    if (poll(pf.data(), pf.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw UserError(fmt::format("--gpus: poll failed: {}", strerror(errno)));
    }
    for (size_t k = 0; k < pf.size(); ++k) {
      if (pf[k].revents == 0) continue;
      Worker& w = *who[k];
      char buf[65536];
      const ssize_t got = read(w.fd, buf, sizeof buf);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        close(w.fd);
        w.fd = -1;
        --open_fds;
        continue;
      }
      w.buffer.append(buf, static_cast<size_t>(got));
      for (size_t nl; (nl = w.buffer.find('\n')) != std::string::npos;) {
        const std::string line = w.buffer.substr(0, nl);
        w.buffer.erase(0, nl + 1);
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;
        if (j.contains("item")) {
          nlohmann::json it = j["item"];
          it["gpu"] = w.gpu;
          if (it["status"] == "error") {
            bar.clear();
            std::fprintf(stderr, "sparsegen: error: %s\n", it["error"].get<std::string>().c_str());
          }
          bar.update(++done, it["tensor"].get<std::string>());
          c.items.push_back(std::move(it));
          snaps.maybe_write(c);
        } else if (j.contains("check")) {
          c.checks.push_back(j["check"]);
        } else if (j.contains("done")) {
          w.done = true;
        }
      }
    }
  }
  for (Worker& w : workers) {
    int status = 0;
    waitpid(w.pid, &status, 0);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!w.done || (!ok && !(WIFEXITED(status) && WEXITSTATUS(status) == 1)))
      c.worker_errors.push_back(fmt::format(
          "the worker on GPU {} {} before finishing its tensors (rerun to resume: what it stored "
          "is kept)",
          w.gpu,
          WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                              : fmt::format("exited with code {}", WEXITSTATUS(status))));
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return c;
}

void run_tune_model(const TuneModelArgs& a) {
  if (!a.worker_tensors.empty()) return run_worker(a);
  const Checkpoint ck = open_checkpoint(a.checkpoint);
  const std::vector<std::string> names =
      select_tensors(ck, a.include, a.exclude.empty() ? kDefaultModelExcludes : a.exclude);
  std::vector<int> gpus;
  if (!a.gpus.empty()) {
    if (!a.arch.empty()) throw UserError("--gpus and --arch: --arch compiles offline, on no GPU");
    gpus = gpus_flag(a.gpus);
  }
  const CompileTarget target = a.arch.empty() ? detect_target(0) : offline_target(a.arch);
  const ModelTuneOptions o0 = options_of(a, target);  // checks the flags before any work
  const int total = static_cast<int>(names.size() * o0.ns.size() * o0.dtypes.size());
  const std::string db = kdb::db_path(a.cache_dir).string();
  std::string device = target.has_gpu ? target.device_name : "offline " + target.arch;
  if (gpus.size() > 1) device = fmt::format("{} GPUs: {}", gpus.size(), device);

  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine bar("tunings", total);
  ReportSnapshots snaps(a, device, gpus);
  Collected c;
  if (!gpus.empty()) {
    // Workers also for one GPU: CUDA_VISIBLE_DEVICES must be set before the driver starts,
    // and this process started it to count the devices.
    c = run_workers(a, names, gpus, bar, snaps);
  } else {
    ModelTuneOptions o = o0;
    o.on_item = [&](const ModelTuneItem& it, int done, int) {
      if (it.status == "error") {
        bar.clear();
        std::fprintf(stderr, "sparsegen: error: %s\n", it.error.c_str());
      }
      bar.update(done, it.tensor);
      c.items.push_back(to_json(it));
      snaps.maybe_write(c);
    };
    const ModelTuneReport r = tune_model(ck, names, target, o);
    for (const ModelTuneCheck& k : r.checks) c.checks.push_back(to_json(k));
  }
  bar.clear();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_report(a, c, wall_s, device, gpus);
  print_summary(a, c, names.size(), wall_s, device, db);
  for (const std::string& e : c.worker_errors)
    std::fprintf(stderr, "sparsegen: error: %s\n", e.c_str());
  int errors = 0;
  for (const auto& it : c.items) errors += it["status"] == "error";
  if (!c.worker_errors.empty() && errors == 0)
    throw CudaError(c.worker_errors.front(), "worker", 0, "WORKER_FAILED");
  if (errors > 0)
    throw UserError(fmt::format("{} of {} tunings failed (named above{}); the others are stored",
                                errors, c.items.size(),
                                a.report.empty() ? "" : " and in " + a.report));
}

}  // namespace

void register_tune_model(CLI::App& app) {
  auto args = std::make_shared<TuneModelArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune-model", "Tune every selected 2-D weight of a checkpoint (resumable, multi-GPU)");
  cmd->add_option("checkpoint", args->checkpoint,
                  "a .safetensors file or a shard index (model.safetensors.index.json)")
      ->required();
  cmd->add_option("--include", args->include,
                  "glob of tensor names to tune (repeatable; default: every 2-D tensor)")
      ->allow_extra_args(false);
  cmd->add_option("--exclude", args->exclude,
                  "glob of tensor names to skip (repeatable; default: *embed_tokens* and "
                  "*lm_head*)")
      ->allow_extra_args(false);
  cmd->add_option("-n", args->ns, "dense columns (token counts), comma-separated (default 1)")
      ->allow_extra_args(false);
  cmd->add_option("--dtype", args->dtypes, "value dtypes, comma-separated (default fp16)")
      ->allow_extra_args(false);
  cmd->add_option("--top-k", args->top_k,
                  "candidates measured per full search (default 8 with a GPU, 0 without)");
  cmd->add_option("--refine", args->refine, "second-round candidates (default top-k / 2)");
  cmd->add_option("--gpus", args->gpus, "all, or GPU numbers (0,1): one worker process per GPU");
  cmd->add_option("--report", args->report, "write a JSON report (one entry per tensor, N, dtype)");
  cmd->add_flag("--no-share", args->no_share,
                "search every tensor in full (no reuse of similar tensors' searches)");
  cmd->add_option("--share-candidates", args->share_candidates,
                  "schedules a similar tensor measures: its group's fastest (default 3)");
  cmd->add_option("--verify-sample", args->verify_sample,
                  "afterwards re-search this many picks 4x deeper and report how close they are");
  cmd->add_option("--cache-dir", args->cache_dir,
                  "kernel database folder (default $SPARSEGEN_CACHE_DIR, else "
                  "$XDG_CACHE_HOME/sparsegen, else ~/.cache/sparsegen)");
  cmd->add_option("--arch", args->arch, "compile offline for this architecture (model only)");
  cmd->add_flag("--force", args->force, "search again even when the database has a tuning");
  cmd->add_option("--worker-tensors", args->worker_tensors)->group("");  // internal: --gpus
  cmd->callback([args] { run_tune_model(*args); });
}

}  // namespace sparsegen::cli
