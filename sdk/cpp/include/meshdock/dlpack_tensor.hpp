// make_dlpack: a DLManagedTensor over memory someone else owns, with the shape and strides it
// advertises and an owner (any copyable handle: shared_ptr, Array, ...) kept alive until the
// consumer calls the deleter. Header-only; shared by the daemon's payload export and
// libmeshdock's frame export.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace meshdock {

// C-contiguous strides (in elements) for `shape`.
inline std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    strides[k] = s;
    s *= shape[k];
  }
  return strides;
}

// `strides` empty: C-contiguous.
template <typename Owner>
DLManagedTensor* make_dlpack(void* data, DLDevice device, DLDataType dtype,
                             std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                             Owner owner) {
  struct Holder {
    DLManagedTensor tensor{};
    std::vector<std::int64_t> shape, strides;
    Owner owner;
  };
  auto h =
      std::make_unique<Holder>(Holder{{}, std::move(shape), std::move(strides), std::move(owner)});
  if (h->strides.empty()) h->strides = contiguous_strides(h->shape);
  auto& t = h->tensor.dl_tensor;
  t.data = data;
  t.device = device;
  t.ndim = static_cast<std::int32_t>(h->shape.size());
  t.dtype = dtype;
  t.shape = h->shape.data();
  t.strides = h->strides.data();
  t.byte_offset = 0;
  h->tensor.manager_ctx = h.get();
  h->tensor.deleter = [](DLManagedTensor* self) {
    std::unique_ptr<Holder> owned(static_cast<Holder*>(self->manager_ctx));
  };
  return &h.release()->tensor;
}

}  // namespace meshdock
