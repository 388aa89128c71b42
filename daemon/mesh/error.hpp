// The mesh I/O layer's exception type. The message always names the file and, for text formats,
// the line (1-based), for binary data the byte offset.
#pragma once

#include <stdexcept>
#include <string>

namespace meshdock::mesh {

class ReadError : public std::runtime_error {
 public:
  explicit ReadError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace meshdock::mesh
