// libmeshdock_producer (meshdock/producer.h): Publish over gRPC behind a C ABI. The bytes of a
// large array go through a source object of ours (meshdock::SourceBuffer, libmeshdock) named in a
// header-only PublishSmall, as Python's Client.publish and `meshdockctl publish` send them; small
// ones, and all of them where the daemon cannot read our objects, in messages of 256 KiB.
// Failures are reported through libmeshdock's last-error channel (meshdock_set_error).
#include "meshdock/producer.h"

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "meshdock/error.hpp"
#include "meshdock/shm/names.hpp"
#include "meshdock/source.hpp"
#include "meshdock/v1/meshdock.grpc.pb.h"
#include "status.hpp"  // meshdockctl's: gRPC codes in words, addresses, an unavailable daemon

namespace v1 = meshdock::v1;

namespace {

constexpr const char* kDefaultTarget = "unix:/run/meshdock/meshdockd.sock";
// Arrays above this go through a source object on a Unix socket: below it one message costs
// less than an object (Python's CHUNK_BYTES, meshdockctl's kSourceThreshold); also the size of
// the messages a larger array is sent in (the daemon's max_message_size is 64 KiB at least).
constexpr std::uint64_t kChunk = 256 << 10;
// An object younger than this may be a live producer's not locked yet (Python: SWEEP_MIN_AGE).
constexpr double kSweepMinAge = 10.0;

// A failure of this layer: a status (meshdock.h) and a message naming the slot and field.
struct Failure {
  int status;
  std::string message;
};

[[noreturn]] void fail(int status, std::string message) {
  throw Failure{status, std::move(message)};
}

// A gRPC status as a meshdock status (meshdock.h documents the grouping).
int status_of(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::NOT_FOUND:
      return MESHDOCK_ERR_NOT_FOUND;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return MESHDOCK_ERR_INVALID_ARGUMENT;
    case grpc::StatusCode::UNAVAILABLE:
      return MESHDOCK_ERR_UNAVAILABLE;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return MESHDOCK_ERR_PERMISSION_DENIED;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return MESHDOCK_ERR_RESOURCE_EXHAUSTED;
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return MESHDOCK_ERR_REFUSED;
    case grpc::StatusCode::UNIMPLEMENTED:
      return MESHDOCK_ERR_UNSUPPORTED;
    default:
      return MESHDOCK_ERR_INTERNAL;
  }
}

// Runs `body`; every error becomes a status and this thread's last error (libmeshdock's).
template <typename F>
int guard(F&& body) noexcept {
  try {
    body();
    return MESHDOCK_OK;
  } catch (const Failure& f) {
    return meshdock_set_error(f.status, f.message.c_str());
  } catch (const meshdock::SdkError& e) {
    return meshdock_set_error(MESHDOCK_ERR_SDK, e.what());
  } catch (const std::bad_alloc&) {
    return meshdock_set_error(MESHDOCK_ERR_OOM, "out of memory");
  } catch (const std::exception& e) {
    return meshdock_set_error(MESHDOCK_ERR_INTERNAL, e.what());
  } catch (...) {
    return meshdock_set_error(MESHDOCK_ERR_INTERNAL, "unknown error");
  }
}

// Whether the daemon takes DLPack dtype (code, bits) (one lane is checked apart).
bool publishable(std::uint8_t code, std::uint8_t bits) {
  switch (code) {
    case kDLInt:
    case kDLUInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case kDLFloat:
      return bits == 16 || bits == 32 || bits == 64;
    case kDLBfloat:
      return bits == 16;
    case kDLBool:
      return bits == 8;
    default:
      return false;
  }
}

// What a publish sends: the header of its first message, and where its bytes are.
struct Array {
  v1::PublishChunk header;  // name, field, block, dtype, shape (device, num_slots: tensors)
  const std::byte* data = nullptr;
  std::uint64_t nbytes = 0;
};

