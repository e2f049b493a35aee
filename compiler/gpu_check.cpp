#include "compiler/gpu_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <stdexcept>
#include <utility>

#include "compiler/device_check_inputs.h"
#include "ir/dtype.h"
#include "ir/error_bound.h"
#include "ir/family.h"
#include "ir/interpreter.h"
#include "ir/parallel.h"
#include "ir/quantize.h"
#include "ir/random.h"

namespace sparsegen {
namespace {

// Copies `words` 4-byte words on all cores (a graph's B, C and their bit patterns are gigabytes).
void copy_words(void* dst, const void* src, size_t words) {
  const auto n = static_cast<int64_t>(words);
  parallel_for(n, n, [&](int64_t i0, int64_t i1) {
    std::memcpy(static_cast<char*>(dst) + 4 * i0, static_cast<const char*>(src) + 4 * i0,
                static_cast<size_t>(i1 - i0) * 4);
  });
}

std::vector<char> to_dtype_bytes(const std::vector<float>& v, DType t) {
  std::vector<char> out;
  const auto n = static_cast<int64_t>(v.size());
  if (t == DType::F32) {
    resize_prefaulted(out, v.size() * 4);
    copy_words(out.data(), v.data(), v.size());
    return out;
  }
  resize_prefaulted(out, v.size() * 2);
  parallel_for(n, n * 4, [&](int64_t i0, int64_t i1) {
    for (auto i = static_cast<size_t>(i0); i < static_cast<size_t>(i1); ++i) {
      const uint16_t h = t == DType::F16 ? float_to_half_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  });
  return out;
}

void from_dtype_bytes(const std::vector<char>& bytes, DType t, std::vector<float>& out,
                      std::vector<uint32_t>& bits) {
  const size_t w = t == DType::F32 ? 4 : 2;
  const size_t n = bytes.size() / w;
  resize_prefaulted(out, n);
  resize_prefaulted(bits, n);
  parallel_for(static_cast<int64_t>(n), static_cast<int64_t>(n) * 2, [&](int64_t i0, int64_t i1) {
    for (auto i = static_cast<size_t>(i0); i < static_cast<size_t>(i1); ++i) {
      if (w == 4) {
        std::memcpy(&bits[i], bytes.data() + 4 * i, 4);
        std::memcpy(&out[i], &bits[i], 4);
      } else {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        bits[i] = h;
        out[i] = t == DType::F16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
      }
    }
  });
}

}  // namespace

uint32_t poison_bits(DType t) {
  // Quiet NaNs with a payload; the GPU's own NaNs are canonical (all mantissa bits set).
  switch (t) {
    case DType::F16:
      return 0x7E5Au;
    case DType::BF16:
      return 0x7FDAu;
    default:
      return 0x7FC0DEADu;
  }
}

CheckInputs make_check_inputs(const Problem& p, uint64_t seed, float alpha, float beta) {
  CheckInputs in;
  in.problem = p;
  in.alpha = alpha;
  in.beta = beta;
  // One splitmix64 stream over B then C0 (check_value: draw j directly), so the values are the
  // same on any number of threads and on the device (compiler/device_check_inputs.h).
  auto fill = [&](std::vector<float>& v, int64_t count, uint64_t first_draw, DType t) {
    resize_prefaulted(v, static_cast<size_t>(count));  // a graph's B and C are gigabytes
    parallel_for(count, count * 4, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        v[static_cast<size_t>(i)] = check_value(seed, first_draw + static_cast<uint64_t>(i), t);
    });
  };
  fill(in.b, p.k * p.n, 0, p.b_dtype());
  fill(in.c0, p.m * p.n, static_cast<uint64_t>(p.k * p.n), p.c_dtype());
  return in;
}

std::vector<float> make_check_b(const Problem& p, uint64_t seed) {
  Problem no_c = p;
  no_c.m = 0;  // the stream draws B first: the same values without C's
  return make_check_inputs(no_c, seed, 1.0f, 0.0f).b;
}

int64_t check_columns(const Problem& p) {
  if (p.n <= kCheckColumns && p.m * p.n <= kCheckElements) return p.n;
  if (!p.sparse_weight()) return p.n;  // gpu_check samples the SpMM/SpMV problems only
  const int64_t by_elements = p.m > 0 ? kCheckElements / p.m : p.n;
  return std::min(p.n, std::min(kCheckColumns, std::max(kCheckMinColumns, by_elements)));
}

std::vector<Reference> compute_references(const CsrMatrix& a,
                                          const std::vector<const CheckInputs*>& ins,
                                          bool with_reference_spmm) {
  std::vector<Reference> refs(ins.size());
  if (ins.empty()) return refs;
  const CheckInputs& in0 = *ins.front();
  const Problem& p = in0.problem;
  if (is_quantized(p.dtype)) {
    // The reference over the quantized inputs (ir/quantize.h): A and B dequantized (one fp32
    // product each, inside the bound's spare operations), then the fp32 problem's reference.
    CsrMatrix aq = a;
    const RowQuantized rq = quantize_rows(a, p.dtype);
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r + 1)];
           ++e)
        aq.values[static_cast<size_t>(e)] =
            rq.q[static_cast<size_t>(e)] * rq.scales[static_cast<size_t>(r)];
    const TokenQuantized tq = quantize_tokens(p, in0.b);
    std::vector<CheckInputs> fins;
    for (const CheckInputs* in : ins) {
      CheckInputs f = *in;
      f.problem = Problem::spmm(p.m, p.k, p.n, DType::F32, p.b_layout, p.c_layout);
      for (int64_t k = 0; k < p.k; ++k)
        for (int64_t c = 0; c < p.n; ++c) {
          const size_t i = static_cast<size_t>(p.b_index(k, c));
          f.b[i] = tq.q[i] * tq.scales[static_cast<size_t>(c)];
        }
      fins.push_back(std::move(f));
    }
    std::vector<const CheckInputs*> ptrs;
    for (const CheckInputs& f : fins) ptrs.push_back(&f);
    return compute_references(aq, ptrs, with_reference_spmm);
  }
  for (const CheckInputs* in : ins)
    SG_ASSERT(in->problem == p && in->b == in0.b,
              "compute_references: the inputs must share the problem and B");
  const size_t mn = static_cast<size_t>(p.m * p.n);
  for (Reference& ref : refs) {
    resize_prefaulted(ref.exact, mn);  // fresh: zeros
    resize_prefaulted(ref.scale, mn);
    resize_prefaulted(ref.indeterminate, mn);
  }
  const double u = std::ldexp(1.0, -24);
  const double fmax = std::numeric_limits<float>::max();
  const int64_t work = a.nnz() * p.n;
  // B row-major (a copy when it is column-major), so the inner loop over columns is contiguous.
  std::vector<float> b_rows;
  const float* brow = in0.b.data();
  if (p.b_layout == Layout::ColMajor && p.n > 1) {
    b_rows.resize(in0.b.size());
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t c = 0; c < p.n; ++c)
        b_rows[static_cast<size_t>(k * p.n + c)] = in0.b[static_cast<size_t>(p.b_index(k, c))];
    brow = b_rows.data();
  }
  const size_t n = static_cast<size_t>(p.n);
  // With B finite (the seeded inputs always are), a product is finite exactly when its A value is
  // (|a·b| < 2^128·1.5 in double): the finite-magnitude sum is then decided per nonzero, and the
  // loop over the columns has no branch.
  const bool f32 = p.dtype == DType::F32;  // A's values need no rounding
  const bool b_finite = std::all_of(brow, brow + static_cast<size_t>(p.k) * n,
                                    [](float v) { return std::isfinite(v); });
  // Row ranges of equal nonzeros: a power-law matrix whose rows are not shuffled keeps its
  // longest rows together.
  run_chunks(balanced_split(a.row_ptr, parallel_chunks(work)), [&](int, int64_t r0, int64_t r1) {
    std::vector<double> acc(n), mag(n), fin(n);
    const int32_t* cols = a.col_idx.data();
    const size_t ahead = 8;  // B rows are gathered at random: fetch a few nonzeros ahead
    const auto end = static_cast<size_t>(a.row_ptr[static_cast<size_t>(r1)]);
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      bool all_finite = true;
      const auto e0 = static_cast<size_t>(a.row_ptr[static_cast<size_t>(r)]);
      const auto e1 = static_cast<size_t>(a.row_ptr[static_cast<size_t>(r + 1)]);
      if (b_finite) {
        for (size_t e = e0; e < e1; ++e) {
          if (e + ahead < end) __builtin_prefetch(brow + static_cast<size_t>(cols[e + ahead]) * n);
          const double av = f32 ? a.values[e] : round_to(p.dtype, a.values[e]);
          if (!std::isfinite(av)) {
            if (all_finite) fin = mag;  // the finite products so far
            all_finite = false;
          }
          const float* bk = brow + static_cast<size_t>(cols[e]) * n;
          for (size_t c = 0; c < n; ++c) {
            const double prod = av * double(bk[c]);
            acc[c] += prod;
            mag[c] += std::fabs(prod);
          }
          if (!all_finite && std::isfinite(av))
            for (size_t c = 0; c < n; ++c) fin[c] += std::fabs(av * double(bk[c]));
        }
        if (all_finite) fin = mag;
      } else {
        std::fill(fin.begin(), fin.end(), 0.0);
        for (size_t e = e0; e < e1; ++e) {
          const double av = f32 ? a.values[e] : round_to(p.dtype, a.values[e]);
          const float* bk = brow + static_cast<size_t>(cols[e]) * n;
          for (size_t c = 0; c < n; ++c) {
            const double prod = av * double(bk[c]);
            const double m = std::fabs(prod);
            acc[c] += prod;
            mag[c] += m;
            fin[c] += std::isfinite(prod) ? m : 0.0;
          }
        }
      }
      // Partial sums are bounded by the sum of magnitudes times (1 + (L + 4)u): the kernel's
      // unscaled fp32 accumulators (sum |a·b|) and its scaled results (alpha·acc + beta·c, or the
      // Atomic workspace) stay finite when both bounds do.
      const double growth = 1.0 + double(a.row_length(r) + 4) * u;
      for (size_t j = 0; j < ins.size(); ++j) {
        const CheckInputs& in = *ins[j];
        Reference& ref = refs[j];
        const double alpha = in.alpha, beta = in.beta;
        for (int64_t c = 0; c < p.n; ++c) {
          const size_t i = static_cast<size_t>(p.c_index(r, c));
          const size_t cc = static_cast<size_t>(c);
          const double old = beta == 0.0 ? 0.0 : double(in.c0[i]);
          ref.exact[i] = alpha * acc[cc] + beta * old;
          ref.scale[i] = std::fabs(alpha) * mag[cc] + std::fabs(beta * old);
          const double scaled = std::fabs(alpha) * fin[cc] + std::fabs(beta * old);
          if (std::max(fin[cc], scaled) * growth >= fmax) ref.indeterminate[i] = 1;
        }
      }
    }
  });
  if (with_reference_spmm && work <= kReferenceSpmmLimit)
    for (size_t j = 0; j < ins.size(); ++j) {
      refs[j].spmm = ins[j]->c0;
      reference_spmm(p, a, ins[j]->b, refs[j].spmm, ins[j]->alpha, ins[j]->beta);
    }
  return refs;
}

