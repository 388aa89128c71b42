#include "daemon/rpc/health.hpp"

#include <chrono>
#include <thread>

namespace meshdock::rpc {

using grpc::health::v1::HealthCheckResponse;

// "" (the server) and meshdock.v1.Meshdock are known; any other service is NOT_FOUND, as the
// standard protocol says.
grpc::Status HealthService::status_of(const std::string& service,
                                      HealthCheckResponse* reply) const {
  if (!service.empty() && service != "meshdock.v1.Meshdock")
    return {grpc::StatusCode::NOT_FOUND,
            "health: unknown service '" + service.substr(0, 200) + "'"};
  reply->set_status(serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

grpc::Status HealthService::Check(grpc::ServerContext* ctx,
                                  const grpc::health::v1::HealthCheckRequest* req,
                                  HealthCheckResponse* reply) {
  if (auto s = gate_.check_token(ctx, "Health.Check"); !s.ok()) return s;
  return status_of(req->service(), reply);
}

grpc::Status HealthService::Watch(grpc::ServerContext* ctx,
                                  const grpc::health::v1::HealthCheckRequest* req,
                                  grpc::ServerWriter<HealthCheckResponse>* out) {
  if (auto s = gate_.check_token(ctx, "Health.Watch"); !s.ok()) return s;
  std::string why;
  const auto ticket = gate_.admit_stream(ctx, why);
  if (!ticket) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "Health.Watch: " + why};
  HealthCheckResponse r;
  if (auto s = status_of(req->service(), &r); !s.ok()) return s;
  auto last = r.status();
  if (!out->Write(r)) return grpc::Status::OK;
  while (!ctx->IsCancelled() && serving_)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (status_of(req->service(), &r).ok() && r.status() != last) out->Write(r);
  return grpc::Status::OK;
}

}  // namespace meshdock::rpc
