// Little-endian scalar loads and stores at arbitrary (possibly unaligned) offsets.
//
// Both segments are little-endian by contract; the cuda-link control block places u64 and f64
// fields at offsets that are not naturally aligned, so plain loads go through memcpy.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace meshdock::shm {

static_assert(std::endian::native == std::endian::little,
              "meshdock's shared-memory segments are little-endian; a big-endian host would "
              "need byte swaps in load_le/store_le");

template <typename T>
inline T load_le(const std::byte* base, std::size_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}

template <typename T>
inline void store_le(std::byte* base, std::size_t offset, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(base + offset, &value, sizeof(T));
}

}  // namespace meshdock::shm
