// daemon/rpc/peers: the table that names Unix-socket callers by their SO_PEERCRED, and the
// acceptor that fills it (issue 16: one log line per RPC error with the peer's uid/pid).
#include "daemon/rpc/peers.hpp"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rpc/gate.hpp"
#include "daemon/rpc/health.hpp"
#include "daemon/service/log.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace rpc = meshdock::rpc;

namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A connected pair of Unix sockets, both closed when it goes.
struct SocketPair {
  Fd a{-1}, b{-1};
  SocketPair() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
      a.fd = sv[0];
      b.fd = sv[1];
    }
    EXPECT_GE(a.fd, 0) << "socketpair: " << std::strerror(errno);
  }
};

std::string peer_of(int fd) {
  return "fd:" + std::to_string(fd);
}

std::filesystem::path temp_dir() {
  auto d =
      std::filesystem::temp_directory_path() / ("meshdock-peers-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

template <class F>
bool eventually(F&& f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

}  // namespace

TEST(PeerTable, NamesARecordedSocketByItsFdPeerString) {
  SocketPair pair;
  auto& [a, b] = pair;
  rpc::PeerTable t;
  t.record(a.fd, {4242, 0, 27});
  const auto c = t.find(peer_of(a.fd));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->pid, 4242);
  EXPECT_EQ(c->uid, 0u);
  EXPECT_EQ(c->gid, 27u);
  // uid 0 resolves everywhere; the name follows the uid.
  EXPECT_EQ(t.describe(peer_of(a.fd)), "pid 4242 uid 0 (root) gid 27");
  // A number never recorded is unknown, and says which channel it was.
  EXPECT_FALSE(t.find(peer_of(b.fd)).has_value());
  EXPECT_EQ(t.describe(peer_of(b.fd)), "an unknown caller (" + peer_of(b.fd) + ")");
}

TEST(PeerTable, AnFdNumberThatNowNamesAnotherFileIsUnknownNotWrong) {
  SocketPair pair;
  auto& [a, b] = pair;
  rpc::PeerTable t;
  t.record(a.fd, {100, 1000, 1000});
  ASSERT_TRUE(t.find(peer_of(a.fd)).has_value());
  // The number is closed and reopened on a regular file: not a socket.
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  ASSERT_EQ(::dup2(null_fd, a.fd), a.fd);
  ::close(null_fd);
  EXPECT_FALSE(t.find(peer_of(a.fd)).has_value());
  // ... and on another socket (another inode): still not the recorded caller.
  SocketPair pair2;
  auto& [c, d] = pair2;
  ASSERT_EQ(::dup2(c.fd, a.fd), a.fd);
  EXPECT_FALSE(t.find(peer_of(a.fd)).has_value());
  EXPECT_EQ(t.describe(peer_of(a.fd)), "an unknown caller (" + peer_of(a.fd) + ")");
  // A connection accepted on that number later replaces the entry.
  t.record(a.fd, {200, 1001, 1001});
  ASSERT_TRUE(t.find(peer_of(a.fd)).has_value());
  EXPECT_EQ(t.find(peer_of(a.fd))->pid, 200);
  EXPECT_EQ(t.size(), 1u);
  t.forget(a.fd);
  EXPECT_FALSE(t.find(peer_of(a.fd)).has_value());
  // A closed number is unknown too.
  t.record(d.fd, {300, 1, 1});
  const int was = d.fd;
  ::close(d.fd);
  d.fd = -1;
  EXPECT_FALSE(t.find(peer_of(was)).has_value());
}

TEST(PeerTable, OtherPeersPassThroughAndMalformedOnesAreNotParsed) {
  SocketPair pair;
  auto& [a, b] = pair;
  rpc::PeerTable t;
  t.record(a.fd, {1, 2, 3});
  EXPECT_EQ(t.describe("ipv4:127.0.0.1:50412"), "ipv4:127.0.0.1:50412");
  EXPECT_EQ(t.describe("unix:"), "unix:");
  const std::vector<std::string> bads = {"fd:",
                                         "fd:-1",
                                         peer_of(a.fd) + "x",
                                         " " + peer_of(a.fd),
                                         "fd:99999999999999999999",
                                         "FD:" + std::to_string(a.fd)};
  for (const auto& bad : bads) {
    EXPECT_FALSE(t.find(bad).has_value()) << bad;
    EXPECT_EQ(t.describe(bad), bad);
  }
}

TEST(PeerCred, DescribeLeavesOutAnUnresolvedName) {
  EXPECT_EQ(rpc::describe_cred({7, 4000000, 5}, ""), "pid 7 uid 4000000 gid 5");
  EXPECT_EQ(rpc::describe_cred({7, 1000, 5}, "alice"), "pid 7 uid 1000 (alice) gid 5");
}

TEST(UnixAcceptor, RefusesAnExistingFileAndATooLongPath) {
  meshdock::service::Logger log;
  rpc::PeerTable t;
  const auto dir = temp_dir();
  const auto taken = dir / "taken.sock";
  std::filesystem::remove(taken);
  {
    std::FILE* f = std::fopen(taken.c_str(), "w");
    std::fclose(f);
  }
  try {
    rpc::UnixAcceptor a(taken, t, log);
    FAIL() << "bound over an existing file";
  } catch (const rpc::AcceptError& e) {
    EXPECT_NE(std::string(e.what()).find("bind"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(taken));  // not replaced
  EXPECT_THROW(rpc::UnixAcceptor(std::string(200, 'x'), t, log), rpc::AcceptError);
  std::filesystem::remove_all(dir);
}

TEST(UnixAcceptor, RecordsEachConnectionAndStopsWithASilentClientConnected) {
  meshdock::service::Logger log;
  rpc::PeerTable t;
  const auto dir = temp_dir();
  const auto path = (dir / "a.sock").string();
  std::filesystem::remove(path);
  rpc::Gate gate("", {});
  rpc::HealthService health(gate);
  grpc::ServerBuilder builder;  // no listening port: the acceptor brings every connection
  builder.RegisterService(health.service());
  auto server = builder.BuildAndStart();
  ASSERT_TRUE(server);
  {
    rpc::UnixAcceptor acc(path, t, log);
    acc.start(*server);
    // Silent clients: connect, send nothing. Each is accepted and recorded at once.
    Fd c1(connect_to(path)), c2(connect_to(path));
    ASSERT_GE(c1.fd, 0);
    ASSERT_GE(c2.fd, 0);
    ASSERT_TRUE(eventually([&] { return acc.accepted() == 2; }));
    EXPECT_EQ(t.size(), 2u);
    // A gRPC client is served over a connection gRPC did not accept itself.
    {
      auto channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
      auto stub = grpc::health::v1::Health::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      grpc::health::v1::HealthCheckRequest req;
      grpc::health::v1::HealthCheckResponse reply;
      const auto st = stub->Check(&ctx, req, &reply);
      ASSERT_TRUE(st.ok()) << st.error_message();
      EXPECT_EQ(reply.status(), grpc::health::v1::HealthCheckResponse::SERVING);
      EXPECT_EQ(acc.accepted(), 3u);
      EXPECT_EQ(t.size(), 3u);
    }
    const auto t0 = std::chrono::steady_clock::now();
    acc.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    // No longer listening: a new client is refused.
    EXPECT_LT(connect_to(path), 0);
    acc.stop();  // idempotent
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::filesystem::remove_all(dir);
}

// max_connections_per_uid counts what is still open: a closed connection, or a number now
// naming another file, no longer counts (and its entry goes).
TEST(PeerTable, CountsTheOpenConnectionsOfAUid) {
  rpc::PeerTable t;
  SocketPair x, y, z;
  t.record(x.a.fd, {1, 1000, 1000});
  t.record(y.a.fd, {2, 1000, 1000});
  t.record(z.a.fd, {3, 1000, 1000});
  t.record(x.b.fd, {4, 2000, 2000});
  EXPECT_EQ(t.open_connections(1000).of_uid, 3u);
  EXPECT_EQ(t.open_connections(2000).of_uid, 1u);
  EXPECT_EQ(t.open_connections(0).of_uid, 0u);
  EXPECT_EQ(t.open_connections(0).total, 4u);
  ::close(y.a.fd);  // closed: not counted, and forgotten
  y.a.fd = -1;
  EXPECT_EQ(t.open_connections(1000).of_uid, 2u);
  EXPECT_EQ(t.open_connections(1000).total, 3u);
  EXPECT_EQ(t.size(), 3u);
  // The number now names /dev/null: not the recorded socket any more.
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::dup2(null.fd, z.a.fd), z.a.fd);
  EXPECT_EQ(t.open_connections(1000).of_uid, 1u);
  EXPECT_EQ(t.size(), 2u);
}

// Streams of Unix-socket callers the table names count per uid, whatever connection they use.
TEST(Gate, UnixCallersShareTheirUidsStreamCap) {
  rpc::PeerTable t;
  SocketPair x, y, z;
  const Fd &a0 = x.a, &b0 = y.a, &c0 = z.a;
  t.record(a0.fd, {10, 1000, 1000});
  t.record(b0.fd, {11, 1000, 1000});  // the same user, another connection
  t.record(c0.fd, {12, 2000, 2000});
  rpc::Gate gate("", {/*max_streams=*/10, /*max_streams_per_peer=*/2}, &t);
  std::string why;
  std::vector<rpc::Gate::Ticket> held;
  held.push_back(gate.admit_stream(peer_of(a0.fd), why));
  held.push_back(gate.admit_stream(peer_of(b0.fd), why));
  EXPECT_TRUE(held[0] && held[1]);
  EXPECT_FALSE(gate.admit_stream(peer_of(a0.fd), why));
  EXPECT_NE(why.find("uid 1000 has 2 streams open, the most max_streams_per_peer allows (2)"),
            std::string::npos)
      << why;
  EXPECT_TRUE(gate.admit_stream(peer_of(c0.fd), why));  // another uid: its own cap
  EXPECT_TRUE(gate.admit_stream("fd:99999", why));      // not named: only the total applies
  held.clear();
  EXPECT_TRUE(gate.admit_stream(peer_of(a0.fd), why));  // given back
}
