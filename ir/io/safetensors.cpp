#include "ir/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/io/text_scanner.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// The format is little-endian; reading it with memcpy is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "sparsegen assumes a little-endian host");

namespace {

struct StDTypeInfo {
  StDType type;
  std::string_view name;
  int bytes;
};
constexpr StDTypeInfo kStDTypes[] = {
    {StDType::BOOL, "BOOL", 1},       {StDType::U8, "U8", 1},
    {StDType::I8, "I8", 1},           {StDType::F8_E5M2, "F8_E5M2", 1},
    {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::F8_E8M0, "F8_E8M0", 1},
    {StDType::I16, "I16", 2},         {StDType::U16, "U16", 2},
    {StDType::F16, "F16", 2},         {StDType::BF16, "BF16", 2},
    {StDType::I32, "I32", 4},         {StDType::U32, "U32", 4},
    {StDType::F32, "F32", 4},         {StDType::F64, "F64", 8},
    {StDType::I64, "I64", 8},         {StDType::U64, "U64", 8},
    {StDType::C64, "C64", 8},
};

using nlohmann::json;

// A header only needs depth 3 ({name: {shape: [..]}}); refusing deeper nesting up front keeps a
// hostile header from exhausting the stack or memory in the JSON library.
constexpr int kMaxJsonDepth = 16;

class HeaderChecker {
 public:
  HeaderChecker(const std::string& source, std::string_view header)
      : source_(source), header_(header) {}

  // Byte offset in the file of the tensor's key in the header (best effort: the first occurrence
  // of the quoted name), else the start of the header.
  int64_t key_offset(const std::string& name) const {
    size_t pos = header_.find(fmt::format("\"{}\"", name));
    return 8 + static_cast<int64_t>(pos == std::string_view::npos ? 0 : pos);
  }

  [[noreturn]] void fail(int64_t byte, const std::string& what) const {
    throw UserError(SourceLoc{source_, 0, byte}, what);
  }
  [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
    fail(key_offset(name), fmt::format("tensor '{}': {}", name, what));
  }

 private:
  const std::string& source_;
  std::string_view header_;
};

void check_depth(const HeaderChecker& hc, std::string_view header) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < header.size(); ++i) {
    char c = header[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth)
        hc.fail(8 + static_cast<int64_t>(i),
                fmt::format("header JSON nested deeper than {} levels", kMaxJsonDepth));
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

// A JSON value that must be a non-negative integer; returns it as uint64.
uint64_t as_u64(const HeaderChecker& hc, const std::string& tensor, const json& v,
                std::string_view what) {
  if (!v.is_number_unsigned())
    hc.fail_tensor(tensor,
                   fmt::format("{} must be a non-negative integer, found {}", what, v.dump()));
  return v.get<uint64_t>();
}

}  // namespace

std::string_view to_string(StDType t) {
  return kStDTypes[static_cast<int>(t)].name;
}

