#include "daemon/rpc/service.hpp"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "daemon/mesh/text.hpp"
#include "daemon/payload/dlpack_export.hpp"
#include "daemon/rpc/shm_source.hpp"
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

// "OK", "NOT_FOUND", ...: the label of meshdock_rpc_calls_total and of the failure log line.
const char* code_name(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

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
  out->Write(p, grpc::WriteOptions().set_last_message());  // goes out with the status
}

}  // namespace

template <typename F>
grpc::Status MeshdockService::checked(grpc::ServerContext* ctx, const char* rpc, F&& f) {
  if (auto s = gate_.check_token(ctx, rpc); !s.ok()) return s;
  try {
    f();
    return grpc::Status::OK;
  } catch (const service::ServiceError& e) {
    return {code_of(e.status()), capped(e.what())};
  } catch (const std::bad_alloc&) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(rpc) + ": out of memory"};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, capped(std::string(rpc) + ": " + e.what())};
  }
}

template <typename F>
grpc::Status MeshdockService::guarded(grpc::ServerContext* ctx, const char* rpc, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  grpc::Status s = checked(ctx, rpc, std::forward<F>(f));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  const char* code = code_name(s.error_code());
  metrics_.rpc(rpc, code, took.count());
  if (!s.ok()) {
    // One line per failed call, naming the caller: a Unix-socket caller by the kernel's word
    // (pid, uid, gid: PeerTable), a TCP one by its address. A bug or a refused token is worth
    // more than a client's mistake.
    const std::string line = std::string(rpc) + " from " + peers_.describe(ctx->peer()) + ": " +
                             code + ": " + s.error_message();
    if (s.error_code() == grpc::StatusCode::INTERNAL)
      log_.error(line);
    else if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
             s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
      log_.warn(line);
    else
      log_.info(line);
  }
  return s;
}

std::string MeshdockService::metrics_text() const {
  return metrics_.render(reg_.stats(), reg_.leases());
}

template <class S, typename F>
grpc::Status MeshdockService::unary(grpc::ServerContext* ctx, S& s, const char* rpc, F&& f) {
  auto status = guarded(ctx, rpc, [&] {
    const auto* req = s.request();
    if (!req)
      throw service::ServiceError(Status::kInvalidArgument,
                                  std::string(rpc) + ": no request message arrived");
    f(*req, s.reply());
  });
  if (status.ok()) s.finish();
  return status;
}

template <class S, typename F>
grpc::Status MeshdockService::split(grpc::ServerContext* ctx, S& s, const char* rpc, F&& f) {
  return guarded(ctx, rpc, [&] {
    const auto* req = s.request();
    if (!req)
      throw service::ServiceError(Status::kInvalidArgument,
                                  std::string(rpc) + ": no request message arrived");
    f(*req);
  });
}

Gate::Ticket MeshdockService::admit_load(grpc::ServerContext* ctx, const char* rpc) {
  // A load holds its thread until the file is read (a big file, a slow disk, a FIFO under a
  // root): without a cap, one client's loads (max_meshes raised past max_rpc_threads) took
  // every thread and other clients were refused "Server Threadpool Exhausted". Refused at
  // once, like a stream over its caps: a load that waited would hold the thread all the same.
  std::string why;
  auto ticket = gate_.admit_load(ctx->peer(), why);
  if (!ticket)
    throw service::ServiceError(Status::kResourceExhausted, std::string(rpc) + ": " + why);
  return ticket;
}

Gate::Ticket MeshdockService::admit_export(grpc::ServerContext* ctx) {
  // An Export holds its thread while it writes (a big mesh's compressed VTU takes seconds):
  // one client's concurrent exports took every thread as loads did.
  std::string why;
  auto ticket = gate_.admit_export(ctx->peer(), why);
  if (!ticket) throw service::ServiceError(Status::kResourceExhausted, "Export: " + why);
  return ticket;
}

template <class S>
grpc::Status MeshdockService::load(grpc::ServerContext* ctx, S& s) {
  return split(ctx, s, "Load", [&](const v1::LoadRequest& req) {
    const auto ticket = admit_load(ctx, "Load");
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
    send_done(&s, reg_.load(r, progress_to(&s), [ctx] { return ctx->IsCancelled(); }));
  });
}

