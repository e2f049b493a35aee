// What the runtime needs to launch an emitted kernel: its name, parameters in order (with the host
// data of every table parameter), launch shape, optional prologue and epilogue kernels, and the
// size of an fp32 workspace the caller allocates. Family-neutral: every emitter returns one; the
// runtime treats the tables as opaque typed arrays and binds every parameter by its kind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen::codegen {

enum class ParamKind {
  Values,    // const T*  A's packed values (PackedFormat::values converted to the problem dtype)
  ColIdx,    // const int* A's packed column indices (PackedFormat::col_idx)
  B,         // const T*  dense B
  C,         // T*        dense C
  Alpha,     // float
  Beta,      // float
  I32Table,  // const int*            offset table (data below)
  I16Table,  // const short*          quasilinear residuals
  I8Table,   // const signed char*    quasilinear residuals
  U32Table,  // const unsigned*       bitmaps / row-start bits
  // float* fp32 accumulation workspace: M*N floats in C's layout, KernelSignature::workspace_bytes
  // of device memory the caller owns (one per compiled kernel; runs using it must not overlap).
  Workspace,
  // The transformed dense operand (e.g. B lifted into sliding windows and quantized):
  // KernelSignature::b_work_bytes of device memory the runtime owns, written by the b_transform
  // kernel and read by the main kernel in place of B.
  BWork,
  // float* one fp32 scale per column of B (per token), KernelSignature::token_scales of them,
  // runtime-owned: written by b_transform (e.g. the per-token quantization scale), read after.
  TokenScales,
  // const float* per-row fp32 weight scales of A (quantized types): a table whose data holds the
  // floats' bit patterns (uploaded as 32-bit words).
  F32Table,
  // const __grid_constant__ sg::TensorMap: a 2-D TMA tensor map of B, encoded per run from the B
  // pointer (runtime/cuda_driver.h, encode_tensor_map_2d). Its data holds the map's shape, see
  // TensorMapShape.
  BTensorMap,
};
std::string_view to_string(ParamKind k);

// The shape of a BTensorMap parameter, stored in its KernelParam::data in this order: B as a 2-D
// tensor of `outer` rows of `inner` elements (elem_bytes each), rows `row_elems` elements apart,
// copied in boxes of box_inner x box_outer elements with a 0, 32, 64 or 128-byte swizzle.
struct TensorMapShape {
  int64_t inner = 0, outer = 0, row_elems = 0, box_inner = 0, box_outer = 0, elem_bytes = 2;
  int64_t swizzle_bytes = 0;
  std::vector<int64_t> to_data() const;
  static TensorMapShape from_data(const std::vector<int64_t>& d);
};

struct KernelParam {
  std::string name;  // the parameter's name in the emitted source
  ParamKind kind;
  std::string source;         // which PackedFormat array it holds, e.g. "warp.child_begin"
  std::vector<int64_t> data;  // table contents (tables only), converted to the kind's width
};

// True for the kinds whose KernelParam::data is a table uploaded to the device.
bool is_table(ParamKind k);

struct LaunchShape {
  int64_t grid_x = 0;
  int64_t grid_y = 0;
  int block_threads = 0;
  int64_t shared_bytes = 0;  // static shared memory used (informational)
  // Dynamic shared memory the launch must pass (above 48 KiB the function needs the opt-in
  // attribute, which the loader sets).
  int64_t dynamic_shared_bytes = 0;
  // The kernel calls sg::grid_dependency_wait() (templates/sg_grid_dependency.cuh) before it
  // reads or writes anything an earlier kernel of its launch sequence writes. The runtime may then
  // launch it with programmatic stream serialization right after another kernel of the sequence,
  // so that its start and its loads of A and B overlap that kernel (one launch's fixed cost less).
  bool programmatic_wait = false;
  // Blocks per thread-block cluster along x (sm_90; grid_x a multiple of it): the launch carries
  // the cluster dimension, and the kernel may use the cluster's shared memory and barriers.
  int cluster_x = 1;
};

