// The netCDF classic formats ("NetCDF Classic and 64-bit Offset Format", and CDF-5):
//   header   = "CDF" version numrecs dim_list gatt_list var_list
//   dim_list = ABSENT | NC_DIMENSION (10) count dim*         dim = name length (0: unlimited)
//   att_list = ABSENT | NC_ATTRIBUTE (12) count attr*        attr = name nc_type count values
//   var_list = ABSENT | NC_VARIABLE (11) count var*
//   var      = name ndims dimid* vatt_list nc_type vsize begin
// big-endian; names and attribute values padded to 4 bytes; counts, lengths, dimids and vsize
// are 32-bit in CDF-1 / CDF-2 and 64-bit in CDF-5, begin 32-bit in CDF-1 and 64-bit after; tags
// and nc_type are 32-bit in all. Fixed variables lie whole at their begin; record variables
// (first dimension the unlimited one) lie one record at a time, record r of each at its begin +
// r * the record size, the sum of the record variables' one-record sizes each padded to 4 bytes
// (not padded when there is one record variable only). vsize is not trusted (it is redundant and
// clipped to 2^32 - 1 for big variables in CDF-2): sizes are computed from the dimensions.
#include "daemon/mesh/readers/netcdf_classic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh::netcdf {

namespace {

constexpr std::uint32_t kAbsent = 0, kDimension = 10, kVariable = 11, kAttribute = 12;

template <typename S>
S from_be(const char* p) {
  S v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (sizeof(S) == 2) {
    std::uint16_t u;
    std::memcpy(&u, &v, 2);
    u = __builtin_bswap16(u);
    std::memcpy(&v, &u, 2);
  } else if constexpr (sizeof(S) == 4) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    u = __builtin_bswap32(u);
    std::memcpy(&v, &u, 4);
  } else if constexpr (sizeof(S) == 8) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    u = __builtin_bswap64(u);
    std::memcpy(&v, &u, 8);
  }
  return v;
}

std::uint64_t pad4(std::uint64_t n) {
  return (n + 3) / 4 * 4;
}

// The header's reader: big-endian words, each checked against the bytes left.
class Header {
 public:
  Header(std::string_view data, const File& file) : data_(data), file_(file) {}
  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }

  const char* take(std::uint64_t n, const char* what) {
    if (n > remaining())
      file_.fail(pos_, std::string(what) + ": needs " + std::to_string(n) + " bytes but only " +
                           std::to_string(remaining()) + " remain (truncated file?)");
    const char* p = data_.data() + pos_;
    pos_ += static_cast<std::size_t>(n);
    return p;
  }
  std::uint32_t u32(const char* what) { return from_be<std::uint32_t>(take(4, what)); }
  std::uint64_t u64(const char* what) { return from_be<std::uint64_t>(take(8, what)); }
  // A count, length or dimid: 32-bit (read as signed: the spec's NON_NEG) or 64-bit in CDF-5.
  std::uint64_t count(bool wide, const char* what) {
    const auto at = pos_;
    const std::int64_t v =
        wide ? static_cast<std::int64_t>(u64(what)) : static_cast<std::int32_t>(u32(what));
    if (v < 0) file_.fail(at, std::string(what) + " " + std::to_string(v) + " is negative");
    return static_cast<std::uint64_t>(v);
  }
  // A count of items that take at least `min_bytes` each in what is left of the header.
  std::uint64_t items(bool wide, std::uint64_t min_bytes, const char* what) {
    const auto at = pos_;
    const auto n = count(wide, what);
    if (n > remaining() / min_bytes)
      file_.fail(at, std::string(what) + " " + std::to_string(n) +
                         " is more than the rest of the file holds");
    return n;
  }
  std::string name(bool wide, const char* what) {
    const auto at = pos_;
    const auto n = items(wide, 1, what);
    if (n == 0) file_.fail(at, std::string(what) + " is empty");
    const char* p = take(pad4(n), what);
    std::string s(p, static_cast<std::size_t>(n));
    if (s.find('\0') != std::string::npos) file_.fail(at, std::string(what) + " holds a NUL byte");
    return s;
  }

 private:
  std::string_view data_;
  const File& file_;
  std::size_t pos_ = 0;
};

Type checked_type(const File& f, Header& h, int version) {
  const auto at = h.offset();
  const auto t = h.u32("nc_type");
  if (t < 1 || t > 11 || (t > 6 && version != 5))
    f.fail(at, "nc_type " + std::to_string(t) + " is not a type of CDF-" + std::to_string(version));
  return static_cast<Type>(t);
}

