// Readers and writers of the non-Matrix-Market formats (.smtx, .safetensors, .npy, the sparsegen
// CSR container) and the load dispatcher. Every file is built byte by byte here, in a temp dir.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/io/csr_container.h"
#include "ir/io/dense_to_csr.h"
#include "ir/io/load.h"
#include "ir/io/npy.h"
#include "ir/io/safetensors.h"
#include "ir/io/smtx.h"
#include "ir/io/text_scanner.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Helpers

class BinaryFormats : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("sparsegen_binfmt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  fs::path dir_;
};

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string u64le(uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

// A safetensors file from its header text and data section.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return u64le(header.size()) + header + data;
}

std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// Runs `fn`, expects a UserError whose message contains every string in `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a UserError containing '" << parts.front() << "'";
  } catch (const UserError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\n  lacks: " << p;
  }
}

void expect_st_error(const std::string& bytes, const std::vector<std::string>& parts) {
  std::vector<std::string> all = parts;
  all.insert(all.begin(), "w.safetensors (byte ");
  expect_error([&] { parse_safetensors(as_span(bytes), "w.safetensors"); }, all);
}

const std::string kF32Header = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
const std::vector<float> kF32Data = {1.5f, 0.0f, -2.0f, 0.0f, 0.0f, 3.25f};

// ---------------------------------------------------------------------------------------------
// safetensors

