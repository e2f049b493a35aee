// SHA-256 (FIPS 180-4), written for the kernel database's keys so that the runtime needs no crypto
// library (the GPU machine builds from a minimal set of packages). Not constant-time; nothing
// secret is hashed.
//
//   Sha256 h;  h.update("spmm");  h.update(bytes);  std::string key = h.hex();
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sparsegen {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Finishes the hash (the object must not be updated afterwards).
  std::array<std::uint8_t, 32> digest();
  // Lower-case hex of digest() (64 characters).
  std::string hex();

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
  bool done_ = false;
  std::array<std::uint8_t, 32> out_{};
};

// Convenience: hex SHA-256 of one string.
std::string sha256_hex(std::string_view s);

}  // namespace sparsegen
