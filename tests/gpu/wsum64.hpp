// wsum64: the checksum gpu-check compares arrays by (tests/gpu/gpucheck_common.py computes the
// same in Python): sum over the bytes' little-endian 64-bit words, the last zero-padded, of
// word i times 2i + 1, modulo 2^64, as 16 hex digits. Position-weighted, so moved or swapped
// words change it; cheap enough to run as a kernel on device memory. For cpp_check and the
// FakeCuda tests that write its reference files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

inline std::string wsum64(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t s = 0;
  for (std::size_t i = 0; i * 8 < n; ++i) {
    std::uint64_t w = 0;  // little-endian word, zero-padded at the end
    std::memcpy(&w, p + i * 8, std::min<std::size_t>(8, n - i * 8));  // x86-64, aarch64: LE
    s += w * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(s));
  return buf;
}
