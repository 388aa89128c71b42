// A parser of the netCDF classic binary formats (CDF-1 classic, CDF-2 64-bit offset, CDF-5
// 64-bit data), written here so that meshdock reads Exodus II without libnetcdf / libhdf5: a
// hostile file reaches this small parser only, never a big C library. The header is parsed into
// dimensions, attributes and variables with their offsets; every count, size and offset is
// checked against the file's size before anything is allocated or read, so no header can make
// the reader allocate more than the file holds. A variable is read as a typed array in native
// byte order (the file is big-endian). netCDF-4 (HDF5) files are not this format: the caller
// refuses them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/array.hpp"

namespace meshdock::mesh::netcdf {

// nc_type: 1..6 classic, 7..11 CDF-5 only.
enum class Type : std::int32_t {
  kByte = 1,
  kChar = 2,
  kShort = 3,
  kInt = 4,
  kFloat = 5,
  kDouble = 6,
  kUByte = 7,
  kUShort = 8,
  kUInt = 9,
  kInt64 = 10,
  kUInt64 = 11,
};

std::size_t type_size(Type t);
const char* type_name(Type t);
// The Array dtype a variable of type t is read as (char: uint8).
DType type_dtype(Type t);

struct Dim {
  std::string name;
  std::uint64_t length = 0;  // the unlimited dimension: the file's record count
  bool unlimited = false;
};

struct Attribute {
  std::string name;
  Type type = Type::kChar;
  std::uint64_t count = 0;
  std::size_t offset = 0;  // of its values in the file
};

struct Variable {
  std::string name;
  std::vector<std::size_t> dims;  // indices into File::dims()
  std::vector<Attribute> atts;
  Type type = Type::kChar;
  std::uint64_t begin = 0;    // of its data (its first record's, for a record variable)
  bool record = false;        // its first dimension is the unlimited one
  std::uint64_t values = 0;   // values (one record's, for a record variable)
  std::size_t header_at = 0;  // where its entry starts in the header, for messages
};

class File {
 public:
  // Parses the header of `data` (the whole file); `path` names it in messages. ReadError
  // "<path>: byte N: ..." for anything malformed or pointing past the end.
  File(std::string_view data, std::string path);

  int version() const { return version_; }  // 1, 2 or 5
  std::uint64_t records() const { return numrecs_; }
  const std::vector<Dim>& dims() const { return dims_; }
  const std::vector<Attribute>& global_atts() const { return gatts_; }
  const std::vector<Variable>& vars() const { return vars_; }
  const std::string& path() const { return path_; }

  const Variable* find(std::string_view name) const;
  const Dim* find_dim(std::string_view name) const;
  // The shape of v (a record variable's first axis: the record count).
  std::vector<std::int64_t> shape(const Variable& v) const;
  // The text of a char attribute, up to its first NUL; "" when it has none of that name.
  std::string text_attribute(const Variable& v, std::string_view name) const;

  // The whole variable (all records), or record `record` only (its shape without the first
  // axis), as an Array of type_dtype(v.type) in native byte order.
  Array read(const Variable& v) const;
  Array read_record(const Variable& v, std::uint64_t record) const;
  // The same values converted to T into `out` (v.values values for a record, else all). Into
  // integers, a float or double value that is not a whole number of int64's range is an error.
  template <typename T>
  void read_as(const Variable& v, T* out, std::int64_t record = -1) const;
  // A fixed variable's values as float64 into out[0], out[stride], ... (a column of points).
  void read_strided(const Variable& v, double* out, std::size_t stride) const;
  // A fixed variable of 1-based indices into 0-based `out`, decoded and checked in one pass;
  // false when one is outside 1..limit (out then holds them all, for the caller to name one).
  bool read_indices(const Variable& v, std::int64_t* out, std::uint64_t limit) const;
  // Values [first, first + count) only, into out[first..]: a big variable decoded in runs, so a
  // lazily mapped file's pages can come and go run by run. Integer variables only (int, int64);
  // false for a value outside 1..limit, as above.
  bool read_indices(const Variable& v, std::int64_t* out, std::uint64_t limit, std::uint64_t first,
                    std::uint64_t count) const;
  // Rows of a char variable (n, len) as strings, each up to its first NUL.
  std::vector<std::string> strings(const Variable& v) const;

  [[noreturn]] void fail(std::size_t at, const std::string& what) const;

 private:
  // read_as into integers of a float or double variable: each value checked to be whole.
  void read_whole(const Variable& v, std::int64_t* out, std::int64_t record) const;
  std::string_view data_;
  std::string path_;
  int version_ = 0;
  std::uint64_t numrecs_ = 0;
  std::uint64_t record_size_ = 0;
  std::size_t header_end_ = 0;
  bool streamed_ = false;  // bytes between one record's start and the next's
  std::vector<Dim> dims_;
  std::vector<Attribute> gatts_;
  std::vector<Variable> vars_;

  // Where record r of v (or the whole of a fixed variable) lies, checked inside the file.
  const char* at(const Variable& v, std::uint64_t record) const;
  std::uint64_t record_bytes(const Variable& v) const;  // unpadded bytes of one record / all
  void layout();
};

}  // namespace meshdock::mesh::netcdf
