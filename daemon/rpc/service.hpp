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

class MeshdockService final : public meshdock::v1::Meshdock::Service {
 public:
  // `gate` checks the token and caps streams (shared with the health service).
  // `request_shutdown` is called (once) by the Shutdown RPC.
  MeshdockService(service::Registry& registry, service::Logger& log, Gate& gate,
                  std::function<void()> request_shutdown);

  // Ends every Watch stream (the server is stopping).
  void stop_streams() { stopping_ = true; }

  grpc::Status Load(grpc::ServerContext* ctx, const v1::LoadRequest* req,
                    grpc::ServerWriter<v1::LoadProgress>* out) override;
  grpc::Status Reload(grpc::ServerContext* ctx, const v1::NameRequest* req,
                      grpc::ServerWriter<v1::LoadProgress>* out) override;
  grpc::Status Unload(grpc::ServerContext* ctx, const v1::NameRequest* req,
                      v1::UnloadReply* reply) override;
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest* req,
                    v1::ListReply* reply) override;
  grpc::Status Describe(grpc::ServerContext* ctx, const v1::NameRequest* req,
                        v1::DescribeReply* reply) override;
  grpc::Status Publish(grpc::ServerContext* ctx, grpc::ServerReader<v1::PublishChunk>* in,
                       v1::PublishReply* reply) override;
  grpc::Status Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                      v1::ExportReply* reply) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                     grpc::ServerWriter<v1::Event>* out) override;
  grpc::Status Stats(grpc::ServerContext* ctx, const v1::StatsRequest* req,
                     v1::StatsReply* reply) override;
  grpc::Status Shutdown(grpc::ServerContext* ctx, const v1::ShutdownRequest* req,
                        v1::ShutdownReply* reply) override;

 private:
  template <typename F>
  grpc::Status guarded(grpc::ServerContext* ctx, const char* rpc, F&& f);

  service::Registry& reg_;
  service::Logger& log_;
  Gate& gate_;
  std::function<void()> request_shutdown_;
  std::atomic<bool> stopping_{false};
};

}  // namespace meshdock::rpc
