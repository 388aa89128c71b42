// Publish from a producer's shared memory: the array's bytes are in a POSIX shared-memory
// object the caller wrote (/dev/shm/NAME), not in gRPC messages. What makes that safe:
// - The object is named by one path component, "meshdock-src." and then [A-Za-z0-9_.-], under
//   the shm directory, opened relative to the directory's fd (openat2: no symlink, no other
//   mount; O_NONBLOCK: a FIFO does not block), and only a regular file of that file system is
//   read.
// - Its owner must be the caller's uid as the kernel gave it for the caller's Unix-socket
//   connection (SO_PEERCRED, PeerTable): a publish reads the caller's own objects only, never
//   another user's nor the daemon's segments. A caller the daemon cannot vouch for (TCP) is
//   refused.
// - It is read with pread into the daemon's own memory, never mapped: a producer that truncates
//   or rewrites it meanwhile gets an error or its own torn array, and cannot fault the daemon.
//   The daemon never writes it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "meshdock/shm/names.hpp"

namespace meshdock::rpc {

using shm::kShmDir;
using shm::kSourcePrefix;   // a caller can name no object of other software
using shm::kSourceRefused;  // the reply's trailer (names.hpp)
using shm::kSourceTrailer;
using shm::kSourceUnderstood;

// Reads `n` bytes at `offset` of the shm object `object` ("NAME" or "/NAME") into `dst`, after
// the checks above against `caller_uid`. `field` names the publish in messages. Throws
// service::ServiceError: INVALID_ARGUMENT (a bad name, not a regular file, too short, truncated
// while read), NOT_FOUND, PERMISSION_DENIED (another owner, a symlink, another mount,
// unreadable by the daemon: the message says which mode and group would do),
// RESOURCE_EXHAUSTED (no fd left).
void read_shm_source(const std::string& object, std::uint64_t offset, std::uint64_t n,
                     uid_t caller_uid, std::byte* dst, const std::string& field,
                     const std::string& dir = kShmDir);

}  // namespace meshdock::rpc