template <class S>
grpc::Status MeshdockService::reload(grpc::ServerContext* ctx, S& s) {
  return split(ctx, s, "Reload", [&](const v1::NameRequest& req) {
    const auto ticket = admit_load(ctx, "Reload");
    send_done(&s, reg_.reload(req.name(), progress_to(&s), [ctx] { return ctx->IsCancelled(); }));
  });
}

template <class S>
grpc::Status MeshdockService::unload(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "Unload", [&](const v1::NameRequest& req, v1::UnloadReply* reply) {
    reg_.unload(req.name());
    reply->set_name(req.name());
  });
}

template <class S>
grpc::Status MeshdockService::list(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "List", [&](const v1::ListRequest&, v1::ListReply* reply) {
    for (const auto& i : reg_.list()) fill(i, reply->add_slots());
  });
}

template <class S>
grpc::Status MeshdockService::describe(grpc::ServerContext* ctx, S& s) {
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

grpc::Status MeshdockService::publish(grpc::ServerContext* ctx,
                                      grpc::ServerReader<v1::PublishChunk>* in,
                                      v1::PublishReply* reply) {
  // guarded() has checked the token: only now is the first message read.
  return guarded(ctx, "Publish", [&] {
    std::string why;
    const auto ticket = gate_.admit_stream(ctx->peer(), why);  // it holds a thread meanwhile
    if (!ticket) throw service::ServiceError(Status::kResourceExhausted, "Publish: " + why);
    v1::PublishChunk chunk;
    publish_from(
        ctx, [&]() -> const v1::PublishChunk* { return in->Read(&chunk) ? &chunk : nullptr; },
        reply, /*may_wait=*/true);
  });
}

template <class S>
grpc::Status MeshdockService::publish_small(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "PublishSmall", [&](const v1::PublishChunk& req, v1::PublishReply* reply) {
    const v1::PublishChunk* once = &req;
    // A unary call is not a stream, so it is never refused for the streams open; but a publish
    // waiting for a reload (or for another client's creation of the tensor) parks its thread
    // up to 30 s, and unbounded such calls took every thread max_rpc_threads allows, stalling
    // every other client. It waits only while holding a stream ticket (max_streams,
    // max_streams_per_peer); without one it is refused at once, as before those waits.
    std::string why;
    const auto ticket = gate_.admit_stream(ctx->peer(), why);
    publish_from(
        ctx, [&] { return std::exchange(once, nullptr); }, reply, static_cast<bool>(ticket));
  });
}

