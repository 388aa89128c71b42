// The mesh I/O layer's exception types. MeshError is the layer's one base (the daemon maps it
// to INVALID_ARGUMENT); ReadError and WriteError say which direction failed. Messages always
// name the file and, for reads of text formats, the line (1-based), for binary data the byte
// offset; for writes, the block, array or value that cannot be written.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace meshdock::mesh {

// `text` with every byte a terminal or a log reader could act on written as \xNN: C0 controls
// (ESC, CR, LF, ... : a message quoting a hostile file's bytes must not move the cursor or
// start a forged log line), DEL, and bytes that are not well-formed UTF-8. Valid UTF-8 (a
// field named "Druck_ü") is kept.
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
    // A UTF-8 sequence: lead byte, length, and the smallest code point of that length
    // (overlong forms and surrogates are not well-formed).
    const std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                          : c >= 0xe0 && c <= 0xef ? 3
                          : c >= 0xf0 && c <= 0xf4 ? 4
                                                   : 0;
    bool ok = n > 0 && i + n <= text.size();
    std::uint32_t cp = ok ? c & (0x7f >> n) : 0;
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      ok = (b & 0xc0) == 0x80;
      cp = cp << 6 | (b & 0x3f);
    }
    if (ok)
      ok = (n == 3 && cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) ||
           (n == 4 && cp >= 0x10000 && cp <= 0x10ffff) || n == 2;
    if (ok && cp >= 0x80 && cp < 0xa0) ok = false;  // C1 controls (CSI is U+009B)
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

// Messages are terminal_safe: they quote what files hold, and they reach terminals and logs.
class MeshError : public std::runtime_error {
 public:
  explicit MeshError(const std::string& what) : std::runtime_error(terminal_safe(what)) {}
};

class ReadError : public MeshError {
 public:
  explicit ReadError(const std::string& what) : MeshError(what) {}
};

class WriteError : public MeshError {
 public:
  // `sys_errno`: the system call's errno when the file system refused (0: the data itself
  // cannot be written in the format), so the daemon can tell "no permission" or "disk full"
  // from a bad request.
  explicit WriteError(const std::string& what, int sys_errno = 0)
      : MeshError(what), errno_(sys_errno) {}
  int sys_errno() const { return errno_; }

 private:
  int errno_;
};

// The target exists and the write was not allowed to replace it (nothing was written).
class FileExists : public WriteError {
 public:
  explicit FileExists(const std::string& what) : WriteError(what) {}
};

}  // namespace meshdock::mesh