// The header and bytes of `t`, checked as the daemon would not see them (device, strides, lanes):
// every refusal names the slot and field, and nothing is sent.
Array describe(const char* name, const char* field, std::uint32_t block, const DLTensor* t) {
  if (!name || !*name) fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_publish: no name");
  if (!field || !*field)
    fail(MESHDOCK_ERR_INVALID_ARGUMENT,
         std::string("meshdock_producer_publish: slot '") + name + "': no field");
  const std::string where = std::string("slot '") + name + "': " + field;
  if (!t) fail(MESHDOCK_ERR_INVALID_ARGUMENT, where + ": no array (NULL DLTensor)");
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
    fail(MESHDOCK_ERR_UNSUPPORTED, where + ": the array is in device memory (DLPack device type " +
                                       std::to_string(t->device.device_type) +
                                       "); publish takes host memory: copy it to the host first");
  if (t->ndim < 1 || t->ndim > 4)
    fail(MESHDOCK_ERR_INVALID_ARGUMENT,
         where + ": " + std::to_string(t->ndim) + " dimensions; a frame's arrays have 1 to 4");
  if (!t->shape) fail(MESHDOCK_ERR_INVALID_ARGUMENT, where + ": no shape (NULL)");
  const auto code = t->dtype.code;
  if (!publishable(code, t->dtype.bits) || t->dtype.lanes != 1)
    fail(MESHDOCK_ERR_INVALID_ARGUMENT,
         where + ": dtype (code " + std::to_string(code) + ", bits " +
             std::to_string(t->dtype.bits) + ", lanes " + std::to_string(t->dtype.lanes) +
             ") cannot be published (int/uint 8-64, float 16-64, bfloat16, bool; one lane)");
  Array a;
  a.nbytes = t->dtype.bits / 8;
  std::int64_t stride = 1;  // elements, innermost first: the C-order strides it must have
  for (int d = t->ndim - 1; d >= 0; --d) {
    const std::int64_t n = t->shape[d];
    if (n < 0)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT,
           where + ": dimension " + std::to_string(d) + " is " + std::to_string(n));
    if (t->strides && n > 1 && t->strides[d] != stride)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT,
           where + ": not in C order (dimension " + std::to_string(d) + " has stride " +
               std::to_string(t->strides[d]) + ", " + std::to_string(stride) +
               " expected): make it contiguous first");
    if (n && a.nbytes > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(n))
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, where + ": the shape's size overflows");
    a.nbytes *= static_cast<std::uint64_t>(n);
    stride *= n ? n : 1;
  }
  if (a.nbytes && !t->data) fail(MESHDOCK_ERR_INVALID_ARGUMENT, where + ": no data (NULL)");
  a.data = static_cast<const std::byte*>(t->data) + t->byte_offset;
  a.header.set_name(name);
  a.header.set_field(field);
  a.header.set_block(block);
  a.header.mutable_dtype()->set_code(code);
  a.header.mutable_dtype()->set_bits(t->dtype.bits);
  a.header.mutable_dtype()->set_lanes(1);
  for (int d = 0; d < t->ndim; ++d) a.header.add_shape(t->shape[d]);
  return a;
}

std::string where_of(const v1::PublishChunk& h) {
  return "slot '" + h.name() + "': " + h.field();
}

}  // namespace

struct meshdock_producer {
  using Key = std::tuple<std::string, std::string, std::uint32_t>;  // name, field, block
  // A source object kept for a key; `stale` after a failed publish from it (the daemon may
  // still be reading it): the next use makes a fresh one.
  struct Source {
    meshdock::SourceBuffer buffer;
    bool stale = false;
  };
  using Sources = std::map<Key, Source>;