Reference compute_reference(const CsrMatrix& a, const CheckInputs& in, bool with_reference_spmm) {
  return std::move(compute_references(a, {&in}, with_reference_spmm).front());
}

CheckResult compare_output(const CsrMatrix& a, const Schedule& s, const CheckInputs& in,
                           const Reference& ref, const std::vector<float>& out,
                           const std::vector<uint32_t>& out_bits,
                           const std::vector<float>* interp) {
  const Problem& p = in.problem;
  CheckResult res;
  res.elements = p.m * p.n;
  const double dmax = dtype_max(p.c_dtype());
  const uint32_t poison = poison_bits(p.c_dtype());
  // fp32 adds a row's partial results go through after its products (atomics, split K): the
  // family says (IrFamily::output_adds).
  const IrFamily& family = s.family();
  // A library's reduced-precision accumulation (IrFamily::accumulation_error), else 0.
  const double acc_eps = family.accumulation_error(p, s);
  const bool have_indeterminate = ref.indeterminate.size() == ref.exact.size();
  res.compared_reference_spmm = !ref.spmm.empty();
  res.compared_interpreter = interp != nullptr;
  // Rows in blocks of a fixed size (set by the problem, not the thread count), each block's
  // counts and sums kept apart and merged in block order: the same result on any number of
  // threads. A large graph has hundreds of millions of elements to compare.
  struct Partial {
    int64_t unwritten = 0, overflow_indeterminate = 0, out_of_bound = 0, nans = 0, overflowed = 0;
    double max_ratio = 0, err2 = 0, ref2 = 0;
    std::string first;  // the block's first failure, in row order
  };
  const int64_t rows_per_block =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, p.n));
  const int64_t blocks = p.m == 0 ? 0 : (p.m + rows_per_block - 1) / rows_per_block;
  std::vector<Partial> parts(static_cast<size_t>(blocks));
  auto check_block = [&](size_t blk) {
    Partial& part = parts[blk];
    auto fail = [&](int64_t r, int64_t c, const std::string& what) {
      if (part.first.empty()) part.first = fmt::format("C({}, {}): {}", r, c, what);
    };
    const int64_t r_end = std::min(p.m, static_cast<int64_t>(blk + 1) * rows_per_block);
    for (int64_t r = static_cast<int64_t>(blk) * rows_per_block; r < r_end; ++r) {
      const int64_t len = a.row_length(r);
      const int64_t adds = family.output_adds(p, s, len);
      for (int64_t c = 0; c < p.n; ++c) {
        const size_t i = static_cast<size_t>(p.c_index(r, c));
        const double e = ref.exact[i], o = out[i];
        // The tight bound (ir/error_bound.h); scale = |alpha|·Σ|a·b| + |beta·c0|.
        ElementBoundTerms bt;
        bt.row_length = len;
        bt.atomic_adds = adds;
        bt.abs_beta_c0 = in.beta == 0.0f ? 0.0 : std::fabs(double(in.beta) * double(in.c0[i]));
        bt.sum_abs_products = std::max(0.0, ref.scale[i] - bt.abs_beta_c0);
        bt.abs_exact = std::fabs(e);
        bt.accumulation_eps = acc_eps;
        const double tol = spmm_error_bound(p.c_dtype(), bt);
        if (in.beta == 0.0f && out_bits[i] == poison) {
          ++part.unwritten;
          fail(r, c, "never written (poison still there)");
          continue;
        }
        // Overflow-indeterminate (gpu_check.h): fp32 intermediates may overflow, so a non-finite
        // result is accepted; a finite one is still checked below. With an Inf in the inputs
        // (e = ±Inf) the result is e or NaN (±Inf + ∓Inf), never the opposite infinity.
        const bool indeterminate = have_indeterminate && ref.indeterminate[i] != 0;
        if (indeterminate && !std::isfinite(o) && (std::isfinite(e) || std::isnan(o) || o == e)) {
          ++part.overflow_indeterminate;
          continue;
        }
        if (std::isnan(e)) {
          if (!std::isnan(o)) {
            ++part.out_of_bound;
            fail(r, c, fmt::format("expected NaN (NaN in A), found {:g}", o));
          }
          continue;
        }
        if (std::isinf(e)) {
          if (o != e) {
            ++part.out_of_bound;
            fail(r, c, fmt::format("expected {:g} (Inf in A), found {:g}", e, o));
          }
          continue;
        }
        if (std::isnan(o)) {
          ++part.nans;
          fail(r, c, fmt::format("NaN, expected {:.9g}", e));
          continue;
        }
        if (std::fabs(e) + tol > dmax && std::isinf(o) && (o > 0) == (e > 0)) {
          ++part.overflowed;  // beyond (or at the edge of) the dtype's range: inf is the right
                              // store
          continue;
        }
        const double d = std::fabs(o - e);
        const double ratio =
            tol > 0 ? d / tol : (d == 0 ? 0 : std::numeric_limits<double>::infinity());
        part.max_ratio = std::max(part.max_ratio, ratio);
        part.err2 += d * d;
        part.ref2 += e * e;
        if (!(d <= tol)) {
          ++part.out_of_bound;
          fail(r, c,
               fmt::format("{:.9g}, expected {:.9g} (|diff| {:.3g} > bound {:.3g})", o, e, d, tol));
          continue;
        }
        // The fp32 references: each within tol of exact, so within 2·tol of the GPU result.
        for (const std::vector<float>* other : {&ref.spmm, interp}) {
          if (other == nullptr || other->empty()) continue;
          const double x = (*other)[i];
          if (std::isinf(x) && std::fabs(e) + tol > dmax) continue;
          if (indeterminate && !std::isfinite(x)) continue;  // the fp32 reference overflowed
          if (!(std::fabs(o - x) <= 2 * tol)) {
            ++part.out_of_bound;
            fail(r, c,
                 fmt::format("{:.9g}, {} says {:.9g} (bound {:.3g})", o,
                             other == interp ? "the interpreter" : "reference_spmm", x, 2 * tol));
            break;
          }
        }
      }
    }
  };
  const int threads = parallel_chunks(p.m * p.n * 8) > 1 ? parallel_config().max_threads : 1;
  for_each_task(parts.size(), threads, check_block);
  double err2 = 0, ref2 = 0;
  std::string first;
  for (const Partial& part : parts) {
    res.unwritten += part.unwritten;
    res.overflow_indeterminate += part.overflow_indeterminate;
    res.out_of_bound += part.out_of_bound;
    res.nans += part.nans;
    res.overflowed += part.overflowed;
    res.max_ratio = std::max(res.max_ratio, part.max_ratio);
    err2 += part.err2;
    ref2 += part.ref2;
    if (first.empty()) first = part.first;
  }
  res.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  int64_t max_len = 0;
  for (int64_t r = 0; r < a.rows; ++r) max_len = std::max(max_len, a.row_length(r));
  double base = 1e-5;
  if (p.c_dtype() == DType::F16) base = 1e-2;
  if (p.c_dtype() == DType::BF16) base = 2e-2;
  if (p.dtype == DType::F32) base = std::max(base, 1e-7 * std::sqrt(double(max_len)));
  // Atomic adds are fp32 (16-bit dtypes accumulate in an fp32 workspace and round once), so the
  // global bound does not grow with the number of adds.
  res.rel_bound = base;
  if (first.empty() && res.rel_error > res.rel_bound)
    first = fmt::format("relative error {:.3g} above {:.3g}", res.rel_error, res.rel_bound);
  res.passed = first.empty();
  if (!res.passed)
    res.error = fmt::format(
        "{} [{} of {} elements: {} unwritten, {} NaN, {} out of bound; "
        "rel error {:.3g}; {} overflow-indeterminate accepted]",
        first, res.unwritten + res.nans + res.out_of_bound, res.elements, res.unwritten, res.nans,
        res.out_of_bound, res.rel_error, res.overflow_indeterminate);
  return res;
}