TEST_F(BinaryFormats, SafetensorsRoundTrip) {
  std::vector<float> w = {1, 0, -2, 0, 0, 3.5f, 0, 7, 0, -0.0f, 0, 1e-3f};
  std::vector<uint16_t> h = {float_to_half_bits(1.0f), float_to_half_bits(-0.5f)};
  std::string p = path("model.safetensors");
  write_safetensors(p,
                    {{"layer.weight", StDType::F32, {3, 4}, std::as_bytes(std::span(w))},
                     {"layer.bias", StDType::F16, {2}, std::as_bytes(std::span(h))}},
                    {{"producer", "test"}});
  SafetensorsFile f = read_safetensors(p);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.metadata.at("producer"), "test");
  EXPECT_EQ(f.data_start % 8, 0);
  const SafetensorsTensor* t = f.find("layer.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, StDType::F32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(f.find("nope"), nullptr);

  DenseMatrix d = load_dense(p, "layer.weight");
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.cols, 4);
  EXPECT_EQ(d.data, w);

  LoadOptions opts;
  opts.tensor = "layer.weight";
  LoadedMatrix m = load_matrix(p, opts);
  EXPECT_EQ(m.format, "safetensors-dense");
  EXPECT_EQ(m.matrix.source, p);
  EXPECT_EQ(m.matrix.rows, 3);
  EXPECT_EQ(m.matrix.nnz(), 5);  // exact zeros (+0 and -0) are the pruned structure
  EXPECT_EQ(m.matrix.row_ptr, (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(m.matrix.col_idx, (std::vector<int32_t>{0, 2, 1, 3, 3}));
  EXPECT_EQ(m.matrix.values, (std::vector<float>{1, -2, 3.5f, 7, 1e-3f}));
  m.matrix.check_canonical();
}

TEST_F(BinaryFormats, SafetensorsHalfPrecisionConvertsExactly) {
  // Values exactly representable in both fp16 and bf16, including a subnormal of each.
  std::vector<float> want = {1.0f, -0.5f, 0.0f, 3.0f, std::ldexp(1.0f, -20), -256.0f};
  std::vector<uint16_t> f16, bf16;
  for (float v : want) {
    f16.push_back(float_to_half_bits(v));
    bf16.push_back(float_to_bf16_bits(v));
  }
  f16[3] = 0x0001;   // smallest fp16 subnormal, 2^-24
  bf16[3] = 0x0001;  // smallest bf16 subnormal, 2^-133
  std::string p = path("half.safetensors");
  write_safetensors(p, {{"a", StDType::F16, {2, 3}, std::as_bytes(std::span(f16))},
                        {"b", StDType::BF16, {3, 2}, std::as_bytes(std::span(bf16))}});
  DenseMatrix a = load_dense(p, "a");
  DenseMatrix b = load_dense(p, "b");
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(b.rows, 3);
  for (size_t i = 0; i < want.size(); ++i) {
    float w = want[i];
    if (i == 3) {
      EXPECT_EQ(a.data[i], std::ldexp(1.0f, -24));
      EXPECT_EQ(b.data[i], std::ldexp(1.0f, -133));
    } else {
      EXPECT_EQ(a.data[i], w) << i;
      EXPECT_EQ(b.data[i], w) << i;
    }
  }
  EXPECT_EQ(a.source, p + "[a]");
}

TEST_F(BinaryFormats, SafetensorsF64RoundsAndChecksRange) {
  std::vector<double> ok = {0.1, -2.0, 1e30, 0.0};
  std::string p = path("f64.safetensors");
  write_safetensors(p, {{"w", StDType::F64, {2, 2}, std::as_bytes(std::span(ok))}});
  DenseMatrix d = load_dense(p);
  EXPECT_EQ(d.data, (std::vector<float>{0.1f, -2.0f, 1e30f, 0.0f}));

  std::vector<double> big = {1.0, 1e300};
  write_safetensors(p, {{"w", StDType::F64, {1, 2}, std::as_bytes(std::span(big))}});
  expect_error([&] { load_dense(p); }, {p, "byte", "'w'", "(0, 1)", "beyond the fp32 range"});
}

TEST_F(BinaryFormats, SafetensorsRejectsUnsupportedDtypesAndRanks) {
  std::vector<int8_t> q = {1, 2, 3, 4};
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string p = path("q.safetensors");
  write_safetensors(p, {{"q", StDType::I8, {2, 2}, std::as_bytes(std::span(q))},
                        {"bias", StDType::F32, {4}, std::as_bytes(std::span(v).first(4))},
                        {"conv", StDType::F32, {1, 2, 2}, std::as_bytes(std::span(v).first(4))},
                        {"s", StDType::F32, {}, std::as_bytes(std::span(v).first(1))}});
  expect_error([&] { load_dense(p, "q"); }, {p, "'q'", "I8", "dequantize"});
  expect_error([&] { load_dense(p, "bias"); }, {p, "'bias'", "[4]", "1-D", "2-D"});
  expect_error([&] { load_dense(p, "conv"); }, {p, "'conv'", "[1, 2, 2]", "3-D"});
  expect_error([&] { load_dense(p, "s"); }, {p, "'s'", "0-D"});
}

TEST_F(BinaryFormats, SafetensorsTensorSelection) {
  std::vector<float> v = {1, 0, 0, 2};
  std::string p = path("two.safetensors");
  write_safetensors(p, {{"a.weight", StDType::F32, {2, 2}, std::as_bytes(std::span(v))},
                        {"b.weight", StDType::F32, {1, 4}, std::as_bytes(std::span(v))}});
  // Ambiguous without a name; unknown name; both list what is there.
  expect_error([&] { load_matrix(p); },
               {p, "2 tensors", "--tensor", "a.weight F32 [2, 2]", "b.weight F32 [1, 4]"});
  LoadOptions opts;
  opts.tensor = "c.weight";
  expect_error([&] { load_matrix(p, opts); }, {p, "no tensor named 'c.weight'", "a.weight"});
  opts.tensor = "b.weight";
  EXPECT_EQ(load_matrix(p, opts).matrix.rows, 1);
  EXPECT_EQ(load_dense(p, "a.weight").rows, 2);

  std::string empty = path("empty.safetensors");
  write_safetensors(empty, {});
  EXPECT_TRUE(read_safetensors(empty).tensors.empty());
  expect_error([&] { load_matrix(empty); }, {empty, "no tensors"});
}

TEST_F(BinaryFormats, SafetensorsParsesHandBuiltBytes) {
  // Header padded with spaces (allowed), __metadata__ first, a zero-size tensor.
  std::string header =
      R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("e":{"dtype":"F16","shape":[0,5],"data_offsets":[24,24]}}    )";
  std::string bytes = safetensors_bytes(header, raw(kF32Data));
  SafetensorsFile f = parse_safetensors(as_span(bytes), "w.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "e");  // sorted by name
  EXPECT_EQ(f.find("e")->numel(), 0);
  EXPECT_EQ(f.find("w")->file_offset, static_cast<int64_t>(8 + header.size()));
  DenseMatrix d = tensor_to_dense(f, *f.find("w"));
  EXPECT_EQ(d.data, kF32Data);
  DenseMatrix e = tensor_to_dense(f, *f.find("e"));
  EXPECT_EQ(e.rows, 0);
  EXPECT_EQ(e.cols, 5);
}

TEST_F(BinaryFormats, SafetensorsRejectsTruncatedAndLyingHeaders) {
  const std::string good = safetensors_bytes(kF32Header, raw(kF32Data));
  EXPECT_NO_THROW(parse_safetensors(as_span(good), "w.safetensors"));
  expect_st_error("", {"0)", "too short"});
  expect_st_error(good.substr(0, 5), {"too short"});
  // Header length beyond the file (a lying header must not allocate anything).
  expect_st_error(u64le(uint64_t{1} << 62) + "{}",
                  {"header length 4611686018427387904", "exceeds"});
  expect_st_error(u64le(kF32Header.size() + 1) + kF32Header, {"exceeds"});
  expect_st_error(u64le(0), {"header length is 0"});
  // Data section truncated: the tensor runs past the end.
  expect_st_error(good.substr(0, good.size() - 4),
                  {"tensor 'w'", "[0, 24]", "run past the data section", "20 bytes"});
}

TEST_F(BinaryFormats, SafetensorsRejectsBadJson) {
  const std::string data = raw(kF32Data);
  expect_st_error(safetensors_bytes(R"({"w":{"dtype":"F32",)", data), {"not valid JSON"});
  expect_st_error(safetensors_bytes(R"({"w" 1})", data), {"byte 13)", "not valid JSON"});
  expect_st_error(safetensors_bytes("[1,2]", data), {"must start with '{'"});
  expect_st_error(safetensors_bytes("{\"w\":\"\xff\"}", data), {"not valid JSON"});
  expect_st_error(safetensors_bytes(std::string(100, '{'), data), {"nested deeper"});
  // Found by fuzzing: a number beyond the double range throws out_of_range, not parse_error.
  expect_st_error(
      safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,24]}})", data),
      {"not valid JSON"});
  expect_st_error(safetensors_bytes(R"({"w":[1]})", data), {"tensor 'w'", "expected an object"});
  expect_st_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                                    R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
                                    data),
                  {"tensor 'w'", "more than once"});
  expect_st_error(safetensors_bytes(R"({"__metadata__":{"k":1}})", ""),
                  {"__metadata__ value of 'k' must be a string"});
  expect_st_error(safetensors_bytes(R"({"__metadata__":[]})", ""),
                  {"__metadata__ must be an object"});
}

