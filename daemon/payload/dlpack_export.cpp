#include "daemon/payload/dlpack_export.hpp"

#include "meshdock/dlpack_tensor.hpp"

#include <memory>
#include <vector>

namespace meshdock::payload {

namespace {

bool supported(DLDataType t) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLInt:
    case kDLUInt:
      return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLFloat:
      return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat:
      return t.bits == 16;
    case kDLBoolCode:
      return t.bits == 8;
    default:
      return false;
  }
}

std::string describe(DLDataType t) {
  return "(code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits, " +
         std::to_string(t.lanes) + " lanes)";
}

}  // namespace

DLDataType dlpack_dtype(const Array& a, const std::string& name) {
  const DLDataType t{a.dtype().code, a.dtype().bits, a.dtype().lanes};
  if (!supported(t))
    throw PayloadError(
        name + ": dtype " + describe(t) +
        " has no DLPack mapping (int8..64, uint8..64, float16/32/64, bfloat16, bool)");
  return t;
}

DLManagedTensor* to_dlpack(const Array& a, Device device, const std::string& name) {
  return make_dlpack(a.data(), DLDevice{static_cast<DLDeviceType>(device.type), device.id},
                     dlpack_dtype(a, name), a.shape(), {}, a);  // the Array keeps the Buffer
}

Array from_dlpack(DLManagedTensor* t, const std::string& name) {
  struct Deleter {
    void operator()(DLManagedTensor* p) const {
      if (p && p->deleter) p->deleter(p);
    }
  };
  std::unique_ptr<DLManagedTensor, Deleter> owned(t);  // deleted on every error path
  if (!t) throw PayloadError(name + ": null DLPack tensor");
  const auto& d = t->dl_tensor;
  if (d.device.device_type != kDLCPU && d.device.device_type != kDLCUDAHost)
    throw PayloadError(name + ": DLPack device type " + std::to_string(d.device.device_type) +
                       " is not host memory; copy it to the host first");
  dlpack_dtype(Array::view(nullptr, {d.dtype.code, d.dtype.bits, d.dtype.lanes}, {}), name);
  std::vector<std::int64_t> shape(d.shape, d.shape + d.ndim);
  if (d.strides) {
    std::int64_t stride = 1;
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (shape[k] != 1 && d.strides[k] != stride)
        throw PayloadError(name + ": DLPack tensor is not C-contiguous");
      stride *= shape[k];
    }
  }
  const Array probe = Array::view(nullptr, {d.dtype.code, d.dtype.bits, d.dtype.lanes}, shape);
  mesh::Allocator release;
  release.ctx = owned.get();
  release.name = "dlpack";
  release.release = [](void*, std::size_t, void* ctx) {
    auto* p = static_cast<DLManagedTensor*>(ctx);
    if (p->deleter) p->deleter(p);
  };
  auto* data = static_cast<std::uint8_t*>(d.data) + d.byte_offset;
  auto buffer = mesh::Buffer::adopt(data, probe.nbytes(), release);
  owned.release();  // the Buffer calls the deleter from now on
  return Array::view(std::move(buffer), probe.dtype(), std::move(shape));
}

}  // namespace meshdock::payload