std::optional<StDType> parse_st_dtype(std::string_view name) {
  for (const auto& d : kStDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

int st_dtype_bytes(StDType t) {
  return kStDTypes[static_cast<int>(t)].bytes;
}

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated by the parser not to overflow
  return n;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsFile parse_safetensors(std::span<const std::byte> data, const std::string& source_name) {
  SafetensorsFile file;
  file.source = source_name;
  const uint64_t size = data.size();
  if (size < 8)
    throw UserError(SourceLoc{source_name, 0, 0},
                    fmt::format("file is {} bytes, too short for the 8-byte safetensors header "
                                "length",
                                size));
  uint64_t header_len = 0;
  std::memcpy(&header_len, data.data(), 8);
  if (header_len > size - 8)
    throw UserError(SourceLoc{source_name, 0, 0},
                    fmt::format("header length {} exceeds the {} bytes that follow it (file size "
                                "{}); truncated or not a safetensors file",
                                header_len, size - 8, size));
  if (header_len == 0)
    throw UserError(SourceLoc{source_name, 0, 0}, "header length is 0; expected a JSON object");
  std::string_view header(reinterpret_cast<const char*>(data.data()) + 8, header_len);
  HeaderChecker hc(source_name, header);
  file.data_start = 8 + static_cast<int64_t>(header_len);
  const uint64_t data_size = size - 8 - header_len;
  const std::byte* data_base = data.data() + 8 + header_len;

  check_depth(hc, header);
  if (header.front() != '{')
    hc.fail(8, fmt::format("header must start with '{{', found byte {:#04x}",
                           static_cast<unsigned char>(header.front())));

  // Duplicate tensor names would be silently merged by the JSON library: catch them while parsing.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && duplicate.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second) duplicate = key;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(header.begin(), header.end(), on_event);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based within the header text.
    std::string what = e.what();
    auto colon = what.find("syntax error");
    hc.fail(8 + static_cast<int64_t>(e.byte > 0 ? e.byte - 1 : 0),
            fmt::format("header is not valid JSON: {}",
                        colon == std::string::npos ? what : what.substr(colon)));
  } catch (const json::exception& e) {  // e.g. a number beyond the double range
    hc.fail(8, fmt::format("header is not valid JSON: {}", e.what()));
  }
  if (!root.is_object()) hc.fail(8, "header JSON must be an object");
  if (!duplicate.empty()) hc.fail_tensor(duplicate, "listed more than once in the header");

  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) hc.fail(hc.key_offset(name), "__metadata__ must be an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          hc.fail(hc.key_offset(name),
                  fmt::format("__metadata__ value of '{}' must be a string, found {}", m.key(),
                              m.value().dump()));
        file.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object())
      hc.fail_tensor(name, fmt::format("expected an object with dtype, shape and data_offsets, "
                                       "found {}",
                                       v.type_name()));
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        hc.fail_tensor(name, fmt::format("unexpected key '{}' (expected dtype, shape, "
                                         "data_offsets)",
                                         f.key()));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!v.contains(key)) hc.fail_tensor(name, fmt::format("missing '{}'", key));

    SafetensorsTensor t;
    t.name = name;
    const json& dt = v["dtype"];
    if (!dt.is_string())
      hc.fail_tensor(name, fmt::format("dtype must be a string, found {}", dt.dump()));
    auto parsed = parse_st_dtype(dt.get_ref<const std::string&>());
    if (!parsed)
      hc.fail_tensor(name, fmt::format("unknown dtype {} (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, "
                                       "F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, F64, I64, "
                                       "U64, C64)",
                                       dt.dump()));
    t.dtype = *parsed;

    const json& shape = v["shape"];
    if (!shape.is_array())
      hc.fail_tensor(name, fmt::format("shape must be an array, found {}", shape.dump()));
    uint64_t numel = 1;
    bool overflow = false;
    for (const json& d : shape) {
      uint64_t dim = as_u64(hc, name, d, "every shape entry");
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        hc.fail_tensor(name, fmt::format("shape entry {} exceeds 2^63-1", dim));
      t.shape.push_back(static_cast<int64_t>(dim));
      overflow = overflow || (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim);
      numel *= dim;
    }
    // A zero dimension makes the product 0 however large the others are.
    if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) {
      numel = 0;
      overflow = false;
    }
    const uint64_t elem = static_cast<uint64_t>(st_dtype_bytes(t.dtype));
    if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem)
      hc.fail_tensor(name, fmt::format("shape {} overflows 64-bit byte counts", shape.dump()));
    const uint64_t nbytes = numel * elem;

    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      hc.fail_tensor(name, fmt::format("data_offsets must be [begin, end], found {}", off.dump()));
    t.begin = as_u64(hc, name, off[0], "data_offsets begin");
    t.end = as_u64(hc, name, off[1], "data_offsets end");
    if (t.end < t.begin)
      hc.fail_tensor(name, fmt::format("data_offsets [{}, {}] end before begin", t.begin, t.end));
    if (t.end > data_size)
      hc.fail_tensor(name, fmt::format("data_offsets [{}, {}] run past the data section, which "
                                       "holds {} bytes (file size {}); truncated file?",
                                       t.begin, t.end, data_size, size));
    if (t.end - t.begin != nbytes)
      hc.fail_tensor(name, fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] "
                                       "span {}",
                                       shape.dump(), to_string(t.dtype), nbytes, t.begin, t.end,
                                       t.end - t.begin));
    t.data = std::span<const std::byte>(data_base + t.begin, nbytes);
    t.file_offset = file.data_start + static_cast<int64_t>(t.begin);
    file.tensors.push_back(std::move(t));
  }

  // The tensors must tile the data section exactly, as the format's specification requires.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : file.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const auto* t : by_offset) {
    if (t->begin < expected)
      throw UserError(SourceLoc{source_name, 0, t->file_offset},
                      fmt::format("tensor '{}' (data_offsets [{}, {}]) overlaps tensor '{}' "
                                  "(data_offsets [{}, {}])",
                                  t->name, t->begin, t->end, prev->name, prev->begin, prev->end));
    if (t->begin > expected)
      throw UserError(SourceLoc{source_name, 0, file.data_start + static_cast<int64_t>(expected)},
                      fmt::format("{} bytes before tensor '{}' belong to no tensor (the data "
                                  "section must be fully covered)",
                                  t->begin - expected, t->name));
    expected = t->end;
    prev = t;
  }
  if (expected != data_size)
    throw UserError(SourceLoc{source_name, 0, file.data_start + static_cast<int64_t>(expected)},
                    fmt::format("{} trailing bytes after the last tensor belong to no tensor",
                                data_size - expected));

  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) {
  auto mapped = std::make_shared<MappedFile>(path);
  std::string_view text = mapped->text();
  SafetensorsFile file =
      parse_safetensors(std::as_bytes(std::span(text.data(), text.size())), path);
  file.storage = mapped;
  file.mapping = mapped.get();
  return file;
}

