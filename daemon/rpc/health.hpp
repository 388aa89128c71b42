// grpc.health.v1 served by meshdockd itself instead of grpc++'s default service, so that it
// passes the same Gate as every other call: over TCP a health check needs the bearer token,
// and a health Watch is a stream under the stream caps.
#pragma once

#include <atomic>

#include "daemon/rpc/gate.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace meshdock::rpc {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  explicit HealthService(Gate& gate) : gate_(gate) {}
  // Stops serving: checks answer NOT_SERVING and Watch streams end.
  void stop() { serving_ = false; }

  grpc::Status Check(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::health::v1::HealthCheckResponse* reply) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* out) override;

 private:
  grpc::Status status_of(const std::string& service,
                         grpc::health::v1::HealthCheckResponse* reply) const;
  Gate& gate_;
  std::atomic<bool> serving_{true};
};

}  // namespace meshdock::rpc