std::vector<Attribute> att_list(const File& f, Header& h, int version) {
  const bool wide = version == 5;
  const auto at = h.offset();
  const auto t = h.u32("attribute list tag");
  const auto n = h.items(wide, wide ? 24 : 16, "attribute count");
  if (t == kAbsent && n == 0) return {};
  if (t != kAttribute)
    f.fail(at, "expected an attribute list (tag 12) or ABSENT, found tag " + std::to_string(t));
  std::vector<Attribute> atts;
  atts.reserve(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) {
    Attribute a;
    a.name = h.name(wide, "attribute name");
    a.type = checked_type(f, h, version);
    a.count = h.items(wide, type_size(a.type), "attribute value count");
    a.offset = h.offset();
    h.take(pad4(a.count * type_size(a.type)), "attribute values");
    atts.push_back(std::move(a));
  }
  return atts;
}

// Values of S at p (big-endian) into out[0], out[stride], ... as T.
template <typename S, typename T>
void decode(const char* p, T* out, std::uint64_t n, std::size_t stride) {
  if (stride == 1) {  // the common case, kept apart so that it vectorizes
    for (std::uint64_t i = 0; i < n; ++i, p += sizeof(S)) out[i] = static_cast<T>(from_be<S>(p));
    return;
  }
  for (std::uint64_t i = 0; i < n; ++i, p += sizeof(S))
    out[i * stride] = static_cast<T>(from_be<S>(p));
}

template <typename T>
void decode_type(Type t, const char* p, T* out, std::uint64_t n, std::size_t stride = 1) {
  switch (t) {
    case Type::kByte:
      return decode<std::int8_t>(p, out, n, stride);
    case Type::kChar:
    case Type::kUByte:
      return decode<std::uint8_t>(p, out, n, stride);
    case Type::kShort:
      return decode<std::int16_t>(p, out, n, stride);
    case Type::kUShort:
      return decode<std::uint16_t>(p, out, n, stride);
    case Type::kInt:
      return decode<std::int32_t>(p, out, n, stride);
    case Type::kUInt:
      return decode<std::uint32_t>(p, out, n, stride);
    case Type::kFloat:
      return decode<float>(p, out, n, stride);
    case Type::kDouble:
      return decode<double>(p, out, n, stride);
    case Type::kInt64:
      return decode<std::int64_t>(p, out, n, stride);
    case Type::kUInt64:
      return decode<std::uint64_t>(p, out, n, stride);
  }
}

// 1-based indices of S at p into 0-based out in one pass with no early exit (it vectorizes);
// false when one is outside 1..limit.
template <typename S>
bool decode_indices(const char* p, std::int64_t* out, std::uint64_t n, std::uint64_t limit) {
  bool bad = false;
  for (std::uint64_t i = 0; i < n; ++i, p += sizeof(S)) {
    // v - 1 as unsigned: 0 and negatives wrap past every limit.
    const auto v0 = static_cast<std::uint64_t>(static_cast<std::int64_t>(from_be<S>(p))) - 1;
    bad |= v0 >= limit;
    out[i] = static_cast<std::int64_t>(v0);
  }
  return !bad;
}

// The same values in their own type, byte-swapped into out.
void decode_native(Type t, const char* p, void* out, std::uint64_t n) {
  const auto size = type_size(t);
  std::memcpy(out, p, static_cast<std::size_t>(n * size));
  auto* b = static_cast<char*>(out);
  if (size == 1) return;
  for (std::uint64_t i = 0; i < n; ++i, b += size) std::reverse(b, b + size);
}

}  // namespace

std::size_t type_size(Type t) {
  switch (t) {
    case Type::kByte:
    case Type::kChar:
    case Type::kUByte:
      return 1;
    case Type::kShort:
    case Type::kUShort:
      return 2;
    case Type::kInt:
    case Type::kUInt:
    case Type::kFloat:
      return 4;
    case Type::kDouble:
    case Type::kInt64:
    case Type::kUInt64:
      return 8;
  }
  return 1;
}