void MeshdockService::publish_from(grpc::ServerContext* ctx,
                                   const std::function<const v1::PublishChunk*()>& next,
                                   v1::PublishReply* reply, bool may_wait) {
  // A producer streams into several slots (and meshdockctl prints this message as it is): a
  // refusal names the slot as well as the field, e.g. "slot 'box': point_data/T: 301 rows ...".
  std::string slot_name;
  std::uint64_t published = 0;  // the frame, once it went out
  try {
    const std::string peer = ctx->peer();
    const v1::PublishChunk* first = next();
    if (!first)
      throw service::ServiceError(Status::kInvalidArgument,
                                  "Publish: the stream ended before its first chunk (the header: "
                                  "name, field, dtype, shape)");
    const v1::PublishChunk& head = *first;
    slot_name = head.name();
    // A publish naming a source object says in its reply whether the object was the trouble
    // (kSourceRefused: the caller may send the bytes instead) or not (kSourceUnderstood: any
    // error is the mesh's or the field's). A daemon from before source_shm sends neither.
    const char* source_state = kSourceUnderstood;
    struct SourceTrailer {
      grpc::ServerContext* ctx;
      const char* const& state;
      bool named;
      ~SourceTrailer() {
        try {
          if (named) ctx->AddTrailingMetadata(std::string(kSourceTrailer), state);
        } catch (const std::bad_alloc&) {  // the reply goes without it
        }
      }
    } trailer{ctx, source_state, !head.source_shm().empty()};
    const auto& d = head.dtype();
    const std::string field = head.field();  // copies: `next` reuses the message
    if (d.code() > 255 || d.bits() == 0 || d.bits() > 64 || d.bits() % 8 || d.lanes() != 1)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": dtype (" + std::to_string(d.code()) + ", " +
                                      std::to_string(d.bits()) + ", " + std::to_string(d.lanes()) +
                                      ") is not a DLPack scalar type");
    std::vector<std::int64_t> shape(head.shape().begin(), head.shape().end());
    if (shape.empty() || shape.size() > 4) {
      std::string dims;  // the shape asked for, as the other shape errors give it
      for (const auto s : shape) {
        if (!dims.empty()) dims += ", ";
        dims += std::to_string(s);
      }
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": shape (" + dims + ") has " +
                                      std::to_string(shape.size()) +
                                      " dimensions; a publish carries 1 to 4");
    }
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
    const bool tensor = field == "tensor";  // a single-array publish
    const std::string device = head.device();
    const std::uint32_t num_slots = head.num_slots();
    if (tensor)
      reg_.check_publish_tensor(head.name(), dt, shape, want, device, num_slots);
    else if (!device.empty() || num_slots)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field +
                                      ": device and num_slots are for a tensor's first "
                                      "publish (a mesh's slot has them already)");
    // A block means something to a cell_data field only; it was ignored for the others, so a
    // producer that meant cell_data (or the wrong field) got a frame without a word.
    if (head.block() && (tensor || field.starts_with("point_data/")))
      throw service::ServiceError(
          Status::kInvalidArgument,
          field + ": block " + std::to_string(head.block()) + " is for a cell_data field; " +
              (tensor ? "a tensor is one array" : "point_data is one array over every point") +
              " (send block 0)");
    if (!tensor) reg_.check_publish(head.name(), field, shape[0], head.block(), want, may_wait);
    const auto incoming = reserve_incoming(ctx, want, field);  // before the allocation
    auto a = mesh::Array::empty(dt, shape);
    auto* dst = static_cast<std::uint8_t*>(a.data());
    std::uint64_t got = 0;
    // Data in messages comes at the caller's pace: its progress is watched (a shm source is
    // read at once, here).
    std::optional<Intake::Entry> intake;
    if (head.source_shm().empty())
      intake.emplace(intake_.enter(ctx,
                                   "the publish of slot '" + mesh::terminal_safe(head.name()) +
                                       "' " + mesh::terminal_safe(field) + " from " +
                                       peers_.describe(peer),
                                   want));
    auto take = [&](const std::string& bytes) {
      if (bytes.size() > want - got)
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": shape and dtype need " + std::to_string(want) +
                                        " bytes, data has " + std::to_string(got + bytes.size()) +
                                        " at least (refused there)");
      if (!bytes.empty()) std::memcpy(dst + got, bytes.data(), bytes.size());
      got += bytes.size();
      if (intake) intake->took(bytes.size());
    };
    const std::string name = head.name();
    const std::uint32_t block = head.block();
    if (!head.source_shm().empty()) {
      // The bytes are in the caller's own shm object (shm_source.hpp): the header is all.
      if (!head.data().empty())
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": a publish from source_shm carries no data");
      source_state = kSourceRefused;  // until the object is read
      const auto caller = peers_.find(peer);
      if (!caller)
        throw service::ServiceError(
            Status::kFailedPrecondition,
            field +
                ": source_shm needs the daemon's Unix socket (the daemon checks the "
                "object's owner against the caller's credentials, which " +
                peers_.describe(peer) + " has none of)");
      read_shm_source(head.source_shm(), head.source_offset(), want, caller->uid,
                      reinterpret_cast<std::byte*>(dst), field);
      source_state = kSourceUnderstood;
      got = want;
      if (next())
        throw service::ServiceError(Status::kInvalidArgument,
                                    field + ": a publish from source_shm is one message");
      metrics_.received("shm", want);
    } else {
      take(head.data());
      while (const v1::PublishChunk* chunk = next()) {
        if (!chunk->name().empty() || !chunk->field().empty() || chunk->has_dtype() ||
            chunk->shape_size() || chunk->block() || !chunk->device().empty() ||
            chunk->num_slots() || !chunk->source_shm().empty() || chunk->source_offset())
          throw service::ServiceError(Status::kInvalidArgument,
                                      field + ": only the first chunk carries the header");
        take(chunk->data());
      }
      metrics_.received("grpc", got);
    }
    if (got != want)
      throw service::ServiceError(Status::kInvalidArgument,
                                  field + ": shape and dtype need " + std::to_string(want) +
                                      " bytes, data has " + std::to_string(got));
    published = tensor ? reg_.publish_tensor(name, a, device, num_slots, may_wait)
                       : reg_.publish_field(name, field, a, block, may_wait);
    reply->set_frame(published);
    fill(reg_.describe(name).first, reply->mutable_slot());  // (unloaded meanwhile: NOT_FOUND)
  } catch (const service::ServiceError& e) {
    std::string what = e.what();
    // The name as the client sent it may hold control bytes (ESC, CR): said escaped, as
    // check_slot_name says it, since meshdockctl and scripts print this message as it is.
    const std::string safe = mesh::terminal_safe(slot_name);
    if (!slot_name.empty() && what.find("'" + slot_name + "'") == std::string::npos &&
        what.find("'" + safe + "'") == std::string::npos)
      what = "slot '" + safe + "': " + what;
    // A stream whose client went away (killed mid-publish, cancelled, past its deadline) ends
    // like one that was short; said as what it is, not as the client's invalid argument.
    if (ctx->IsCancelled() && e.status() != Status::kCancelled)
      throw service::ServiceError(Status::kCancelled,
                                  "the client went away during the publish (killed, cancelled or "
                                  "past its deadline); " +
                                      (published ? "frame " + std::to_string(published) +
                                                       " was published, then the reply failed ("
                                                 : std::string("nothing was published (")) +
                                      what + ")");
    if (what == e.what()) throw;
    throw service::ServiceError(e.status(), what);
  }
}