// A helper kernel of the same module, launched around the main kernel: elementwise over C
// (prologue, epilogue) or a transform of B into the BWork buffer (b_transform).
struct AuxKernel {
  std::string name;                 // extern "C"; empty: no such kernel
  std::vector<KernelParam> params;  // in declaration order (no table kinds)
  LaunchShape launch;
  // Launched only when the run's beta != 0 (skipped when beta == 0): the fp32 round trip of a
  // library GEMM that adds beta·C (LibraryGemm::beta_in_workspace).
  bool beta_only = false;
  bool present() const { return !name.empty(); }
};

// One operand of a LibraryGemm: a buffer the run binds by kind (B, C, Values, BWork), an offset
// into it in elements of the value type, and the row stride (leading dimension, elements).
struct GemmOperand {
  ParamKind buffer = ParamKind::B;
  int64_t offset = 0;
  int64_t ld = 0;
};

// The operand types of a LibraryGemm: the problem's 16-bit type (fp32 accumulation, C in that
// type), or the quantized problem's 8-bit operands into the Workspace with alpha 1 and beta 0:
// int8 into int32 (exact), fp8 e4m3 into fp32 (fp32 accumulation). The 8-bit GEMMs need
// b_transposed ("TN"), k and every ld multiples of 4 (of 16 for fp8).
enum class GemmOperands { Io16, Int8, Fp8 };

// A dense GEMM the runtime runs through the BLAS library (cuBLASLt, loaded at run time:
// runtime/cublaslt.h) as a step of the launch sequence: row-major c (m x n) = alpha · a (m x k) ·
// b + beta · c, b row-major k x n or (b_transposed) n x k; the problem's 16-bit type, fp32
// accumulation; relu applies max(0, ·) to the result. alpha and beta are the run's when
// run_alpha_beta, else 1 and 0. Planned once when the kernel is loaded, never per call.
struct LibraryGemm {
  std::string name;  // for logs: "gate", "down"
  GemmOperand a, b, c;
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;
  bool relu = false;
  // With relu, relu_mask_ld > 0: the library also writes the bit-mask of c's positive elements,
  // row r of c (n bits) at relu_mask.offset *bytes* + r · relu_mask_ld / 8 of relu_mask.buffer,
  // bit j % 8 of byte j / 8 for column j; relu_mask_ld bits per row (a multiple of 128, at least
  // n), the offset 256-byte aligned in a buffer that is.
  int64_t relu_mask_ld = 0;
  GemmOperand relu_mask;
  bool run_alpha_beta = false;
  // With run_alpha_beta and a run's beta != 0: the GEMM accumulates with beta 1 into the fp32
  // Workspace (C's layout and ld, offset c.offset), which a beta_only prologue set to beta·C, and
  // a beta_only epilogue rounds it once into C. cuBLASLt rounds alpha·A·B to a 16-bit C's type
  // before it adds beta·C, two roundings the fp32-accumulation error bound does not allow.
  // beta == 0 writes C directly (one rounding).
  bool beta_in_workspace = false;
  GemmOperands operands = GemmOperands::Io16;
  bool eight_bit() const { return operands != GemmOperands::Io16; }
};

// A sparse-times-dense product the runtime runs through the sparse library (cuSPARSE, loaded at
// run time: runtime/cusparse.h) as a step of the launch sequence: C (m x n) = alpha · A · B +
// beta · C with the run's alpha and beta, A in CSR from the kernel's own buffers (Values in the
// problem's type, ColIdx, and the row offsets in the I32Table parameter row_offsets_param), B
// and C in one order. Planned once when the kernel is loaded, never per call.
struct LibrarySpmm {
  std::string algorithm;  // the library's algorithm by name (runtime/cusparse.h)
  int64_t m = 0, k = 0, n = 0, nnz = 0;
  bool row_major = true;         // B and C
  size_t row_offsets_param = 0;  // index into KernelSignature::params
};