  std::string target, token;
  std::string target_from;  // what gave the target, for messages: the argument or $MESHDOCK_ADDR
  std::string socket;       // the Unix socket's path; "" on TCP
  double timeout = 0;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Meshdock::Stub> stub;
  std::mutex mu;  // one call at a time: the sources and the cached limit
  // Apart, so that a publish copying the caller's own array never writes into a buffer the
  // caller holds: the objects arrays are copied into, and those meshdock_producer_buffer gave.
  Sources copies, buffers;
  std::optional<std::uint64_t> max_decoded;  // the daemon's StatsReply.max_decoded_size
  std::string shm_unavailable;  // why arrays go in messages for good ("": objects may be used)
  bool swept = false;           // dead producers' objects removed (before our first object)

  void prepare(grpc::ClientContext& ctx) const {
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    if (timeout > 0)
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<std::int64_t>(timeout * 1e6)));
  }

  // A failed call as a Failure: the code's name and the daemon's words, or why nobody answers.
  [[noreturn]] void refused(const grpc::Status& s, const std::string& where) const {
    std::string msg = s.error_message();
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      int code = 0;
      const auto why = meshdockctl::diagnose_unavailable(target, code, target_from);
      fail(code == meshdockctl::kPermissionDenied ? MESHDOCK_ERR_PERMISSION_DENIED
                                                  : MESHDOCK_ERR_UNAVAILABLE,
           where + ": meshdockd at " + target + " is not answering: " + (why.empty() ? msg : why));
    }
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      char t[32];
      std::snprintf(t, sizeof t, "%g", timeout);
      msg = std::string("no reply within the producer's timeout (") + t + " s)";
    }
    // The daemon's refusals name the slot and field already.
    fail(status_of(s.error_code()),
         std::string(meshdockctl::code_name(s.error_code())) + ": " +
             (msg.find("slot '") == std::string::npos ? where + ": " + msg : msg));
  }

  // Refuses, as the daemon would, an array over its max_decoded_size before an object of that
  // size is made (its pages are allocated at once, in the /dev/shm the daemon's segments share).
  // Asked once, and again before a refusal, in case a SIGHUP raised it; 0 (not said) is left to
  // the daemon.
  void check_decoded_size(std::uint64_t nbytes, const std::string& where) {
    if (!max_decoded || (*max_decoded && nbytes > *max_decoded)) {
      grpc::ClientContext ctx;
      prepare(ctx);
      v1::StatsReply rep;
      const auto s = stub->Stats(&ctx, v1::StatsRequest(), &rep);
      if (!s.ok()) refused(s, where);
      max_decoded = rep.max_decoded_size();
    }
    if (*max_decoded && nbytes > *max_decoded)
      fail(MESHDOCK_ERR_RESOURCE_EXHAUSTED,
           "RESOURCE_EXHAUSTED: " + where + ": " + std::to_string(nbytes) +
               " bytes are over max_decoded_size (" + std::to_string(*max_decoded) +
               "); nothing was sent");
  }

  // The object of `key` in `in`, at least `bytes` long and not stale; else a fresh one, and the
  // one it replaces is unmapped and unlinked (a caller's old buffer pointer is valid until it
  // asks for the key's buffer again, as producer.h says).
  Source& source_for(Sources& in, const Key& key, std::uint64_t bytes) {
    auto it = in.find(key);
    if (it != in.end() && !it->second.stale && it->second.buffer.size() >= bytes) return it->second;
    meshdock::SourceOptions o;
    if (const auto ids = meshdock::daemon_of_socket(socket)) {
      o.daemon_uid = ids->uid;
      o.daemon_gid = ids->gid;
    }
    if (!swept) {
      // Before this producer's first object: the objects of this user's producers that died
      // without unlinking theirs (SIGKILL: no live process holds their flock), as the Python
      // client does. Best effort: a /dev/shm that cannot be listed fails the create below.
      swept = true;
      try {
        meshdock::sweep_sources(meshdock::shm::kShmDir, kSweepMinAge);
      } catch (const meshdock::SdkError&) {
      }
    }
    auto fresh = meshdock::SourceBuffer::create(bytes ? bytes : 1, o);
    if (it == in.end()) return in.emplace(key, Source{std::move(fresh)}).first->second;
    it->second = Source{std::move(fresh)};
    return it->second;
  }

  // The buffer (meshdock_producer_buffer's) holding [p, p + n), if any.
  Source* buffer_holding(const std::byte* p, std::uint64_t n) {
    for (auto& [key, s] : buffers) {
      const auto* base = s.buffer.data();
      if (p >= base && p <= base + s.buffer.size() &&
          n <= static_cast<std::uint64_t>(base + s.buffer.size() - p))
        return &s;
    }
    return nullptr;
  }

  // Whether the daemon refused a source object itself (not the mesh or the field, which
  // messages would be refused for too): its trailer says so (meshdock/shm/names.hpp); one from
  // before source objects has none, and finds no data (INVALID_ARGUMENT).
  static bool source_refused(const grpc::ClientContext& ctx, const grpc::Status& s) {
    const auto& trailers = ctx.GetServerTrailingMetadata();
    const auto it = trailers.find(std::string(meshdock::shm::kSourceTrailer));
    if (it == trailers.end()) return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT;
    return it->second == meshdock::shm::kSourceRefused;
  }

  // PublishSmall naming `src` (the array at `offset`); the reply, or nullopt when the daemon
  // refused the object itself (then `why` says so). The object is stale after any failure.
  std::optional<v1::PublishReply> publish_from(Source& src, std::uint64_t offset,
                                               const v1::PublishChunk& header, std::string& why) {
    v1::PublishChunk h = header;
    h.set_source_shm(src.buffer.name());
    h.set_source_offset(offset);
    grpc::ClientContext ctx;
    prepare(ctx);
    v1::PublishReply rep;
    const auto s = stub->PublishSmall(&ctx, h, &rep);
    if (s.ok()) return rep;
    src.stale = true;
    if (!source_refused(ctx, s)) refused(s, where_of(header));
    why = s.error_message();
    return std::nullopt;
  }

  v1::PublishReply publish_messages(const Array& a) {
    grpc::ClientContext ctx;
    prepare(ctx);
    v1::PublishReply rep;
    grpc::Status s;
    v1::PublishChunk first = a.header;
    const auto take = [&](v1::PublishChunk& c, std::uint64_t at) {
      const auto n = std::min<std::uint64_t>(a.nbytes - at, kChunk);
      c.set_data(a.data + at, n);
      return at + n;
    };
    std::uint64_t at = take(first, 0);
    if (at == a.nbytes) {
      s = stub->PublishSmall(&ctx, first, &rep);
    } else {
      auto w = stub->Publish(&ctx, &rep);
      bool open = w->Write(first);
      while (open && at < a.nbytes) {
        v1::PublishChunk c;
        at = take(c, at);
        open = w->Write(c);
      }
      w->WritesDone();
      s = w->Finish();  // a refusal mid-stream ends the writes: its status says why
    }
    if (!s.ok()) refused(s, where_of(a.header));
    return rep;
  }

  v1::PublishReply publish(const Array& a) {
    const Key key{a.header.name(), a.header.field(), a.header.block()};
    std::string why;
    if (Source* held = a.nbytes ? buffer_holding(a.data, a.nbytes) : nullptr) {
      // The caller wrote it into our buffer: only its name travels.
      if (auto rep = publish_from(*held, static_cast<std::uint64_t>(a.data - held->buffer.data()),
                                  a.header, why))
        return *rep;
      fail(MESHDOCK_ERR_REFUSED, "FAILED_PRECONDITION: " + where_of(a.header) +
                                     ": the daemon cannot read this producer's shared memory (" +
                                     why + "): publish the array from memory of your own");
    }
    if (!socket.empty() && shm_unavailable.empty() && a.nbytes > kChunk) {
      check_decoded_size(a.nbytes, where_of(a.header));
      Source* src = nullptr;
      try {
        src = &source_for(copies, key, a.nbytes);
        std::memcpy(src->buffer.data(), a.data, a.nbytes);
      } catch (const meshdock::SdkError& e) {
        why = e.what();  // no object: messages, for good (as Python's Client does)
      }
      if (src) {
        if (auto rep = publish_from(*src, 0, a.header, why)) return *rep;
      }
      shm_unavailable = why;
    }
    return publish_messages(a);
  }
};

