// DLPack export and import of payload arrays. An exported DLManagedTensor shares ownership of
// the Array's Buffer: the memory lives until the consumer calls the deleter (exactly once),
// even if the Mesh and the payload are gone. No copies either way.
#pragma once

#include <dlpack/dlpack.h>

#include <string>

#include "daemon/payload/payload.hpp"

namespace meshdock::payload {

// DLPack 0.8's bool type code; the dlpack.h Debian ships (0.6) predates it.
inline constexpr std::uint8_t kDLBoolCode = 6;

// The DLDataType of `a`: int8..64, uint8..64, float16/32/64, bfloat16, bool. Anything else
// throws PayloadError naming `name`.
DLDataType dlpack_dtype(const Array& a, const std::string& name);

// A DLManagedTensor viewing `a` (C-contiguous; shape and strides filled) on `device`.
DLManagedTensor* to_dlpack(const Array& a, Device device, const std::string& name);

// Adopts a host DLManagedTensor (kDLCPU or kDLCUDAHost, C-contiguous, byte_offset honoured)
// as an Array without a copy; the tensor's deleter runs when the last Array using it is gone.
// Throws PayloadError naming `name` (and calls the deleter) when it cannot be adopted.
Array from_dlpack(DLManagedTensor* t, const std::string& name);

}  // namespace meshdock::payload
