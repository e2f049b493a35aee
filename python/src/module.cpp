// sparsegen._sparsegen: the nanobind extension behind the `sparsegen` Python package, a thin layer
// over the public C++ API (include/sparsegen/sparsegen.h). The Python side (python/sparsegen/)
// turns framework arrays into pointers; here every call maps one C++ call, and the C++ errors
// become sparsegen.UserError (a ValueError) and sparsegen.CudaError (a RuntimeError) with the
// same messages.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <sparsegen/sparsegen.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace sparsegen {
namespace {

DType dtype_arg(const std::string& name) {
  const auto d = parse_dtype(name);
  if (!d)
    throw UserError("dtype: expected 'fp32', 'fp16', 'bf16', 'int8' or 'fp8_e4m3', found '" + name +
                    "'");
  return *d;
}

DType io_arg(const std::string& name) {
  const auto d = parse_dtype(name);
  if (!d || (*d != DType::F16 && *d != DType::BF16))
    throw UserError(
        "io: expected 'fp16' or 'bf16' (B and C of an int8 / fp8_e4m3 problem), found '" + name +
        "'");
  return *d;
}

Layout layout_arg(const std::string& name, const char* what) {
  const auto l = parse_layout(name);
  if (!l) throw UserError(std::string(what) + ": expected 'row' or 'col', found '" + name + "'");
  return *l;
}

// A copy of a C++ vector as a 1-D NumPy array owned by Python (already an object: properties
// would otherwise tie it to the matrix with reference_internal).
template <class T>
nb::object to_numpy(const std::vector<T>& v) {
  auto* data = new std::vector<T>(v);
  nb::capsule owner(data, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(data->data(), {data->size()}, owner),
                  nb::rv_policy::move);
}

// CSR from host arrays (SciPy's indptr / indices / data): copied, then checked canonical (sorted,
// no duplicates; the Python side sorts SciPy matrices first).
CsrMatrix from_csr(nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> indptr,
                   nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> indices,
                   nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu> data,
                   int64_t rows, int64_t cols, const std::string& source) {
  if (rows < 0 || cols < 0) throw UserError("shape: negative dimensions");
  if (static_cast<int64_t>(indptr.shape(0)) != rows + 1)
    throw UserError("indptr: expected rows + 1 = " + std::to_string(rows + 1) + " entries, found " +
                    std::to_string(indptr.shape(0)));
  if (indices.shape(0) != data.shape(0))
    throw UserError("indices and data differ in length (" + std::to_string(indices.shape(0)) +
                    " and " + std::to_string(data.shape(0)) + ")");
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.source = source;
  a.row_ptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
  a.col_idx.assign(indices.data(), indices.data() + indices.shape(0));
  a.values.assign(data.data(), data.data() + data.shape(0));
  a.check_canonical();
  return a;
}

// A gated FFN's weights from C-contiguous fp32 host arrays (the Python side converts them): gate
// and up K x N, down N x K; gate absent for the non-gated form. The shapes are checked here,
// naming the argument, before anything is copied.
using HostMatrix = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
FfnWeights ffn_weights(const std::optional<HostMatrix>& gate, const HostMatrix& up,
                       const HostMatrix& down) {
  FfnWeights w;
  w.k = static_cast<int64_t>(up.shape(0));
  w.n = static_cast<int64_t>(up.shape(1));
  w.gated = gate.has_value();
  w.source = "Python arrays";
  if (gate && (gate->shape(0) != up.shape(0) || gate->shape(1) != up.shape(1)))
    throw UserError("gate: expected the shape of up (" + std::to_string(up.shape(0)) + " x " +
                    std::to_string(up.shape(1)) + "), found " + std::to_string(gate->shape(0)) +
                    " x " + std::to_string(gate->shape(1)));
  if (static_cast<int64_t>(down.shape(0)) != w.n || static_cast<int64_t>(down.shape(1)) != w.k)
    throw UserError("down: expected N x K = " + std::to_string(w.n) + " x " + std::to_string(w.k) +
                    " (up is K x N), found " + std::to_string(down.shape(0)) + " x " +
                    std::to_string(down.shape(1)));
  if (gate) w.gate.assign(gate->data(), gate->data() + gate->size());
  w.up.assign(up.data(), up.data() + up.size());
  w.down.assign(down.data(), down.data() + down.size());
  return w;
}

// DLPack: what the Python side needs to check a framework array and take its pointer. `src` is a
// DLPack capsule (from `x.__dlpack__(stream=...)`, so that the producer orders its work before the
// caller's stream), or any object nanobind imports (an object with __dlpack__, or a buffer; then
// nanobind calls __dlpack__ without a stream). Nothing is checked here but that the import works:
// the Python side checks device, dtype, shape and layout and names the argument. `owner` holds the
// imported tensor (nanobind calls the producer's deleter when it goes), to be kept until launched.
nb::dict dlpack_describe(nb::handle src) {
  using Array = nb::ndarray<nb::ro>;
  bool readonly = false;
  Array a;
  nb::ndarray<> writable;
  // A writable import refuses a tensor flagged read-only (DLPack 1.x) before consuming the capsule.
  if (nb::try_cast(src, writable)) {
    a = Array(writable);
  } else if (nb::try_cast(src, a)) {
    readonly = true;
  } else {
    std::string type = nb::inst_name(src).c_str();
    if (PyCapsule_CheckExact(src.ptr()))
      throw UserError(
          "DLPack: the capsule could not be imported (already consumed, or not a "
          "DLPack tensor)");
    throw UserError("DLPack: cannot import an object of type " + type +
                    " (no __dlpack__ or buffer protocol)");
  }
  nb::list shape, strides;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape.append(a.shape(i));
    strides.append(a.stride(i));  // in elements; nanobind fills C order where the tensor has none
  }
  const auto dt = a.dtype();
  auto* keep = new Array(a);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Array*>(p); });
  nb::dict d;
  d["data"] = reinterpret_cast<uintptr_t>(a.data());  // byte_offset included
  d["dtype"] = nb::make_tuple(dt.code, dt.bits, dt.lanes);
  d["shape"] = nb::tuple(shape);
  d["strides"] = nb::tuple(strides);
  d["device"] = nb::make_tuple(a.device_type(), a.device_id());
  d["readonly"] = readonly;
  d["owner"] = owner;
  return d;
}

}  // namespace
}  // namespace sparsegen