DenseMatrix tensor_to_dense(const SafetensorsFile& file, const SafetensorsTensor& t) {
  const SourceLoc loc{file.source, 0, t.file_offset};
  if (t.shape.size() != 2) {
    std::string shape = fmt::format("[{}]", fmt::join(t.shape, ", "));
    throw UserError(loc, fmt::format("tensor '{}' has shape {} ({}-D); a weight matrix must be "
                                     "2-D{}",
                                     t.name, shape, t.shape.size(),
                                     t.shape.size() == 1 ? " (a 1-D tensor is a bias or norm "
                                                           "vector, not a weight)"
                                                         : ""));
  }
  DenseMatrix d;
  d.rows = t.shape[0];
  d.cols = t.shape[1];
  d.source = fmt::format("{}[{}]", file.source, t.name);
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.dtype) {
    case StDType::F32:
      d.data.resize(n);
      if (n) std::memcpy(d.data.data(), t.data.data(), n * 4);
      break;
    case StDType::F16:
    case StDType::BF16: {
      d.data.resize(n);
      const bool half = t.dtype == StDType::F16;
      for (size_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, t.data.data() + 2 * i, 2);
        d.data[i] = half ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
      }
      break;
    }
    case StDType::F64: {
      d.data.resize(n);
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, t.data.data() + 8 * i, 8);
        if (std::isfinite(v) && std::fabs(v) > 3.4028234663852886e38)
          throw UserError(SourceLoc{file.source, 0, t.file_offset + static_cast<int64_t>(8 * i)},
                          fmt::format("tensor '{}' element ({}, {}) = {:g} is beyond the fp32 "
                                      "range",
                                      t.name, static_cast<int64_t>(i) / d.cols,
                                      static_cast<int64_t>(i) % d.cols, v));
        d.data[i] = static_cast<float>(v);
      }
      break;
    }
    default:
      throw UserError(loc, fmt::format("tensor '{}' has dtype {}; sparsegen reads F32, F16, BF16 "
                                       "and F64 weights (integer and 8-bit tensors are quantized "
                                       "and need their scales: dequantize first)",
                                       t.name, to_string(t.dtype)));
  }
  return d;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsWriteTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Largest elements first keeps every tensor aligned to its element size without gaps (gaps are
  // not allowed by the format).
  std::vector<const SafetensorsWriteTensor*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return st_dtype_bytes(a->dtype) > st_dtype_bytes(b->dtype);
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto* t : order) {
    SG_ASSERT(t->name != "__metadata__" && !header.contains(t->name),
              "tensor name reserved or repeated: " + t->name);
    uint64_t numel = 1;
    for (int64_t dim : t->shape) numel *= static_cast<uint64_t>(dim);
    SG_ASSERT(numel * static_cast<uint64_t>(st_dtype_bytes(t->dtype)) == t->data.size(),
              "tensor bytes do not match its shape: " + t->name);
    header[t->name] = {{"dtype", to_string(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-byte aligned

  // Write to a temporary name and rename, so a failed write never leaves a half file at `path`.
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw UserError(SourceLoc{path}, fmt::format("cannot create: {}", std::strerror(errno)));
  uint64_t len = text.size();
  bool ok =
      std::fwrite(&len, 8, 1, f) == 1 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const auto* t : order)
    ok = ok &&
         (t->data.empty() || std::fwrite(t->data.data(), 1, t->data.size(), f) == t->data.size());
  ok = (std::fclose(f) == 0) && ok;
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    throw UserError(SourceLoc{path}, "write failed (disk full or not writable?)");
  }
}

}  // namespace sparsegen
