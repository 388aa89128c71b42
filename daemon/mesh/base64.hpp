// Standard base64 (RFC 4648) decoding into a caller's buffer; whitespace is skipped, anything
// else outside the alphabet is an error naming its offset.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshdock::mesh {

// Appends the bytes `text` encodes to `out` (a vector of bytes, any allocator). Returns the
// offset of the first bad character, or nullopt when the whole text decoded.
template <typename Bytes>
std::optional<std::size_t> base64_decode(std::string_view text, Bytes& out) {
  static const std::array<std::int8_t, 256> kMap = [] {
    std::array<std::int8_t, 256> m{};
    m.fill(-1);
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) m[static_cast<unsigned char>(a[i])] = static_cast<std::int8_t>(i);
    return m;
  }();
  std::uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  out.reserve(out.size() + text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Fast path: whole quanta of four alphabet characters, three bytes at a time.
    while (bits == 0 && i + 4 <= text.size()) {
      const auto a = kMap[static_cast<unsigned char>(text[i])];
      const auto b = kMap[static_cast<unsigned char>(text[i + 1])];
      const auto c = kMap[static_cast<unsigned char>(text[i + 2])];
      const auto d = kMap[static_cast<unsigned char>(text[i + 3])];
      if ((a | b | c | d) < 0) break;
      const std::uint32_t v = (static_cast<std::uint32_t>(a) << 18) |
                              (static_cast<std::uint32_t>(b) << 12) |
                              (static_cast<std::uint32_t>(c) << 6) | static_cast<std::uint32_t>(d);
      out.push_back(static_cast<std::uint8_t>(v >> 16));
      out.push_back(static_cast<std::uint8_t>(v >> 8));
      out.push_back(static_cast<std::uint8_t>(v));
      i += 4;
      padding = false;
    }
    if (i >= text.size()) break;
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    if (ch == '=') {
      padding = true;  // ends this quantum; a new one may follow (separately encoded chunks)
      acc = 0;
      bits = 0;
      continue;
    }
    const auto v = kMap[ch];
    if (v < 0) return i;
    if (padding) padding = false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xff));
    }
  }
  return std::nullopt;
}

// Characters that encode `bytes` bytes with padding.
constexpr std::size_t base64_chars(std::size_t bytes) {
  return (bytes + 2) / 3 * 4;
}

}  // namespace meshdock::mesh
