// The C ABI's foundations: version, the error boundary and last-error message, string lists,
// and the array table with its DLPack export (one allocation per tensor).
#include <cstdlib>
#include <exception>
#include <string>

#include "c_api_internal.hpp"
#include "daemon/mesh/error.hpp"
#include "daemon/payload/payload.hpp"
#include "meshdock/error.hpp"
#include "meshdock/shm/error.hpp"

namespace meshdock::capi {

namespace {
thread_local std::string t_last_error;
thread_local int t_last_status = MESHDOCK_OK;
}  // namespace

int last_status() noexcept {
  return t_last_status;
}

const char* last_error() noexcept {
  return t_last_error.c_str();
}

int fail(int status, const char* message) noexcept {
  t_last_status = status;
  try {
    t_last_error = message ? message : "";
  } catch (...) {
    // No memory for the message: keep the code; the old message stays.
  }
  return status;
}

int status_of_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return fail(e.status(), e.what());
  } catch (const shm::ProtocolError& e) {
    return fail(MESHDOCK_ERR_PROTOCOL, e.what());
  } catch (const mesh::ReadError& e) {
    return fail(MESHDOCK_ERR_READ, e.what());
  } catch (const mesh::WriteError& e) {
    return fail(MESHDOCK_ERR_WRITE, e.what());
  } catch (const mesh::MeshError& e) {
    return fail(MESHDOCK_ERR_MESH, e.what());
  } catch (const payload::PayloadError& e) {
    return fail(MESHDOCK_ERR_PAYLOAD, e.what());
  } catch (const ProducerGone& e) {
    return fail(MESHDOCK_ERR_PRODUCER_GONE, e.what());
  } catch (const AttachTimeout& e) {
    return fail(MESHDOCK_ERR_ATTACH_TIMEOUT, e.what());
  } catch (const Interrupted& e) {
    return fail(MESHDOCK_ERR_INTERRUPTED, e.what());
  } catch (const UntrustedSegment& e) {
    return fail(MESHDOCK_ERR_UNTRUSTED_SEGMENT, e.what());
  } catch (const SegmentAccessDenied& e) {
    return fail(MESHDOCK_ERR_SEGMENT_ACCESS_DENIED, e.what());
  } catch (const SdkError& e) {
    return fail(MESHDOCK_ERR_SDK, e.what());
  } catch (const std::bad_alloc&) {
    return fail(MESHDOCK_ERR_OOM, "out of memory");
  } catch (const std::exception& e) {
    return fail(MESHDOCK_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(MESHDOCK_ERR_INTERNAL, "unknown C++ exception");
  }
}

const Entry& Table::at(std::size_t i, const char* what) const {
  if (i >= entries_.size())
    throw Error(MESHDOCK_ERR_NOT_FOUND, std::string(what) + ": array index " + std::to_string(i) +
                                            " is out of range (" + std::to_string(entries_.size()) +
                                            " arrays)");
  return entries_[i];
}

std::int64_t Table::find(std::string_view name) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return static_cast<std::int64_t>(i);
  }
  return -1;
}

std::size_t Table::index(const char* name, const char* what) const {
  require(name, "name");
  const auto i = find(name);
  if (i < 0)
    throw Error(MESHDOCK_ERR_NOT_FOUND, std::string(what) + " has no array '" + name + "'");
  return static_cast<std::size_t>(i);
}

void Table::info(std::size_t i, meshdock_array_info* out, const char* what) const {
  require(out, "info");
  const auto& e = at(i, what);
  meshdock_array_info v{};
  v.name = e.name.c_str();
  v.role = e.role;
  v.key = e.key.c_str();
  v.block = e.block;
  v.data = e.data;
  v.device = e.device;
  v.dtype = e.dtype;
  v.ndim = static_cast<std::int32_t>(e.shape.size());
  v.shape = e.shape.data();
  v.strides = e.strides.data();
  v.nbytes = e.nbytes;
  write_sized(out, v, "meshdock_array_info");
}

namespace {

// The tensor, its owner and 2 * ndim int64 (shape, then strides) in one allocation.
template <typename MT>
struct Holder {
  MT tensor;
  std::shared_ptr<const void> owner;
  std::int64_t* dims() { return reinterpret_cast<std::int64_t*>(this + 1); }
};
static_assert(sizeof(Holder<DLManagedTensor>) % alignof(std::int64_t) == 0);
static_assert(sizeof(Holder<DLManagedTensorVersioned>) % alignof(std::int64_t) == 0);

template <typename MT>
void destroy(MT* self) {
  auto* h = static_cast<Holder<MT>*>(self->manager_ctx);
  h->~Holder<MT>();
  ::operator delete(static_cast<void*>(h));
}

template <typename MT>
MT* make(const Entry& e) {
  const std::size_t nd = e.shape.size();
  void* raw = ::operator new(sizeof(Holder<MT>) + 2 * nd * sizeof(std::int64_t));
  auto* h = new (raw) Holder<MT>{MT{}, e.owner};  // copying a shared_ptr does not throw
  std::int64_t* dims = h->dims();
  std::copy(e.shape.begin(), e.shape.end(), dims);
  std::copy(e.strides.begin(), e.strides.end(), dims + nd);
  DLTensor& t = h->tensor.dl_tensor;
  t.data = e.data;
  t.device = e.device;
  t.ndim = static_cast<std::int32_t>(nd);
  t.dtype = e.dtype;
  t.shape = dims;
  t.strides = dims + nd;
  t.byte_offset = 0;
  h->tensor.manager_ctx = h;
  h->tensor.deleter = &destroy<MT>;
  return &h->tensor;
}

}  // namespace

