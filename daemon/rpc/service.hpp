// The gRPC control plane (proto/meshdock/v1/meshdock.proto) over the Registry: converts
// messages, checks the bearer token when serving TCP (Gate: before a handler reads its
// request; Publish's data arrive as a stream read only after that), caps streams, cancels a
// Load whose client went away, and turns every error into a status whose message names the
// problem. No exception leaves a handler.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "daemon/rpc/gate.hpp"
#include "daemon/rpc/intake.hpp"
#include "daemon/rpc/peers.hpp"
#include "daemon/service/metrics.hpp"
#include "daemon/service/registry.hpp"
#include "meshdock/v1/meshdock.grpc.pb.h"

namespace meshdock::rpc {

// The handlers, shared by two gRPC services (service()):
// - with a token (TCP), every method is "streamed" (generated StreamedService): the core hands
//   a call over at its metadata and the handler reads the request itself, only after the
//   token check. A plain sync handler would get the message already read (up to the message
//   limit) before any code of ours could refuse it.
// - without one (the Unix socket) the methods are plain: the core reads each request before a
//   thread takes the call, so a client that never sends its request holds no thread.
// Publish is a client stream in both; it and Watch hold a place under the Gate's stream caps,
// Load and Reload one under its load caps, Export one under its export caps.
class MeshdockService {
 public:
  // `gate` checks the token and caps streams (shared with the health service); `peers` names
  // Unix-socket callers in log lines (uid, gid, pid). `request_shutdown` is called (once) by the
  // Shutdown RPC.
  MeshdockService(service::Registry& registry, service::Logger& log, Gate& gate,
                  const PeerTable& peers, std::function<void()> request_shutdown);
  ~MeshdockService();

  // The service to register with the server (see above).
  grpc::Service* service() { return service_.get(); }
  // Ends every Watch stream (the server is stopping).
  void stop_streams() { stopping_ = true; }
  // The Prometheus exposition (the Metrics RPC's text; the HTTP listener serves it too).
  std::string metrics_text() const;

  // One handler per method; S is the call as the transport shows it (service.cpp).
  template <class S>
  grpc::Status load(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status reload(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status unload(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status list(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status describe(grpc::ServerContext* ctx, S& s);
  grpc::Status publish(grpc::ServerContext* ctx, grpc::ServerReader<v1::PublishChunk>* in,
                       v1::PublishReply* reply);
  template <class S>
  grpc::Status publish_small(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status export_to(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status watch(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status stats(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status metrics(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status leases(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status revoke_leases(grpc::ServerContext* ctx, S& s);
  template <class S>
  grpc::Status shutdown(grpc::ServerContext* ctx, S& s);

 private:
  // Token check, then f() with every exception turned into a status naming the problem; counts
  // the call (metrics_) and logs a line for each failure, naming the peer.
  template <typename F>
  grpc::Status guarded(grpc::ServerContext* ctx, const char* rpc, F&& f);
  template <typename F>
  grpc::Status checked(grpc::ServerContext* ctx, const char* rpc, F&& f);
  // guarded(), taking the one request message after the token check: f(request, reply) for a
  // unary method, f(request) for a server-streaming one (it writes with s.Write).
  template <class S, typename F>
  grpc::Status unary(grpc::ServerContext* ctx, S& s, const char* rpc, F&& f);
  template <class S, typename F>
  grpc::Status split(grpc::ServerContext* ctx, S& s, const char* rpc, F&& f);
  // Publish's work over its chunks: `next` gives each in turn (nullptr at the end). `ctx` is
  // the caller's: a publish from source_shm reads only its objects, and its reply (success or
  // error) carries the trailing metadata kSourceTrailer (shm_source.hpp).
  // `may_wait`: the call holds a stream ticket (Gate), so it may park its thread in the
  // registry's waits for a reload or a tensor's creation (up to 30 s each).
  void publish_from(grpc::ServerContext* ctx, const std::function<const v1::PublishChunk*()>& next,
                    v1::PublishReply* reply, bool may_wait);
  // A place under max_loads / max_loads_per_peer for a Load or Reload, else RESOURCE_EXHAUSTED
  // naming the cap reached and its config key.
  Gate::Ticket admit_load(grpc::ServerContext* ctx, const char* rpc);
  // The same under max_exports / max_exports_per_peer for an Export.
  Gate::Ticket admit_export(grpc::ServerContext* ctx);
  // `want` bytes of the incoming budget for a publish (Registry::reserve_incoming); when the
  // publishes under way hold it all, stalled ones are cancelled for it (Intake) and their
  // reservations awaited (2 s at most) before it is refused.
  service::Reservation reserve_incoming(grpc::ServerContext* ctx, std::uint64_t want,
                                        const std::string& field);

  service::Registry& reg_;
  service::Logger& log_;
  Gate& gate_;
  const PeerTable& peers_;
  std::function<void()> request_shutdown_;
  std::atomic<bool> stopping_{false};
  service::Metrics metrics_;
  Intake intake_;  // publishes taking in data through gRPC, with their progress
  class Plain;
  class Streamed;
  std::unique_ptr<grpc::Service> service_;
};

}  // namespace meshdock::rpc
