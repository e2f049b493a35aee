// The C++ API end to end: load a matrix, get a tuned kernel (from the kernel database, or by
// tuning it now), run C = A·B on the GPU and check the result on the host.
//
//   build/examples/spmm_example [MATRIX] [N]      (default: the bundled example, N = 32)
//
// Without a GPU it compiles offline (cost model only, cubin for sm_90), prints the schedule it
// chose and exits 0 with a note. Cache: $SPARSEGEN_CACHE_DIR, else ~/.cache/sparsegen; run it
// twice to see the second call come from the cache.
#include <sparsegen/sparsegen.h>

// In-tree only: device buffers and streams of the internal driver wrapper (an installed consumer
// uses the CUDA runtime instead; see install_consumer/).
#include "runtime/cuda_driver.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : SPARSEGEN_EXAMPLE_MATRIX;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 32;
  try {
    const sparsegen::CsrMatrix a = sparsegen::load_matrix(file).matrix;
    std::printf("matrix   %s: %lld x %lld, %lld nonzeros\n", file.c_str(),
                static_cast<long long>(a.rows), static_cast<long long>(a.cols),
                static_cast<long long>(a.nnz()));
    sparsegen::SpmmOptions opts;  // fp32, row-major B and C, tuned with the default top-k

    std::string why;
    if (!sparsegen::cuda::driver_available(&why)) {
      const sparsegen::Runtime rt = sparsegen::Runtime::offline("sm_90");
      const sparsegen::Kernel k = rt.spmm(a, n, opts);
      std::printf("schedule %s\n         (%s)\n", k.schedule().c_str(),
                  k.schedule_reason().c_str());
      std::printf("note     no GPU here (%s): compiled offline for %s%s, not run\n", why.c_str(),
                  k.arch().c_str(), k.cache_hit() ? " (from the cache)" : "");
      return 0;
    }

    sparsegen::Runtime rt;  // device 0
    const auto t0 = std::chrono::steady_clock::now();
    const sparsegen::Kernel k = rt.spmm(a, n, opts);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("device   %s\nschedule %s\n         (%s)\n", rt.device_name().c_str(),
                k.schedule().c_str(), k.schedule_reason().c_str());
    std::printf("kernel   %s in %.1f ms; measured %s\n",
                k.cache_hit() ? "from the cache" : "tuned", ms,
                k.measured_ms() ? (std::to_string(*k.measured_ms()) + " ms").c_str() : "-");

    // B[j][c] = 1 + (j + c) % 3 / 4, row-major K x N; C is M x N.
    std::vector<float> b(static_cast<size_t>(a.cols * n)), c(static_cast<size_t>(a.rows * n));
    for (int64_t j = 0; j < a.cols; ++j)
      for (int64_t col = 0; col < n; ++col)
        b[static_cast<size_t>(j * n + col)] = 1.0f + static_cast<float>((j + col) % 3) / 4.0f;
    sparsegen::cuda::DeviceBuffer db(b.size() * sizeof(float) + 4), dc(c.size() * sizeof(float) + 4);
    db.upload(b);
    sparsegen::cuda::Stream stream;
    k(reinterpret_cast<const void*>(db.ptr()), reinterpret_cast<void*>(dc.ptr()), stream.get());
    stream.synchronize();
    dc.download(c);

    double max_rel = 0;
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t col = 0; col < n; ++col) {
        double want = 0, scale = 0;
        for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
          const double t = double(a.values[e]) * b[static_cast<size_t>(a.col_idx[e] * n + col)];
          want += t;
          scale += std::fabs(t);
        }
        const double got = c[static_cast<size_t>(r * n + col)];
        if (scale > 0) max_rel = std::fmax(max_rel, std::fabs(got - want) / scale);
      }
    std::printf("check    max |C - A·B| / sum|a·b| = %.3g %s\n", max_rel,
                max_rel < 1e-5 ? "(ok)" : "(TOO LARGE)");
    return max_rel < 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmm_example: %s\n", e.what());
    return 1;
  }
}