TEST_F(BinaryFormats, SafetensorsRejectsBadTensorEntries) {
  const std::string data = raw(kF32Data);
  auto entry = [&](const std::string& body) {
    return safetensors_bytes(R"({"w":{)" + body + "}}", data);
  };
  expect_st_error(entry(R"("dtype":"F33","shape":[2,3],"data_offsets":[0,24])"),
                  {"tensor 'w'", "unknown dtype \"F33\""});
  expect_st_error(entry(R"("dtype":4,"shape":[2,3],"data_offsets":[0,24])"),
                  {"dtype must be a string"});
  expect_st_error(entry(R"("shape":[2,3],"data_offsets":[0,24])"), {"missing 'dtype'"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,3],"data_offsets":[0,24],"x":1)"),
                  {"unexpected key 'x'"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,-3],"data_offsets":[0,24])"),
                  {"shape entry must be a non-negative integer", "-3"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,3.0],"data_offsets":[0,24])"),
                  {"non-negative integer"});
  expect_st_error(entry(R"("dtype":"F32","shape":6,"data_offsets":[0,24])"),
                  {"shape must be an array"});
  // Shape / offsets mismatch.
  expect_st_error(entry(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,24])"),
                  {"tensor 'w'", "needs 16 bytes", "span 24"});
  expect_st_error(entry(R"("dtype":"F16","shape":[2,3],"data_offsets":[0,24])"),
                  {"needs 12 bytes"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,3],"data_offsets":[24,0])"),
                  {"end before begin"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,3],"data_offsets":[0])"),
                  {"data_offsets must be [begin, end]"});
  // Overflow: shape product, offsets beyond 64 bits, offsets beyond the file.
  expect_st_error(entry(R"("dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,24])"),
                  {"overflows 64-bit"});
  expect_st_error(entry(R"("dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,24])"),
                  {"overflows 64-bit"});
  expect_st_error(entry(R"("dtype":"F32","shape":[2,3],"data_offsets":[0,18446744073709551616])"),
                  {"data_offsets end must be a non-negative integer"});
  expect_st_error(
      entry(
          R"("dtype":"F32","shape":[2,3],"data_offsets":[18446744073709551600,18446744073709551615])"),
      {"run past the data section"});
  // The error points at the tensor's key in the header.
  expect_st_error(entry(R"("dtype":"F33","shape":[2,3],"data_offsets":[0,24])"), {"(byte 9)"});
}

TEST_F(BinaryFormats, SafetensorsRejectsOverlapsGapsAndTrailingBytes) {
  const std::string data = raw(kF32Data);
  expect_st_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                    R"("b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]}})",
                                    data),
                  {"tensor 'b'", "overlaps tensor 'a'"});
  expect_st_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                                    R"("b":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})",
                                    data),
                  {"overlaps"});
  expect_st_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]}})",
                                    data),
                  {"4 bytes before tensor 'b' belong to no tensor"});
  expect_st_error(
      safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data),
      {"8 trailing bytes"});
  expect_st_error(safetensors_bytes("{}", data), {"24 trailing bytes"});
}

// ---------------------------------------------------------------------------------------------
// npy

