// Roots: the directories meshdockd reads and writes under, each held open (O_PATH |
// O_DIRECTORY) from start or SIGHUP on. Every file the daemon touches is opened once, relative
// to the fd of its root, with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), and only that fd
// is used afterwards: a client that swaps a name for a symlink, a FIFO or a directory between a
// check and an open gets nothing outside the root, and no thread ever blocks in open().
//
// - A path is matched lexically first (lexically_normal, against each root as configured and
//   as it resolved when opened): a path that cannot be under a root is refused before the file
//   system is asked, so a client cannot probe what exists outside.
// - Symlinks are followed while they stay inside their root (relative ones only: RESOLVE_BENEATH
//   refuses absolute symlinks and any step above the root); a symlink or '..' out of the root is
//   refused with a message that names the path as the client wrote it, never where it points.
// - Files are opened O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC and fstat-checked: anything
//   but a regular file (FIFO, socket, device, directory) is refused without blocking.
// - Kernels before 5.6 lack openat2: then each component is opened with openat(O_NOFOLLOW), so
//   every symlink under a root is refused (walk(); the daemon logs this once).
// - A root replaced after it was opened keeps being the directory that was opened: SIGHUP (or a
//   restart) opens the roots again.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/mesh/unique_fd.hpp"

namespace meshdock::service {

class RootsError : public std::runtime_error {
 public:
  enum class Kind {
    kOutside,     // not under any root, or leads out of its root (symlink, ..): permission
    kDenied,      // the file system said no (EACCES)
    kNotFound,    // no such file or directory
    kNotRegular,  // a directory, FIFO, socket or device where a file is needed
    kInvalid,     // a name the file system cannot take (too long)
    kIo,          // anything else
  };
  RootsError(Kind k, const std::string& what) : std::runtime_error(what), kind_(k) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A file opened for reading under a root: its fd and fstat (a regular file).
struct RootFile {
  mesh::UniqueFd fd;
  struct stat st {};
  std::string path;  // lexically normal, as the client named it: for messages
};

// The directory a file is to be written in, opened under a root, and the file's name in it.
struct RootDir {
  mesh::UniqueFd fd;  // O_PATH | O_DIRECTORY
  std::string leaf;   // one component
  std::string path;   // lexically normal, as the client named it: for messages
};

class Roots {
 public:
  enum class Resolver {
    automatic,  // openat2 where the kernel has it, walk otherwise
    walk,       // component by component with O_NOFOLLOW (kernels before 5.6; tests)
  };
  // What the roots are for: only the messages differ (the config key and flag they name).
  enum class Use {
    read,        // "roots" / --root: files are loaded from under these
    write_only,  // "export_roots" / --export-root: Export writes under these
  };
  Roots() = default;  // no roots: everything is refused
  // Opens every root. A root that does not exist or is not a directory is a ConfigError naming
  // it and the config key ("roots" / --root, or "export_roots" / --export-root).
  explicit Roots(const std::vector<std::string>& roots, Resolver resolver = Resolver::automatic,
                 Use use = Use::read);

  bool empty() const { return roots_.empty(); }
  const std::vector<std::string>& names() const { return names_; }
  bool walks() const { return walk_; }  // true: openat2 is missing (or was not asked for)

  // Opens `path` (absolute) for reading; RootsError unless it is a regular file under a root.
  RootFile open_for_read(const std::string& path) const;
  // Opens the directory `path` (absolute) is to be written in. A path that names a root itself
  // or ends in '/' is kNotRegular (it names a directory).
  RootDir open_dir_for_write(const std::string& path) const;
  // The names in the directory `path` (absolute; a root itself too) names, for a reader that
  // looks for files beside the one it reads (mesh::ReadOptions::list_siblings); RootsError
  // unless it is a directory under a root.
  std::vector<std::string> list_dir(const std::string& path) const;
  // fstat of what `path` names (following symlinks inside its root), without opening it for
  // reading; nullopt when it cannot be reached. For watch stamps.
  std::optional<struct stat> stat(const std::string& path) const;

 private:
  struct Root {
    mesh::UniqueFd fd;
    std::string lexical, real;  // as configured (normal), as resolved at open
  };
  // The root `path` is under and the rest of the path below it ("" for the root itself);
  // RootsError kOutside when none.
  std::pair<const Root*, std::string> locate(const std::string& path, std::string& normal) const;
  mesh::UniqueFd open_beneath(const Root& root, const std::string& rel, int flags,
                              const std::string& path) const;
  std::vector<Root> roots_;
  std::vector<std::string> names_;
  bool walk_ = false;
  Use use_ = Use::read;
};

}  // namespace meshdock::service
