// A forward cursor over a mapped file for the hand-written parsers: whitespace-separated numbers
// with std::from_chars (no per-value allocation), whole lines, and raw little/big-endian binary
// runs. Every failure throws ReadError naming the file and the line (text) or byte offset.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/read_progress.hpp"

namespace meshdock::mesh {

class Cursor {
 public:
  Cursor(std::string_view data, std::string file) : data_(data), file_(std::move(file)) {}
  // A cursor that reports how far it got to `progress` (may be null: none), `base` being the
  // file offset of data[0] (a sub-view of the file); every reader's main cursor is one.
  Cursor(std::string_view data, std::string file, ReadProgress* progress, std::size_t base = 0)
      : data_(data), file_(std::move(file)), progress_(progress), base_(base) {
    if (progress_) next_tick_ = pos_;
  }

  // Reports the position to the ReadProgress when kEvery bytes passed since the last report.
  // Every read below calls it; a reader's loop that only moves with seek() may too.
  void tick() {
    if (pos_ >= next_tick_) [[unlikely]]
      report();
  }

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ >= data_.size(); }
  const std::string& file() const { return file_; }

  // 1-based line of the token or line read last (counted on demand: only error paths pay).
  std::size_t line() const { return line_at(last_); }
  // 1-based line of byte `pos`; O(pos), so hot paths keep offsets and ask only on errors.
  std::size_t line_at(std::size_t pos) const {
    pos = std::min(pos, data_.size());
    return 1 + static_cast<std::size_t>(std::count(data_.begin(), data_.begin() + pos, '\n'));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ReadError(file_ + ":" + std::to_string(line()) + ": " + what);
  }
  [[noreturn]] void fail_at_byte(const std::string& what) const {
    throw ReadError(file_ + ": byte " + std::to_string(pos_) + ": " + what);
  }