std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  if (major == 1) {
    uint16_t l = static_cast<uint16_t>(header.size());
    out.append(reinterpret_cast<const char*>(&l), 2);
  } else {
    uint32_t l = static_cast<uint32_t>(header.size());
    out.append(reinterpret_cast<const char*>(&l), 4);
  }
  return out + header + data;
}

void expect_npy_error(const std::string& bytes, const std::vector<std::string>& parts) {
  std::vector<std::string> all = parts;
  all.insert(all.begin(), "w.npy (byte ");
  expect_error([&] { parse_npy(as_span(bytes), "w.npy"); }, all);
}

TEST_F(BinaryFormats, NpyRoundTrip) {
  DenseMatrix d;
  d.rows = 2;
  d.cols = 3;
  d.data = {1, 0, -2.5f, 0, 4, 0};
  std::string p = path("w.npy");
  write_npy(p, d);
  EXPECT_EQ(fs::file_size(p) % 64, 24u);  // 64-byte aligned header + 24 data bytes
  DenseMatrix r = read_npy(p);
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.cols, 3);
  EXPECT_EQ(r.data, d.data);
  LoadedMatrix m = load_matrix(p);
  EXPECT_EQ(m.format, "npy");
  EXPECT_EQ(m.matrix.nnz(), 3);
  EXPECT_EQ(m.matrix.col_idx, (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(load_dense(p).data, d.data);
}

TEST_F(BinaryFormats, NpyDtypesOrderAndVersions) {
  const std::vector<float> want = {1, 2, 3, 4, 5, 6};  // 2x3 row-major
  // float16
  std::vector<uint16_t> h;
  for (float v : want) h.push_back(float_to_half_bits(v));
  EXPECT_EQ(parse_npy(as_span(npy_bytes(
                          "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", raw(h))),
                      "w.npy")
                .data,
            want);
  // float64, version 2.0, double quotes
  std::vector<double> dd(want.begin(), want.end());
  EXPECT_EQ(
      parse_npy(as_span(npy_bytes(R"({"descr": "<f8", "fortran_order": False, "shape": (2, 3)})",
                                  raw(dd), 2)),
                "w.npy")
          .data,
      want);
  // version 3.0
  EXPECT_EQ(parse_npy(as_span(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                                        raw(want), 3)),
                      "w.npy")
                .data,
            want);
  // Fortran order: column-major bytes, same matrix.
  std::vector<float> colmajor = {1, 4, 2, 5, 3, 6};
  DenseMatrix f =
      parse_npy(as_span(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                  raw(colmajor))),
                "w.npy");
  EXPECT_EQ(f.rows, 2);
  EXPECT_EQ(f.cols, 3);
  EXPECT_EQ(f.data, want);
  // Big-endian float32.
  std::string be;
  for (float v : want) {
    uint32_t b = std::bit_cast<uint32_t>(v);
    for (int k = 3; k >= 0; --k) be.push_back(static_cast<char>((b >> (8 * k)) & 0xff));
  }
  EXPECT_EQ(parse_npy(as_span(npy_bytes(
                          "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", be)),
                      "w.npy")
                .data,
            want);
  // Empty 0x5 matrix.
  EXPECT_EQ(parse_npy(as_span(npy_bytes(
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", "")),
                      "w.npy")
                .cols,
            5);
}

TEST_F(BinaryFormats, NpyRejections) {
  const std::string data = raw(std::vector<float>{1, 2, 3, 4, 5, 6});
  auto npy = [&](const std::string& dict) { return npy_bytes(dict, data); };
  expect_npy_error("\x93NUMPZ\x01\x00\x10\x00", {"byte 0)", "magic"});
  expect_npy_error("", {"magic"});
  std::string v4 = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  v4[6] = 4;
  expect_npy_error(v4, {"byte 6)", "version 4.0"});
  std::string lying = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  lying[8] = '\xff';
  lying[9] = '\xff';
  expect_npy_error(lying, {"header length 65535 exceeds"});
  expect_npy_error(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"),
                   {"dtype '<i4' is not supported", "float32"});
  expect_npy_error(npy("{'descr': '<f16', 'fortran_order': False, 'shape': (2, 3), }"),
                   {"'<f16' is not supported"});
  expect_npy_error(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }"),
                   {"structured"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }"),
                   {"shape (6,)", "1-D", "reshape"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }"),
                   {"shape (1, 2, 3)", "3-D"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }"), {"0-D"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }"),
                   {"needs 36 bytes", "has 24", "truncated"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }"),
                   {"needs 12 bytes", "trailing bytes"});
  expect_npy_error(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
      {"overflows"});
  expect_npy_error(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }"),
      {"overflows 64 bits"});
  expect_npy_error(npy("{'descr': '<f4', 'shape': (2, 3), }"), {"missing 'fortran_order'"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
                   {"unexpected key 'x'"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }"),
                   {"fortran_order must be True or False"});
  expect_npy_error(npy("{'descr': '<f4, 'fortran_order': False}"), {"npy header"});
  expect_npy_error(npy("{'descr': '<f4' 'fortran_order': False}"), {"expected '}'"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk"),
                   {"after the dict"});
  expect_npy_error(npy(std::string(20, '(')), {"npy header"});
  std::vector<double> big = {1.0, -1e300};
  expect_npy_error(
      npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", raw(big)),
      {"element (0, 1)", "beyond the fp32 range"});
}

// ---------------------------------------------------------------------------------------------
// .smtx

CsrMatrix smtx(const std::string& text, Diagnostics* diag = nullptr, uint64_t seed = 7) {
  Diagnostics local;
  return parse_smtx(text, "p.smtx", seed, diag ? *diag : local);
}

void expect_smtx_error(const std::string& text, const std::vector<std::string>& parts) {
  expect_error([&] { smtx(text); }, parts);
}

TEST_F(BinaryFormats, SmtxParses) {
  Diagnostics diag;
  CsrMatrix m = smtx("3, 4, 5\n0 2 2 5 \n1 3 0 1 2 \n", &diag);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{1, 3, 0, 1, 2}));
  EXPECT_TRUE(m.pattern_only);
  EXPECT_EQ(m.field, ValueField::Pattern);
  EXPECT_EQ(m.source, "p.smtx");
  ASSERT_EQ(m.values.size(), 5u);
  for (float v : m.values) EXPECT_TRUE(std::fabs(v) >= 0.5f && std::fabs(v) < 1.0f) << v;
  EXPECT_EQ(diag.count(WarningKind::PatternValues), 5);
  m.check_canonical();
  // Same seed, same values; another seed, other values.
  EXPECT_EQ(smtx("3, 4, 5\n0 2 2 5 \n1 3 0 1 2 \n").values, m.values);
  EXPECT_NE(smtx("3, 4, 5\n0 2 2 5 \n1 3 0 1 2 \n", nullptr, 8).values, m.values);

  // CRLF, no final newline, separators without spaces, trailing blank lines.
  EXPECT_EQ(smtx("3,4,5\r\n0 2 2 5\r\n1 3 0 1 2").col_idx, m.col_idx);
  EXPECT_EQ(smtx("3, 4, 5\n0 2 2 5\n1 3 0 1 2\n\n  \n").nnz(), 5);
  // nnz = 0 with the third line empty or absent; zero dimensions.
  EXPECT_EQ(smtx("2, 2, 0\n0 0 0\n\n").nnz(), 0);
  EXPECT_EQ(smtx("2, 2, 0\n0 0 0").nnz(), 0);
  EXPECT_EQ(smtx("0, 0, 0\n0\n").rows, 0);
}

