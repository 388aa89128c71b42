#include "daemon/slots/consumers.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "meshdock/shm/bytes.hpp"
#include "meshdock/shm/registration.hpp"

namespace meshdock::slots {

namespace {
std::string err(const char* call) {
  return std::string("consumer registration socket: ") + call + ": " + std::strerror(errno);
}
}  // namespace

ConsumerRegistry::ConsumerRegistry(Reads reads) : reads_(reads) {
  listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw ConsumerRegistryError(err("socket()"));
  // Autobind: an address length of just the family makes the kernel choose a unique abstract
  // name, so two daemons (or a squatter) can never collide on it.
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa_family_t)) != 0 ||
      ::listen(listen_fd_, 256) != 0) {
    const auto e = err("bind()/listen()");
    ::close(listen_fd_);
    throw ConsumerRegistryError(e);
  }
  socklen_t len = sizeof sa;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    const auto e = err("getsockname()");
    ::close(listen_fd_);
    throw ConsumerRegistryError(e);
  }
  address_.assign(sa.sun_path, len - offsetof(sockaddr_un, sun_path));
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const auto e = err("eventfd()");
    ::close(listen_fd_);
    throw ConsumerRegistryError(e);
  }
  thread_ = std::thread([this] { run(); });
}

ConsumerRegistry::~ConsumerRegistry() {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (const auto& [fd, peer] : conns_) ::close(fd);
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::optional<uid_t> ConsumerRegistry::known(pid_t pid) const {
  std::lock_guard lock(m_);
  const auto it = pid_uid_.find(pid);
  if (it == pid_uid_.end()) return std::nullopt;
  return it->second;
}

ConsumerRegistry::WakeLatency ConsumerRegistry::wake_latency() const {
  std::lock_guard lock(m_);
  return wake_;
}

std::size_t ConsumerRegistry::connections() const {
  std::lock_guard lock(m_);
  return conns_.size();
}

std::size_t ConsumerRegistry::imports_open() const {
  std::lock_guard lock(m_);
  std::size_t n = 0;
  for (const auto& [fd, peer] : conns_) n += peer.import_count;
  return n;
}

void ConsumerRegistry::drain() {
  std::lock_guard lock(m_);
  // One poll finds the connections with something to read; only those are read, each at most
  // kDrainPerConnection messages (a flood delays its own reports only, poll says there is more).
  std::vector<pollfd> fds;
  fds.reserve(conns_.size());
  for (const auto& [fd, peer] : conns_) fds.push_back({fd, POLLIN, 0});
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
  for (const auto& p : fds)
    if (p.revents && !read_locked(p.fd, kDrainPerConnection)) forget_locked(p.fd);
}

bool ConsumerRegistry::reported_open(const shm::Handle& h) const {
  std::lock_guard lock(m_);
  for (const auto& [fd, peer] : conns_)
    if (peer.imports.count(h)) return true;
  return false;
}

bool ConsumerRegistry::read_locked(int fd, int at_most) {
  auto& peer = conns_.at(fd);
  // A bounded number per call: a consumer that floods its socket delays only its own reports
  // (poll says there is more), never the other connections.
  for (int k = 0; k < at_most; ++k) {
    std::byte buf[shm::kImportReportBytes + 1];  // longer than any message: chatter shows
    const auto got = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (got == 0) return false;
    if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    const auto n = static_cast<std::size_t>(got);
    if (const auto ns = shm::parse_wake_report(buf, n)) {
      const double s = static_cast<double>(*ns) * 1e-9;
      std::size_t b = 0;
      while (b < WakeLatency::kBuckets.size() && s > WakeLatency::kBuckets[b]) ++b;
      if (b < WakeLatency::kBuckets.size()) ++wake_.buckets[b];
      ++wake_.count;
      wake_.sum += s;
    } else if (const auto r = shm::parse_import_report(buf, n)) {
      if (r->open && peer.import_count < shm::kMaxImportsPerConnection) {
        ++peer.imports[r->handle];
        ++peer.import_count;
      } else if (!r->open) {
        const auto it = peer.imports.find(r->handle);
        if (it != peer.imports.end()) {
          --peer.import_count;
          if (--it->second == 0) peer.imports.erase(it);
        }
      }
    }  // anything else: chatter, ignored
  }
  return true;
}

void ConsumerRegistry::forget_locked(int fd) {
  const auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  const auto& peer = it->second;
  if (--pids_[peer.pid] == 0) {
    pids_.erase(peer.pid);
    pid_uid_.erase(peer.pid);
  }
  if (--per_uid_[peer.uid] == 0) per_uid_.erase(peer.uid);
  ::close(fd);
  conns_.erase(it);
}

void ConsumerRegistry::run() {
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    if (reads_ == Reads::kThreadAndDrain) {
      std::lock_guard lock(m_);
      for (const auto& [fd, peer] : conns_) fds.push_back({fd, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    // Connections first: a consumer that hung up is forgotten before its pid could be reused.
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      std::lock_guard lock(m_);  // drain() reads the same sockets
      if (conns_.count(fds[i].fd) && !read_locked(fds[i].fd, kReadPerWake))
        forget_locked(fds[i].fd);
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) {
          ::close(fd);
          continue;
        }
        std::lock_guard lock(m_);
        const auto uid_it = per_uid_.find(cred.uid);
        if (conns_.size() >= kMaxConnections ||
            (uid_it != per_uid_.end() && uid_it->second >= kMaxPerUid)) {
          ::close(fd);  // refused: the consumer reports it
          continue;
        }
        std::byte ack[shm::kRegistrationAckBytes];
        std::memcpy(ack, shm::kRegistrationTag, 4);
        shm::store_le<std::uint32_t>(ack, 4, static_cast<std::uint32_t>(cred.pid));
        // Recorded before the answer: once the consumer reads it, its leases count.
        conns_[fd] = Peer{cred.pid, cred.uid, {}, 0};
        ++pids_[cred.pid];
        pid_uid_[cred.pid] = cred.uid;
        ++per_uid_[cred.uid];
        if (::send(fd, ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) !=
            static_cast<ssize_t>(sizeof ack)) {
          // Gone already; the hang-up is noticed on the next poll.
        }
      }
    }
  }
}

}  // namespace meshdock::slots