service::Reservation MeshdockService::reserve_incoming(grpc::ServerContext* ctx, std::uint64_t want,
                                                       const std::string& field) {
  try {
    return reg_.reserve_incoming(want, field);
  } catch (const service::ServiceError& e) {
    if (e.status() != Status::kResourceExhausted) throw;
    const auto lines = intake_.cancel_stalled(ctx, std::chrono::steady_clock::now());
    if (lines.empty()) throw;
    for (const auto& line : lines) log_.warn(line);
  }
  // The cancelled publishes give their reservations back as their handlers end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    try {
      return reg_.reserve_incoming(want, field);
    } catch (const service::ServiceError& e) {
      if (e.status() != Status::kResourceExhausted || ctx->IsCancelled() ||
          std::chrono::steady_clock::now() >= deadline)
        throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

template <class S>
grpc::Status MeshdockService::export_to(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "Export", [&](const v1::ExportRequest& req, v1::ExportReply* reply) {
    const auto ticket = admit_export(ctx);
    const auto out = reg_.export_to(req.name(), req.path(), req.format(), req.overwrite());
    reply->set_bytes_written(out.bytes);
    reply->set_path(req.path());
    for (const auto& n : out.notes) reply->add_notes(n);
  });
}

template <class S>
grpc::Status MeshdockService::watch(grpc::ServerContext* ctx, S& s) {
  return split(ctx, s, "Watch", [&](const v1::WatchRequest& req) {
    std::string why;
    const auto ticket = gate_.admit_stream(ctx->peer(), why);
    if (!ticket) {
      log_.warn("Watch: refused a stream from " + peers_.describe(ctx->peer()) + ": " + why);
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
    auto sub = reg_.events().subscribe(req.name());
    bool told = false;  // the log says once per stream that this watcher falls behind
    while (!ctx->IsCancelled()) {
      // Stopping: the SHUTDOWN event was queued before stopping_ was set, so drain what is
      // queued (without waiting) and end with it.
      const bool stopping = stopping_;
      auto e = sub->next(std::chrono::milliseconds(stopping ? 0 : 200));
      if (!e && stopping) break;
      if (!e) continue;
      if (e->dropped) {
        metrics_.watch_dropped(e->dropped);
        if (!std::exchange(told, true))
          log_.warn("Watch: " + peers_.describe(ctx->peer()) + " reads events too slowly; " +
                    std::to_string(e->dropped) + " dropped (" +
                    std::to_string(service::EventBus::kMaxQueued) +
                    " are kept per watcher; each event says how many were lost before it)");
      }
      v1::Event ev;
      ev.set_kind(static_cast<v1::Event::Kind>(e->kind));
      ev.set_name(e->name);
      ev.set_frame(e->frame);
      ev.set_message(e->message);
      ev.set_timestamp(e->timestamp);
      ev.set_dropped(e->dropped);
      if (!s.Write(ev) || e->kind == service::Event::kShutdown) break;
    }
  });
}

template <class S>
grpc::Status MeshdockService::stats(grpc::ServerContext* ctx, S& s) {
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
    reply->set_max_decoded_size(st.max_decoded_size);
    reply->set_host_memory_used(st.host_memory_used);
    reply->set_uptime_seconds(st.uptime_seconds);
    reply->set_backend(st.backend);
  });
}

