#include "daemon/rpc/gate.hpp"

#include "daemon/rpc/peers.hpp"

namespace meshdock::rpc {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Lengths differ: still walk all of b, so a guess of the right length takes the same time.
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = n ? static_cast<unsigned char>(a[i % n]) : 0;
    diff = diff | (x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

std::string peer_key(const std::string& peer) {
  if (!peer.starts_with("ipv4:") && !peer.starts_with("ipv6:")) return {};
  const auto colon = peer.rfind(':');
  return colon > 4 ? peer.substr(0, colon) : peer;
}

Gate::Gate(std::string token, Limits limits, const PeerTable* peers)
    : want_(token.empty() ? std::string() : "Bearer " + token),
      max_threads_(limits.max_threads),
      peers_(peers),
      streams_{"streams",
               "max_streams",
               "max_streams_per_peer",
               limits.max_streams,
               limits.max_streams_per_peer,
               0,
               {}},
      loads_{
          "loads", "max_loads", "max_loads_per_peer", limits.max_loads, limits.max_loads_per_peer,
          0,       {}},
      exports_{"exports",
               "max_exports",
               "max_exports_per_peer",
               limits.max_exports,
               limits.max_exports_per_peer,
               0,
               {}} {}

grpc::Status Gate::check_token(grpc::ServerContext* ctx, const char* rpc) const {
  (void)rpc;
  if (want_.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  const bool ok =
      it != md.end() &&
      constant_time_equal(std::string_view(it->second.data(), it->second.size()), want_);
  if (ok) return grpc::Status::OK;
  // Which of three mistakes it was (none sent, not a bearer token, the wrong one): a user with a
  // stale token must not be told to send the token they are sending. Never what was expected.
  std::string why;
  if (it == md.end())
    why =
        "this endpoint needs \"authorization: Bearer <token>\" metadata (meshdockctl --token "
        "or $MESHDOCK_TOKEN; meshdock.Client(token=...))";
  else if (std::string_view(it->second.data(), it->second.size()).rfind("Bearer ", 0) != 0)
    why = "the authorization metadata is not \"Bearer <token>\"";
  else
    why = "the bearer token sent is not this daemon's (its token_file's first line)";
  return {grpc::StatusCode::PERMISSION_DENIED, std::string(rpc) + ": " + why};
}

Gate::Ticket Gate::admit(Pool& pool, const std::string& peer, std::string& why) {
  std::string key = peer_key(peer);
  if (peers_ && key.empty())
    if (const auto cred = peers_->find(peer)) key = "uid " + std::to_string(cred->uid);
  std::lock_guard lock(m_);
  // The caps of each kind alone may add up past the thread cap (max_loads is not in
  // check_config's sum, so a configuration that ran before the load caps still runs): the
  // threads taken by both kinds together are held under it here.
  const std::uint32_t held = streams_.total + loads_.total + exports_.total;
  if (max_threads_ && held + kSpareThreads >= max_threads_) {
    why = std::to_string(streams_.total) + " streams, " + std::to_string(loads_.total) +
          " loads and " + std::to_string(exports_.total) +
          " exports hold RPC threads, the most max_rpc_threads (" + std::to_string(max_threads_) +
          ") allows while keeping " + std::to_string(kSpareThreads) + " for other calls";
    return {};
  }
  if (pool.total >= pool.max) {
    why = std::to_string(pool.total) + " " + pool.what + " are open, the most " + pool.total_key +
          " allows (" + std::to_string(pool.max) + ")";
    return {};
  }
  if (!key.empty()) {
    auto& n = pool.per_peer[key];
    if (n >= pool.max_per_peer) {
      why = key + " has " + std::to_string(n) + " " + pool.what + " open, the most " +
            pool.per_peer_key + " allows (" + std::to_string(pool.max_per_peer) + ")";
      return {};
    }
    ++n;
  }
  ++pool.total;
  return Ticket(this, &pool, key);
}

Gate::Ticket Gate::admit_stream(const std::string& peer, std::string& why) {
  return admit(streams_, peer, why);
}

Gate::Ticket Gate::admit_load(const std::string& peer, std::string& why) {
  return admit(loads_, peer, why);
}

Gate::Ticket Gate::admit_export(const std::string& peer, std::string& why) {
  return admit(exports_, peer, why);
}

std::uint32_t Gate::exports() const {
  std::lock_guard lock(m_);
  return exports_.total;
}

std::uint32_t Gate::streams() const {
  std::lock_guard lock(m_);
  return streams_.total;
}

std::uint32_t Gate::loads() const {
  std::lock_guard lock(m_);
  return loads_.total;
}

Gate::Ticket& Gate::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    gate_ = o.gate_;
    pool_ = o.pool_;
    key_ = std::move(o.key_);
    o.gate_ = nullptr;
  }
  return *this;
}

void Gate::Ticket::release() {
  if (!gate_) return;
  std::lock_guard lock(gate_->m_);
  --pool_->total;
  if (!key_.empty()) {
    auto it = pool_->per_peer.find(key_);
    if (it != pool_->per_peer.end() && --it->second == 0) pool_->per_peer.erase(it);
  }
  gate_ = nullptr;
}

}  // namespace meshdock::rpc
