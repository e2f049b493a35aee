// When each worker of the twell kernel 2 (balance=queue) is busy, for the question Nsight Compute
// leaves open: its SMs sit idle for 13-24 % of the kernel's cycles, but is that a tail at the end
// (long tokens' parts taken last) or gaps between items (taking work, setting up a token)?
//
// It runs sg::twell_down from templates/sg_twell.cuh as the generated kernel does (bf16, tile 128,
// comp 4, 8 warps, gated, the queue), on activations drawn as the FFN bench's generator draws
// them: per-token counts log-normal with sigma 1.2 around the mean, the first token 10x the mean,
// hidden units uniform. Weights and x are random bf16; the TwELL buffer is built on the host. With
// SG_TWELL_TRACE_ITEM defined, every worker's thread 0 records (time, SM, worker, token, part,
// parts, phase) when it takes an item (phase 0), starts its batches (1) and has written its row
// (2).
//
// Build and run (on the GPU machine, from the repository root):
//   nvcc -O3 -arch=sm_90 -std=c++17 -Itemplates -o twell_timeline
//        tools/debug/twell_timeline_probe.cu
//   ./twell_timeline [--k 2048|4096] [--n N] [--m M] [--mean 30] [--teams 4|2] [--even]
//                    [--seed 1] [--items FILE.csv] [--dump Y.bin] [--host-only]
// (or `STEPS=bench BENCH_ONLY=twell_timeline bash tools/gpu_run.sh`).
// Prints one JSON object: the kernel's time (events, median of 5 traced runs, L2 not flushed),
// the traced span, per-SM idle time at the start and the end, per-worker busy time and the gaps
// between its items, and the items still running in the last 10 % of the span.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

struct TraceRecord {
  unsigned long long time;         // %globaltimer, ns
  unsigned sm, worker, row, meta;  // meta: part | parts << 8 | phase << 16
};
__device__ TraceRecord* g_trace;
__device__ unsigned g_trace_count;
__device__ unsigned g_trace_capacity;

__device__ __forceinline__ void sg_probe_trace(unsigned worker, int row, int part, int parts,
                                               int phase) {
  unsigned long long t;
  unsigned sm;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  const unsigned i = atomicAdd(&g_trace_count, 1u);
  if (i < g_trace_capacity)
    g_trace[i] = {t, sm, worker, static_cast<unsigned>(row),
                  static_cast<unsigned>(part) | static_cast<unsigned>(parts) << 8 |
                      static_cast<unsigned>(phase) << 16};
}
#define SG_TWELL_TRACE_ITEM(worker, row, part, parts, phase) \
  ::sg_probe_trace(worker, row, part, parts, phase)

#include "probe_common.cuh"
#include "sg_twell.cuh"

using T = __nv_bfloat16;
constexpr int kTile = 128, kCap = 32, kWarps = 8, kBatch = 64, kPartBatches = 2, kMaxParts = 255;
constexpr int kQueueGrid = 1024, kQueuePool = 1024;
// ir/twell_schedule.h's balance=even constants (the costs may be set with -D to try others).
#ifndef TWELL_EVEN_TOKEN_COST
#define TWELL_EVEN_TOKEN_COST 8
#endif
#ifndef TWELL_EVEN_PIECE_COST
#define TWELL_EVEN_PIECE_COST 32
#endif
constexpr int kEvenTokenCost = TWELL_EVEN_TOKEN_COST, kEvenPieceCost = TWELL_EVEN_PIECE_COST;
constexpr int kEvenBlocksPerSm = 2;

// The generated kernel's body for one (K, teams): G column groups of 8 per thread.
// BALANCE 1 (queue) or 2 (even: 2 blocks per multiprocessor, the IR's work-line costs).
template <int TEAMS, int KP, int BALANCE>
__global__ void __launch_bounds__(kWarps * 32, BALANCE == 2 ? 2 : 1)
    down_kernel(const T* x, const T* w_up_t, const T* w_down, const unsigned* tw, T* y, float* ws,
                int* counters, int* qctl, unsigned* qitem, int qpool, int m, int n, int tiles,
                int entries_off, int backup_off, int tokens_off) {
  extern __shared__ __align__(16) float sg_smem[];
  constexpr int kThreads = kWarps / TEAMS * 32;
  constexpr int G = (KP / 8 + kThreads - 1) / kThreads;
  sg::twell_down<T, kWarps, TEAMS, kTile, kCap, 1, G, KP, 1, BALANCE, kPartBatches, kMaxParts,
                 kEvenTokenCost, kEvenPieceCost>(x, w_up_t, w_down, tw, y, sg_smem, ws, counters,
                                                 qctl, qitem, qpool, 1.0f, 0.0f, m, KP, n, tiles,
                                                 entries_off, backup_off, tokens_off);
}

