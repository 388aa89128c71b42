// Squatters: shared-memory objects under one of our names that another user created first
// (e.g. /dev/shm/meshdock.bracket, 0666, with daemon_pid = 1 in a forged catalog), and stale
// objects of our own uid whose catalog names a pid that is not a process of ours.
//
// An object not owned by the daemon's uid is never trusted, whatever its bytes say: the daemon
// removes it when it may (and says so), and otherwise fails the load with an error naming the
// object, its owner (uid and user name) and its mode.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace meshdock::slots {

class SquatterError : public std::runtime_error {
 public:
  explicit SquatterError(const std::string& what) : std::runtime_error(what) {}
};

struct ObjectOwner {
  uid_t uid;
  mode_t mode;  // permission bits
};

// The owner of `dir`/`object` (lstat), or nullopt when there is none.
std::optional<ObjectOwner> object_owner(const std::string& dir, const std::string& object);

// "uid 65534 (nobody)", or "uid 4242" when the uid has no user name.
std::string describe_uid(uid_t uid);

// If `dir`/`object` exists and is not owned by `self`, removes it with `unlink_fn` (the seam a
// test replaces; returns 0 or -1 with errno like unlink(2)) and returns a line to log. Throws
// SquatterError naming the object, owner and mode when it cannot be removed. Returns nullopt
// when there is nothing to do.
std::optional<std::string> evict_squatter(const std::string& dir, const std::string& object,
                                          uid_t self,
                                          const std::function<int(const std::string&)>& unlink_fn);

// Whether `pid` is a live process whose effective uid is `uid` (from /proc/<pid>/status). A
// catalog of ours naming a pid that is not ours (pid 1, a reused pid) is stale.
bool live_process_of(std::int32_t pid, uid_t uid);

}  // namespace meshdock::slots