  void skip_ws() {
    while (pos_ < data_.size()) {
      const char c = data_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }
  // Skips spaces and tabs but not newlines.
  void skip_blanks() {
    while (pos_ < data_.size() &&
           (data_[pos_] == ' ' || data_[pos_] == '\t' || data_[pos_] == '\r'))
      ++pos_;
  }

  template <typename T>
  T number(const char* what) {
    tick();
    skip_ws();
    last_ = pos_;
    if constexpr (std::is_integral_v<T>) {
      // The hot case of every ascii mesh (ids, counts): up to 18 digits cannot overflow an
      // int64, so they are summed with no checks; anything else (a sign where none may be, more
      // digits, a bad character) goes to from_chars below for the exact value or error.
      const char* p = data_.data() + pos_;
      const char* e = data_.data() + data_.size();
      const bool neg = std::is_signed_v<T> && p < e && *p == '-';
      const char* digits = p + (neg ? 1 : 0);
      const char* q = digits;
      std::uint64_t v = 0;
      while (q < e && q - digits < 18 && static_cast<unsigned char>(*q - '0') < 10)
        v = v * 10 + static_cast<unsigned char>(*q++ - '0');
      if (q > digits && (q == e || is_sep(*q)) &&
          v <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
        pos_ = static_cast<std::size_t>(q - data_.data());
        // -v for a signed T: v <= max, so the negation is in range.
        return neg ? static_cast<T>(-static_cast<std::int64_t>(v)) : static_cast<T>(v);
      }
    }
    return number_checked<T>(what);
  }

 private:
  template <typename T>
  T number_checked(const char* what) {
    T value{};
    const char* b = data_.data() + pos_;
    const char* e = data_.data() + data_.size();
    if constexpr (std::is_floating_point_v<T>) {
      // from_chars rejects a leading '+', which some writers emit.
      if (b < e && *b == '+') ++b;
    }
    const auto r = std::from_chars(b, e, value);
    if (r.ec == std::errc::result_out_of_range) fail(std::string(what) + " is out of range");
    if (r.ec != std::errc() || (r.ptr < e && !is_sep(*r.ptr))) {
      fail(std::string("expected ") + what + ", found '" + std::string(token_preview()) + "'");
    }
    pos_ = static_cast<std::size_t>(r.ptr - data_.data());
    return value;
  }

 public:
  // The next whitespace-free token.
  std::string_view token() {
    tick();
    skip_ws();
    const std::size_t b = pos_;
    last_ = b;
    while (pos_ < data_.size() && !is_sep(data_[pos_])) ++pos_;
    return data_.substr(b, pos_ - b);
  }

  // The rest of the current line without its terminator; moves past the newline.
  std::string_view rest_of_line() {
    tick();
    const std::size_t b = pos_;
    last_ = b;
    const auto nl = data_.find('\n', pos_);
    const std::size_t e = nl == std::string_view::npos ? data_.size() : nl;
    pos_ = nl == std::string_view::npos ? data_.size() : nl + 1;
    auto s = data_.substr(b, e - b);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }

  // Skips to the start of the next line.
  void next_line() { rest_of_line(); }

  // Next non-empty line, trimmed; empty view at end of data.
  std::string_view nonempty_line() {
    while (!at_end()) {
      auto s = trim(rest_of_line());
      if (!s.empty()) return s;
    }
    return {};
  }

  // `after` (may be empty) says what the line should follow, for the message: a section whose
  // count is short of its rows then says which count ("after the 2379 nodes its count gives").
  void expect_line(std::string_view want, std::string_view after = {}) {
    const auto got = nonempty_line();
    if (got != want) {
      fail("expected '" + std::string(want) + "'" + (after.empty() ? "" : " ") +
           std::string(after) + ", found '" + std::string(got.substr(0, 60)) + "'");
    }
  }

  // `count` raw values of T, byte-swapped when `swap`; throws when fewer bytes remain.
  template <typename T>
  void binary(T* out, std::size_t count, bool swap, const char* what) {
    if (count == 0) return;  // out may be null (an empty vector's data())
    tick();
    const std::size_t bytes = count * sizeof(T);
    if (count != 0 && bytes / count != sizeof(T))
      fail_at_byte(std::string(what) + ": size overflows");
    need(bytes, what);
    std::memcpy(out, data_.data() + pos_, bytes);
    pos_ += bytes;
    if (swap) {
      for (std::size_t i = 0; i < count; ++i) out[i] = byteswap(out[i]);
    }
  }
  // `bytes` raw bytes in place (checked against what remains); advances past them.
  const char* raw(std::size_t bytes, const char* what) {
    tick();
    need(bytes, what);
    const char* p = data_.data() + pos_;
    pos_ += bytes;
    return p;
  }

  template <typename T>
  T binary_one(bool swap, const char* what) {
    T v;
    binary(&v, 1, swap, what);
    return v;
  }

  void need(std::size_t bytes, const char* what) const {
    if (bytes > remaining()) {
      fail_at_byte(std::string(what) + ": needs " + std::to_string(bytes) + " bytes but only " +
                   std::to_string(remaining()) + " remain (truncated file?)");
    }
  }

  void seek(std::size_t pos) { pos_ = last_ = std::min(pos, data_.size()); }
  std::string_view data() const { return data_; }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
      s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
      s.remove_suffix(1);
    return s;
  }

  template <typename T>
  static T byteswap(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    std::reverse(b, b + sizeof(T));
    std::memcpy(&v, b, sizeof(T));
    return v;
  }

 private:
  static bool is_sep(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  std::string_view token_preview() const {
    std::size_t e = pos_;
    while (e < data_.size() && e - pos_ < 40 && !is_sep(data_[e])) ++e;
    return e == pos_ ? std::string_view(at_end() ? "end of file" : "whitespace")
                     : data_.substr(pos_, e - pos_);
  }

  std::string_view data_;
  std::string file_;
  std::size_t pos_ = 0;
  std::size_t last_ = 0;  // start of the last token or line read: what errors point at
  ReadProgress* progress_ = nullptr;
  std::size_t base_ = 0;
  // The position at which tick() reports next; never reached without a ReadProgress.
  std::size_t next_tick_ = std::numeric_limits<std::size_t>::max();

  [[gnu::cold, gnu::noinline]] void report() {
    // Kept out of line of the hot readers: they pay only tick()'s compare.
    next_tick_ = pos_ + ReadProgress::kEvery;
    progress_->reached(base_ + pos_, file_);
  }
};

}  // namespace meshdock::mesh
