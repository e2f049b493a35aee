// Uses an installed sparsegen through its public header only: loads a matrix, compiles an SpMM
// kernel for it and, on a machine with a GPU, runs C = A·B and checks C against the host.
// Without a GPU it compiles offline for sm_90, prints the schedule and exits 0.
//
//   consumer [MATRIX] [N]     (default: tiny.mtx next to this file, N = 8)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <sparsegen/sparsegen.h>

namespace {

// Exits with the CUDA runtime's message when a call fails.
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "consumer: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Runs C = A·B on the GPU with B[j][c] = 1 + (j + c) % 3 / 4 and returns
// max |C - A·B| / sum |a·b| over the entries of C.
double run_and_check(const sparsegen::CsrMatrix& a, const sparsegen::Kernel& k, int64_t n) {
  std::vector<float> b(static_cast<size_t>(a.cols * n)), c(static_cast<size_t>(a.rows * n));
  for (int64_t j = 0; j < a.cols; ++j)
    for (int64_t col = 0; col < n; ++col)
      b[static_cast<size_t>(j * n + col)] = 1.0f + static_cast<float>((j + col) % 3) / 4.0f;
  void* db = nullptr;
  void* dc = nullptr;
  check(cudaMalloc(&db, b.size() * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dc, c.size() * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  k(db, dc);  // C = A·B on the default stream
  check(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(db), "cudaFree");
  check(cudaFree(dc), "cudaFree");

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
      else if (got != 0) max_rel = 1;  // an empty row must give 0
    }
  return max_rel;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : CONSUMER_MATRIX;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 8;
  try {
    const sparsegen::LoadedMatrix loaded = sparsegen::load_matrix(file);
    const sparsegen::CsrMatrix& a = loaded.matrix;
    std::printf("matrix   %s (%s): %lld x %lld, %lld nonzeros\n", file.c_str(),
                loaded.format.c_str(), static_cast<long long>(a.rows),
                static_cast<long long>(a.cols), static_cast<long long>(a.nnz()));

    // A Runtime on device 0 throws CudaError when there is no driver or no GPU.
    std::string no_gpu;
    try {
      const sparsegen::Runtime rt;
      const sparsegen::Kernel k = rt.spmm(a, n);
      std::printf("device   %s\nschedule %s\n", rt.device_name().c_str(), k.schedule().c_str());
      const double err = run_and_check(a, k, n);
      std::printf("check    max |C - A·B| / sum|a·b| = %.3g %s\n", err,
                  err < 1e-5 ? "(ok)" : "(TOO LARGE)");
      return err < 1e-5 ? 0 : 1;
    } catch (const sparsegen::CudaError& e) {
      no_gpu = e.what();
    }

    const sparsegen::Runtime rt = sparsegen::Runtime::offline("sm_90");
    const sparsegen::Kernel k = rt.spmm(a, n);
    std::printf("schedule %s\n         (%s)\n", k.schedule().c_str(), k.schedule_reason().c_str());
    std::printf("kernel   %s for %s, %zu bytes of CUDA source\n",
                k.cache_hit() ? "from the cache" : "compiled", k.arch().c_str(),
                k.cuda_source().size());
    std::printf("note     no GPU present (%s): not run\n", no_gpu.c_str());
    return 0;
  } catch (const sparsegen::UserError& e) {
    std::fprintf(stderr, "consumer: bad input: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
  }
  return 1;
}
