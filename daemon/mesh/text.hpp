// Text that files supply (names, quoted bytes) made safe for the places it goes: terminals and
// logs (terminal_safe), and JSON, gRPC strings and Python str, which need UTF-8 (utf8_name).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace meshdock::mesh {

// The hot text parsers' fast path for integers: the plain decimal digits at p (no sign, at
// most 18 of them, so no overflow) into x. Returns where the digits end: p itself when there
// are none; the caller checks what follows and takes its checked path for anything else.
inline const char* plain_digits(const char* p, const char* end, std::int64_t& x) {
  x = 0;
  const char* q = p;
  while (q < end && q - p < 18 && static_cast<unsigned char>(*q - '0') < 10)
    x = x * 10 + (*q++ - '0');
  return q;
}

// `s` with its ASCII letters upper-cased (keywords of Nastran, Abaqus, legacy VTK, PERMAS; bytes
// >= 0x80 stay as they are, whatever the locale).
inline std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

// Whether `name` is `upper` (already upper case) but for the case of its ASCII letters: card
// and keyword names that compare without case.
inline bool same_name(std::string_view name, std::string_view upper) {
  if (name.size() != upper.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper[i]) return false;
  }
  return true;
}

// A real as Fortran writes it (Nastran, PERMAS): 1.0, 1., .5, 1.0E-3, 1.0D-3, and 1.0-3 / 1.0+3
// (the exponent's 'E' left out); false when `f` is not one (integers pass). At most 40
// characters.
inline bool parse_real_implicit(std::string_view f, double& v) {
  constexpr std::size_t kMax = 40;
  // Each character may get an 'E' put before it ("+-+-": "+E-E+E-"): twice the field at most.
  char buf[2 * kMax];
  if (f.empty() || f.size() > kMax) return false;
  std::size_t n = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == 'D' || c == 'd') c = 'E';
    if ((c == '+' || c == '-') && i > 0 && buf[n - 1] != 'E' && buf[n - 1] != 'e') buf[n++] = 'E';
    buf[n++] = c;
  }
  const char* p = buf;
  if (*p == '+') ++p;
  const auto r = std::from_chars(p, buf + n, v);
  return r.ec == std::errc() && r.ptr == buf + n;
}

// A line of plain decimal integers from p (at its first digit) to its '\n' or the end, separated
// by ' ', '\t' or '\r': the values into v (at most max), the count returned, `stop` set to the
// '\n' (or the end). 0, with nothing else set, for a line holding anything else (a sign, a
// letter, a comment, more than max values): the caller's checked path then reads or reports it.
inline std::size_t plain_ints_line(const char* p, const char* end, std::int64_t* v, std::size_t max,
                                   const char*& stop) {
  std::size_t n = 0;
  while (true) {
    std::int64_t x;
    const char* q = plain_digits(p, end, x);
    if (q == p || n == max) return 0;
    if (q < end && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n') return 0;
    v[n++] = x;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
    p = q;
    if (q == end || *q == '\n') break;
  }
  stop = p;
  return n;
}

// The length of the well-formed UTF-8 sequence at text[i] (lead byte >= 0x80), 0 when there is
// none: a bad lead byte, a missing continuation, an overlong form, a surrogate, past U+10FFFF.
// C1 controls (U+0080..U+009F: CSI is U+009B) count as not well-formed for terminal_safe's sake
// only when `c1_ok` is false.
inline std::size_t utf8_sequence(std::string_view text, std::size_t i, bool c1_ok = true) {
  const auto c = static_cast<unsigned char>(text[i]);
  const std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                        : c >= 0xe0 && c <= 0xef ? 3
                        : c >= 0xf0 && c <= 0xf4 ? 4
                                                 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  std::uint32_t cp = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b & 0x3f);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
  if (!c1_ok && cp < 0xa0) return 0;
  return n;
}

inline bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const auto n = utf8_sequence(text, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// A name as UTF-8: itself when it is; otherwise its bytes read as Latin-1 (what older tools
// wrote "Druck_\xfc" in), so every byte stays and the name is still one a person can read.
inline std::string utf8_name(std::string_view name) {
  if (is_utf8(name)) return std::string(name);
  std::string out;
  for (const unsigned char c : name) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xc0 | c >> 6));
      out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
  return out;
}

// `text` with every byte a terminal or a log reader could act on written as \xNN: C0 controls
// (ESC, CR, LF, ... : a message quoting a hostile file's bytes must not move the cursor or
// start a forged log line), DEL, C1 controls, and bytes that are not well-formed UTF-8. Valid
// UTF-8 (a field named "Druck_ü") is kept.
inline std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        escape(c);
      else
        out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const auto n = utf8_sequence(text, i, /*c1_ok=*/false);
    if (!n) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace meshdock::mesh
