// The mesh I/O layer's exception types. MeshError is the layer's one base (the daemon maps it
// to INVALID_ARGUMENT); ReadError and WriteError say which direction failed. Messages always
// name the file and, for reads of text formats, the line (1-based), for binary data the byte
// offset; for writes, the block, array or value that cannot be written.
#pragma once

#include <stdexcept>
#include <string>

#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

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
