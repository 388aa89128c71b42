#include "daemon/rpc/shm_source.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/mesh/unique_fd.hpp"
#include "daemon/service/registry.hpp"
#include "meshdock/shm/names.hpp"

namespace meshdock::rpc {

namespace {

using service::ServiceError;
using service::Status;

// One component under `dir`: no symlink, and no crossing into a mount on a name in the shm
// directory (a FUSE mount there could hold the opening thread). Kernels before 5.6 have no
// openat2: openat with O_NOFOLLOW, and the mount check after the fact (fstat's st_dev).
int open_under(int dir, const char* name, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  const long fd = ::syscall(SYS_openat2, dir, name, &how, sizeof how);
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  return ::openat(dir, name, flags);
}

}  // namespace

void read_shm_source(const std::string& object, std::uint64_t offset, std::uint64_t n,
                     uid_t caller_uid, std::byte* dst, const std::string& field,
                     const std::string& dir) {
  const std::string name = object.size() > 1 && object[0] == '/' ? object.substr(1) : object;
  const std::string what = field + ": source " + dir + "/" + name;
  // One component: no directory, no way out of the shm directory.
  if (name.size() > 255 || !name.starts_with(kSourcePrefix) ||
      !std::all_of(name.begin(), name.end(), shm::is_name_char))
    throw ServiceError(Status::kInvalidArgument,
                       field + ": source_shm '" + shm::printable(object) +
                           "' is not a source object's name (" + std::string(kSourcePrefix) +
                           " and then [A-Za-z0-9_.-], 255 bytes at most)");
  mesh::UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!d) throw ServiceError(Status::kInternal, field + ": " + dir + ": " + std::strerror(errno));
  mesh::UniqueFd fd(
      open_under(d.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    const int e = errno;
    if (e == ENOENT) throw ServiceError(Status::kNotFound, what + ": no such object");
    if (e == ELOOP)
      throw ServiceError(Status::kPermissionDenied, what + ": is a symbolic link (refused)");
    if (e == EXDEV)
      throw ServiceError(Status::kPermissionDenied, what + ": is another mount (refused)");
    if (e == EMFILE || e == ENFILE)
      throw ServiceError(Status::kResourceExhausted, what + ": " + std::strerror(e));
    if (e == EACCES)
      throw ServiceError(Status::kPermissionDenied,
                         what + ": the daemon (uid " + std::to_string(::geteuid()) + ", gid " +
                             std::to_string(::getegid()) +
                             ") cannot read it: give it the daemon's group and mode 0640");
    throw ServiceError(Status::kInvalidArgument, what + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw ServiceError(Status::kInternal, what + ": fstat: " + std::strerror(errno));
  struct stat dir_st {};
  if (!S_ISREG(st.st_mode) || ::fstat(d.get(), &dir_st) != 0 || st.st_dev != dir_st.st_dev)
    throw ServiceError(Status::kInvalidArgument,
                       what + ": not a regular file of " + dir + " (refused)");
  if (st.st_uid != caller_uid)
    throw ServiceError(Status::kPermissionDenied,
                       what + ": owned by uid " + std::to_string(st.st_uid) +
                           ", not by the caller (uid " + std::to_string(caller_uid) +
                           "): a publish reads only the caller's own objects");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (offset > size || n > size - offset)
    throw ServiceError(Status::kInvalidArgument,
                       what + ": holds " + std::to_string(size) + " bytes; the array needs " +
                           std::to_string(n) + " from offset " + std::to_string(offset));
  std::uint64_t got = 0;
  while (got < n) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n - got, 1u << 30));
    const ssize_t r = ::pread(fd.get(), dst + got, want, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw ServiceError(Status::kInternal, what + ": read: " + std::strerror(errno));
    if (r == 0)
      throw ServiceError(Status::kInvalidArgument,
                         what + ": ended after " + std::to_string(offset + got) +
                             " bytes while it was read (truncated by its owner?)");
    got += static_cast<std::uint64_t>(r);
  }
}

}  // namespace meshdock::rpc
