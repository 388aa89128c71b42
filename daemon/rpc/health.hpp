// grpc.health.v1 served by meshdockd itself instead of grpc++'s default service, so that it
// passes the same Gate as every other call: over TCP a health check needs the bearer token,
// and a health Watch is a stream under the stream caps. Streamed methods, like MeshdockService:
// the request is read only after the token check.
#pragma once

#include <atomic>

#include "daemon/rpc/gate.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace meshdock::rpc {

class HealthService final : public grpc::health::v1::Health::StreamedService {
 public:
  explicit HealthService(Gate& gate) : gate_(gate) {}
  // Stops serving: checks answer NOT_SERVING and Watch streams end.
  void stop() { serving_ = false; }

  grpc::Status StreamedCheck(
      grpc::ServerContext* ctx,
      grpc::ServerUnaryStreamer<grpc::health::v1::HealthCheckRequest,
                                grpc::health::v1::HealthCheckResponse>* s) override;
  grpc::Status StreamedWatch(
      grpc::ServerContext* ctx,
      grpc::ServerSplitStreamer<grpc::health::v1::HealthCheckRequest,
                                grpc::health::v1::HealthCheckResponse>* s) override;

 private:
  grpc::Status status_of(const std::string& service,
                         grpc::health::v1::HealthCheckResponse* reply) const;
  Gate& gate_;
  std::atomic<bool> serving_{true};
};

}  // namespace meshdock::rpc