DLManagedTensorVersioned* make_versioned(const Entry& e) {
  auto* t = make<DLManagedTensorVersioned>(e);
  t->version.major = MESHDOCK_DLPACK_MAJOR;
  t->version.minor = MESHDOCK_DLPACK_MINOR;
  // Never READ_ONLY: host slots are mapped copy-on-write and mesh / payload buffers are ours to
  // hand out; an in-place write stays private (slots) or is the caller's own (meshes).
  t->flags = 0;
  return t;
}

DLManagedTensor* make_legacy(const Entry& e) {
  return make<DLManagedTensor>(e);
}

DLManagedTensorVersioned* Table::dlpack(std::size_t i, const char* what) const {
  return make_versioned(at(i, what));
}

DLManagedTensor* Table::dlpack_legacy(std::size_t i, const char* what) const {
  return make_legacy(at(i, what));
}

char* owned_string(const std::string& text) {
  auto* p = static_cast<char*>(std::malloc(text.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, text.data(), text.size());
  p[text.size()] = '\0';
  return p;
}

}  // namespace meshdock::capi

using namespace meshdock::capi;

extern "C" {

uint32_t meshdock_abi_version(void) {
  return MESHDOCK_ABI_VERSION;
}

int meshdock_last_status(void) {
  return last_status();
}

const char* meshdock_last_error(void) {
  return last_error();
}

int meshdock_set_error(int status, const char* message) {
  return fail(status, message ? message : "");
}

const char* meshdock_status_name(int status) {
  switch (status) {
    case MESHDOCK_OK:
      return "MESHDOCK_OK";
    case MESHDOCK_ERR_SDK:
      return "MESHDOCK_ERR_SDK";
    case MESHDOCK_ERR_PRODUCER_GONE:
      return "MESHDOCK_ERR_PRODUCER_GONE";
    case MESHDOCK_ERR_ATTACH_TIMEOUT:
      return "MESHDOCK_ERR_ATTACH_TIMEOUT";
    case MESHDOCK_ERR_INTERRUPTED:
      return "MESHDOCK_ERR_INTERRUPTED";
    case MESHDOCK_ERR_UNTRUSTED_SEGMENT:
      return "MESHDOCK_ERR_UNTRUSTED_SEGMENT";
    case MESHDOCK_ERR_SEGMENT_ACCESS_DENIED:
      return "MESHDOCK_ERR_SEGMENT_ACCESS_DENIED";
    case MESHDOCK_ERR_PROTOCOL:
      return "MESHDOCK_ERR_PROTOCOL";
    case MESHDOCK_ERR_MESH:
      return "MESHDOCK_ERR_MESH";
    case MESHDOCK_ERR_READ:
      return "MESHDOCK_ERR_READ";
    case MESHDOCK_ERR_WRITE:
      return "MESHDOCK_ERR_WRITE";
    case MESHDOCK_ERR_PAYLOAD:
      return "MESHDOCK_ERR_PAYLOAD";
    case MESHDOCK_ERR_INVALID_ARGUMENT:
      return "MESHDOCK_ERR_INVALID_ARGUMENT";
    case MESHDOCK_ERR_NOT_FOUND:
      return "MESHDOCK_ERR_NOT_FOUND";
    case MESHDOCK_ERR_OOM:
      return "MESHDOCK_ERR_OOM";
    case MESHDOCK_ERR_UNSUPPORTED:
      return "MESHDOCK_ERR_UNSUPPORTED";
    case MESHDOCK_ERR_INTERNAL:
      return "MESHDOCK_ERR_INTERNAL";
    case MESHDOCK_ERR_UNAVAILABLE:
      return "MESHDOCK_ERR_UNAVAILABLE";
    case MESHDOCK_ERR_PERMISSION_DENIED:
      return "MESHDOCK_ERR_PERMISSION_DENIED";
    case MESHDOCK_ERR_RESOURCE_EXHAUSTED:
      return "MESHDOCK_ERR_RESOURCE_EXHAUSTED";
    case MESHDOCK_ERR_REFUSED:
      return "MESHDOCK_ERR_REFUSED";
    default:
      return "MESHDOCK_ERR_UNKNOWN";
  }
}

void meshdock_free(void* p) {
  std::free(p);
}

size_t meshdock_strings_count(const meshdock_strings* list) {
  return list ? list->items.size() : 0;
}

const char* meshdock_strings_get(const meshdock_strings* list, size_t i) {
  if (!list || i >= list->items.size()) return nullptr;
  return list->items[i].c_str();
}

void meshdock_strings_release(meshdock_strings* list) {
  delete list;
}

}  // extern "C"