template <class S>
grpc::Status MeshdockService::metrics(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "Metrics", [&](const v1::MetricsRequest&, v1::MetricsReply* reply) {
    reply->set_text(metrics_text());
  });
}

template <class S>
grpc::Status MeshdockService::leases(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "Leases", [&](const v1::LeasesRequest& req, v1::LeasesReply* reply) {
    if (!req.name().empty()) (void)reg_.describe(req.name());  // NOT_FOUND naming it
    for (const auto& r : reg_.leases()) {
      if (!req.name().empty() && r.mesh != req.name()) continue;
      auto* x = reply->add_leases();
      x->set_name(r.mesh);
      x->set_slot(r.lease.slot);
      x->set_pid(r.lease.pid);
      x->set_uid(static_cast<std::uint32_t>(r.lease.uid));
      x->set_frame(r.lease.frame);
      x->set_claiming(r.lease.claiming);
      x->set_age_seconds(r.lease.age_seconds);
    }
  });
}

template <class S>
grpc::Status MeshdockService::revoke_leases(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "RevokeLeases",
               [&](const v1::RevokeLeasesRequest& req, v1::RevokeLeasesReply* reply) {
                 if (req.pid() <= 0)
                   throw service::ServiceError(
                       Status::kInvalidArgument,
                       "pid " + std::to_string(req.pid()) + " is not a process id");
                 const auto n = reg_.revoke(req.pid());
                 log_.info("RevokeLeases: " + std::to_string(n) + " leases of pid " +
                           std::to_string(req.pid()) + " revoked at the request of " +
                           peers_.describe(ctx->peer()));
                 reply->set_revoked(static_cast<std::uint32_t>(n));
               });
}

template <class S>
grpc::Status MeshdockService::shutdown(grpc::ServerContext* ctx, S& s) {
  return unary(ctx, s, "Shutdown", [&](const v1::ShutdownRequest&, v1::ShutdownReply*) {
    log_.info("shutdown requested over gRPC by " + peers_.describe(ctx->peer()));
    request_shutdown_();
  });
}

// ---- the two transports' views of a call ----------------------------------------------------

namespace {

// Plain methods: the core has read the request already.
template <class Req, class Rep>
struct PlainUnary {
  const Req* req;
  Rep* rep;
  const Req* request() { return req; }
  Rep* reply() { return rep; }
  void finish() {}
};

template <class Req, class Rep>
struct PlainSplit {
  const Req* req;
  grpc::ServerWriter<Rep>* out;
  const Req* request() { return req; }
  bool Write(const Rep& m, grpc::WriteOptions o = {}) { return out->Write(m, o); }
};

// Streamed methods: the request is read here, after the token check.
template <class Req, class Rep>
struct StreamedUnary {
  grpc::ServerUnaryStreamer<Req, Rep>* s;
  Req req{};
  Rep rep{};
  const Req* request() { return s->Read(&req) ? &req : nullptr; }
  Rep* reply() { return &rep; }
  // The reply goes out with the status (one batch, no wait for the write alone).
  void finish() { s->Write(rep, grpc::WriteOptions().set_last_message()); }
};

template <class Req, class Rep>
struct StreamedSplit {
  grpc::ServerSplitStreamer<Req, Rep>* s;
  Req req{};
  const Req* request() { return s->Read(&req) ? &req : nullptr; }
  bool Write(const Rep& m, grpc::WriteOptions o = {}) { return s->Write(m, o); }
};

}  // namespace