TEST_F(BinaryFormats, SmtxRejections) {
  expect_smtx_error("", {"p.smtx:1:", "empty line"});
  expect_smtx_error("3 4\n", {"p.smtx:1:", "expected nnz, found end of line"});
  expect_smtx_error("3, 4, 5, 6\n", {"p.smtx:1:", "unexpected '6'"});
  expect_smtx_error("3, x, 5\n", {"p.smtx:1:", "expected ncols", "'x'"});
  expect_smtx_error("-3, 4, 5\n", {"p.smtx:1:", "non-negative", "'-3'"});
  expect_smtx_error("99999999999999999999, 4, 5\n", {"p.smtx:1:", "overflows"});
  expect_smtx_error("3000000000, 4, 5\n", {"p.smtx:1:", "exceed the supported maximum"});
  expect_smtx_error("3, 4, 13\n", {"p.smtx:1:", "nnz 13 exceeds nrows*ncols = 3x4"});
  expect_smtx_error("0, 4, 1\n", {"nnz 1 exceeds"});
  // Offsets.
  expect_smtx_error("3, 4, 5\n1 2 2 5\n1 3 0 1 2\n", {"p.smtx:2:", "offset 0 is 1", "start at 0"});
  expect_smtx_error("3, 4, 5\n0 2 1 5\n1 3 0 1 2\n",
                    {"p.smtx:2: offset 2 (row 1) decreases: 1 after 2"});
  expect_smtx_error("3, 4, 5\n0 2 6 5\n1 3 0 1 2\n",
                    {"p.smtx:2:", "offset 2 (row 1) is 6, beyond nnz = 5"});
  expect_smtx_error("3, 4, 5\n0 2 2 4\n1 3 0 1 2\n",
                    {"p.smtx:2:", "last offset 3 is 4, expected nnz = 5"});
  expect_smtx_error("3, 4, 5\n0 2 2\n1 3 0 1 2\n",
                    {"p.smtx:2:", "expected nrows+1 = 4 row offsets, found 3"});
  expect_smtx_error("3, 4, 5\n0 2 2 5 5\n1 3 0 1 2\n",
                    {"p.smtx:2:", "more than nrows+1 = 4", "'5'"});
  expect_smtx_error("3, 4, 5\n0 2 2 x\n", {"p.smtx:2:", "row offset 3", "'x'"});
  expect_smtx_error("3, 4, 5\n0,2,2,5\n", {"p.smtx:2:", "'0,2,2,5'"});
  expect_smtx_error("3, 4, 5\n", {"p.smtx:2:", "found 0"});
  // Columns.
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 4 0 1 2\n",
                    {"p.smtx:3:", "column index 1 (row 0) is 4, outside [0, 4)"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n3 1 0 1 2\n",
                    {"p.smtx:3:", "column index 1 (row 0) is 1 after 3", "strictly increasing"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 3 0 1 1\n",
                    {"p.smtx:3:", "column index 4 (row 2) is 1 after 1"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 3 0 1\n",
                    {"p.smtx:3:", "expected nnz = 5 column indices, found 4"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 3 0 1 2 3\n", {"p.smtx:3:", "more than nnz = 5", "'3'"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n", {"p.smtx:3:", "found 0"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 3 0 1 -2\n", {"p.smtx:3:", "'-2'"});
  expect_smtx_error("3, 4, 5\n0 2 2 5\n1 3 0 1 2\n7\n", {"p.smtx:4:", "after the 3 lines"});
  // A lying header fails on the short line without allocating 2^31 offsets.
  expect_smtx_error("2147483647, 2147483647, 5\n0 5\n", {"p.smtx:2:", "found 2"});
}

// ---------------------------------------------------------------------------------------------
// CSR container

CsrMatrix sample_csr() {
  CsrMatrix m;
  m.rows = 3;
  m.cols = 5;
  m.row_ptr = {0, 2, 2, 4};
  m.col_idx = {0, 4, 1, 2};
  m.values = {1.5f, -2, 0, 3};  // an explicit zero is an entry
  m.source = "orig.mtx";
  return m;
}

TEST_F(BinaryFormats, CsrContainerRoundTrip) {
  CsrMatrix m = sample_csr();
  std::string p = path("m.safetensors");
  write_csr(p, m);
  CsrMatrix r = read_csr(p);
  EXPECT_EQ(r.rows, 3);
  EXPECT_EQ(r.cols, 5);
  EXPECT_EQ(r.row_ptr, m.row_ptr);
  EXPECT_EQ(r.col_idx, m.col_idx);
  EXPECT_EQ(r.values, m.values);
  EXPECT_EQ(r.field, ValueField::Real);
  EXPECT_FALSE(r.pattern_only);
  EXPECT_EQ(r.source, p);
  SafetensorsFile f = read_safetensors(p);
  EXPECT_EQ(f.metadata.at("format"), "sparsegen-csr");
  EXPECT_EQ(f.metadata.at("source"), "orig.mtx");

  LoadedMatrix l = load_matrix(p);
  EXPECT_EQ(l.format, "sparsegen-csr");
  EXPECT_EQ(l.matrix.values, m.values);
  LoadOptions opts;
  opts.tensor = "values";
  expect_error([&] { load_matrix(p, opts); }, {p, "CSR container"});
  expect_error([&] { load_dense(p); }, {p, "CSR container"});

  // Complex and pattern-only matrices keep their field, imaginary parts and values.
  CsrMatrix c = sample_csr();
  c.field = ValueField::Complex;
  c.imag = {0.5f, 0, -1, 2};
  write_csr(p, c);
  CsrMatrix rc = read_csr(p);
  EXPECT_EQ(rc.field, ValueField::Complex);
  EXPECT_EQ(rc.imag, c.imag);
  CsrMatrix pat = sample_csr();
  pat.field = ValueField::Pattern;
  pat.pattern_only = true;
  write_csr(p, pat);
  CsrMatrix rp = read_csr(p);
  EXPECT_TRUE(rp.pattern_only);
  EXPECT_EQ(rp.values, pat.values);
  EXPECT_EQ(load_matrix(p).diag.count(WarningKind::PatternValues), 4);
  // Non-finite values are reported again to whoever loads the container.
  CsrMatrix nf = sample_csr();
  nf.values[2] = std::numeric_limits<float>::infinity();
  nf.values[3] = std::numeric_limits<float>::quiet_NaN();
  write_csr(p, nf);
  LoadedMatrix lnf = load_matrix(p);
  EXPECT_EQ(lnf.diag.count(WarningKind::NonFinite), 2);
  EXPECT_NE(lnf.diag.format().find("entry (2, 1)"), std::string::npos) << lnf.diag.format();

  // Empty matrices.
  CsrMatrix e;
  e.rows = 0;
  e.cols = 7;
  write_csr(p, e);
  EXPECT_EQ(read_csr(p).cols, 7);
}

// Arrays longer than one copy piece (16 MiB) are copied piece by piece and each piece released
// from the mapping behind the copy: the matrix must come back exact, and a mapped file read again
// after a release must show the same bytes.
TEST_F(BinaryFormats, CsrContainerLargerThanOneCopyPieceRoundTrips) {
  CsrMatrix m;
  m.rows = 1 << 16;
  m.cols = 1 << 12;  // row_ptr starts as {0}
  uint64_t x = 88172645463325252ULL;
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int j = 0; j < 80; ++j) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      m.col_idx.push_back(static_cast<int32_t>(j * 51 + static_cast<int>(x % 51)));
      m.values.push_back(static_cast<float>(static_cast<double>(x % 1000003) / 7919.0 - 63.0));
    }
    m.row_ptr.push_back(static_cast<int64_t>(m.col_idx.size()));
  }
  m.check_canonical();
  ASSERT_GT(m.values.size() * sizeof(float), size_t{16} << 20);
  const std::string p = path("big.safetensors");
  write_csr(p, m);
  const CsrMatrix r = read_csr(p);
  EXPECT_EQ(r.row_ptr, m.row_ptr);
  EXPECT_EQ(r.col_idx, m.col_idx);
  EXPECT_EQ(r.values, m.values);

  const MappedFile f(p);
  const std::string before(f.text());
  f.release(f.text().data(), f.text().size());
  EXPECT_EQ(f.text(), before);
}

TEST_F(BinaryFormats, CsrContainerRejections) {
  const CsrMatrix m = sample_csr();
  std::map<std::string, std::string> meta = {{"format", "sparsegen-csr"},
                                             {"version", "1"},
                                             {"rows", "3"},
                                             {"cols", "5"},
                                             {"nnz", "4"},
                                             {"field", "real"},
                                             {"pattern_only", "false"}};
  std::string p = path("bad.safetensors");
  auto write = [&](const std::vector<int64_t>& rp, const std::vector<int32_t>& ci,
                   const std::vector<float>& v, const std::map<std::string, std::string>& md) {
    write_safetensors(
        p,
        {{"row_ptr", StDType::I64, {static_cast<int64_t>(rp.size())}, std::as_bytes(std::span(rp))},
         {"col_idx", StDType::I32, {static_cast<int64_t>(ci.size())}, std::as_bytes(std::span(ci))},
         {"values", StDType::F32, {static_cast<int64_t>(v.size())}, std::as_bytes(std::span(v))}},
        md);
  };
  write(m.row_ptr, m.col_idx, m.values, meta);
  EXPECT_EQ(read_csr(p).nnz(), 4);
  // Non-canonical content is caught by check_canonical, naming the file.
  write(m.row_ptr, {4, 0, 1, 2}, m.values, meta);
  expect_error([&] { load_matrix(p); }, {p, "row 0", "not strictly increasing"});
  write(m.row_ptr, {0, 5, 1, 2}, m.values, meta);
  expect_error([&] { read_csr(p); }, {p, "outside [0, 5)"});
  write({0, 3, 2, 4}, m.col_idx, m.values, meta);
  expect_error([&] { read_csr(p); }, {p, "row offsets decrease"});
  // Shapes and metadata that disagree.
  write(m.row_ptr, m.col_idx, {1, 2, 3}, meta);
  expect_error([&] { read_csr(p); }, {p, "values has 3 entries, col_idx has 4"});
  auto md = meta;
  md["rows"] = "4";
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "row_ptr has 4 entries, expected rows+1 = 5"});
  md = meta;
  md["nnz"] = "9";
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "nnz = '9'"});
  md = meta;
  md["version"] = "2";
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "version '2' is not supported"});
  md = meta;
  md["rows"] = "-1";
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "rows = '-1'"});
  md = meta;
  md.erase("field");
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "lacks __metadata__ 'field'"});
  md = meta;
  md["field"] = "complex";
  write(m.row_ptr, m.col_idx, m.values, md);
  expect_error([&] { read_csr(p); }, {p, "lacks tensor 'imag'"});
  // Wrong dtype of an array.
  std::vector<int64_t> wide(m.col_idx.begin(), m.col_idx.end());
  write_safetensors(p,
                    {{"row_ptr", StDType::I64, {4}, std::as_bytes(std::span(m.row_ptr))},
                     {"col_idx", StDType::I64, {4}, std::as_bytes(std::span(wide))},
                     {"values", StDType::F32, {4}, std::as_bytes(std::span(m.values))}},
                    meta);
  expect_error([&] { read_csr(p); }, {p, "'col_idx' must be 1-D I32, found 1-D I64"});
  // A plain safetensors file is not a container.
  write_safetensors(p, {{"values", StDType::F32, {4}, std::as_bytes(std::span(m.values))}});
  expect_error([&] { read_csr(p); }, {p, "not a sparsegen CSR container"});
}

