// Who called, for clients of the Unix socket. gRPC 1.51 names every Unix-socket caller "unix:"
// and keeps the kernel's credentials of the connection to itself, so the daemon accepts on its
// Unix socket itself: it reads each connection's SO_PEERCRED, records it under the connection's
// fd number, and hands the fd to gRPC (grpc::AddInsecureChannelFromFd), which then names the
// caller of every call on that connection "fd:N" (ServerContext::peer()). Why this is correct
// when fd numbers are reused: docs/architecture.md, "Naming the caller".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "daemon/mesh/unique_fd.hpp"

namespace grpc {
class Server;
}

namespace meshdock::service {
class Logger;
}

namespace meshdock::rpc {

// What the kernel says about the process at the other end of a connection (SO_PEERCRED: the
// process that called connect(), as it was then).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// "pid 4242 uid 1000 (alice) gid 1000"; without " (alice)" when `user` is empty.
std::string describe_cred(const PeerCred& c, const std::string& user);

// The credentials of each connection the acceptor handed to gRPC, by fd number. Thread-safe.
class PeerTable {
 public:
  // Records `cred` for the connected socket `fd`, before gRPC gets it (fstat's device and inode
  // are kept with it). Replaces what an earlier connection with the same number left: accept can
  // only return a number whose previous socket was closed.
  void record(int fd, const PeerCred& cred);
  // Drops what is known about fd number `fd` (a connection whose credentials could not be read).
  void forget(int fd);
  // The credentials of the caller whose ServerContext::peer() is `peer`: "fd:N" where fd N is
  // still the very socket recorded for N (same device and inode). nullopt for any other peer
  // (TCP: "ipv4:..."), for a number never recorded, and for one that is now another file.
  std::optional<PeerCred> find(const std::string& peer) const;
  // For log lines: "pid 4242 uid 1000 (alice) gid 1000" when find() knows the caller (the user
  // name when the uid resolves); a TCP peer as gRPC gives it ("ipv4:127.0.0.1:50412");
  // "an unknown caller (fd:N)" for an fd channel find() cannot vouch for.
  std::string describe(const std::string& peer) const;
  // How many fd numbers have an entry (tests).
  std::size_t size() const;
  // The connections still open (each entry's fd still its recorded socket): `uid`'s and all
  // of them. Entries whose fd has gone (closed by gRPC, or reused for another file) are dropped
  // on the way.
  struct Open {
    std::size_t of_uid = 0, total = 0;
  };
  Open open_connections(uid_t uid);

 private:
  struct Entry {
    PeerCred cred;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::string user_name(uid_t uid) const;

  mutable std::mutex m_;
  std::map<int, Entry> by_fd_;
  mutable std::map<uid_t, std::string> names_;  // resolved names only; bounded (user_name)
};

// A listening Unix socket whose connections this daemon accepts itself (see the top of this
// file). Nothing in it blocks on a client: the socket is non-blocking, an accepted connection is
// handed to gRPC at once (gRPC reads it asynchronously), so a client that connects and sends
// nothing holds one fd and no thread.
class AcceptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UnixAcceptor {
 public:
  // Binds `path` and listens (backlog SOMAXCONN). The caller has removed a dead socket there; any
  // file at `path` makes this fail (EADDRINUSE) rather than be replaced. Throws AcceptError
  // naming the path and the reason. The socket file's mode is the caller's to set.
  // More than `max_per_uid` connections of one uid open at once, or more than `max_total` of
  // all uids together (0: no cap): the next is closed as soon as it is accepted, and logged
  // (once a second at most), so no user of the socket, nor all of them together, can take the
  // fds the daemon needs for its files and segments. Root and the daemon's own uid are not held
  // to `max_total`: an operator can always connect.
  UnixAcceptor(const std::string& path, PeerTable& peers, service::Logger& log,
               std::uint32_t max_per_uid = 0, std::uint32_t max_total = 0);
  ~UnixAcceptor();
  UnixAcceptor(const UnixAcceptor&) = delete;
  UnixAcceptor& operator=(const UnixAcceptor&) = delete;

  // Starts the thread that accepts, records each connection's credentials in the PeerTable and
  // hands it to `server` (which must outlive stop()). Once only.
  void start(grpc::Server& server);
  // Stops accepting: wakes and joins the thread, closes the listening socket (new clients are
  // refused; connections already handed over stay gRPC's). Idempotent; the destructor calls it.
  void stop();
  // Connections accepted so far.
  std::uint64_t accepted() const;

 private:
  void run(grpc::Server* server);
  // Closes-to-be connection `fd` of `who`, over a cap (`why`): forgotten, counted, logged.
  void refuse(int fd, const PeerCred& who, const std::string& why);
  // Waits up to `ms` for stop(); true when stop() was called.
  bool wait_for_stop(int ms) const;

  std::string path_;
  PeerTable& peers_;
  service::Logger& log_;
  std::uint32_t max_per_uid_;
  std::uint32_t max_total_;
  std::uint64_t refused_ = 0;  // connections closed over the cap
  std::chrono::steady_clock::time_point last_refusal_log_{};
  mesh::UniqueFd listen_fd_;
  mesh::UniqueFd wake_fd_;  // an eventfd: stop() writes it, the thread polls it with the socket
  std::thread thread_;
  mutable std::mutex m_;
  std::uint64_t accepted_ = 0;
};

}  // namespace meshdock::rpc