std::vector<float> interpreter_output(const CsrMatrix& a, const Schedule& s, const CheckInputs& in,
                                      const PackedMatrix* packed) {
  const Problem& p = in.problem;
  if (a.nnz() * p.n > kInterpreterLimit) return {};
  std::shared_ptr<const PackedMatrix> own;
  if (packed == nullptr) {
    own = s.family().pack(a, p, s);
    packed = own.get();
  }
  std::vector<float> out = in.c0;
  s.family().interpret(p, s, *packed, in.b, out, in.alpha, in.beta);
  return out;
}

namespace {

// Runs k once on in's B (C poisoned when beta == 0, else in.c0) and downloads C as floats and
// their bits.
void run_and_download(const CompiledKernel& k, const CheckInputs& in, CUstream stream,
                      CheckBuffers* buffers, std::vector<float>& out, std::vector<uint32_t>& bits,
                      const CheckLaunch& launch = {}) {
  const Problem& p = k.problem();
  SG_ASSERT(p == in.problem, "gpu_check: inputs for another problem");
  const size_t mn = static_cast<size_t>(p.m * p.n);
  const size_t w = p.c_dtype() == DType::F32 ? 4 : 2;
  // fp32 operands travel as they are: no byte copies of B and C, which are gigabytes for a graph
  // (4.2M x 64), and an fp32 poison is a device fill. 16-bit ones are converted on the host.
  const bool b32 = p.b_dtype() == DType::F32, c32 = p.c_dtype() == DType::F32;
  std::vector<char> b_bytes, c_bytes;
  if (!b32) b_bytes = to_dtype_bytes(in.b, p.b_dtype());
  if (in.beta == 0.0f && !c32) {
    resize_prefaulted(c_bytes, mn * w);
    const uint32_t pz = poison_bits(p.c_dtype());
    parallel_for(static_cast<int64_t>(mn), static_cast<int64_t>(mn), [&](int64_t i0, int64_t i1) {
      for (auto i = static_cast<size_t>(i0); i < static_cast<size_t>(i1); ++i)
        std::memcpy(c_bytes.data() + w * i, &pz, w);
    });
  } else if (in.beta != 0.0f && !c32) {
    c_bytes = to_dtype_bytes(in.c0, p.c_dtype());
  }
  const size_t b_size = b32 ? in.b.size() * 4 : b_bytes.size();
  const size_t c_size = mn * w;
  // One spare element each, so that empty operands still get a valid (unused) allocation.
  CheckBuffers local;
  CheckBuffers& bufs = buffers != nullptr ? *buffers : local;
  if (bufs.b.bytes() != b_size + w) bufs.b = cuda::DeviceBuffer(b_size + w);
  if (bufs.c.bytes() != c_size + w) bufs.c = cuda::DeviceBuffer(c_size + w);
  cuda::DeviceBuffer& db = bufs.b;
  cuda::DeviceBuffer& dc = bufs.c;
  if (b_size > 0) db.upload(b32 ? static_cast<const void*>(in.b.data()) : b_bytes.data(), b_size);
  if (c32 && in.beta == 0.0f)
    dc.fill_u32(poison_bits(DType::F32));  // the spare element too
  else if (c_size > 0)
    dc.upload(c32 ? static_cast<const void*>(in.c0.data()) : c_bytes.data(), c_size);
  if (launch)
    launch(db.ptr(), dc.ptr(), in.alpha, in.beta, stream);
  else
    k.run(db.ptr(), dc.ptr(), in.alpha, in.beta, stream);
  if (stream != nullptr) {  // a non-blocking stream: the synchronous copy would not wait for it
    cuda::Event done;
    done.record(stream);
    done.synchronize();
  }
  if (c32) {
    out.clear();
    resize_prefaulted(out, mn);
    if (mn > 0) dc.download(out.data(), c_size);
    bits.clear();
    resize_prefaulted(bits, mn);
    copy_words(bits.data(), out.data(), mn);
    return;
  }
  std::vector<char> back;
  resize_prefaulted(back, c_bytes.size());
  if (!back.empty()) dc.download(back.data(), back.size());
  from_dtype_bytes(back, p.c_dtype(), out, bits);
}

// copy(r, i) for every row r < rows and sampled column i, rows split over the cores, the columns
// of a row together (a row-major graph output of 64 columns: one 256-byte run per row, not one
// cache miss per element as a column-by-column walk of millions of rows makes).
template <class Copy>
void gather_columns(int64_t rows, const std::vector<int64_t>& cols, Copy&& copy) {
  const auto n = static_cast<int64_t>(cols.size());
  parallel_for(rows, rows * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < n; ++i) copy(r, i);
  });
}

}  // namespace

