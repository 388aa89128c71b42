// A producer's shared buffer: the array of a Publish travels in a POSIX shared-memory object of
// the producer's own (Publish's source_shm), not in gRPC messages. The producer writes the array
// into data() and names the object in a header-only PublishSmall; the daemon checks the object
// is the caller's (its SO_PEERCRED uid owns it), preads it and replies. The buffer may be
// rewritten for the next publish once that reply is in; after a call that failed (a deadline
// passed: the daemon may still be reading it), make a fresh one. docs/operations.md, "Publish
// from a producer's shared memory"; the daemon's side: daemon/rpc/shm_source.hpp.
//
// What the object is made to be:
// - /dev/shm/meshdock-src.<pid>.<16 hex digits>: the one name pattern the daemon reads;
//   created O_EXCL | O_NOFOLLOW, so nothing already there is ever used.
// - Readable by the daemon: mode 0600 when it runs as this user or as root, else its group
//   (the daemon socket's group; this user must be a member) and mode 0640. Nobody else.
// - Its pages allocated at once (posix_fallocate): a full /dev/shm is an error here, never a
//   SIGBUS on a write through data().
// - Held: its maker keeps a shared flock on it, so sweep_sources() tells a live producer's
//   object from one a killed producer left, in any pid namespace.
// - Unlinked when the SourceBuffer goes, in the process that made it only (a forked child
//   leaves its parent's objects alone).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "meshdock/error.hpp"
#include "meshdock/shm/names.hpp"

namespace meshdock {

// How every source object's name begins (the daemon refuses any other name).
using shm::kSourcePrefix;

struct SourceOptions {
  std::string dir = shm::kShmDir;  // where POSIX shm objects are (tests: a directory of theirs)
  // The daemon's uid and gid (its socket's owner and group: daemon_of_socket). Unset: this
  // process's own (mode 0600).
  std::optional<uid_t> daemon_uid;
  std::optional<gid_t> daemon_gid;
};

// The owner and group of the daemon's Unix socket (the daemon creates it), or nullopt when
// `path` cannot be stat'ed.
struct DaemonIds {
  uid_t uid;
  gid_t gid;
};
std::optional<DaemonIds> daemon_of_socket(const std::string& path);

class SourceBuffer {
 public:
  // A fresh object of `bytes` (at least 1), mapped read-write. Throws SdkError naming the
  // object and the reason (ENOSPC: /dev/shm is full; EPERM on the group: this user is not in
  // the daemon's group).
  static SourceBuffer create(std::uint64_t bytes, const SourceOptions& options = {});
  SourceBuffer(SourceBuffer&& o) noexcept;
  SourceBuffer& operator=(SourceBuffer&& o) noexcept;
  SourceBuffer(const SourceBuffer&) = delete;
  SourceBuffer& operator=(const SourceBuffer&) = delete;
  ~SourceBuffer();

  // The object's name, for PublishChunk.source_shm ("meshdock-src.4242.0123456789abcdef").
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  pid_t maker() const { return maker_; }

 private:
  SourceBuffer() = default;
  void reset() noexcept;
  std::string name_, path_;
  std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  int fd_ = -1;  // holds the shared flock
  pid_t maker_ = 0;
};

// Removes this user's source objects in `dir` that no live process holds (no flock on them)
// and that are older than `min_age_seconds` (their maker may not have locked them yet);
// returns how many. Anything else there (another user's, a symlink, another name) is left.
// SdkError naming `dir` when it cannot be read (missing, not a directory, no permission).
std::size_t sweep_sources(const std::string& dir = "/dev/shm", double min_age_seconds = 10.0);

}  // namespace meshdock
