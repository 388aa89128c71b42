// Which accelerators answer on this host, asked at run time.
//
// The same binary runs with and without a GPU: built with the CUDA toolkit, cudart is linked
// statically and a missing driver simply reads as "no device". Never throws.
#pragma once

#include <string>
#include <vector>

namespace meshdock::backend {

struct CudaDevice {
  int id = 0;
  std::string name;
  unsigned long long total_memory = 0;
  int major = 0, minor = 0;
};

struct DeviceReport {
  bool built_with_cuda = false;  // the binary carries the CUDA backend
  std::string cuda_status;       // "ok", or why no device answered (cudart's error string)
  int runtime_version = 0;       // cudart this binary carries, e.g. 13000 (0 without CUDA)
  int driver_version = 0;        // newest CUDA the installed driver supports (0: no driver)
  std::vector<CudaDevice> devices;
};

DeviceReport probe_devices();

// True when at least one CUDA device answers.
bool has_cuda_device();

}  // namespace meshdock::backend
