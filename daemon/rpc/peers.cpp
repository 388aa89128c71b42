#include "daemon/rpc/peers.hpp"

#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <pwd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "daemon/service/log.hpp"

namespace meshdock::rpc {

namespace {

// The fd number in a peer string gRPC gives a channel added from an fd ("fd:12"), or -1.
int fd_of_peer(const std::string& peer) {
  if (!peer.starts_with("fd:")) return -1;
  int fd = -1;
  const char* first = peer.data() + 3;
  const char* last = peer.data() + peer.size();
  const auto [end, ec] = std::from_chars(first, last, fd);
  if (ec != std::errc() || end != last || first == last || fd < 0) return -1;
  return fd;
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

std::string describe_cred(const PeerCred& c, const std::string& user) {
  std::string s = "pid " + std::to_string(c.pid) + " uid " + std::to_string(c.uid);
  if (!user.empty()) s += " (" + user + ")";
  return s + " gid " + std::to_string(c.gid);
}

void PeerTable::record(int fd, const PeerCred& cred) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    forget(fd);
    return;
  }
  std::lock_guard lock(m_);
  by_fd_[fd] = Entry{cred, st.st_dev, st.st_ino};
}

void PeerTable::forget(int fd) {
  std::lock_guard lock(m_);
  by_fd_.erase(fd);
}

std::optional<PeerCred> PeerTable::find(const std::string& peer) const {
  const int fd = fd_of_peer(peer);
  if (fd < 0) return std::nullopt;
  std::lock_guard lock(m_);  // held across fstat: record() for this number waits for it
  const auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  // The caller's call keeps its connection's fd open (gRPC closes it only once the last call on
  // it is gone), so fd N is its socket; the inode check refuses a number that now names
  // something else all the same (docs/architecture.md, "Naming the caller").
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_dev != it->second.dev ||
      st.st_ino != it->second.ino)
    return std::nullopt;
  return it->second.cred;
}

std::string PeerTable::user_name(uid_t uid) const {
  {
    std::lock_guard lock(m_);
    if (const auto it = names_.find(uid); it != names_.end()) return it->second;
  }
  // Looked up outside the lock (NSS may be slow); only names that resolve are kept, at most
  // 256 uids (then the cache starts over), so a flood of callers cannot grow it.
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found || !pw.pw_name)
    return {};
  std::string name = pw.pw_name;
  std::lock_guard lock(m_);
  if (names_.size() >= 256) names_.clear();
  names_.emplace(uid, name);
  return name;
}

std::string PeerTable::describe(const std::string& peer) const {
  if (const auto c = find(peer)) return describe_cred(*c, user_name(c->uid));
  if (fd_of_peer(peer) >= 0) return "an unknown caller (" + peer + ")";
  return peer;
}

std::size_t PeerTable::size() const {
  std::lock_guard lock(m_);
  return by_fd_.size();
}

PeerTable::Open PeerTable::open_connections(uid_t uid) {
  std::lock_guard lock(m_);
  Open n;
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    struct stat st {};
    if (::fstat(it->first, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_dev != it->second.dev ||
        st.st_ino != it->second.ino) {
      it = by_fd_.erase(it);  // gone: find() would refuse it anyway
      continue;
    }
    n.of_uid += it->second.cred.uid == uid;
    ++n.total;
    ++it;
  }
  return n;
}

UnixAcceptor::UnixAcceptor(const std::string& path, PeerTable& peers, service::Logger& log,
                           std::uint32_t max_per_uid, std::uint32_t max_total)
    : path_(path), peers_(peers), log_(log), max_per_uid_(max_per_uid), max_total_(max_total) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw AcceptError("socket path '" + path + "' is empty or too long (at most " +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes)");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw AcceptError(errno_text("eventfd"));
  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_) throw AcceptError(errno_text("socket(AF_UNIX)"));
  if (::bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw AcceptError(errno_text("bind"));
  if (::listen(listen_fd_.get(), SOMAXCONN) != 0) {
    const std::string why = errno_text("listen");
    ::unlink(path.c_str());  // the file bind just made
    throw AcceptError(why);
  }
}

UnixAcceptor::~UnixAcceptor() {
  stop();
}

void UnixAcceptor::start(grpc::Server& server) {
  if (thread_.joinable() || !listen_fd_) return;
  thread_ = std::thread([this, s = &server] { run(s); });
}

void UnixAcceptor::stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    while (::write(wake_fd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  listen_fd_.reset();
}

std::uint64_t UnixAcceptor::accepted() const {
  std::lock_guard lock(m_);
  return accepted_;
}

void UnixAcceptor::refuse(int fd, const PeerCred& who, const std::string& why) {
  peers_.forget(fd);
  ++refused_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log_ < std::chrono::seconds(1)) return;  // a flood: a line a second
  last_refusal_log_ = now;
  log_.warn("unix socket " + path_ + ": refused a connection of " + describe_cred(who, "") + ": " +
            why + " (" + std::to_string(refused_) + " refused so far)");
}

bool UnixAcceptor::wait_for_stop(int ms) const {
  pollfd p{wake_fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

void UnixAcceptor::run(grpc::Server* server) {
  bool starved = false;  // the fd limit is reached: logged once per episode
  for (;;) {
    pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log_.error("unix socket " + path_ + ": " + errno_text("poll") + "; no longer accepting");
      return;
    }
    if (fds[0].revents) return;
    // Everything queued, then back to poll (the socket is non-blocking).
    for (;;) {
      mesh::UniqueFd conn(
          ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      const int fd = conn.get();
      if (!conn) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of fds or memory: new connections wait in the backlog; retry every 100 ms
          // instead of spinning on a socket that stays readable.
          if (!starved)
            log_.warn("unix socket " + path_ + ": " + errno_text("accept") +
                      "; new connections wait until connections close");
          starved = true;
          if (wait_for_stop(100)) return;
          break;
        }
        log_.error("unix socket " + path_ + ": " + errno_text("accept"));
        if (wait_for_stop(100)) return;
        break;
      }
      try {
        if (starved) log_.info("unix socket " + path_ + ": accepting again");
        starved = false;
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred) {
          const PeerCred who{cred.pid, cred.uid, cred.gid};
          const auto open = peers_.open_connections(cred.uid);
          std::string over;
          if (max_per_uid_ && open.of_uid >= max_per_uid_)
            over = "its uid has " + std::to_string(open.of_uid) +
                   " connections open, the most max_connections_per_uid allows";
          else if (max_total_ && open.total >= max_total_ && cred.uid != 0 &&
                   cred.uid != ::geteuid())
            over = std::to_string(open.total) +
                   " connections are open, the most max_connections allows (root and the "
                   "daemon's user may still connect)";
          if (!over.empty()) {
            refuse(fd, who, over);
            conn.reset();  // the client sees its connection closed (gRPC: UNAVAILABLE)
            continue;
          }
          peers_.record(fd, who);
        } else {
          peers_.forget(fd);  // served all the same, named "an unknown caller"
          log_.warn("unix socket " + path_ + ": " + errno_text("SO_PEERCRED") +
                    " (fd:" + std::to_string(fd) + ")");
        }
      } catch (const std::exception&) {
        // Out of memory for the table: this client is refused (it sees the connection close)
        // rather than served under a name that may be stale; the thread carries on.
        peers_.forget(fd);
        conn.reset();
        if (wait_for_stop(100)) return;
        continue;
      }
      {
        std::lock_guard lock(m_);
        ++accepted_;
      }
      grpc::AddInsecureChannelFromFd(server, conn.release());  // gRPC's (and closes it) now
    }
  }
}

}  // namespace meshdock::rpc
