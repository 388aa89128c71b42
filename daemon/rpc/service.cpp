#include "daemon/rpc/service.hpp"

#include "daemon/payload/dlpack_export.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::rpc {

namespace {

using service::Status;

grpc::StatusCode code_of(Status s) {
  switch (s) {
    case Status::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case Status::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case Status::kAlreadyExists:
      return grpc::StatusCode::ALREADY_EXISTS;
    case Status::kPermissionDenied:
      return grpc::StatusCode::PERMISSION_DENIED;
    case Status::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Status::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case Status::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case Status::kInternal:
      return grpc::StatusCode::INTERNAL;
    case Status::kCancelled:
      return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::UNKNOWN;
}

// A status message quotes what the client sent (names, paths): a 1 MB name must not come back
// as 1 MB of trailers, which clients refuse ("metadata size exceeds limit") instead of showing
// the error. Cut at a UTF-8 boundary and say how long the whole message was.
std::string capped(std::string message) {
  constexpr std::size_t kMax = 1024;
  if (message.size() <= kMax) return message;
  const auto total = message.size();
  std::size_t cut = kMax - 64;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  return message + "... (message cut; " + std::to_string(total) + " bytes in all)";
}

void fill(const service::MeshInfo& i, v1::SlotInfo* s) {
  s->set_name(i.name);
  s->set_path(i.path);
  s->set_format(i.format);
  s->mutable_device()->set_device_type(i.device.type);
  s->mutable_device()->set_device_id(i.device.id);
  s->set_num_slots(i.num_slots);
  s->set_write_idx(i.write_idx);
  s->set_version(i.version);
  s->set_data_size(i.data_size);
  s->set_num_points(i.num_points);
  s->set_num_cells(i.num_cells);
  for (const auto& t : i.cell_types) s->add_cell_types(t);
  for (const auto& n : i.notes) s->add_notes(n);
  for (const auto& d : i.dropped) s->add_dropped(d);
  s->set_control_segment(i.control_segment);
  s->set_catalog_segment(i.catalog_segment);
  s->set_load_seconds(i.load_seconds);
  s->set_watch(i.watch);
}

using LoadStream = grpc::ServerSplitStreamer<v1::LoadRequest, v1::LoadProgress>;
using ReloadStream = grpc::ServerSplitStreamer<v1::NameRequest, v1::LoadProgress>;

template <class Out>
service::Progress progress_to(Out* out) {
  return [out](service::Phase ph, std::uint64_t done, std::uint64_t total, const std::string& msg) {
    if (ph == service::Phase::kDone) return;  // the handler sends DONE with the SlotInfo
    v1::LoadProgress p;
    p.set_phase(static_cast<v1::LoadProgress::Phase>(ph));
    p.set_bytes_done(done);
    p.set_bytes_total(total);
    p.set_message(msg);
    out->Write(p);  // a client that went away just stops hearing
  };
}

template <class Out>
void send_done(Out* out, const service::MeshInfo& info) {
  v1::LoadProgress p;
  p.set_phase(v1::LoadProgress::DONE);
  p.set_bytes_done(info.data_size);
  p.set_bytes_total(info.data_size);
  fill(info, p.mutable_slot());
  out->Write(p);
}

}  // namespace

MeshdockService::MeshdockService(service::Registry& registry, service::Logger& log, Gate& gate,
                                 std::function<void()> request_shutdown)
    : reg_(registry), log_(log), gate_(gate), request_shutdown_(std::move(request_shutdown)) {}

template <typename F>
grpc::Status MeshdockService::guarded(grpc::ServerContext* ctx, const char* rpc, F&& f) {
  if (auto s = gate_.check_token(ctx, rpc); !s.ok()) {
    log_.warn(std::string(rpc) + ": refused a call without the bearer token from " + ctx->peer());
    return s;
  }
  try {
    f();
    return grpc::Status::OK;
  } catch (const service::ServiceError& e) {
    if (e.status() == Status::kCancelled)
      log_.info(std::string(rpc) + ": " + e.what());  // work stopped half way: worth a line
    else
      log_.debug(std::string(rpc) + ": " + e.what());
    return {code_of(e.status()), capped(e.what())};
  } catch (const std::bad_alloc&) {
    log_.error(std::string(rpc) + ": out of memory");
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(rpc) + ": out of memory"};
  } catch (const std::exception& e) {
    log_.error(std::string(rpc) + ": " + e.what());
    return {grpc::StatusCode::INTERNAL, capped(std::string(rpc) + ": " + e.what())};
  }
}

template <class Req, class Rep, typename F>
grpc::Status MeshdockService::unary(grpc::ServerContext* ctx, Unary<Req, Rep>* s, const char* rpc,
                                    F&& f) {
  Rep reply;
  auto status = guarded(ctx, rpc, [&] {
    Req req;
    if (!s->Read(&req))
      throw service::ServiceError(Status::kInvalidArgument,
                                  std::string(rpc) + ": no request message arrived");
    f(req, &reply);
  });
  if (status.ok()) s->Write(reply);
  return status;
}

