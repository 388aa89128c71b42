// The C ABI of producer sources (meshdock/source.hpp): a handle owning one SourceBuffer.
#include <string>

#include "c_api_internal.hpp"
#include "meshdock/source.hpp"

using namespace meshdock::capi;

struct meshdock_source {
  meshdock::SourceBuffer buffer;
};

extern "C" {

int meshdock_source_create(uint64_t bytes, const char* daemon_socket, const char* dir,
                           meshdock_source** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    meshdock::SourceOptions o;
    if (dir) o.dir = dir;
    if (daemon_socket) {
      if (const auto ids = meshdock::daemon_of_socket(daemon_socket)) {
        o.daemon_uid = ids->uid;
        o.daemon_gid = ids->gid;
      } else {
        throw invalid(std::string("daemon_socket ") + daemon_socket + ": cannot stat it");
      }
    }
    *out = new meshdock_source{meshdock::SourceBuffer::create(bytes, o)};
  });
}

void* meshdock_source_data(meshdock_source* source) {
  return source ? source->buffer.data() : nullptr;
}

uint64_t meshdock_source_size(const meshdock_source* source) {
  return source ? source->buffer.size() : 0;
}

const char* meshdock_source_name(const meshdock_source* source) {
  return source ? source->buffer.name().c_str() : nullptr;
}

void meshdock_source_release(meshdock_source* source) {
  delete source;
}

int meshdock_source_sweep(const char* dir, double min_age_seconds, uint64_t* removed) {
  if (removed) *removed = 0;
  return guard([&] {
    require(removed, "removed");
    *removed = meshdock::sweep_sources(dir ? dir : "/dev/shm", min_age_seconds);
  });
}

}  // extern "C"