const char* type_name(Type t) {
  static const char* const kNames[] = {"?",      "byte",  "char",   "short", "int",   "float",
                                       "double", "ubyte", "ushort", "uint",  "int64", "uint64"};
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

DType type_dtype(Type t) {
  switch (t) {
    case Type::kByte:
      return DType{0, 8, 1};
    case Type::kChar:
    case Type::kUByte:
      return DType{1, 8, 1};
    case Type::kShort:
      return DType{0, 16, 1};
    case Type::kUShort:
      return DType{1, 16, 1};
    case Type::kInt:
      return kInt32;
    case Type::kUInt:
      return DType{1, 32, 1};
    case Type::kFloat:
      return kFloat32;
    case Type::kDouble:
      return kFloat64;
    case Type::kInt64:
      return kInt64;
    case Type::kUInt64:
      return DType{1, 64, 1};
  }
  return kInt32;
}

void File::fail(std::size_t at, const std::string& what) const {
  throw ReadError(path_ + ": byte " + std::to_string(at) + ": netCDF: " + what);
}

File::File(std::string_view data, std::string path) : data_(data), path_(std::move(path)) {
  Header h(data, *this);
  const char* magic = h.take(4, "netCDF magic (CDF and a version byte)");
  if (std::memcmp(magic, "CDF", 3) != 0 || (magic[3] != 1 && magic[3] != 2 && magic[3] != 5))
    fail(0, "not a netCDF classic file (expected CDF and version 1, 2 or 5)");
  version_ = magic[3];
  const bool wide = version_ == 5;
  const auto records_at = h.offset();
  const std::uint64_t streaming = wide ? ~std::uint64_t{0} : 0xFFFFFFFFu;
  const std::uint64_t nr = wide ? h.u64("numrecs") : h.u32("numrecs");
  const bool streamed = nr == streaming;
  // NON_NEG: a signed count of the file's width, all ones (-1) the streaming form.
  const std::int64_t signed_nr = wide ? static_cast<std::int64_t>(nr)
                                      : static_cast<std::int32_t>(static_cast<std::uint32_t>(nr));
  if (!streamed && signed_nr < 0)
    fail(records_at, "numrecs " + std::to_string(signed_nr) + " is negative");
  numrecs_ = streamed ? 0 : nr;
  streamed_ = streamed;

  // Dimensions: a name (count and 4 bytes) and a length each.
  const auto dims_at = h.offset();
  const auto dtag = h.u32("dimension list tag");
  const auto ndims = h.items(wide, wide ? 24 : 12, "dimension count");
  if (!(dtag == kAbsent && ndims == 0)) {
    if (dtag != kDimension)
      fail(dims_at,
           "expected a dimension list (tag 10) or ABSENT, found tag " + std::to_string(dtag));
    dims_.reserve(static_cast<std::size_t>(ndims));
    bool have_unlimited = false;
    for (std::uint64_t i = 0; i < ndims; ++i) {
      const auto at = h.offset();
      Dim d;
      d.name = h.name(wide, "dimension name");
      d.length = h.count(wide, "dimension length");
      if (d.length == 0) {
        if (have_unlimited) fail(at, "a second unlimited dimension '" + d.name + "'");
        have_unlimited = true;
        d.unlimited = true;
      }
      dims_.push_back(std::move(d));
    }
  }
  gatts_ = att_list(*this, h, version_);

  const auto vars_at = h.offset();
  const auto vtag = h.u32("variable list tag");
  const auto nvars = h.items(wide, wide ? 48 : 28, "variable count");
  if (!(vtag == kAbsent && nvars == 0)) {
    if (vtag != kVariable)
      fail(vars_at,
           "expected a variable list (tag 11) or ABSENT, found tag " + std::to_string(vtag));
    vars_.reserve(static_cast<std::size_t>(nvars));
    for (std::uint64_t i = 0; i < nvars; ++i) {
      Variable v;
      v.header_at = h.offset();
      v.name = h.name(wide, "variable name");
      const auto n = h.items(wide, wide ? 8 : 4, "variable dimension count");
      for (std::uint64_t k = 0; k < n; ++k) {
        const auto at = h.offset();
        const auto id = h.count(wide, "dimension id");
        if (id >= dims_.size())
          fail(at, "variable '" + v.name + "': dimension id " + std::to_string(id) +
                       " is not one of the file's " + std::to_string(dims_.size()));
        if (dims_[id].unlimited && k != 0)
          fail(at, "variable '" + v.name + "': the unlimited dimension is not its first");
        v.dims.push_back(static_cast<std::size_t>(id));
      }
      v.atts = att_list(*this, h, version_);
      v.type = checked_type(*this, h, version_);
      h.count(wide, "vsize");  // redundant: sizes are computed from the dimensions
      v.begin = version_ == 1 ? h.u32("begin") : h.u64("begin");
      v.record = !v.dims.empty() && dims_[v.dims[0]].unlimited;
      vars_.push_back(std::move(v));
    }
  }
  header_end_ = h.offset();
  layout();
}

std::uint64_t File::record_bytes(const Variable& v) const {
  return v.values * type_size(v.type);
}

// Values of each variable (bounded by the file's size, so no product overflows), the record
// size, and every variable's bytes checked inside the file.
void File::layout() {
  const std::uint64_t size = data_.size();
  std::uint64_t first_record = size;
  std::size_t record_vars = 0;
  for (auto& v : vars_) {
    const auto tsize = type_size(v.type);
    std::uint64_t n = 1;
    bool empty = false;
    for (std::size_t k = v.record ? 1 : 0; k < v.dims.size(); ++k)
      empty = empty || dims_[v.dims[k]].length == 0;
    for (std::size_t k = v.record ? 1 : 0; k < v.dims.size() && !empty; ++k) {
      const auto len = dims_[v.dims[k]].length;
      if (n > size / tsize / len)
        fail(v.header_at, "variable '" + v.name + "': its dimensions hold more values than " +
                              "the file's " + std::to_string(size) + " bytes");
      n *= len;
    }
    v.values = empty ? 0 : n;
    if (v.begin < header_end_ && record_bytes(v) > 0)
      fail(v.header_at, "variable '" + v.name + "': its data begins at byte " +
                            std::to_string(v.begin) + ", inside the header");
    if (v.record) {
      ++record_vars;
      first_record = std::min(first_record, v.begin);
    }
  }
  for (const auto& v : vars_) {
    if (!v.record) continue;
    record_size_ += record_vars == 1 ? record_bytes(v) : pad4(record_bytes(v));
  }
  // A streamed file (numrecs all ones) wrote no count: its records run to the end of the file.
  if (streamed_ && record_size_ > 0 && first_record < size)
    numrecs_ = (size - first_record) / record_size_;
  for (auto& d : dims_)
    if (d.unlimited) d.length = numrecs_;
  for (const auto& v : vars_) {
    const auto bytes = record_bytes(v);
    if (bytes == 0) continue;
    const std::uint64_t reach =
        v.record ? (numrecs_ == 0 ? 0 : numrecs_ - 1) : 0;  // records before the last
    bool inside = v.begin <= size && bytes <= size - v.begin;
    if (inside && v.record && reach > 0)
      inside = record_size_ > 0 && reach <= (size - v.begin - bytes) / record_size_;
    if (inside || (v.record && numrecs_ == 0)) continue;
    fail(v.header_at, "variable '" + v.name + "' (" + type_name(v.type) + ", " +
                          std::to_string(v.values) + " values" +
                          (v.record ? " a record, " + std::to_string(numrecs_) + " records" : "") +
                          ") at byte " + std::to_string(v.begin) + " runs past the end of the " +
                          "file (" + std::to_string(size) + " bytes)");
  }
}

const Variable* File::find(std::string_view name) const {
  for (const auto& v : vars_)
    if (v.name == name) return &v;
  return nullptr;
}

const Dim* File::find_dim(std::string_view name) const {
  for (const auto& d : dims_)
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::int64_t> File::shape(const Variable& v) const {
  std::vector<std::int64_t> s;
  for (const auto id : v.dims) s.push_back(static_cast<std::int64_t>(dims_[id].length));
  return s;
}

std::string File::text_attribute(const Variable& v, std::string_view name) const {
  for (const auto& a : v.atts) {
    if (a.name != name || a.type != Type::kChar) continue;
    std::string s(data_.substr(a.offset, static_cast<std::size_t>(a.count)));
    return s.substr(0, s.find('\0'));
  }
  return {};
}

const char* File::at(const Variable& v, std::uint64_t record) const {
  // layout() checked every record up to numrecs inside the file.
  if (record_bytes(v) == 0) return data_.data();
  if (v.record && record >= numrecs_)
    fail(v.header_at, "variable '" + v.name + "': record " + std::to_string(record) + " of " +
                          std::to_string(numrecs_));
  return data_.data() + v.begin + (v.record ? record * record_size_ : 0);
}

Array File::read_record(const Variable& v, std::uint64_t record) const {
  auto s = shape(v);
  if (v.record) s.erase(s.begin());
  Array a = Array::empty(type_dtype(v.type), std::move(s));
  decode_native(v.type, at(v, record), a.data(), v.values);
  return a;
}

Array File::read(const Variable& v) const {
  if (!v.record) return read_record(v, 0);
  Array a = Array::empty(type_dtype(v.type), shape(v));
  const auto bytes = record_bytes(v);
  for (std::uint64_t r = 0; r < numrecs_; ++r)
    decode_native(v.type, at(v, r), static_cast<char*>(a.data()) + r * bytes, v.values);
  return a;
}

template <typename T>
void File::read_as(const Variable& v, T* out, std::int64_t record) const {
  if constexpr (std::is_integral_v<T>) {
    if (v.type == Type::kFloat || v.type == Type::kDouble) return read_whole(v, out, record);
  }
  if (!v.record || record >= 0) {
    decode_type(v.type, at(v, record < 0 ? 0 : static_cast<std::uint64_t>(record)), out, v.values);
    return;
  }
  for (std::uint64_t r = 0; r < numrecs_; ++r)
    decode_type(v.type, at(v, r), out + r * v.values, v.values);
}

// Real-typed values read as integers (a writer may store ids and indices so): converting a
// value that is not a whole number of int64's range is undefined behaviour in C++, so each is
// checked first and the first other one is an error naming it.
void File::read_whole(const Variable& v, std::int64_t* out, std::int64_t record) const {
  const auto one = [&](const char* p, std::int64_t* o) {
    for (std::uint64_t i = 0; i < v.values; ++i) {
      const double x =
          v.type == Type::kFloat ? from_be<float>(p + 4 * i) : from_be<double>(p + 8 * i);
      if (!(x >= -0x1p63 && x < 0x1p63) || x != std::trunc(x)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", x);
        fail(v.header_at, "variable '" + v.name + "' (" + type_name(v.type) + "): value " +
                              std::to_string(i + 1) + " is " + text +
                              ", where a whole number is expected");
      }
      o[i] = static_cast<std::int64_t>(x);
    }
  };
  if (!v.record || record >= 0)
    return one(at(v, record < 0 ? 0 : static_cast<std::uint64_t>(record)), out);
  for (std::uint64_t r = 0; r < numrecs_; ++r) one(at(v, r), out + r * v.values);
}

template void File::read_as<double>(const Variable&, double*, std::int64_t) const;
template void File::read_as<std::int64_t>(const Variable&, std::int64_t*, std::int64_t) const;

void File::read_strided(const Variable& v, double* out, std::size_t stride) const {
  decode_type(v.type, at(v, 0), out, v.values, stride);
}

bool File::read_indices(const Variable& v, std::int64_t* out, std::uint64_t limit) const {
  const char* p = at(v, 0);
  switch (v.type) {
    case Type::kInt:
      return decode_indices<std::int32_t>(p, out, v.values, limit);
    case Type::kInt64:
      return decode_indices<std::int64_t>(p, out, v.values, limit);
    default:
      break;
  }
  read_as(v, out);
  bool bad = false;
  for (std::uint64_t i = 0; i < v.values; ++i) {
    const auto v0 = static_cast<std::uint64_t>(out[i]) - 1;
    bad |= v0 >= limit;
    out[i] = static_cast<std::int64_t>(v0);
  }
  return !bad;
}

bool File::read_indices(const Variable& v, std::int64_t* out, std::uint64_t limit,
                        std::uint64_t first, std::uint64_t count) const {
  if (first > v.values || count > v.values - first)
    fail(v.header_at, "variable '" + v.name + "': values " + std::to_string(first) + ".." +
                          std::to_string(first + count) + " of " + std::to_string(v.values));
  const char* p = at(v, 0);
  switch (v.type) {
    case Type::kInt:
      return decode_indices<std::int32_t>(p + first * 4, out + first, count, limit);
    case Type::kInt64:
      return decode_indices<std::int64_t>(p + first * 8, out + first, count, limit);
    default:
      fail(v.header_at, "variable '" + v.name + "' (" + type_name(v.type) +
                            ") read in runs: only int and int64 are");
  }
}

std::vector<std::string> File::strings(const Variable& v) const {
  std::vector<std::string> out;
  if (v.type != Type::kChar || v.dims.empty()) return out;
  const auto s = shape(v);
  const auto len = static_cast<std::size_t>(s.back());
  const auto rows = len == 0 ? 0 : static_cast<std::size_t>(v.values / len);
  const char* p = at(v, 0);
  for (std::size_t r = 0; r < rows && !v.record; ++r) {
    // Every NUL dropped, as netCDF4-python's rows of S1 joined (meshio's names) give them.
    std::string row;
    for (std::size_t k = 0; k < len; ++k)
      if (p[r * len + k] != '\0') row += p[r * len + k];
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace meshdock::mesh::netcdf