template <class Req, class Rep, typename F>
grpc::Status MeshdockService::split(grpc::ServerContext* ctx, Split<Req, Rep>* s, const char* rpc,
                                    F&& f) {
  return guarded(ctx, rpc, [&] {
    Req req;
    if (!s->Read(&req))
      throw service::ServiceError(Status::kInvalidArgument,
                                  std::string(rpc) + ": no request message arrived");
    f(req);
  });
}

grpc::Status MeshdockService::StreamedLoad(grpc::ServerContext* ctx, LoadStream* s) {
  return split(ctx, s, "Load", [&](const v1::LoadRequest& req) {
    service::LoadRequest r;
    r.path = req.path();
    r.name = req.name();
    r.replace = req.replace();
    const auto& o = req.options();
    r.options.float32 = o.float32();
    r.options.int32 = o.int32();
    r.options.zero_copy_only = o.zero_copy_only();
    r.device = o.device();
    r.format = o.format();
    r.watch = o.watch();
    r.num_slots = o.num_slots();
    send_done(s, reg_.load(r, progress_to(s), [ctx] { return ctx->IsCancelled(); }));
  });
}

grpc::Status MeshdockService::StreamedReload(grpc::ServerContext* ctx, ReloadStream* s) {
  return split(ctx, s, "Reload", [&](const v1::NameRequest& req) {
    send_done(s, reg_.reload(req.name(), progress_to(s), [ctx] { return ctx->IsCancelled(); }));
  });
}

grpc::Status MeshdockService::StreamedUnload(grpc::ServerContext* ctx,
                                             Unary<v1::NameRequest, v1::UnloadReply>* s) {
  return unary(ctx, s, "Unload", [&](const v1::NameRequest& req, v1::UnloadReply* reply) {
    reg_.unload(req.name());
    reply->set_name(req.name());
  });
}

grpc::Status MeshdockService::StreamedList(grpc::ServerContext* ctx,
                                           Unary<v1::ListRequest, v1::ListReply>* s) {
  return unary(ctx, s, "List", [&](const v1::ListRequest&, v1::ListReply* reply) {
    for (const auto& i : reg_.list()) fill(i, reply->add_slots());
  });
}

grpc::Status MeshdockService::StreamedDescribe(grpc::ServerContext* ctx,
                                               Unary<v1::NameRequest, v1::DescribeReply>* s) {
  return unary(ctx, s, "Describe", [&](const v1::NameRequest& req, v1::DescribeReply* reply) {
    const auto [info, manifest] = reg_.describe(req.name());
    fill(info, reply->mutable_slot());
    reply->set_manifest_json(manifest);
    if (manifest.empty()) return;
    const auto m = shm::decode_manifest(manifest, info.data_size);
    for (const auto& a : m.arrays) {
      auto* x = reply->add_arrays();
      x->set_name(a.name);
      x->set_role(shm::role_name(a.role));
      x->set_block(a.block);
      x->mutable_dtype()->set_code(a.dtype.code);
      x->mutable_dtype()->set_bits(a.dtype.bits);
      x->mutable_dtype()->set_lanes(a.dtype.lanes);
      for (auto d : a.shape) x->add_shape(d);
      x->set_offset(a.offset);
      x->set_nbytes(a.nbytes);
    }
  });
}