// ---------------------------------------------------------------------------------------------
// dense -> CSR and the dispatcher

TEST_F(BinaryFormats, DenseToCsrKeepsNonzerosAndReportsNonFinite) {
  DenseMatrix d;
  d.rows = 2;
  d.cols = 3;
  d.data = {0.0f,
            -0.0f,
            std::numeric_limits<float>::quiet_NaN(),
            1.0f,
            std::numeric_limits<float>::infinity(),
            0.0f};
  d.source = "w.npy";
  Diagnostics diag;
  CsrMatrix m = dense_to_csr(d, diag);
  EXPECT_EQ(m.row_ptr, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(m.col_idx, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_TRUE(std::isnan(m.values[0]));
  EXPECT_EQ(diag.count(WarningKind::NonFinite), 2);
  EXPECT_NE(diag.format().find("element (0, 2)"), std::string::npos) << diag.format();
  EXPECT_EQ(m.field, ValueField::Real);
  EXPECT_FALSE(m.pattern_only);
}

TEST_F(BinaryFormats, LoadDispatchesOnExtension) {
  std::string p = write("m.MTX", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 3.5\n");
  LoadedMatrix m = load_matrix(p);
  EXPECT_EQ(m.format, "matrix-market");
  EXPECT_EQ(m.matrix.source, p);
  EXPECT_EQ(m.matrix.col_idx, (std::vector<int32_t>{1}));

  std::string s = write("p.smtx", "2, 2, 1\n0 1 1\n1\n");
  LoadOptions opts;
  opts.pattern_seed = 99;
  LoadedMatrix sm = load_matrix(s, opts);
  EXPECT_EQ(sm.format, "smtx");
  EXPECT_TRUE(sm.matrix.pattern_only);
  Diagnostics diag;
  EXPECT_EQ(sm.matrix.values, smtx("2, 2, 1\n0 1 1\n1\n", &diag, 99).values);
  EXPECT_EQ(sm.diag.count(WarningKind::PatternValues), 1);

  expect_error([&] { load_matrix(path("w.csv")); },
               {path("w.csv"), "unknown file type '.csv'", ".mtx, .smtx, .safetensors, .npy"});
  expect_error([&] { load_matrix(path("noext")); }, {"(none)"});
  expect_error([&] { load_dense(s); }, {s, ".safetensors, .npy"});
  expect_error([&] { load_matrix(path("missing.npy")); }, {path("missing.npy"), "cannot open"});
  opts.tensor = "w";
  expect_error([&] { load_matrix(s, opts); }, {s, "tensor name ('w')"});
}

// A few DLMC files load with the MANIFEST's shape and nnz (the full contract test is elsewhere).
TEST_F(BinaryFormats, DlmcFilesMatchManifest) {
  const fs::path dir = testing::data_dir() / "dlmc";
  std::ifstream manifest(dir / "MANIFEST.tsv");
  ASSERT_TRUE(manifest) << "missing " << (dir / "MANIFEST.tsv");
  std::string line;
  std::getline(manifest, line);  // header
  int checked = 0;
  for (int row = 0; std::getline(manifest, line); ++row) {
    if (row % 9 != 1) continue;  // a spread over methods, sparsities and shapes
    std::istringstream in(line);
    std::string file, source, rows, cols, nnz, density, empty_rows;
    std::getline(in, file, '\t');
    std::getline(in, source, '\t');
    std::getline(in, rows, '\t');
    std::getline(in, cols, '\t');
    std::getline(in, nnz, '\t');
    std::getline(in, density, '\t');
    std::getline(in, empty_rows, '\t');
    LoadedMatrix m = load_matrix((dir / file).string());
    EXPECT_EQ(m.format, "smtx");
    EXPECT_EQ(m.matrix.rows, std::stoll(rows)) << file;
    EXPECT_EQ(m.matrix.cols, std::stoll(cols)) << file;
    EXPECT_EQ(m.matrix.nnz(), std::stoll(nnz)) << file;
    int64_t empty = 0;
    for (int64_t r = 0; r < m.matrix.rows; ++r) empty += m.matrix.row_length(r) == 0;
    EXPECT_EQ(empty, std::stoll(empty_rows)) << file;
    EXPECT_TRUE(m.matrix.pattern_only);
    m.matrix.check_canonical();
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace sparsegen
