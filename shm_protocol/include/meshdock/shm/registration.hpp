// A consumer's registration with the daemon: what makes its leases count.
//
// The daemon listens on a Unix socket (SOCK_SEQPACKET) whose address it records in the catalog
// (socket_address(): sun_path bytes, a leading NUL for an abstract name). A consumer connects
// before it takes its first lease and keeps the connection open for as long as it holds any:
// the daemon takes the peer's SO_PEERCRED pid and uid at accept, answers with one 8-byte
// message "MDR1" + the pid it saw (u32 little-endian), and honours leases naming that pid while
// the connection stays open. Leases naming any other pid are ignored and cleared.
//
// After that the connection carries two kinds of message, consumer to daemon:
// - a wake report, "MDW1" + frame (u32) + latency (u64 ns): a consumer that slept in wait() and
//   woke with a new frame in hand says how long after the publish (the control block's
//   timestamp) that was. The daemon keeps them as a histogram (meshdock_frame_wake_seconds) and
//   nothing else: a report is a consumer's claim, bounded, and used for that figure only.
// - an import report, "MDI1" or "MDX1" + the 64-byte memory handle of a CUDA slot buffer: the
//   consumer opened that buffer (cudaIpcOpenMemHandle), or closed it. It sends "MDI1" while it
//   holds a lease on a frame of the buffer (so before the daemon could free it) and "MDX1" after
//   it closed it. The daemon frees no buffer an open registration has reported open and not
//   closed (CUDA calls a cudaFree under an importer's open handle undefined), whether or not a
//   lease names it; a closed registration's reports end with it (the process's imports close
//   when it exits). A connection's open reports count up to kMaxImportsPerConnection; beyond
//   that they are ignored. Import reports are claims too: the daemon lets them pin at most
//   2 x num_slots retired buffers of a slot, within its memory budget (oldest freed first).
//
// A registration is its process's: a forked child inherits the connection, but the daemon took
// the parent's pid for it, so the child's leases would not count and its reports would be
// counted as the parent's. A Registration therefore speaks only in the process that connected
// it (here(); in a child every send is dropped), and a child registers itself (attach.cpp).
//
// The consumer checks the other end too: its SO_PEERCRED pid must be the catalog's daemon_pid
// and its uid the segments' owner, so a process squatting the socket name is never mistaken
// for the daemon; and the pid the daemon saw must be ours (else the two are in different pid
// namespaces and leases could never count).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "meshdock/shm/bytes.hpp"
#include "meshdock/shm/control_block.hpp"
#include "meshdock/shm/error.hpp"
#include "meshdock/shm/names.hpp"

namespace meshdock::shm {

inline constexpr char kRegistrationTag[4] = {'M', 'D', 'R', '1'};
inline constexpr std::size_t kRegistrationAckBytes = 8;
inline constexpr char kWakeReportTag[4] = {'M', 'D', 'W', '1'};
inline constexpr std::size_t kWakeReportBytes = 16;
// Latencies past this are not wake-ups (a clock step, a forged report): the daemon drops them.
inline constexpr std::uint64_t kMaxWakeReportNs = 60'000'000'000ull;
inline constexpr char kImportOpenTag[4] = {'M', 'D', 'I', '1'};
inline constexpr char kImportClosedTag[4] = {'M', 'D', 'X', '1'};
inline constexpr std::size_t kImportReportBytes = 4 + kHandleBytes;
inline constexpr std::size_t kMaxImportsPerConnection = 64;

struct ImportReport {
  bool open;  // MDI1: opened; MDX1: closed
  Handle handle;
};

// The import report in `buf`, or nothing when it is not one.
inline std::optional<ImportReport> parse_import_report(const std::byte* buf, std::size_t n) {
  if (n != kImportReportBytes) return std::nullopt;
  ImportReport r{};
  if (std::memcmp(buf, kImportOpenTag, 4) == 0)
    r.open = true;
  else if (std::memcmp(buf, kImportClosedTag, 4) != 0)
    return std::nullopt;
  std::memcpy(r.handle.data(), buf + 4, kHandleBytes);
  return r;
}

// The latency a wake report carries, or nothing when `buf` is not one (or past the bound).
inline std::optional<std::uint64_t> parse_wake_report(const std::byte* buf, std::size_t n) {
  if (n != kWakeReportBytes || std::memcmp(buf, kWakeReportTag, 4) != 0) return std::nullopt;
  const auto ns = load_le<std::uint64_t>(buf, 8);
  if (ns > kMaxWakeReportNs) return std::nullopt;
  return ns;
}

// The address as people read it: "@name" for an abstract socket, the path otherwise.
inline std::string describe_socket(std::string_view address) {
  if (!address.empty() && address[0] == '\0') return "@" + printable(address.substr(1));
  return printable(address);
}

// An open registration (a connected socket). Move-only; closing it ends the registration.
class Registration {
 public:
  Registration() = default;
  Registration(Registration&& o) noexcept : fd_(o.fd_), pid_(o.pid_) { o.fd_ = -1; }
  Registration& operator=(Registration&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = o.fd_;
      pid_ = o.pid_;
      o.fd_ = -1;
    }
    return *this;
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() { close(); }

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Open, and connected by this process (false in a child forked since: see the top).
  bool here() const { return fd_ >= 0 && pid_ == ::getpid(); }

