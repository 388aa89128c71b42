#include "daemon/backend/device_probe.hpp"

#if defined(MESHDOCK_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace meshdock::backend {

DeviceReport probe_devices() {
  DeviceReport r;
#if defined(MESHDOCK_HAVE_CUDA)
  r.built_with_cuda = true;
  cudaRuntimeGetVersion(&r.runtime_version);
  if (cudaDriverGetVersion(&r.driver_version) != cudaSuccess) r.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
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
