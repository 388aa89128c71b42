// The gRPC control plane (proto/meshdock/v1/meshdock.proto) over the Registry: converts
// messages, checks the bearer token when serving TCP (Gate: before a handler reads its
// request; Publish's data arrive as a stream read only after that), caps streams, cancels a
// Load whose client went away, and turns every error into a status whose message names the
// problem. No exception leaves a handler.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "daemon/rpc/gate.hpp"
#include "daemon/service/registry.hpp"
#include "meshdock/v1/meshdock.grpc.pb.h"

namespace meshdock::rpc {

// Every method is "streamed" at the gRPC level (generated StreamedService): the core hands a
// call over at its metadata, and the handler reads the request message itself, only after the
// token check. A plain sync handler would get the message already read (up to the message
// limit) before any code of ours could refuse it.
class MeshdockService final : public meshdock::v1::Meshdock::StreamedService {
 public:
  // `gate` checks the token and caps streams (shared with the health service).
  // `request_shutdown` is called (once) by the Shutdown RPC.
  MeshdockService(service::Registry& registry, service::Logger& log, Gate& gate,
                  std::function<void()> request_shutdown);

  // Ends every Watch stream (the server is stopping).
  void stop_streams() { stopping_ = true; }

  template <class Req, class Rep>
  using Unary = grpc::ServerUnaryStreamer<Req, Rep>;
  template <class Req, class Rep>
  using Split = grpc::ServerSplitStreamer<Req, Rep>;

  grpc::Status StreamedLoad(grpc::ServerContext* ctx,
                            Split<v1::LoadRequest, v1::LoadProgress>* s) override;
  grpc::Status StreamedReload(grpc::ServerContext* ctx,
                              Split<v1::NameRequest, v1::LoadProgress>* s) override;
  grpc::Status StreamedUnload(grpc::ServerContext* ctx,
                              Unary<v1::NameRequest, v1::UnloadReply>* s) override;
  grpc::Status StreamedList(grpc::ServerContext* ctx,
                            Unary<v1::ListRequest, v1::ListReply>* s) override;
  grpc::Status StreamedDescribe(grpc::ServerContext* ctx,
                                Unary<v1::NameRequest, v1::DescribeReply>* s) override;
  grpc::Status Publish(grpc::ServerContext* ctx, grpc::ServerReader<v1::PublishChunk>* in,
                       v1::PublishReply* reply) override;
  grpc::Status StreamedExport(grpc::ServerContext* ctx,
                              Unary<v1::ExportRequest, v1::ExportReply>* s) override;
  grpc::Status StreamedWatch(grpc::ServerContext* ctx,
                             Split<v1::WatchRequest, v1::Event>* s) override;
  grpc::Status StreamedStats(grpc::ServerContext* ctx,
                             Unary<v1::StatsRequest, v1::StatsReply>* s) override;
  grpc::Status StreamedShutdown(grpc::ServerContext* ctx,
                                Unary<v1::ShutdownRequest, v1::ShutdownReply>* s) override;

 private:
  // Token check, then f() with every exception turned into a status naming the problem.
  template <typename F>
  grpc::Status guarded(grpc::ServerContext* ctx, const char* rpc, F&& f);
  // guarded(), reading the one request message after the token check: f(request, reply) for
  // a unary method, f(request) for a server-streaming one (it writes with s->Write).
  template <class Req, class Rep, typename F>
  grpc::Status unary(grpc::ServerContext* ctx, Unary<Req, Rep>* s, const char* rpc, F&& f);
  template <class Req, class Rep, typename F>
  grpc::Status split(grpc::ServerContext* ctx, Split<Req, Rep>* s, const char* rpc, F&& f);

  service::Registry& reg_;
  service::Logger& log_;
  Gate& gate_;
  std::function<void()> request_shutdown_;
  std::atomic<bool> stopping_{false};
};

}  // namespace meshdock::rpc