CheckResult gpu_check(const CompiledKernel& k, const CsrMatrix& a, const CheckInputs& in,
                      const Reference& ref, CUstream stream, const std::vector<float>* interp,
                      bool run_interpreter, CheckBuffers* buffers, const CheckLaunch& launch) {
  std::vector<float> out;
  std::vector<uint32_t> bits;
  run_and_download(k, in, stream, buffers, out, bits, launch);

  std::vector<float> own;
  if (interp == nullptr && run_interpreter) {
    try {
      own = interpreter_output(a, k.schedule(), in);
    } catch (const std::exception& e) {
      CheckResult r;
      r.error = std::string("interpreter: ") + e.what();
      return r;
    }
    if (!own.empty()) interp = &own;
  }
  if (interp != nullptr && interp->empty()) interp = nullptr;
  return compare_output(a, k.schedule(), in, ref, out, bits, interp);
}

std::string GpuCheckPair::error() const {
  std::string s;
  if (!beta0.passed) s += "beta=0: " + beta0.error;
  if (!beta1.passed) s += std::string(s.empty() ? "" : "; ") + "beta=-1.5: " + beta1.error;
  return s;
}

namespace {

// The pair's inputs restricted to columns `cols` of B and C (all of them, or a sample): the same
// values make_check_inputs draws there, computed draw by draw (ir/random.h), so a graph's check
// never holds its full B and C on the host.
CheckInputs column_inputs(const Problem& p, uint64_t seed, const std::vector<int64_t>& cols) {
  CheckInputs in;
  in.problem = p;
  in.problem.n = static_cast<int64_t>(cols.size());
  in.alpha = 0.75f;
  in.beta = 0.0f;
  const Problem& q = in.problem;
  resize_prefaulted(in.b, static_cast<size_t>(q.k * q.n));
  resize_prefaulted(in.c0, static_cast<size_t>(q.m * q.n));
  const auto c_first = static_cast<uint64_t>(p.k * p.n);  // C's draws follow B's
  gather_columns(p.k, cols, [&](int64_t kk, int64_t i) {
    const int64_t col = cols[static_cast<size_t>(i)];
    in.b[static_cast<size_t>(q.b_index(kk, i))] =
        check_value(seed, static_cast<uint64_t>(p.b_index(kk, col)), p.b_dtype());
  });
  gather_columns(p.m, cols, [&](int64_t row, int64_t i) {
    const int64_t col = cols[static_cast<size_t>(i)];
    in.c0[static_cast<size_t>(q.c_index(row, i))] =
        check_value(seed, c_first + static_cast<uint64_t>(p.c_index(row, col)), p.c_dtype());
  });
  return in;
}

// A copy of `in` whose vectors are copied on all cores (a graph's are hundreds of MB).
CheckInputs copy_inputs(const CheckInputs& in) {
  CheckInputs out;
  out.problem = in.problem;
  out.alpha = in.alpha;
  out.beta = in.beta;
  for (auto [from, to] : {std::pair{&in.b, &out.b}, std::pair{&in.c0, &out.c0}}) {
    resize_prefaulted(*to, from->size());
    copy_words(to->data(), from->data(), from->size());
  }
  return out;
}

// Runs `k` on B and C drawn on the device (C poisoned when cmp.beta == 0, else the seeded C) and
// brings back the compared columns only: the device-side path of the paired check, which moves
// M·|cols| elements over PCIe instead of K·N + 2·M·N.
void run_on_device_inputs(const CompiledKernel& k, uint64_t seed, const std::vector<int64_t>& cols,
                          float beta, CheckBuffers& bufs, std::vector<float>& out,
                          std::vector<uint32_t>& bits) {
  const Problem& p = k.problem();
  const std::string& arch = k.target().arch;
  const DType bt = p.b_dtype(), ct = p.c_dtype();
  const size_t w = ct == DType::F32 ? 4 : 2;
  const size_t b_size = static_cast<size_t>(p.k * p.n) * (bt == DType::F32 ? 4 : 2);
  const size_t c_size = static_cast<size_t>(p.m * p.n) * w;
  if (bufs.b.bytes() != b_size + w) {  // B is the same for both runs: drawn once
    bufs.b = cuda::DeviceBuffer(b_size + w);
    fill_check_values(arch, bufs.b.ptr(), p.k * p.n, seed, 0, bt, nullptr);
  }
  if (bufs.c.bytes() != c_size + w) bufs.c = cuda::DeviceBuffer(c_size + w);
  if (beta == 0.0f) {
    if (w == 4)
      bufs.c.fill_u32(poison_bits(ct));
    else
      bufs.c.fill_u16(static_cast<uint16_t>(poison_bits(ct)));
  } else {
    fill_check_values(arch, bufs.c.ptr(), p.m * p.n, seed, static_cast<uint64_t>(p.k * p.n), ct,
                      nullptr);
  }
  k.run(bufs.b.ptr(), bufs.c.ptr(), 0.75f, beta, nullptr);
  const bool all = static_cast<int64_t>(cols.size()) == p.n;
  const size_t sub_elems = static_cast<size_t>(p.m) * cols.size();
  cuda::DeviceBuffer sub;
  if (!all) {
    sub = cuda::DeviceBuffer(sub_elems * w + w);
    gather_check_columns(arch, bufs.c.ptr(), sub.ptr(), p, cols, nullptr);
  }
  cuda::Event done;
  done.record(nullptr);
  done.synchronize();
  std::vector<char> back;
  resize_prefaulted(back, sub_elems * w);
  if (!back.empty()) (all ? bufs.c : sub).download(back.data(), back.size());
  from_dtype_bytes(back, ct, out, bits);
}

// Logs each step of the paired check with its wall time (SPARSEGEN_DEBUG=1).
class StepLog {
 public:
  void operator()(const char* step) {
    if (!debug_logging()) return;
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "sparsegen: [check] %-22s %8.2f ms\n", step,
                 std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

bool check_inputs_on_device(const Problem& p) {
  return p.sparse_weight() && (p.k + p.m) * p.n >= kDeviceCheckElements;
}

namespace {

// The compared columns: all, or max_columns of them evenly spread from the first to the last
// (each token's values, and for quantized types its scale, depend on that token alone).
std::vector<int64_t> compared_columns(const Problem& p, int64_t max_columns) {
  const bool sample = max_columns > 1 && p.n > max_columns && p.sparse_weight();
  std::vector<int64_t> cols(static_cast<size_t>(sample ? max_columns : p.n));
  for (size_t i = 0; i < cols.size(); ++i)
    cols[i] =
        sample ? static_cast<int64_t>(i) * (p.n - 1) / (max_columns - 1) : static_cast<int64_t>(i);
  return cols;
}

constexpr float kPairBetas[2] = {0.0f, -1.5f};

}  // namespace

PairedReferences paired_references(const Problem& p, const CsrMatrix& a, uint64_t seed,
                                   int64_t max_columns) {
  StepLog log;
  PairedReferences r;
  r.problem = p;
  r.seed = seed;
  r.cols = compared_columns(p, max_columns);
  r.cmp[0] = column_inputs(p, seed, r.cols);
  r.cmp[1] = copy_inputs(r.cmp[0]);
  r.cmp[1].beta = kPairBetas[1];
  log("inputs (host columns)");
  r.refs = compute_references(a, {&r.cmp[0], &r.cmp[1]});
  log("references");
  return r;
}

GpuCheckPair gpu_check(const CompiledKernel& k, const CsrMatrix& a, uint64_t seed,
                       int64_t max_columns, const PairedReferences* prepared) {
  const Problem& p = k.problem();
  const std::vector<int64_t> cols = compared_columns(p, max_columns);
  const bool sample = static_cast<int64_t>(cols.size()) < p.n;
  const bool on_device = check_inputs_on_device(p);
  if (prepared != nullptr &&
      !(prepared->problem == p && prepared->seed == seed && prepared->cols == cols))
    throw std::invalid_argument(
        "gpu_check: the prepared references are for another problem, seed or columns");
  // The references' inputs: the compared columns of the kernel's B and initial C (all of them
  // when nothing is sampled: then they are the kernel's inputs too). When the kernel's inputs are
  // drawn on the device, the host side runs on a worker thread while the GPU runs both checks,
  // unless it was prepared.
  PairedReferences own;
  auto host_side = [&] {
    if (prepared == nullptr) own = paired_references(p, a, seed, max_columns);
  };
  const PairedReferences& ready = prepared != nullptr ? *prepared : own;
  const CheckInputs* cmp = ready.cmp;
  const std::vector<Reference>& refs = ready.refs;
  std::vector<float> out[2];
  std::vector<uint32_t> bits[2];
  GpuCheckPair pair;
  CheckResult* results[2] = {&pair.beta0, &pair.beta1};
  CheckBuffers bufs;
  StepLog log;
  if (on_device) {
    std::future<void> host = std::async(std::launch::async, host_side);
    for (int which = 0; which < 2; ++which) {
      run_on_device_inputs(k, seed, cols, kPairBetas[which], bufs, out[which], bits[which]);
      log(which == 0 ? "beta=0 run and download" : "beta!=0 run and download");
    }
    host.get();
    log("(waited for the host side)");
  } else if (!sample) {  // the kernel's inputs are the references' inputs
    host_side();
    for (int which = 0; which < 2; ++which) {
      *results[which] = gpu_check(k, a, cmp[which], refs[static_cast<size_t>(which)], nullptr,
                                  nullptr, true, &bufs);
      log(which == 0 ? "beta=0 run and compare" : "beta!=0 run and compare");
    }
    return pair;
  } else {  // the full inputs on the host, the compared columns picked from the output
    host_side();
    CheckInputs full = make_check_inputs(p, seed, cmp[0].alpha, 0.0f);
    for (int which = 0; which < 2; ++which) {
      full.beta = kPairBetas[which];
      std::vector<float> out_full;
      std::vector<uint32_t> bits_full;
      run_and_download(k, full, nullptr, &bufs, out_full, bits_full);
      out[which].resize(cmp[which].c0.size());
      bits[which].resize(cmp[which].c0.size());
      gather_columns(p.m, cols, [&](int64_t row, int64_t i) {
        const size_t from = static_cast<size_t>(p.c_index(row, cols[static_cast<size_t>(i)]));
        const size_t to = static_cast<size_t>(cmp[which].problem.c_index(row, i));
        out[which][to] = out_full[from];
        bits[which][to] = bits_full[from];
      });
      log(which == 0 ? "beta=0 run and download" : "beta!=0 run and download");
    }
  }
  for (int which = 0; which < 2; ++which) {
    CheckResult& r = *results[which];
    // The interpreter where the problem is small enough and whole (as the single check runs it).
    std::vector<float> interp;
    if (!sample) {
      try {
        interp = interpreter_output(a, k.schedule(), cmp[which]);
      } catch (const std::exception& e) {
        r = CheckResult{};
        r.error = std::string("interpreter: ") + e.what();
        continue;
      }
    }
    r = compare_output(a, k.schedule(), cmp[which], refs[static_cast<size_t>(which)], out[which],
                       bits[which], interp.empty() ? nullptr : &interp);
    log(which == 0 ? "beta=0 compare" : "beta!=0 compare");
    if (!r.passed && sample)
      r.error = fmt::format("{} (columns {} of {} checked, evenly spread; C(r, j) names the j-th)",
                            r.error, max_columns, p.n);
  }
  return pair;
}

}  // namespace sparsegen
