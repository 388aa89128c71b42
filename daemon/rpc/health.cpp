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

grpc::Status HealthService::StreamedCheck(
    grpc::ServerContext* ctx,
    grpc::ServerUnaryStreamer<grpc::health::v1::HealthCheckRequest, HealthCheckResponse>* s) {
  if (auto st = gate_.check_token(ctx, "Health.Check"); !st.ok()) return st;
  grpc::health::v1::HealthCheckRequest req;
  if (!s->Read(&req)) return {grpc::StatusCode::INVALID_ARGUMENT, "health: no request message"};
  HealthCheckResponse reply;
  auto st = status_of(req.service(), &reply);
  if (st.ok()) s->Write(reply);
  return st;
}

grpc::Status HealthService::StreamedWatch(
    grpc::ServerContext* ctx,
    grpc::ServerSplitStreamer<grpc::health::v1::HealthCheckRequest, HealthCheckResponse>* s) {
  if (auto st = gate_.check_token(ctx, "Health.Watch"); !st.ok()) return st;
  grpc::health::v1::HealthCheckRequest req;
  if (!s->Read(&req)) return {grpc::StatusCode::INVALID_ARGUMENT, "health: no request message"};
  std::string why;
  const auto ticket = gate_.admit_stream(ctx->peer(), why);
  if (!ticket) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "Health.Watch: " + why};
  HealthCheckResponse r;
  if (auto st = status_of(req.service(), &r); !st.ok()) return st;
  const auto last = r.status();
  if (!s->Write(r)) return grpc::Status::OK;
  while (!ctx->IsCancelled() && serving_)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (status_of(req.service(), &r).ok() && r.status() != last) s->Write(r);
  return grpc::Status::OK;
}

}  // namespace meshdock::rpc