class MeshdockService::Plain final : public v1::Meshdock::Service {
 public:
  explicit Plain(MeshdockService& h) : h_(h) {}
  using Ctx = grpc::ServerContext;
  template <class Req, class Rep>
  using U = PlainUnary<Req, Rep>;
  template <class Req, class Rep>
  using W = PlainSplit<Req, Rep>;

  grpc::Status Load(Ctx* c, const v1::LoadRequest* q,
                    grpc::ServerWriter<v1::LoadProgress>* o) override {
    W<v1::LoadRequest, v1::LoadProgress> s{q, o};
    return h_.load(c, s);
  }
  grpc::Status Reload(Ctx* c, const v1::NameRequest* q,
                      grpc::ServerWriter<v1::LoadProgress>* o) override {
    W<v1::NameRequest, v1::LoadProgress> s{q, o};
    return h_.reload(c, s);
  }
  grpc::Status Unload(Ctx* c, const v1::NameRequest* q, v1::UnloadReply* r) override {
    U<v1::NameRequest, v1::UnloadReply> s{q, r};
    return h_.unload(c, s);
  }
  grpc::Status List(Ctx* c, const v1::ListRequest* q, v1::ListReply* r) override {
    U<v1::ListRequest, v1::ListReply> s{q, r};
    return h_.list(c, s);
  }
  grpc::Status Describe(Ctx* c, const v1::NameRequest* q, v1::DescribeReply* r) override {
    U<v1::NameRequest, v1::DescribeReply> s{q, r};
    return h_.describe(c, s);
  }
  grpc::Status Publish(Ctx* c, grpc::ServerReader<v1::PublishChunk>* in,
                       v1::PublishReply* r) override {
    return h_.publish(c, in, r);
  }
  grpc::Status PublishSmall(Ctx* c, const v1::PublishChunk* q, v1::PublishReply* r) override {
    U<v1::PublishChunk, v1::PublishReply> s{q, r};
    return h_.publish_small(c, s);
  }
  grpc::Status Export(Ctx* c, const v1::ExportRequest* q, v1::ExportReply* r) override {
    U<v1::ExportRequest, v1::ExportReply> s{q, r};
    return h_.export_to(c, s);
  }
  grpc::Status Watch(Ctx* c, const v1::WatchRequest* q, grpc::ServerWriter<v1::Event>* o) override {
    W<v1::WatchRequest, v1::Event> s{q, o};
    return h_.watch(c, s);
  }
  grpc::Status Stats(Ctx* c, const v1::StatsRequest* q, v1::StatsReply* r) override {
    U<v1::StatsRequest, v1::StatsReply> s{q, r};
    return h_.stats(c, s);
  }
  grpc::Status Metrics(Ctx* c, const v1::MetricsRequest* q, v1::MetricsReply* r) override {
    U<v1::MetricsRequest, v1::MetricsReply> s{q, r};
    return h_.metrics(c, s);
  }
  grpc::Status Leases(Ctx* c, const v1::LeasesRequest* q, v1::LeasesReply* r) override {
    U<v1::LeasesRequest, v1::LeasesReply> s{q, r};
    return h_.leases(c, s);
  }
  grpc::Status RevokeLeases(Ctx* c, const v1::RevokeLeasesRequest* q,
                            v1::RevokeLeasesReply* r) override {
    U<v1::RevokeLeasesRequest, v1::RevokeLeasesReply> s{q, r};
    return h_.revoke_leases(c, s);
  }
  grpc::Status Shutdown(Ctx* c, const v1::ShutdownRequest* q, v1::ShutdownReply* r) override {
    U<v1::ShutdownRequest, v1::ShutdownReply> s{q, r};
    return h_.shutdown(c, s);
  }

 private:
  MeshdockService& h_;
};

class MeshdockService::Streamed final : public v1::Meshdock::StreamedService {
 public:
  explicit Streamed(MeshdockService& h) : h_(h) {}
  using Ctx = grpc::ServerContext;
  template <class Req, class Rep>
  using U = StreamedUnary<Req, Rep>;
  template <class Req, class Rep>
  using W = StreamedSplit<Req, Rep>;

