// The Python DLPack capsule helpers of ABI 1.1 (meshdock.h "Python DLPack capsules"): a ctypes
// binding makes a capsule per array in one foreign call, and a dying capsule runs its tensor's
// deleter without calling back into Python. libmeshdock never links Python; the binding hands
// over PyCapsule_IsValid / _GetPointer / _New once, and they are kept process-wide (the one
// piece of mutable global state of the C layer besides the per-thread last error: a process has
// one CPython, so there is one set of them).
#include <atomic>

#include "c_api_internal.hpp"

namespace {

// Static storage: a capsule keeps its name pointer for its whole life.
constexpr char kLegacy[] = "dltensor";
constexpr char kVersioned[] = "dltensor_versioned";

std::atomic<meshdock_pycapsule_is_valid_fn> g_is_valid{nullptr};
std::atomic<meshdock_pycapsule_pointer_fn> g_get_pointer{nullptr};
std::atomic<meshdock_pycapsule_new_fn> g_capsule_new{nullptr};
std::atomic<meshdock_pyerr_set_string_fn> g_set_string{nullptr};
std::atomic<void*> g_exception_type{nullptr};

// NULL after a failure recorded by fail(): also raised in Python when the binding asked for it.
void* failed() noexcept {
  const auto set_string = g_set_string.load(std::memory_order_acquire);
  void* type = g_exception_type.load(std::memory_order_relaxed);
  if (set_string && type) set_string(type, meshdock::capi::last_error());
  return nullptr;
}

// Wraps a tensor made by `make` (a meshdock_*_array_dlpack{,_legacy} function) in a capsule.
template <typename Handle, typename MakeVersioned, typename MakeLegacy>
void* capsule_of(const Handle* h, std::size_t index, int versioned, MakeVersioned make_versioned,
                 MakeLegacy make_legacy) noexcept {
  const auto capsule_new = g_capsule_new.load(std::memory_order_acquire);
  if (!capsule_new) {
    meshdock::capi::fail(MESHDOCK_ERR_UNSUPPORTED,
                         "meshdock_dlpack_capsule_api was not called: no PyCapsule_New to use");
    return failed();
  }
  if (versioned) {
    DLManagedTensorVersioned* t = nullptr;
    if (make_versioned(h, index, &t) != MESHDOCK_OK) return failed();
    void* cap = capsule_new(t, kVersioned, meshdock_dlpack_capsule_destructor);
    if (!cap) {
      t->deleter(t);  // Python's MemoryError stays set for the caller
      meshdock::capi::fail(MESHDOCK_ERR_OOM, "PyCapsule_New failed");
    }
    return cap;
  }
  DLManagedTensor* t = nullptr;
  if (make_legacy(h, index, &t) != MESHDOCK_OK) return failed();
  void* cap = capsule_new(t, kLegacy, meshdock_dlpack_capsule_destructor);
  if (!cap) {
    t->deleter(t);
    meshdock::capi::fail(MESHDOCK_ERR_OOM, "PyCapsule_New failed");
  }
  return cap;
}

}  // namespace

extern "C" {

void meshdock_dlpack_capsule_api(meshdock_pycapsule_is_valid_fn is_valid,
                                 meshdock_pycapsule_pointer_fn get_pointer,
                                 meshdock_pycapsule_new_fn capsule_new) {
  // Readers load capsule_new first (acquire): the destructor's pair is stored before it.
  g_is_valid.store(is_valid, std::memory_order_relaxed);
  g_get_pointer.store(get_pointer, std::memory_order_relaxed);
  g_capsule_new.store(capsule_new, std::memory_order_release);
}

void meshdock_dlpack_capsule_errors(meshdock_pyerr_set_string_fn set_string, void* exception_type) {
  g_exception_type.store(exception_type, std::memory_order_relaxed);
  g_set_string.store(set_string, std::memory_order_release);
}

void meshdock_dlpack_capsule_destructor(void* capsule) {
  // Only IsValid and GetPointer-after-IsValid: neither sets a Python exception, so a pending
  // one (a capsule dying during unwinding) is left as it is.
  const auto is_valid = g_is_valid.load(std::memory_order_acquire);
  const auto get_pointer = g_get_pointer.load(std::memory_order_acquire);
  if (!capsule || !is_valid || !get_pointer) return;
  if (is_valid(capsule, kVersioned)) {
    auto* t = static_cast<DLManagedTensorVersioned*>(get_pointer(capsule, kVersioned));
    if (t && t->deleter) t->deleter(t);
  } else if (is_valid(capsule, kLegacy)) {
    auto* t = static_cast<DLManagedTensor*>(get_pointer(capsule, kLegacy));
    if (t && t->deleter) t->deleter(t);
  }
  // Otherwise consumed ("used_dltensor*"): the consumer owns the tensor now.
}

void* meshdock_frame_array_capsule(const meshdock_frame* frame, size_t index, int versioned) {
  return capsule_of(frame, index, versioned, meshdock_frame_array_dlpack,
                    meshdock_frame_array_dlpack_legacy);
}

void* meshdock_mesh_array_capsule(const meshdock_mesh* mesh, size_t index, int versioned) {
  return capsule_of(mesh, index, versioned, meshdock_mesh_array_dlpack,
                    meshdock_mesh_array_dlpack_legacy);
}

void* meshdock_payload_array_capsule(const meshdock_payload* payload, size_t index, int versioned) {
  return capsule_of(payload, index, versioned, meshdock_payload_array_dlpack,
                    meshdock_payload_array_dlpack_legacy);
}

}  // extern "C"
