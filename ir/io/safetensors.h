// The safetensors format (huggingface/safetensors): an 8-byte little-endian header length N, N
// bytes of JSON, then the data section. The JSON maps each tensor name to
// {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]} (offsets relative to the
// data section), plus an optional "__metadata__" object of string -> string.
//
// The parser is strict, as the format's own specification is: everything is checked against the
// file size before any tensor is touched, and the tensors must tile the data section exactly
// (no gaps, no overlaps, nothing after the last tensor), so no byte of a file is unaccounted for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dense_matrix.h"
#include "ir/io/text_scanner.h"

namespace sparsegen {

// Element types of the format. Sub-byte types (F4, F6_*) are not listed: such files are rejected
// as having an unknown dtype.
enum class StDType {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  C64
};
std::string_view to_string(StDType t);  // "F32", as written in the file
std::optional<StDType> parse_st_dtype(std::string_view name);
int st_dtype_bytes(StDType t);

struct SafetensorsTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the data section
  uint64_t end = 0;
  std::span<const std::byte> data;  // the tensor's bytes (into the parsed buffer)
  int64_t file_offset = 0;          // absolute byte offset of the tensor's data in the file
  int64_t numel() const;
};

struct SafetensorsFile {
  std::string source;
  std::vector<SafetensorsTensor> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  int64_t data_start = 0;  // 8 + header length: where the data section begins
  // Keeps the mapped file alive for read_safetensors; empty for parse_safetensors, where the caller
  // owns the bytes and must keep them alive while `tensors[i].data` is used.
  std::shared_ptr<const void> storage;
  // The same file mapping when read_safetensors mapped it (storage keeps it alive), else null: a
  // reader copying tensors out may release() the pages it has copied.
  const MappedFile* mapping = nullptr;

  // nullptr when absent.
  const SafetensorsTensor* find(std::string_view name) const;
};

// Parses and validates a whole safetensors file held in `data`. Throws UserError naming
// `source_name`, the byte offset and the tensor for anything inconsistent. Never allocates more
// than a small multiple of data.size().
SafetensorsFile parse_safetensors(std::span<const std::byte> data, const std::string& source_name);

// Maps the file and parses it; the returned object owns the mapping.
SafetensorsFile read_safetensors(const std::string& path);

// Converts a 2-D tensor to a dense fp32 matrix. F32 is copied, F16/BF16 convert exactly, F64 is
// rounded to the nearest fp32 (the master precision) and a finite value beyond the fp32 range is a
// UserError naming the element. Integer, boolean and 8-bit float tensors are rejected: they are
// quantized weights whose scales live elsewhere, so their raw values are not the weight.
// Tensors that are not 2-D are rejected with their shape.
DenseMatrix tensor_to_dense(const SafetensorsFile& file, const SafetensorsTensor& tensor);

// One tensor to write: its bytes must be numel(shape) * st_dtype_bytes(dtype) long, little-endian.
struct SafetensorsWriteTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// Writes a safetensors file: tensors in the given order, each starting on an 8-byte boundary of
// the file (the header is padded with spaces, as the reference writer does). Throws UserError
// naming `path` on I/O failure; SG_ASSERTs on inconsistent arguments (a programming error).
void write_safetensors(const std::string& path, const std::vector<SafetensorsWriteTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace sparsegen