  grpc::Status StreamedLoad(
      Ctx* c, grpc::ServerSplitStreamer<v1::LoadRequest, v1::LoadProgress>* x) override {
    W<v1::LoadRequest, v1::LoadProgress> s{x};
    return h_.load(c, s);
  }
  grpc::Status StreamedReload(
      Ctx* c, grpc::ServerSplitStreamer<v1::NameRequest, v1::LoadProgress>* x) override {
    W<v1::NameRequest, v1::LoadProgress> s{x};
    return h_.reload(c, s);
  }
  grpc::Status StreamedUnload(
      Ctx* c, grpc::ServerUnaryStreamer<v1::NameRequest, v1::UnloadReply>* x) override {
    U<v1::NameRequest, v1::UnloadReply> s{x};
    return h_.unload(c, s);
  }
  grpc::Status StreamedList(Ctx* c,
                            grpc::ServerUnaryStreamer<v1::ListRequest, v1::ListReply>* x) override {
    U<v1::ListRequest, v1::ListReply> s{x};
    return h_.list(c, s);
  }
  grpc::Status StreamedDescribe(
      Ctx* c, grpc::ServerUnaryStreamer<v1::NameRequest, v1::DescribeReply>* x) override {
    U<v1::NameRequest, v1::DescribeReply> s{x};
    return h_.describe(c, s);
  }
  grpc::Status Publish(Ctx* c, grpc::ServerReader<v1::PublishChunk>* in,
                       v1::PublishReply* r) override {
    return h_.publish(c, in, r);
  }
  grpc::Status StreamedPublishSmall(
      Ctx* c, grpc::ServerUnaryStreamer<v1::PublishChunk, v1::PublishReply>* x) override {
    U<v1::PublishChunk, v1::PublishReply> s{x};
    return h_.publish_small(c, s);
  }
  grpc::Status StreamedExport(
      Ctx* c, grpc::ServerUnaryStreamer<v1::ExportRequest, v1::ExportReply>* x) override {
    U<v1::ExportRequest, v1::ExportReply> s{x};
    return h_.export_to(c, s);
  }
  grpc::Status StreamedWatch(Ctx* c,
                             grpc::ServerSplitStreamer<v1::WatchRequest, v1::Event>* x) override {
    W<v1::WatchRequest, v1::Event> s{x};
    return h_.watch(c, s);
  }
  grpc::Status StreamedStats(
      Ctx* c, grpc::ServerUnaryStreamer<v1::StatsRequest, v1::StatsReply>* x) override {
    U<v1::StatsRequest, v1::StatsReply> s{x};
    return h_.stats(c, s);
  }
  grpc::Status StreamedMetrics(
      Ctx* c, grpc::ServerUnaryStreamer<v1::MetricsRequest, v1::MetricsReply>* x) override {
    U<v1::MetricsRequest, v1::MetricsReply> s{x};
    return h_.metrics(c, s);
  }
  grpc::Status StreamedLeases(
      Ctx* c, grpc::ServerUnaryStreamer<v1::LeasesRequest, v1::LeasesReply>* x) override {
    U<v1::LeasesRequest, v1::LeasesReply> s{x};
    return h_.leases(c, s);
  }
  grpc::Status StreamedRevokeLeases(
      Ctx* c,
      grpc::ServerUnaryStreamer<v1::RevokeLeasesRequest, v1::RevokeLeasesReply>* x) override {
    U<v1::RevokeLeasesRequest, v1::RevokeLeasesReply> s{x};
    return h_.revoke_leases(c, s);
  }
  grpc::Status StreamedShutdown(
      Ctx* c, grpc::ServerUnaryStreamer<v1::ShutdownRequest, v1::ShutdownReply>* x) override {
    U<v1::ShutdownRequest, v1::ShutdownReply> s{x};
    return h_.shutdown(c, s);
  }

 private:
  MeshdockService& h_;
};

MeshdockService::MeshdockService(service::Registry& registry, service::Logger& log, Gate& gate,
                                 const PeerTable& peers, std::function<void()> request_shutdown)
    : reg_(registry),
      log_(log),
      gate_(gate),
      peers_(peers),
      request_shutdown_(std::move(request_shutdown)) {
  if (gate_.has_token())
    service_ = std::make_unique<Streamed>(*this);
  else
    service_ = std::make_unique<Plain>(*this);
}

MeshdockService::~MeshdockService() = default;

}  // namespace meshdock::rpc
