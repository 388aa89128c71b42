// The header of a NumPy .npy file (format versions 1.0, 2.0 and 3.0), for `meshdockctl publish`:
// what the array is (DLPack dtype, shape) and where its bytes start, so that they can be streamed
// to meshdockd in chunks without holding the array in memory.
//
// Accepted: little-endian (or byte-order-free) bool, int8..int64, uint8..uint64, float16..float64,
// C order, 1 to 4 dimensions (the Publish limit), a file exactly header + shape x itemsize long.
// Anything else is an NpyError whose message names the file and what to change (a big-endian,
// Fortran-order, structured or object array: "np.save(path, np.ascontiguousarray(a, '<f4'))").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace meshdockctl {

class NpyError : public std::runtime_error {
 public:
  explicit NpyError(const std::string& what) : std::runtime_error(what) {}
};

struct NpyHeader {
  std::uint32_t code = 0;  // DLPack type code: 0 int, 1 uint, 2 float, 6 bool
  std::uint32_t bits = 0;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;  // bytes before the array's data
  std::uint64_t nbytes = 0;       // product(shape) x itemsize
  std::string descr;              // as written: "<f4", "|u1", ...
};

// Parses the first bytes of `path` (`head`: at least the whole header; the caller reads up to
// 64 KiB) and checks them against the file size `file_size`.
NpyHeader parse_npy(const std::string& path, const std::string& head, std::uint64_t file_size);

}  // namespace meshdockctl