  // Sends a wake report (see the top of this file) without blocking; a full socket buffer or a
  // daemon gone drops it: the figure is best effort, the consumer's wait never pays for it.
  void report_wake(std::uint32_t frame, std::uint64_t latency_ns) const {
    if (!here()) return;
    std::byte msg[kWakeReportBytes];
    std::memcpy(msg, kWakeReportTag, 4);
    store_le<std::uint32_t>(msg, 4, frame);
    store_le<std::uint64_t>(msg, 8, latency_ns);
    [[maybe_unused]] const auto sent = ::send(fd_, msg, sizeof msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  // Sends an import report (see the top of this file). Unlike a wake report it waits for room
  // (up to the send timeout set at connect): the daemon must have it before the lease that
  // protects the buffer goes. Returns false when it could not be sent (the daemon gone).
  bool report_import(bool open, const Handle& handle) const {
    if (!here()) return false;  // a forked child's report would count as its parent's
    std::byte msg[kImportReportBytes];
    std::memcpy(msg, open ? kImportOpenTag : kImportClosedTag, 4);
    std::memcpy(msg + 4, handle.data(), kHandleBytes);
    ssize_t sent;
    do {  // a signal (Ctrl-C in a Python consumer) interrupts the wait for room: wait again
      sent = ::send(fd_, msg, sizeof msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(sizeof msg);
  }

  // Connects to `address`, checks the peer is `daemon_pid` running as `daemon_uid`, and waits
  // up to `timeout` for the daemon's acknowledgement. `what` names the slot in messages.
  // Throws ProtocolError saying which step failed.
  static Registration connect(std::string_view address, std::int32_t daemon_pid,
                              std::uint32_t daemon_uid, std::chrono::milliseconds timeout,
                              std::string_view what) {
    const std::string where =
        std::string(what) + ": registration socket " + describe_socket(address);
    if (address.empty() || address.size() > sizeof(sockaddr_un::sun_path))
      throw ProtocolError(std::string(what) + ": the catalog names no registration socket");
    Registration r;
    r.fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (r.fd_ < 0) throw ProtocolError(where + ": socket(): " + std::strerror(errno));
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(r.fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, address.data(), address.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
    if (::connect(r.fd_, reinterpret_cast<const sockaddr*>(&sa), len) != 0)
      throw ProtocolError(where + ": connect(): " + std::strerror(errno) +
                          " (is the daemon alive, and in this network namespace?)");
    ucred peer{};
    socklen_t plen = sizeof peer;
    if (::getsockopt(r.fd_, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0)
      throw ProtocolError(where + ": SO_PEERCRED: " + std::strerror(errno));
    if (peer.pid != daemon_pid || peer.uid != daemon_uid)
      throw ProtocolError(where + " is held by pid " + std::to_string(peer.pid) + " uid " +
                          std::to_string(peer.uid) + ", not the daemon (pid " +
                          std::to_string(daemon_pid) + " uid " + std::to_string(daemon_uid) +
                          "): refusing to register with it");
    pollfd p{r.fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready <= 0)
      throw ProtocolError(where + ": no acknowledgement from the daemon within " +
                          std::to_string(timeout.count()) + " ms");
    std::byte ack[16];
    const auto got = ::recv(r.fd_, ack, sizeof ack, 0);
    if (got != static_cast<ssize_t>(kRegistrationAckBytes) ||
        std::memcmp(ack, kRegistrationTag, 4) != 0)
      throw ProtocolError(
          where + ": the daemon refused the registration (" +
          (got < 0 ? std::string(std::strerror(errno)) : std::to_string(got) + "-byte answer") +
          "; too many consumers?)");
    const auto seen = load_le<std::uint32_t>(ack, 4);
    if (seen != static_cast<std::uint32_t>(::getpid()))
      throw ProtocolError(where + ": the daemon sees this process as pid " + std::to_string(seen) +
                          ", not " + std::to_string(::getpid()) +
                          " (different pid namespaces: leases could not count)");
    r.pid_ = static_cast<std::int32_t>(::getpid());
    return r;
  }

 private:
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  std::int32_t pid_ = -1;  // who connected it
};

}  // namespace meshdock::shm
