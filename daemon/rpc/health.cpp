#include "daemon/rpc/health.hpp"

#include <chrono>
#include <thread>

namespace meshdock::rpc {

using grpc::health::v1::HealthCheckRequest;
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

template <class Read>
grpc::Status HealthService::check(grpc::ServerContext* ctx, Read&& request,
                                  HealthCheckResponse* reply) {
  if (auto st = gate_.check_token(ctx, "Health.Check"); !st.ok()) return st;
  const HealthCheckRequest* req = request();
  if (!req) return {grpc::StatusCode::INVALID_ARGUMENT, "health: no request message"};
  return status_of(req->service(), reply);
}

template <class Read, class Write>
grpc::Status HealthService::watch(grpc::ServerContext* ctx, Read&& request, Write&& write) {
  if (auto st = gate_.check_token(ctx, "Health.Watch"); !st.ok()) return st;
  const HealthCheckRequest* req = request();
  if (!req) return {grpc::StatusCode::INVALID_ARGUMENT, "health: no request message"};
  std::string why;
  const auto ticket = gate_.admit_stream(ctx->peer(), why);
  if (!ticket) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "Health.Watch: " + why};
  HealthCheckResponse r;
  if (auto st = status_of(req->service(), &r); !st.ok()) return st;
  const auto last = r.status();
  if (!write(r)) return grpc::Status::OK;
  while (!ctx->IsCancelled() && serving_)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (status_of(req->service(), &r).ok() && r.status() != last) write(r);
  return grpc::Status::OK;
}

class HealthService::Plain final : public grpc::health::v1::Health::Service {
 public:
  explicit Plain(HealthService& h) : h_(h) {}
  grpc::Status Check(grpc::ServerContext* ctx, const HealthCheckRequest* req,
                     HealthCheckResponse* reply) override {
    return h_.check(
        ctx, [req] { return req; }, reply);
  }
  grpc::Status Watch(grpc::ServerContext* ctx, const HealthCheckRequest* req,
                     grpc::ServerWriter<HealthCheckResponse>* out) override {
    return h_.watch(
        ctx, [req] { return req; }, [out](const HealthCheckResponse& r) { return out->Write(r); });
  }

 private:
  HealthService& h_;
};

class HealthService::Streamed final : public grpc::health::v1::Health::StreamedService {
 public:
  explicit Streamed(HealthService& h) : h_(h) {}
  grpc::Status StreamedCheck(
      grpc::ServerContext* ctx,
      grpc::ServerUnaryStreamer<HealthCheckRequest, HealthCheckResponse>* s) override {
    HealthCheckRequest req;
    HealthCheckResponse reply;
    auto st = h_.check(
        ctx, [&] { return s->Read(&req) ? &req : nullptr; }, &reply);
    if (st.ok()) s->Write(reply, grpc::WriteOptions().set_last_message());
    return st;
  }
  grpc::Status StreamedWatch(
      grpc::ServerContext* ctx,
      grpc::ServerSplitStreamer<HealthCheckRequest, HealthCheckResponse>* s) override {
    HealthCheckRequest req;
    return h_.watch(
        ctx, [&] { return s->Read(&req) ? &req : nullptr; },
        [s](const HealthCheckResponse& r) { return s->Write(r); });
  }

 private:
  HealthService& h_;
};

HealthService::HealthService(Gate& gate) : gate_(gate) {
  if (gate_.has_token())
    service_ = std::make_unique<Streamed>(*this);
  else
    service_ = std::make_unique<Plain>(*this);
}

HealthService::~HealthService() = default;

}  // namespace meshdock::rpc