// Random bf16 in [-scale, scale), from a hash of the index.
__global__ void fill_kernel(T* p, size_t count, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed * 2246822519u ^
                 static_cast<unsigned>(i >> 32) * 3266489917u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16(scale * (static_cast<float>(h >> 8) / 8388608.0f - 1.0f));
  }
}

int64_t align256(int64_t b) {
  return (b + 255) / 256 * 256;
}

struct Options {
  int k = 2048, n = 5632, m = 4096, teams = 4;
  double mean = 30;
  bool even = false;  // balance=even instead of the queue
  unsigned seed = 1;
  std::string items_csv;
  std::string dump;  // y of the last run (M x KP raw values), to compare kernel variants
  bool host_only = false;  // the activations' statistics only (no GPU needed)
};

Options parse(int argc, char** argv) {
  Options o;
  bool n_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--k")
      o.k = std::atoi(value());
    else if (a == "--n") {
      o.n = std::atoi(value());
      n_set = true;
    } else if (a == "--m")
      o.m = std::atoi(value());
    else if (a == "--mean")
      o.mean = std::atof(value());
    else if (a == "--teams")
      o.teams = std::atoi(value());
    else if (a == "--even")
      o.even = true;
    else if (a == "--seed")
      o.seed = static_cast<unsigned>(std::atoi(value()));
    else if (a == "--items")
      o.items_csv = value();
    else if (a == "--dump")
      o.dump = value();
    else if (a == "--host-only")
      o.host_only = true;
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (!n_set) o.n = o.k == 4096 ? 14336 : 5632;
  if (!((o.k == 2048 && o.teams == 4) || (o.k == 4096 && o.teams == 2))) {
    std::fprintf(stderr, "--k 2048 --teams 4 or --k 4096 --teams 2 (the instantiated kernels)\n");
    std::exit(2);
  }
  if (o.m < 1 || o.n < 1 || o.mean <= 0 || o.mean > o.n) {
    std::fprintf(stderr, "--m, --n > 0 and 0 < --mean <= N\n");
    std::exit(2);
  }
  return o;
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int m = o.m, n = o.n, k = o.k, kp = k;  // K is a multiple of 8
  const int tiles = (n + kTile - 1) / kTile;
  const int64_t cells = int64_t{m} * tiles;
  const int64_t entries_b = align256(cells * 4), backup_b = align256(entries_b + cells * kCap * 4);
  const int64_t tokens_b = align256(backup_b + int64_t{m} * n * 2);
  const int64_t tw_bytes = align256(tokens_b + int64_t{m} * 8);

  // Activations: counts per token, distinct hidden units, values in [0.5, 1.5).
  std::mt19937_64 rng(o.seed);
  const double sigma = 1.2, mu = std::log(o.mean) - sigma * sigma / 2;
  std::lognormal_distribution<double> count_of(mu, sigma);
  std::uniform_real_distribution<float> value_of(0.5f, 1.5f);
  std::vector<unsigned> tw(tw_bytes / 4, 0u);
  int* counts = reinterpret_cast<int*>(tw.data());
  unsigned* entries = tw.data() + entries_b / 4;
  uint16_t* backup = reinterpret_cast<uint16_t*>(tw.data() + backup_b / 4);
  std::vector<int> cols(n), batches(m);
  for (int c = 0; c < n; ++c) cols[c] = c;
  int64_t total = 0, longest = 0;
  for (int r = 0; r < m; ++r) {
    double d = r == 0 ? 10 * o.mean : count_of(rng);
    const int cnt = static_cast<int>(std::min<double>(n, std::max(0.0, std::round(d))));
    for (int i = 0; i < cnt; ++i) std::swap(cols[i], cols[i + rng() % (n - i)]);
    std::sort(cols.begin(), cols.begin() + cnt);
    for (int i = 0; i < cnt; ++i) {
      const int c = cols[i], t = c / kTile;
      const __nv_bfloat16 h = __float2bfloat16(value_of(rng));
      uint16_t bits;
      std::memcpy(&bits, &h, 2);
      backup[int64_t{r} * n + c] = bits;
      int& count = counts[int64_t{r} * tiles + t];
      if (count < kCap)
        entries[(int64_t{r} * tiles + t) * kCap + count] =
            static_cast<unsigned>(c - t * kTile) << 16 | bits;
      ++count;
    }
    int packed = 0, over = 0;
    for (int t = 0; t < tiles; ++t) {
      const int c = counts[int64_t{r} * tiles + t];
      packed += c > kCap ? 0 : c;
      over += c > kCap ? 1 : 0;
    }
    batches[r] = (packed + kBatch - 1) / kBatch + over * (kTile / kBatch);
    tw[tokens_b / 4 + 2 * r] = static_cast<unsigned>(packed);
    tw[tokens_b / 4 + 2 * r + 1] = static_cast<unsigned>(over);
    total += cnt;
    longest = std::max<int64_t>(longest, cnt);
  }

  if (o.host_only) {
    // How the work is spread over tokens: batches per token, and the share of all batches in
    // tokens that the queue cuts into parts (more than kPartBatches batches).
    int64_t all = 0, cut = 0, cut_tokens = 0, most = 0;
    for (int b : batches) {
      all += b;
      most = std::max<int64_t>(most, b);
      if (b > kPartBatches) {
        cut += b;
        ++cut_tokens;
      }
    }
    std::printf(
        "{\"k\": %d, \"n\": %d, \"m\": %d, \"mean\": %.1f, \"nonzeros\": %lld, "
        "\"longest_token\": %lld, \"batches\": %lld, \"most_batches\": %lld, "
        "\"cut_tokens\": %lld, \"cut_batch_share\": %.3f}\n",
        k, n, m, o.mean, static_cast<long long>(total), static_cast<long long>(longest),
        static_cast<long long>(all), static_cast<long long>(most),
        static_cast<long long>(cut_tokens), all > 0 ? double(cut) / all : 0.0);
    return 0;
  }

  // Device buffers: weights (W_u^T, W_d: N x KP each), x, y, TwELL, the queue's workspace.
  T *w = nullptr, *x = nullptr, *y = nullptr;
  unsigned* d_tw = nullptr;
  CK(cudaMalloc(&w, sizeof(T) * 2 * int64_t{n} * kp));
  CK(cudaMalloc(&x, sizeof(T) * int64_t{m} * kp));
  CK(cudaMalloc(&y, sizeof(T) * int64_t{m} * kp));
  CK(cudaMalloc(&d_tw, tw_bytes));
  fill_kernel<<<1024, 256>>>(w, 2 * size_t(n) * kp, 7u, 0.05f);
  fill_kernel<<<1024, 256>>>(x, size_t(m) * kp, 11u, 1.0f);
  CK(cudaGetLastError());
  CK(cudaMemcpy(d_tw, tw.data(), tw_bytes, cudaMemcpyHostToDevice));
  const int64_t max_parts = std::min<int64_t>(
      kMaxParts,
      std::max<int64_t>(1, (int64_t{tiles} * (kTile / kBatch) + kPartBatches - 1) / kPartBatches));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid =
      o.even ? kEvenBlocksPerSm * sms
             : static_cast<int>(std::min<int64_t>((m + o.teams - 1) / o.teams, kQueueGrid));
  // The queue: a pool of rows, their counters, its control words and items; even: a row and a
  // counter per worker.
  const int64_t rows = o.even ? int64_t{grid} * o.teams : std::min<int64_t>(m, kQueuePool);
  const int64_t ws_counters = rows * kp, ws_control = ws_counters + rows;
  const int64_t ws_items = (ws_control + 8 + 1) / 2 * 2;
  const int64_t ws_bytes = (ws_items + 2 * int64_t{m} * (max_parts - 1)) * 4;
  float* ws = nullptr;
  CK(cudaMalloc(&ws, ws_bytes));
  CK(cudaMemset(ws, 0, ws_bytes));

  // The trace: 3 records per item; items are at most tokens x parts.
  const unsigned capacity = static_cast<unsigned>(
      std::min<int64_t>(int64_t{3} * (m + int64_t{m} * (max_parts - 1)), int64_t{64} << 20));
  TraceRecord* d_trace = nullptr;
  CK(cudaMalloc(&d_trace, sizeof(TraceRecord) * capacity));
  CK(cudaMemcpyToSymbol(g_trace, &d_trace, sizeof d_trace));
  CK(cudaMemcpyToSymbol(g_trace_capacity, &capacity, sizeof capacity));

  const int64_t worker_smem =
      (int64_t{kp} * 2 + kBatch * 12 + (tiles + 1) * 4 + tiles * 4 + 32 + 15) / 16 * 16;
  const int64_t line_smem = o.even ? (kWarps * 33 + 1) * 8 : 0;
  const int smem = static_cast<int>(worker_smem * o.teams + line_smem);
  // The instantiated kernels: (K 2048, 4 teams) and (K 4096, 2 teams), queue or even.
  auto run = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return [=]() {
      kernel<<<grid, kWarps * 32, smem>>>(
          x, w, w + int64_t{n} * kp, d_tw, y, ws, reinterpret_cast<int*>(ws + ws_counters),
          reinterpret_cast<int*>(ws + ws_control), reinterpret_cast<unsigned*>(ws + ws_items),
          static_cast<int>(rows), m, n, tiles, static_cast<int>(entries_b / 4),
          static_cast<int>(backup_b / 4), o.even ? static_cast<int>(tokens_b / 4) : -1);
      CK(cudaGetLastError());
    };
  };
  const auto launch = o.k == 2048
                          ? (o.even ? run(down_kernel<4, 2048, 2>) : run(down_kernel<4, 2048, 1>))
                          : (o.even ? run(down_kernel<2, 4096, 2>) : run(down_kernel<2, 4096, 1>));
  // The trace count is reset before the events, so that only the kernel is timed.
  auto reset_trace = [&]() {
    const unsigned zero = 0;
    CK(cudaMemcpyToSymbol(g_trace_count, &zero, sizeof zero));
  };

  // Five traced runs after a warm-up (module load, caches); the last one's trace is read.
  const std::vector<float> ms = time_launches(5, launch, reset_trace);
  unsigned count = 0;
  CK(cudaMemcpyFromSymbol(&count, g_trace_count, sizeof count));
  if (count > capacity) {
    std::fprintf(stderr, "trace overflow: %u records, room for %u\n", count, capacity);
    return 1;
  }
  if (!o.dump.empty()) {
    std::vector<T> hy(size_t(m) * kp);
    CK(cudaMemcpy(hy.data(), y, sizeof(T) * hy.size(), cudaMemcpyDeviceToHost));
    FILE* f = std::fopen(o.dump.c_str(), "wb");
    if (f == nullptr || std::fwrite(hy.data(), sizeof(T), hy.size(), f) != hy.size()) {
      std::fprintf(stderr, "cannot write %s\n", o.dump.c_str());
      return 1;
    }
    std::fclose(f);
  }
  std::vector<TraceRecord> rec(count);
  CK(cudaMemcpy(rec.data(), d_trace, sizeof(TraceRecord) * count, cudaMemcpyDeviceToHost));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));

  // Items of the last traced run: per worker, its records in time order, 0 -> 1 -> 2.
  std::sort(rec.begin(), rec.end(), [](const TraceRecord& a, const TraceRecord& b) {
    if (a.worker != b.worker) return a.worker < b.worker;
    return a.time != b.time ? a.time < b.time : (a.meta >> 16) < (b.meta >> 16);  // same tick
  });
  struct Item {
    unsigned worker, sm, row, part, parts;
    double take, start, end;  // µs from the first take
  };
  std::vector<Item> items;
  unsigned long long t0 = ~0ull, t1 = 0;
  for (const TraceRecord& r : rec) {
    t0 = std::min(t0, r.time);
    t1 = std::max(t1, r.time);
  }
  for (size_t i = 0; i + 2 < rec.size(); ++i) {
    const TraceRecord &a = rec[i], &b = rec[i + 1], &c = rec[i + 2];
    if (a.worker != c.worker || (a.meta >> 16) != 0 || (b.meta >> 16) != 1 || (c.meta >> 16) != 2)
      continue;
    items.push_back({a.worker, a.sm, a.row, c.meta & 0xff, (c.meta >> 8) & 0xff,
                     (a.time - t0) / 1e3, (b.time - t0) / 1e3, (c.time - t0) / 1e3});
    i += 2;
  }
  const double span = (t1 - t0) / 1e3;

  // Per SM: first take and last end; per worker: busy (take .. end of its items) and gaps.
  std::vector<double> sm_first(sms, span), sm_last(sms, 0.0);
  std::vector<double> busy(int64_t{grid} * o.teams, 0.0), last_end(int64_t{grid} * o.teams, -1);
  double gaps = 0, setup = 0;
  int64_t gap_count = 0;
  for (const Item& it : items) {
    if (it.sm < static_cast<unsigned>(sms)) {
      sm_first[it.sm] = std::min(sm_first[it.sm], it.take);
      sm_last[it.sm] = std::max(sm_last[it.sm], it.end);
    }
    busy[it.worker] += it.end - it.take;
    setup += it.start - it.take;
    if (last_end[it.worker] >= 0) {
      gaps += it.take - last_end[it.worker];
      ++gap_count;
    }
    last_end[it.worker] = it.end;
  }
  double head = 0, tail = 0, tail_max = 0;
  for (int s = 0; s < sms; ++s) {
    head += sm_first[s];
    tail += span - sm_last[s];
    tail_max = std::max(tail_max, span - sm_last[s]);
  }
  double busy_sum = 0;
  int workers_used = 0;
  for (size_t i = 0; i < busy.size(); ++i)
    if (last_end[i] >= 0) {
      busy_sum += busy[i];
      ++workers_used;
    }
  // Items still running in the last 10 % of the span, longest first.
  std::vector<Item> late;
  for (const Item& it : items)
    if (it.end > 0.9 * span) late.push_back(it);
  std::sort(late.begin(), late.end(),
            [](const Item& a, const Item& b) { return a.end - a.take > b.end - b.take; });

  std::printf("{\n  \"device\": \"%s\",\n  \"probe\": \"twell_timeline\",\n", prop.name);
  std::printf(
      "  \"k\": %d, \"n\": %d, \"m\": %d, \"mean\": %.1f, \"teams\": %d, \"balance\": \"%s\", "
      "\"even_costs\": [%d, %d], \"seed\": %u,\n",
      k, n, m, o.mean, o.teams, o.even ? "even" : "queue", kEvenTokenCost, kEvenPieceCost, o.seed);
  std::printf("  \"nonzeros\": %lld, \"longest_token\": %lld, \"grid\": %d, \"sms\": %d,\n",
              static_cast<long long>(total), static_cast<long long>(longest), grid, sms);
  std::printf("  \"kernel_ms\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f},\n", ms[2], ms[0],
              ms[4]);
  std::printf("  \"items\": %zu, \"span_us\": %.1f,\n", items.size(), span);
  std::printf("  \"sm_idle_start_us\": {\"mean\": %.1f},\n", head / sms);
  std::printf("  \"sm_idle_end_us\": {\"mean\": %.1f, \"max\": %.1f},\n", tail / sms, tail_max);
  std::printf("  \"workers_used\": %d, \"worker_busy_share\": %.3f,\n", workers_used,
              workers_used > 0 ? busy_sum / (workers_used * span) : 0.0);
  // When the workers finish: the spread is what an even split leaves to the estimate.
  std::vector<double> ends;
  for (double e : last_end)
    if (e >= 0) ends.push_back(e);
  std::sort(ends.begin(), ends.end());
  auto at = [&](double q) { return ends.empty() ? 0.0 : ends[size_t(q * (ends.size() - 1))]; };
  std::printf(
      "  \"worker_end_us\": {\"p10\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"max\": %.1f},\n",
      at(0.1), at(0.5), at(0.9), at(1.0));
  std::printf(
      "  \"gap_between_items_us\": {\"mean\": %.2f}, \"take_to_start_us\": {\"mean\": %.2f},\n",
      gap_count > 0 ? gaps / gap_count : 0.0, items.empty() ? 0.0 : setup / items.size());
  std::printf("  \"late_items\": [");
  for (size_t i = 0; i < late.size() && i < 20; ++i) {
    const Item& it = late[i];
    std::printf(
        "%s\n    {\"token\": %u, \"batches\": %d, \"part\": %u, \"parts\": %u, \"sm\": %u, "
        "\"take_us\": %.1f, \"end_us\": %.1f}",
        i ? "," : "", it.row, batches[it.row], it.part, it.parts, it.sm, it.take, it.end);
  }
  std::printf("\n  ]\n}\n");
  if (!o.items_csv.empty()) {
    FILE* f = std::fopen(o.items_csv.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", o.items_csv.c_str());
      return 1;
    }
    std::fprintf(f, "worker,sm,token,batches,part,parts,take_us,start_us,end_us\n");
    for (const Item& it : items)
      std::fprintf(f, "%u,%u,%u,%d,%u,%u,%.3f,%.3f,%.3f\n", it.worker, it.sm, it.row,
                   batches[it.row], it.part, it.parts, it.take, it.start, it.end);
    std::fclose(f);
  }
  CK(cudaFree(d_trace));
  CK(cudaFree(ws));
  CK(cudaFree(d_tw));
  CK(cudaFree(y));
  CK(cudaFree(x));
  CK(cudaFree(w));
  return 0;
}