extern "C" {

int meshdock_producer_open(const char* target, const char* token, meshdock_producer** out) {
  if (out) *out = nullptr;
  return guard([&] {
    if (!out) fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_open: out is NULL");
    auto p = std::make_unique<meshdock_producer>();
    const char* env_addr = std::getenv("MESHDOCK_ADDR");
    const bool given = target && *target;
    p->target = given ? target : env_addr && *env_addr ? env_addr : kDefaultTarget;
    const char* env_token = std::getenv("MESHDOCK_TOKEN");
    p->token = token ? token : env_token ? env_token : "";
    p->target_from = given                   ? "the target of meshdock_producer_open"
                     : env_addr && *env_addr ? "$MESHDOCK_ADDR"
                                             : "the default address";
    if (const auto bad = meshdockctl::address_problem(
            p->target, given ? "meshdock_producer_open: target" : "$MESHDOCK_ADDR"))
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, *bad);
    p->socket = meshdockctl::unix_socket_path(p->target);
    grpc::ChannelArguments args;
    p->channel = grpc::CreateCustomChannel(p->target, grpc::InsecureChannelCredentials(), args);
    p->stub = v1::Meshdock::NewStub(p->channel);
    *out = p.release();
  });
}

void meshdock_producer_close(meshdock_producer* producer) {
  std::unique_ptr<meshdock_producer> p(producer);  // unlinks its objects (SourceBuffer's)
}

