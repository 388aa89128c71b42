// What the c_api*.cpp files share: the error boundary (every C entry point runs its body inside
// guard(), which turns each C++ error type into its status code and the thread's last-error
// message), the array table a frame, mesh or payload handle exposes, DLPack export of its
// entries, and the forward-compatible copying of size-prefixed structs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Debian's dlpack.h (0.6) first, as the C++ side includes it: meshdock.h then adds only the
// DLPack 1.0 types, so every translation unit sees one definition of DLTensor.
#include <dlpack/dlpack.h>

#include "meshdock/dlpack_tensor.hpp"  // contiguous_strides
#include "meshdock/meshdock.h"

// Immutable string list (notes, ...). Defined at global scope: meshdock.h declares it there.
struct meshdock_strings {
  std::vector<std::string> items;
};

namespace meshdock::capi {

// An error the C layer itself raises (bad argument, unknown name, ...), with its status.
class Error : public std::runtime_error {
 public:
  Error(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

inline Error invalid(const std::string& what) {
  return Error(MESHDOCK_ERR_INVALID_ARGUMENT, what);
}

// This thread's last error message ("" if none yet).
const char* last_error() noexcept;
// This thread's last failure status (MESHDOCK_OK if none yet).
int last_status() noexcept;
// Records `message` as this thread's last error and returns `status`. Never throws.
int fail(int status, const char* message) noexcept;
// Maps the exception in flight to its status (and records its message). Call from a catch.
int status_of_current_exception() noexcept;

// Runs `body` (returning void); every exception becomes a status code.
template <typename F>
int guard(F&& body) noexcept {
  try {
    body();
    return MESHDOCK_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

// Throws INVALID_ARGUMENT naming `what` when `p` is NULL.
template <typename T>
T* require(T* p, const char* what) {
  if (!p) throw invalid(std::string(what) + " is NULL");
  return p;
}

inline std::string str_or(const char* s, const char* fallback) {
  return s ? std::string(s) : std::string(fallback);
}

// Reads a caller's size-prefixed options struct: fields past its struct_size keep `defaults`.
template <typename T>
T read_sized(const T* in, T defaults, const char* what) {
  if (!in) return defaults;
  if (in->struct_size < sizeof(std::size_t))
    throw invalid(std::string(what) + "->struct_size is " + std::to_string(in->struct_size) +
                  "; set it to sizeof(" + what + ") (or call its _init function)");
  std::memcpy(static_cast<void*>(&defaults), in, std::min(in->struct_size, sizeof(T)));
  defaults.struct_size = sizeof(T);
  return defaults;
}

// Fills a caller's size-prefixed info struct with `value`, up to the caller's struct_size.
template <typename T>
void write_sized(T* out, T value, const char* what) {
  require(out, what);
  const std::size_t n = out->struct_size;
  if (n < sizeof(std::size_t))
    throw invalid(std::string(what) + "->struct_size is " + std::to_string(n) +
                  "; set it to sizeof(" + what + ")");
  value.struct_size = n;
  std::memcpy(static_cast<void*>(out), &value, std::min(n, sizeof(T)));
}

// One array a handle exposes: what meshdock_array_info reports, and what keeps it alive.
struct Entry {
  std::string name;
  std::int32_t role = MESHDOCK_ROLE_POINTS;
  std::string key;
  std::int32_t block = -1;
  void* data = nullptr;
  DLDevice device{kDLCPU, 0};
  DLDataType dtype{0, 0, 1};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements, always filled
  std::uint64_t nbytes = 0;
  std::shared_ptr<const void> owner;  // a tensor of this entry holds a copy
};

class Table {
 public:
  void add(Entry e) { entries_.push_back(std::move(e)); }
  std::size_t size() const { return entries_.size(); }
  // Throws NOT_FOUND naming the index and `what` (the handle, for the message).
  const Entry& at(std::size_t i, const char* what) const;
  // Index of the first entry named `name`; NOT_FOUND naming it otherwise.
  std::size_t index(const char* name, const char* what) const;
  // Index of the first entry named `name`, or -1.
  std::int64_t find(std::string_view name) const;
  void info(std::size_t i, meshdock_array_info* out, const char* what) const;
  DLManagedTensorVersioned* dlpack(std::size_t i, const char* what) const;
  DLManagedTensor* dlpack_legacy(std::size_t i, const char* what) const;

 private:
  std::vector<Entry> entries_;
};

// The array getters every handle with a `table` member shares (meshdock_{frame,mesh,payload}_
// array, _array_index, _array_dlpack, _array_dlpack_legacy). `kind` names a NULL handle, `what`
// names the handle in messages ("slot 'box' frame 3", "mesh", ...).
template <typename H>
int array_info(const H* h, const char* kind, const char* what, std::size_t i,
               meshdock_array_info* info) noexcept {
  return guard([&] { require(h, kind)->table.info(i, info, what); });
}

template <typename H>
int array_index(const H* h, const char* kind, const char* what, const char* name,
                std::size_t* index) noexcept {
  return guard([&] {
    require(index, "index");
    *index = require(h, kind)->table.index(name, what);
  });
}

template <typename H>
int array_dlpack(const H* h, const char* kind, const char* what, std::size_t i,
                 DLManagedTensorVersioned** out) noexcept {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    *out = require(h, kind)->table.dlpack(i, what);
  });
}

template <typename H>
int array_dlpack_legacy(const H* h, const char* kind, const char* what, std::size_t i,
                        DLManagedTensor** out) noexcept {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    *out = require(h, kind)->table.dlpack_legacy(i, what);
  });
}

// A tensor over `e` in one allocation (tensor, owner, shape and strides together).
DLManagedTensorVersioned* make_versioned(const Entry& e);
DLManagedTensor* make_legacy(const Entry& e);

// Copies `text` into a malloc'd NUL-terminated string (meshdock_free releases it).
char* owned_string(const std::string& text);

}  // namespace meshdock::capi
