// Process liveness and the monotonic clock shared by producer and consumers.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace meshdock::shm {

// True while `pid` names a process that can still run. A zombie (killed but not yet reaped by
// its parent) counts as dead: it will never release its lease. EPERM means the process exists
// under another user, which is alive. Pids are compared within one pid namespace: a daemon and
// consumers in different pid namespaces must not share a catalog (docs/protocol.md).
inline bool pid_alive(std::int32_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
#if defined(__linux__)
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    // Format: "pid (comm) S ..."; comm may contain spaces and ')' so take the last ')'.
    char buf[512];
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const std::string stat(buf);
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size()) {
      const char state = stat[close + 2];
      if (state == 'Z' || state == 'X') return false;
    }
  }
#endif
  return true;
}

// CLOCK_MONOTONIC in nanoseconds: the heartbeat clock. Comparable across processes on one host.
inline std::uint64_t monotonic_ns() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

inline double monotonic_seconds() {
  return static_cast<double>(monotonic_ns()) * 1e-9;
}

}  // namespace meshdock::shm
