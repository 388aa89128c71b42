// The daemon's half of consumer registration (see meshdock/shm/registration.hpp): a Unix
// SOCK_SEQPACKET socket with an abstract, kernel-chosen name, and the consumers connected to
// it. A pid counts as a known consumer while one of its connections is open; the pid and uid
// are the kernel's (SO_PEERCRED at accept), never a byte a consumer wrote.
//
// One thread polls the listening socket and every connection: it accepts (up to
// kMaxConnections in all and kMaxPerUid per uid; beyond that a connection is closed at once,
// which the consumer reports as a refused registration), answers "MDR1" + pid, and forgets a
// consumer when its last connection closes (hang-up, or the process died). It also keeps each
// connection's import reports: which CUDA buffers the consumer has open (reported_open()).
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "meshdock/shm/control_block.hpp"

namespace meshdock::slots {

class ConsumerRegistryError : public std::runtime_error {
 public:
  explicit ConsumerRegistryError(const std::string& what) : std::runtime_error(what) {}
};

class ConsumerRegistry {
 public:
  static constexpr std::size_t kMaxConnections = 4096;
  static constexpr std::size_t kMaxPerUid = 1024;

  // Who reads the consumers' messages (wake and import reports, hang-ups): the thread as they
  // arrive and drain() when a caller is about to decide; or drain() alone (a test aid: what a
  // decision counts is then only what drain() read, never what the thread happened to read
  // first, so a test of the ordering cannot pass by luck). Accepts are the thread's either way.
  enum class Reads { kThreadAndDrain, kDrainOnly };

  // Binds and starts the thread. Throws ConsumerRegistryError naming the failing call.
  explicit ConsumerRegistry(Reads reads = Reads::kThreadAndDrain);
  ConsumerRegistry(const ConsumerRegistry&) = delete;
  ConsumerRegistry& operator=(const ConsumerRegistry&) = delete;
  ~ConsumerRegistry();

  // The socket's sun_path bytes (leading NUL: abstract), for the catalog.
  const std::string& address() const { return address_; }
  // Consumers' wake reports (meshdock/shm/registration.hpp): publish to frame in hand, as a
  // histogram. A report is a consumer's claim: it feeds this figure and nothing else.
  struct WakeLatency {
    static constexpr std::array<double, 11> kBuckets{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
                                                     1e-3,  5e-3,  25e-3, 100e-3, 1.0};
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // non-cumulative; +Inf implied
    std::uint64_t count = 0;
    double sum = 0;  // seconds
  };
  WakeLatency wake_latency() const;

  // The uid of `pid` while it has a registration open; nullopt otherwise.
  std::optional<uid_t> known(pid_t pid) const;
  // Reads every report the consumers have sent so far (without blocking): one sent before a
  // lease was released is then counted before a caller that saw the lease gone decides to free
  // the buffer. A caller with several buffers to decide on drains once.
  void drain();
  // Whether an open registration has reported the buffer of memory handle `h` open (an import
  // report, meshdock/shm/registration.hpp) and not closed, as far as read (drain() first).
  bool reported_open(const shm::Handle& h) const;
  std::size_t connections() const;
  // Import reports open now, over every registration (what is read so far; no drain).
  std::size_t imports_open() const;

 private:
  void run();
  // Under m_: reads what connection `fd` has sent (without blocking). Returns false when it hung
  // up (the caller forgets it).
  bool read_locked(int fd, int at_most);
  static constexpr int kDrainPerConnection = 256;  // per drain()
  static constexpr int kReadPerWake = 4096;        // per wake of the registry's thread
  void forget_locked(int fd);

  const Reads reads_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the destructor stops the thread with it
  std::string address_;
  mutable std::mutex m_;
  struct Peer {
    pid_t pid;
    uid_t uid;
    std::map<shm::Handle, std::uint32_t> imports;  // reported open: handle -> opens
    std::size_t import_count = 0;
  };
  std::map<int, Peer> conns_;          // fd -> peer (the thread's; read under m_)
  std::map<pid_t, std::size_t> pids_;  // pid -> open connections
  std::map<pid_t, uid_t> pid_uid_;
  WakeLatency wake_;
  std::map<uid_t, std::size_t> per_uid_;
  std::thread thread_;
};

}  // namespace meshdock::slots