NB_MODULE(_sparsegen, m) {
  using namespace sparsegen;
  m.doc() = "sparsegen: sparse-kernel code generator and autotuner for NVIDIA GPUs (C++ core)";

  nb::exception<UserError>(m, "UserError", PyExc_ValueError);
  nb::exception<CudaError>(m, "CudaError", PyExc_RuntimeError);

  nb::class_<CsrMatrix>(m, "Matrix", "A sparse matrix in canonical CSR (fp32 values on the host)")
      .def_prop_ro("rows", [](const CsrMatrix& a) { return a.rows; })
      .def_prop_ro("cols", [](const CsrMatrix& a) { return a.cols; })
      .def_prop_ro("shape", [](const CsrMatrix& a) { return nb::make_tuple(a.rows, a.cols); })
      .def_prop_ro("nnz", [](const CsrMatrix& a) { return a.nnz(); })
      .def_prop_ro("source", [](const CsrMatrix& a) { return a.source; })
      .def_prop_ro(
          "indptr", [](const CsrMatrix& a) { return to_numpy(a.row_ptr); },
          "row pointers (a copy, int64)")
      .def_prop_ro(
          "indices", [](const CsrMatrix& a) { return to_numpy(a.col_idx); },
          "column indices (a copy, int32)")
      .def_prop_ro(
          "data", [](const CsrMatrix& a) { return to_numpy(a.values); }, "values (a copy, float32)")
      .def("__repr__", [](const CsrMatrix& a) {
        return "<sparsegen.Matrix " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
               ", nnz " + std::to_string(a.nnz()) + (a.source.empty() ? "" : ", " + a.source) + ">";
      });

  m.def(
      "_load",
      [](const std::string& path, const std::string& tensor) {
        LoadOptions o;
        o.tensor = tensor;
        return load_matrix(path, o).matrix;
      },
      "path"_a, "tensor"_a = "");
  m.def("_dlpack_describe", &dlpack_describe, "src"_a,
        "data pointer, dtype (code, bits, lanes), shape, strides (elements), device (type, id), "
        "readonly and owner of a DLPack capsule or array");
  m.def("_from_csr", &from_csr, "indptr"_a, "indices"_a, "data"_a, "rows"_a, "cols"_a,
        "source"_a = "");

  nb::class_<Kernel>(m, "Kernel", "A compiled (and tuned) SpMM kernel for one matrix and N")
      .def_prop_ro("schedule", &Kernel::schedule, "the schedule SPEC")
      .def_prop_ro("schedule_reason", &Kernel::schedule_reason, "why it was chosen")
      .def_prop_ro("measured_ms", &Kernel::measured_ms, "median measured time, or None")
      .def_prop_ro("predicted_ms", &Kernel::predicted_ms, "the cost model's time, or None")
      .def_prop_ro("cache_hit", &Kernel::cache_hit)
      .def_prop_ro("cache_key", &Kernel::cache_key)
      .def_prop_ro("arch", &Kernel::arch)
      .def_prop_ro("runnable", &Kernel::runnable, "False for kernels compiled offline")
      .def_prop_ro("cuda_source", &Kernel::cuda_source)
      .def_prop_ro("problem", [](const Kernel& k) { return to_string(k.problem()); })
      .def_prop_ro(
          "op", [](const Kernel& k) { return std::string(to_string(k.problem().op)); },
          "the operation: 'spmm', ... or 'gated_ffn' (x and y M x K, hidden width n)")
      .def_prop_ro("m", [](const Kernel& k) { return k.problem().m; })
      .def_prop_ro("k", [](const Kernel& k) { return k.problem().k; })
      .def_prop_ro("n", [](const Kernel& k) { return k.problem().n; })
      .def_prop_ro("dtype",
                   [](const Kernel& k) { return std::string(to_string(k.problem().dtype)); })
      .def_prop_ro(
          "io_dtype", [](const Kernel& k) { return std::string(to_string(k.problem().b_dtype())); },
          "the type of B and C (the dtype, or the io type of a quantized problem)")
      .def_prop_ro("b_layout",
                   [](const Kernel& k) { return std::string(to_string(k.problem().b_layout)); })
      .def_prop_ro("c_layout",
                   [](const Kernel& k) { return std::string(to_string(k.problem().c_layout)); })
      // Device pointers as integers: the Python side takes them from the arrays it is given.
      .def(
          "_run",
          [](const Kernel& k, uintptr_t b, uintptr_t c, float alpha, float beta, uintptr_t stream) {
            nb::gil_scoped_release nogil;
            k.run(reinterpret_cast<const void*>(b), reinterpret_cast<void*>(c), alpha, beta,
                  reinterpret_cast<void*>(stream));
          },
          "b"_a, "c"_a, "alpha"_a, "beta"_a, "stream"_a)
      .def(
          "_order_after",
          [](const Kernel& k, uintptr_t producer, uintptr_t stream) {
            k.order_after(reinterpret_cast<void*>(producer), reinterpret_cast<void*>(stream));
          },
          "producer"_a, "stream"_a)
      .def(
          "_capture",
          [](const Kernel& k, uintptr_t b, uintptr_t c, float alpha, float beta) {
            nb::gil_scoped_release nogil;
            return k.capture(reinterpret_cast<const void*>(b), reinterpret_cast<void*>(c), alpha,
                             beta);
          },
          "b"_a, "c"_a, "alpha"_a, "beta"_a);

  nb::class_<KernelGraph>(m, "KernelGraph", "A kernel's run captured as a CUDA graph")
      .def(
          "_launch",
          [](const KernelGraph& g, uintptr_t stream) {
            nb::gil_scoped_release nogil;
            g.launch(reinterpret_cast<void*>(stream));
          },
          "stream"_a);

  nb::class_<Runtime>(m, "Runtime", "Compiles kernels for one device (or offline, for an arch)")
      .def(nb::init<int>(), "device"_a = 0)
      .def_static("offline", &Runtime::offline, "arch"_a = "compute_90")
      .def_prop_ro("device_name", &Runtime::device_name)
      .def(
          "spmm",
          [](const Runtime& rt, const CsrMatrix& a, int64_t n, const std::string& dtype, int top_k,
             const std::string& schedule, const std::string& cache_dir, bool use_cache,
             const std::string& b_layout, const std::string& c_layout, const std::string& io,
             double build_memory_gb) {
            SpmmOptions o;
            o.dtype = dtype_arg(dtype);
            o.io_dtype = io_arg(io);
            o.top_k = top_k;
            // gigabytes, as the CLI's --build-memory; NaN fails the test too
            if (!(build_memory_gb >= 0) || build_memory_gb > 1e6)
              throw UserError("build_memory_gb: expected gigabytes, 0 (automatic) or more, found " +
                              std::to_string(build_memory_gb));
            o.build_memory_bytes = static_cast<int64_t>(build_memory_gb * 1e9);
            o.schedule = schedule;
            o.cache_dir = cache_dir;
            o.use_cache = use_cache;
            o.b_layout = layout_arg(b_layout, "b_layout");
            o.c_layout = layout_arg(c_layout, "c_layout");
            nb::gil_scoped_release nogil;
            return rt.spmm(a, n, o);
          },
          "matrix"_a, "n"_a, "dtype"_a = "fp32", "top_k"_a = -1, "schedule"_a = "",
          "cache_dir"_a = "", "use_cache"_a = true, "b_layout"_a = "row", "c_layout"_a = "row",
          "io"_a = "fp16", "build_memory_gb"_a = 0.0)
      .def(
          "gated_ffn",
          [](const Runtime& rt, std::optional<HostMatrix> gate, HostMatrix up, HostMatrix down,
             int64_t m, const std::string& dtype, const std::string& schedule,
             std::optional<HostMatrix> calibration, int per_family, const std::string& cache_dir,
             bool use_cache) {
            const FfnWeights w = ffn_weights(gate, up, down);
            std::vector<float> x;
            FfnOptions o;
            o.dtype = dtype_arg(dtype);
            o.schedule = schedule;
            o.per_family = per_family;
            o.cache_dir = cache_dir;
            o.use_cache = use_cache;
            if (calibration) {
              if (static_cast<int64_t>(calibration->shape(1)) != w.k)
                throw UserError("calibration: expected tokens of K = " + std::to_string(w.k) +
                                " values, found " + std::to_string(calibration->shape(1)));
              x.assign(calibration->data(), calibration->data() + calibration->size());
              o.calibration = &x;
            }
            nb::gil_scoped_release nogil;
            return rt.gated_ffn(w, m, o);
          },
          "gate"_a.none(), "up"_a, "down"_a, "m"_a, "dtype"_a = "bf16", "schedule"_a = "",
          "calibration"_a.none() = nb::none(), "per_family"_a = 3, "cache_dir"_a = "",
          "use_cache"_a = true);
}
