#include "compiler/fingerprint.h"

#include <fmt/format.h>

#include <cstring>

namespace sparsegen {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only matter here: the key is host-local
  return v;
}
inline uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  return rotl(acc, 31) * kP1;
}
inline uint64_t merge(uint64_t acc, uint64_t v) {
  acc ^= round(0, v);
  return acc * kP1 + kP4;
}

}  // namespace

uint64_t hash64(const void* data, std::size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + bytes;
  uint64_t h;
  if (bytes >= 32) {
    // Four independent lanes keep the multiplier pipeline full.
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + kP5;
  }
  h += static_cast<uint64_t>(bytes);
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round(0, load64(p)), 27) * kP1 + kP4;
  for (; p < end; ++p) h = rotl(h ^ (uint64_t{*p} * kP5), 11) * kP1;
  // Final avalanche.
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

MatrixFingerprint fingerprint(const CsrMatrix& a) {
  MatrixFingerprint f;
  f.rows = a.rows;
  f.cols = a.cols;
  f.nnz = a.nnz();
  f.row_ptr_hash = hash64(a.row_ptr.data(), a.row_ptr.size() * sizeof(int64_t), 1);
  f.col_idx_hash = hash64(a.col_idx.data(), a.col_idx.size() * sizeof(int32_t), 2);
  return f;
}

std::string to_string(const MatrixFingerprint& f, DType value_dtype) {
  return fmt::format("csr {}x{} nnz={} rows={:016x}:cols={:016x} values={}", f.rows, f.cols, f.nnz,
                     f.row_ptr_hash, f.col_idx_hash, to_string(value_dtype));
}

}  // namespace sparsegen