int meshdock_producer_set_timeout(meshdock_producer* producer, double seconds) {
  return guard([&] {
    if (!producer) fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_set_timeout: NULL");
    if (!std::isfinite(seconds) || seconds < 0)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT,
           "meshdock_producer_set_timeout: " + std::to_string(seconds) +
               " s (0 or more: 0 is no limit)");
    std::lock_guard lock(producer->mu);
    producer->timeout = seconds;
  });
}

int meshdock_producer_publish(meshdock_producer* producer, const char* name, const char* field,
                              std::uint32_t block, const DLTensor* array, std::uint32_t* frame) {
  return guard([&] {
    if (!producer)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_publish: producer is NULL");
    const Array a = describe(name, field, block, array);
    std::lock_guard lock(producer->mu);
    const auto rep = producer->publish(a);
    if (frame) *frame = rep.frame();
  });
}

int meshdock_producer_publish_tensor(meshdock_producer* producer, const char* name,
                                     const DLTensor* array, const char* device,
                                     std::uint32_t num_slots, std::uint32_t* frame) {
  return guard([&] {
    if (!producer)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_publish_tensor: producer is NULL");
    Array a = describe(name, "tensor", 0, array);
    if (device) a.header.set_device(device);
    a.header.set_num_slots(num_slots);
    std::lock_guard lock(producer->mu);
    const auto rep = producer->publish(a);
    if (frame) *frame = rep.frame();
  });
}

int meshdock_producer_buffer(meshdock_producer* producer, const char* name, const char* field,
                             std::uint32_t block, std::uint64_t bytes, void** out) {
  if (out) *out = nullptr;
  return guard([&] {
    if (!producer || !out)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_buffer: producer or out is NULL");
    if (!name || !*name || !field || !*field)
      fail(MESHDOCK_ERR_INVALID_ARGUMENT, "meshdock_producer_buffer: no name or field");
    const std::string where = std::string("slot '") + name + "': " + field;
    std::lock_guard lock(producer->mu);
    if (producer->socket.empty())
      fail(MESHDOCK_ERR_UNSUPPORTED,
           where + ": a shared-memory buffer needs the daemon's Unix socket, not " +
               producer->target);
    producer->check_decoded_size(bytes, where);
    *out = producer->source_for(producer->buffers, {name, field, block}, bytes).buffer.data();
  });
}

}  // extern "C"
