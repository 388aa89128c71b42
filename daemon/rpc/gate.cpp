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
    : want_(token.empty() ? std::string() : "Bearer " + token), limits_(limits), peers_(peers) {}

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

Gate::Ticket Gate::admit_stream(const std::string& peer, std::string& why) {
  std::string key = peer_key(peer);
  if (peers_ && key.empty())
    if (const auto cred = peers_->find(peer)) key = "uid " + std::to_string(cred->uid);
  std::lock_guard lock(m_);
  if (total_ >= limits_.max_streams) {
    why = std::to_string(total_) + " streams are open, the most max_streams allows (" +
          std::to_string(limits_.max_streams) + ")";
    return {};
  }
  if (!key.empty()) {
    auto& n = per_peer_[key];
    if (n >= limits_.max_streams_per_peer) {
      why = key + " has " + std::to_string(n) + " streams open, the most max_streams_per_peer " +
            "allows (" + std::to_string(limits_.max_streams_per_peer) + ")";
      return {};
    }
    ++n;
  }
  ++total_;
  return Ticket(this, key);
}

std::uint32_t Gate::streams() const {
  std::lock_guard lock(m_);
  return total_;
}

Gate::Ticket& Gate::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    gate_ = o.gate_;
    key_ = std::move(o.key_);
    o.gate_ = nullptr;
  }
  return *this;
}

void Gate::Ticket::release() {
  if (!gate_) return;
  std::lock_guard lock(gate_->m_);
  --gate_->total_;
  if (!key_.empty()) {
    auto it = gate_->per_peer_.find(key_);
    if (it != gate_->per_peer_.end() && --it->second == 0) gate_->per_peer_.erase(it);
  }
  gate_ = nullptr;
}

}  // namespace meshdock::rpc
