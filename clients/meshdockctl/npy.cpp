#include "npy.hpp"

#include <cctype>
#include <map>
#include <optional>

namespace meshdockctl {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;  // the Publish limit on elements

// The header dict is a Python literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Values are strings, True/False or tuples of integers; anything else (a structured dtype's
// list) is refused by name.
class DictParser {
 public:
  struct Value {
    std::optional<std::string> text;
    std::optional<bool> flag;
    std::optional<std::vector<std::int64_t>> ints;
  };

  DictParser(const std::string& path, const std::string& s) : path_(path), s_(s) {}

  std::map<std::string, Value> parse() {
    std::map<std::string, Value> out;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const auto key = string();
      expect(':');
      out[key] = value(key);
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return out;
    }
    ++i_;
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(path_ + ": .npy header " + what + " (at byte " + std::to_string(i_) +
                   " of the header: " + s_.substr(0, 120) + ")");
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    skip();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted key or string");
    const auto end = s_.find(q, ++i_);
    if (end == std::string::npos) fail("has an unterminated string");
    std::string v = s_.substr(i_, end - i_);
    i_ = end + 1;
    return v;
  }
  Value value(const std::string& key) {
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.text = string();
    } else if (s_.compare(i_, 4, "True") == 0) {
      v.flag = true;
      i_ += 4;
    } else if (s_.compare(i_, 5, "False") == 0) {
      v.flag = false;
      i_ += 5;
    } else if (c == '(') {
      ++i_;
      std::vector<std::int64_t> dims;
      while (peek() != ')') {
        std::int64_t d = 0;
        std::size_t digits = 0;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
          if (d > kMaxDim) fail("'" + key + "' has a dimension over 2^40");
          d = d * 10 + (s_[i_++] - '0');
          ++digits;
        }
        if (!digits) fail("'" + key + "' holds something other than integers");
        dims.push_back(d);
        if (peek() == ',') ++i_;
      }
      ++i_;
      v.ints = std::move(dims);
    } else if (c == '[') {
      fail("'" + key +
           "' is a list: a structured dtype, which cannot be published (one plain "
           "numeric array per file)");
    } else {
      fail("'" + key + "' has a value that is not a string, True/False or a tuple");
    }
    return v;
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t i_ = 0;
};

std::uint32_t le(const std::string& b, std::size_t at, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t k = 0; k < n; ++k)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + k])) << (8 * k);
  return v;
}

}  // namespace

NpyHeader parse_npy(const std::string& path, const std::string& head, std::uint64_t file_size) {
  if (head.size() < 10 || head.compare(0, kMagicBytes, kMagic, kMagicBytes) != 0)
    throw NpyError(path +
                   ": not a NumPy .npy file (no \\x93NUMPY magic; save the array with "
                   "numpy.save)");
  const int major = static_cast<unsigned char>(head[6]);
  if (major < 1 || major > 3)
    throw NpyError(path + ": .npy format version " + std::to_string(major) + "." +
                   std::to_string(static_cast<unsigned char>(head[7])) + " is not 1.0, 2.0 or 3.0");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (head.size() < 8 + len_bytes) throw NpyError(path + ": .npy header is cut short");
  const std::uint64_t header_len = le(head, 8, len_bytes);
  const std::uint64_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > head.size())
    throw NpyError(path + ": .npy header says it is " + std::to_string(header_len) +
                   " bytes; the file " +
                   (file_size < data_offset ? std::string("is shorter")
                                            : std::string("has a header over 64 KiB")));
  const std::string text = head.substr(8 + len_bytes, header_len);
  auto dict = DictParser(path, text).parse();
  const auto& d = dict["descr"];
  const auto& f = dict["fortran_order"];
  const auto& s = dict["shape"];
  if (!d.text || !f.flag || !s.ints)
    throw NpyError(path + ": .npy header lacks 'descr', 'fortran_order' or 'shape': " + text);
  NpyHeader h;
  h.descr = *d.text;
  h.data_offset = data_offset;
  h.shape = *s.ints;
  const std::string& t = h.descr;
  const std::string fix = " (np.save(path, np.ascontiguousarray(a, a.dtype.newbyteorder('<'))))";
  if (t.size() < 3 || (t[0] != '<' && t[0] != '|' && t[0] != '>' && t[0] != '='))
    throw NpyError(path + ": dtype '" + t + "' is not a plain numeric type");
  if (t[0] == '>')
    throw NpyError(path + ": dtype '" + t + "' is big-endian; meshdock publishes little-endian" +
                   fix);
  std::size_t used = 0;
  unsigned bytes = 0;
  try {
    bytes = static_cast<unsigned>(std::stoul(t.substr(2), &used));
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != t.size() - 2) throw NpyError(path + ": dtype '" + t + "' is not a numeric type");
  const char kind = t[1];
  const bool ok_bytes = bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8;
  if (kind == 'b' && bytes == 1)
    h.code = 6;
  else if (kind == 'i' && ok_bytes)
    h.code = 0;
  else if (kind == 'u' && ok_bytes)
    h.code = 1;
  else if (kind == 'f' && bytes >= 2 && ok_bytes)
    h.code = 2;
  else
    throw NpyError(path + ": dtype '" + t +
                   "' cannot be published (bool, int8..int64, uint8..uint64, float16..float64)");
  h.bits = bytes * 8;
  if (*f.flag && h.shape.size() > 1)
    throw NpyError(path + ": the array is in Fortran order; meshdock takes C order" + fix);
  if (h.shape.empty() || h.shape.size() > 4)
    throw NpyError(path + ": shape has " + std::to_string(h.shape.size()) +
                   " dimensions; Publish takes 1 to 4");
  std::uint64_t count = 1;
  for (auto dim : h.shape)
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count) ||
        count > static_cast<std::uint64_t>(kMaxDim))
      throw NpyError(path + ": shape makes the array larger than 2^40 elements");
  h.nbytes = count * bytes;
  if (file_size != data_offset + h.nbytes)
    throw NpyError(path + ": the header promises " + std::to_string(h.nbytes) +
                   " bytes of data after " + std::to_string(data_offset) + " of header, the file " +
                   (file_size < data_offset + h.nbytes ? "has only " : "has ") +
                   std::to_string(file_size - std::min(file_size, data_offset)) +
                   " (truncated or not what numpy.save wrote)");
  return h;
}

}  // namespace meshdockctl
