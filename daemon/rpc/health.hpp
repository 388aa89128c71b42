// grpc.health.v1 served by meshdockd itself instead of grpc++'s default service, so that it
// passes the same Gate as every other call: over TCP a health check needs the bearer token
// (read before the request, as MeshdockService does), and a health Watch is a stream under the
// stream caps. Without a token (the Unix socket) the methods are plain sync ones.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "daemon/rpc/gate.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace meshdock::rpc {

class HealthService {
 public:
  explicit HealthService(Gate& gate);
  ~HealthService();
  grpc::Service* service() { return service_.get(); }
  // Stops serving: checks answer NOT_SERVING and Watch streams end.
  void stop() { serving_ = false; }

  // `request` reads the request (after the token check); nullptr: none arrived.
  template <class Read>
  grpc::Status check(grpc::ServerContext* ctx, Read&& request,
                     grpc::health::v1::HealthCheckResponse* reply);
  template <class Read, class Write>
  grpc::Status watch(grpc::ServerContext* ctx, Read&& request, Write&& write);

 private:
  grpc::Status status_of(const std::string& service,
                         grpc::health::v1::HealthCheckResponse* reply) const;
  class Plain;
  class Streamed;
  Gate& gate_;
  std::atomic<bool> serving_{true};
  std::unique_ptr<grpc::Service> service_;
};

}  // namespace meshdock::rpc