grpc::Status MeshdockService::Publish(grpc::ServerContext* ctx,
                                      grpc::ServerReader<v1::PublishChunk>* in,
                                      v1::PublishReply* reply) {
  // guarded() has checked the token: only now is the first message read.
  return guarded(ctx, "Publish", [&] {
    v1::PublishChunk head;
    if (!in->Read(&head))
      throw service::ServiceError(Status::kInvalidArgument,
                                  "Publish: the stream ended before its first chunk (the header: "
                                  "name, field, dtype, shape)");
    const auto& d = head.dtype();
    const auto& field = head.field();
    if (d.code() > 255 || d.bits() == 0 || d.bits() > 64 || d.bits() % 8 || d.lanes() != 1)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": dtype (" + std::to_string(d.code()) + ", " +
                                      std::to_string(d.bits()) + ", " + std::to_string(d.lanes()) +
                                      ") is not a DLPack scalar type");
    std::vector<std::int64_t> shape(head.shape().begin(), head.shape().end());
    if (shape.empty() || shape.size() > 4)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": shape must have 1 to 4 dimensions");
    std::uint64_t count = 1;
    for (auto s : shape) {
      if (s < 0 || s > (std::int64_t{1} << 40) ||
          __builtin_mul_overflow(count, static_cast<std::uint64_t>(s), &count) ||
          count > (std::uint64_t{1} << 40))
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": dimension " + std::to_string(s) +
                                        " makes the array larger than 2^40 elements");
    }
    const mesh::DType dt{static_cast<std::uint8_t>(d.code()), static_cast<std::uint8_t>(d.bits()),
                         1};
    const std::uint64_t want = count * (d.bits() / 8);
    // Before a byte of data is taken in: the dtype maps to DLPack, the field and its rows fit
    // the mesh, and the array's size is under max_decoded_size.
    try {
      payload::dlpack_dtype(mesh::Array::empty(dt, {0}), field);
    } catch (const payload::PayloadError& e) {
      throw service::ServiceError(Status::kInvalidArgument, e.what());
    }
    reg_.check_publish(head.name(), field, shape[0], head.block(), want);
    auto a = mesh::Array::empty(dt, shape);
    auto* dst = static_cast<std::uint8_t*>(a.data());
    std::uint64_t got = 0;
    auto take = [&](const std::string& bytes) {
      if (bytes.size() > want - got)
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": shape and dtype need " + std::to_string(want) +
                                        " bytes, data has " + std::to_string(got + bytes.size()) +
                                        " at least (refused there)");
      if (!bytes.empty()) std::memcpy(dst + got, bytes.data(), bytes.size());
      got += bytes.size();
    };
    take(head.data());
    for (v1::PublishChunk chunk; in->Read(&chunk);) {
      if (!chunk.name().empty() || !chunk.field().empty() || chunk.has_dtype() ||
          chunk.shape_size() || chunk.block())
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": only the first chunk carries the header");
      take(chunk.data());
    }
    if (got != want)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": shape and dtype need " + std::to_string(want) +
                                      " bytes, data has " + std::to_string(got));
    reply->set_frame(reg_.publish_field(head.name(), field, a, head.block()));
    fill(reg_.describe(head.name()).first, reply->mutable_slot());
  });
}

grpc::Status MeshdockService::StreamedExport(grpc::ServerContext* ctx,
                                             Unary<v1::ExportRequest, v1::ExportReply>* s) {
  return unary(ctx, s, "Export", [&](const v1::ExportRequest& req, v1::ExportReply* reply) {
    reply->set_bytes_written(reg_.export_to(req.name(), req.path(), req.format()));
    reply->set_path(req.path());
  });
}

grpc::Status MeshdockService::StreamedWatch(grpc::ServerContext* ctx,
                                            Split<v1::WatchRequest, v1::Event>* s) {
  return split(ctx, s, "Watch", [&](const v1::WatchRequest& req) {
    std::string why;
    const auto ticket = gate_.admit_stream(ctx->peer(), why);
    if (!ticket) {
      log_.warn("Watch: refused a stream from " + ctx->peer() + ": " + why);
      throw service::ServiceError(Status::kResourceExhausted, "Watch: " + why);
    }
    // A name that could never be loaded would otherwise wait forever, silently.
    if (!req.name().empty()) {
      try {
        shm::validate_name(req.name());
      } catch (const shm::ProtocolError& e) {
        throw service::ServiceError(Status::kInvalidArgument, e.what());
      }
    }
    auto sub = reg_.events().subscribe();
    while (!ctx->IsCancelled() && !stopping_) {
      auto e = sub->next(std::chrono::milliseconds(200));
      if (!e ||
          (!req.name().empty() && e->name != req.name() && e->kind != service::Event::kShutdown))
        continue;
      v1::Event ev;
      ev.set_kind(static_cast<v1::Event::Kind>(e->kind));
      ev.set_name(e->name);
      ev.set_frame(e->frame);
      ev.set_message(e->message);
      ev.set_timestamp(e->timestamp);
      if (!s->Write(ev) || e->kind == service::Event::kShutdown) break;
    }
  });
}

grpc::Status MeshdockService::StreamedStats(grpc::ServerContext* ctx,
                                            Unary<v1::StatsRequest, v1::StatsReply>* s) {
  return unary(ctx, s, "Stats", [&](const v1::StatsRequest&, v1::StatsReply* reply) {
    const auto st = reg_.stats();
    for (const auto& m : st.meshes) {
      auto* x = reply->add_slots();
      x->set_name(m.name);
      x->set_bytes(m.bytes);
      x->set_frames(m.write_idx);
      x->set_leases(m.leases);
      x->set_last_load_seconds(m.load_seconds);
    }
    reply->set_device_memory_used(st.device_memory_used);
    reply->set_device_memory_budget(st.device_memory_budget);
    reply->set_host_memory_used(st.host_memory_used);
    reply->set_uptime_seconds(st.uptime_seconds);
    reply->set_backend(st.backend);
  });
}

grpc::Status MeshdockService::StreamedShutdown(grpc::ServerContext* ctx,
                                               Unary<v1::ShutdownRequest, v1::ShutdownReply>* s) {
  return unary(ctx, s, "Shutdown", [&](const v1::ShutdownRequest&, v1::ShutdownReply*) {
    log_.info("shutdown requested over gRPC by " + ctx->peer());
    request_shutdown_();
  });
}

}  // namespace meshdock::rpc