// A 2:4 structured sparse GEMM the runtime runs through the sparse tensor-core library
// (cuSPARSELt, loaded at run time: runtime/cusparselt.h) as a step of the launch sequence:
// D (m x n, column-major) = A (m x k, row-major, 2:4 along k; the kernel's Values in the
// problem's type) · B' (k x n, column-major: the BWork buffer the b_transform kernel wrote).
// to_workspace: D is the raw accumulator (int32 for int8, fp32 for fp8 e4m3) in the Workspace,
// which the main kernel then scales into C; else D is C (16-bit) with the run's alpha and beta.
// Planned when the kernel is loaded (the weight compressed then), never per call; `choice` is the
// library's algorithm (cusparselt::Choice::to_string) or empty: searched once at load, and the
// loaded kernel's signature then holds the choice found.
struct LibrarySparseGemm {
  std::string choice;
  int64_t m = 0, k = 0, n = 0;
  bool to_workspace = false;
};

// Launch order on one stream: b_transform (when present), gemms_before, sparse_gemms, prologue
// (when present), the main kernel (unless empty_grid()), gemms_after, spmms, epilogue (when
// present). b_transform
// reads B (and may write TokenScales) and writes BWork, which the later kernels read instead of B:
// a kernel on B, e.g. the activation lifting and per-token quantization of a sliding-window sparse
// GEMM. Used when rows are finished with atomic adds (OutputMode::Atomic):
//   fp32:       prologue C = beta*C; the kernel atomically adds alpha*partial into C.
//   fp16/bf16:  prologue ws = beta*C in fp32; the kernel atomically adds alpha*partial into ws
//               (fp32 atomics: no 16-bit rounding or overflow of partial sums); epilogue
//               C = ws rounded once to the dtype.
// C is never read when beta == 0.
struct KernelSignature {
  std::string kernel_name;          // extern "C"
  std::vector<KernelParam> params;  // in declaration order
  LaunchShape launch;
  AuxKernel prologue;
  AuxKernel epilogue;
  int64_t workspace_bytes = 0;  // device memory for the Workspace parameter; 0: none
  // Byte alignment the kernel needs of the B pointer (cp.async / vector loads); 1: none. Checked
  // on every run, since B is the caller's pointer.
  int b_alignment = 1;
  // The kernel expects the workspace to be all zero at launch and leaves it so (self-cleaning
  // split-K): the runtime zeroes it once when it allocates it.
  bool workspace_zeroed = false;
  AuxKernel b_transform;                  // B -> BWork (and TokenScales), before everything else
  int64_t b_work_bytes = 0;               // device memory for the BWork parameter; 0: none
  int64_t token_scales = 0;               // floats of the TokenScales parameter (N); 0: none
  std::vector<LibraryGemm> gemms_before;  // after b_transform, before the prologue
  std::vector<LibraryGemm> gemms_after;   // after the main kernel, before the epilogue
  std::vector<LibrarySpmm> spmms;         // after gemms_after, before the epilogue
  std::vector<LibrarySparseGemm> sparse_gemms;  // after gemms_before, before the prologue
  // True when grid_x or grid_y is 0: the caller must not launch the main kernel (prologue and
  // epilogue still run: they apply C = beta * C).
  bool empty_grid() const { return launch.grid_x == 0 || launch.grid_y == 0; }
  // A copy without the tables' data (hundreds of MB for a large matrix), for a kernel whose
  // tables are on the device already. Positional aggregate initialisation inside: a field added
  // above and not handled there fails the -Wextra build (missing-field-initializers).
  KernelSignature without_table_data() const;
};

// Human-readable list of the parameters, one per line ("values  const T*  packed A values").
std::string describe(const KernelSignature& sig);

// The data of an F32Table parameter: each float's bit pattern (the runtime uploads 32 bits each).
std::vector<int64_t> f32_table(const std::vector<float>& v);

}  // namespace sparsegen::codegen
