// What every call passes before its handler reads a byte of it: the bearer token (TCP), for
// streams a place under the stream caps, for loads (Load, Reload) one under the load caps and
// for exports one under the export caps. Shared by the meshdock and health services.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

namespace meshdock::rpc {

// True when `a` and `b` are equal. The time taken depends only on the lengths, never on where
// the bytes differ: every byte of `b` (the secret) is compared, with no early exit.
bool constant_time_equal(std::string_view a, std::string_view b);

// The client address a stream counts against: "ipv4:10.0.0.7" for a TCP client (the port is
// left out, so one host's connections count together); "" for anything else (a Unix-socket
// client the PeerTable cannot name: only the total cap applies to it).
std::string peer_key(const std::string& peer);

class PeerTable;

class Gate {
 public:
  struct Limits {
    std::uint32_t max_streams = 64, max_streams_per_peer = 16;
    std::uint32_t max_loads = 32, max_loads_per_peer = 8;
    std::uint32_t max_exports = 8, max_exports_per_peer = 4;
    // max_rpc_threads (0: none): streams, loads and exports together keep kSpareThreads of it
    // free.
    std::uint32_t max_threads = 0;
  };
  // Threads no stream or load may take: the pollers' and every other (short) call's.
  static constexpr std::uint32_t kSpareThreads = 16;
  // `token`: when not empty, every call must carry "authorization: Bearer <token>". `peers`
  // (outliving the gate): a Unix-socket caller it names counts against "uid N", so all the
  // connections of one user share max_streams_per_peer.
  Gate(std::string token, Limits limits, const PeerTable* peers = nullptr);

  bool has_token() const { return !want_.empty(); }
  // OK, or PERMISSION_DENIED naming what is missing. Reads metadata only.
  grpc::Status check_token(grpc::ServerContext* ctx, const char* rpc) const;

  // What is open of one kind (streams, loads) under its two caps, in all and per caller.
  struct Pool {
    const char* what;  // "streams", "loads"
    const char* total_key;
    const char* per_peer_key;
    std::uint32_t max = 0, max_per_peer = 0;
    std::uint32_t total = 0;
    std::map<std::string, std::uint32_t> per_peer;
  };

  // A place under one pool's caps, held while a stream or a load runs (move-only).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : gate_(o.gate_), pool_(o.pool_), key_(std::move(o.key_)) {
      o.gate_ = nullptr;
    }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket() { release(); }
    void release();
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    friend class Gate;
    Ticket(Gate* g, Pool* p, std::string key) : gate_(g), pool_(p), key_(std::move(key)) {}
    Gate* gate_ = nullptr;
    Pool* pool_ = nullptr;
    std::string key_;
  };
  // A ticket for a stream of `peer` (ServerContext::peer()), or an empty one when the total or
  // this peer's cap is reached (`why` says which, with its config key).
  Ticket admit_stream(const std::string& peer, std::string& why);
  // The same for a Load or Reload (max_loads, max_loads_per_peer): a load holds an RPC thread
  // for as long as its file takes to read, so unbounded loads could take every thread.
  Ticket admit_load(const std::string& peer, std::string& why);
  // The same for an Export (max_exports, max_exports_per_peer): it holds its thread while it
  // writes the file (a big mesh's compressed VTU: seconds).
  Ticket admit_export(const std::string& peer, std::string& why);
  std::uint32_t streams() const;
  std::uint32_t loads() const;
  std::uint32_t exports() const;

 private:
  Ticket admit(Pool& pool, const std::string& peer, std::string& why);

  std::string want_;  // "Bearer <token>", or empty
  std::uint32_t max_threads_ = 0;
  const PeerTable* peers_ = nullptr;
  mutable std::mutex m_;
  Pool streams_, loads_, exports_;
};

}  // namespace meshdock::rpc
