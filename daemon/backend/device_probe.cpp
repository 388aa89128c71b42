#include "daemon/backend/device_probe.hpp"

#include <string>

#if defined(MESHDOCK_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace meshdock::backend {

#if defined(MESHDOCK_HAVE_CUDA)
namespace {
// 12040 -> "12.4"
std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
}  // namespace
#endif

DeviceReport probe_devices() {
  DeviceReport r;
#if defined(MESHDOCK_HAVE_CUDA)
  r.built_with_cuda = true;
  cudaRuntimeGetVersion(&r.runtime_version);
  if (cudaDriverGetVersion(&r.driver_version) != cudaSuccess) r.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // cudart says "CUDA driver version is insufficient" both when there is no driver at all
    // (driver version 0: libcuda.so.1 absent) and when it is too old: tell them apart.
    if (err == cudaErrorInsufficientDriver && r.driver_version == 0)
      r.cuda_status = "no NVIDIA driver (libcuda.so.1 is not installed or not loadable)";
    else if (err == cudaErrorInsufficientDriver)
      r.cuda_status = "the NVIDIA driver supports CUDA " + cuda_version(r.driver_version) +
                      ", this build needs " + cuda_version(r.runtime_version) +
                      " or newer: update the driver";
    else if (err == cudaErrorNoDevice)
      r.cuda_status = "no CUDA device";
    else
      r.cuda_status = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return r;
  }
  r.cuda_status = "ok";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    r.devices.push_back(CudaDevice{i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
  }
  if (r.devices.empty()) r.cuda_status = "no CUDA device";
#else
  r.cuda_status = "built without CUDA (MESHDOCK_WITH_CUDA=OFF or no toolkit)";
#endif
  return r;
}

bool has_cuda_device() {
  return !probe_devices().devices.empty();
}

}  // namespace meshdock::backend
