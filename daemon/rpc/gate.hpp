// What every call passes before its handler reads a byte of it: the bearer token (TCP), and
// for streams a place under the stream caps. Shared by the meshdock and health services.
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
  };
  // `token`: when not empty, every call must carry "authorization: Bearer <token>". `peers`
  // (outliving the gate): a Unix-socket caller it names counts against "uid N", so all the
  // connections of one user share max_streams_per_peer.
  Gate(std::string token, Limits limits, const PeerTable* peers = nullptr);

  bool has_token() const { return !want_.empty(); }
  // OK, or PERMISSION_DENIED naming what is missing. Reads metadata only.
  grpc::Status check_token(grpc::ServerContext* ctx, const char* rpc) const;

  // A place under the stream caps, held while a stream runs (move-only).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : gate_(o.gate_), key_(std::move(o.key_)) { o.gate_ = nullptr; }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket() { release(); }
    void release();
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    friend class Gate;
    Ticket(Gate* g, std::string key) : gate_(g), key_(std::move(key)) {}
    Gate* gate_ = nullptr;
    std::string key_;
  };
  // A ticket for a stream of `peer` (ServerContext::peer()), or an empty one when the total or
  // this peer's cap is reached (`why` says which).
  Ticket admit_stream(const std::string& peer, std::string& why);
  std::uint32_t streams() const;

 private:
  std::string want_;  // "Bearer <token>", or empty
  Limits limits_;
  const PeerTable* peers_ = nullptr;
  mutable std::mutex m_;
  std::uint32_t total_ = 0;
  std::map<std::string, std::uint32_t> per_peer_;
};

}  // namespace meshdock::rpc
