// meshdockd entry point.
//
// This build carries the shared-memory protocol and device detection; the gRPC service, slots
// and backends land with issue 5. Until then the binary answers --version and --probe-device
// truthfully and refuses to pretend to serve.
#include <cstdio>
#include <cstring>
#include <string>

#include "daemon/backend/device_probe.hpp"
#include "meshdock/shm.hpp"

namespace {

constexpr const char* kVersion = "0.1.0";

int usage(std::FILE* out) {
  std::fprintf(out,
               "usage: meshdockd [--config FILE] [--listen unix:PATH|HOST:PORT] [--root DIR]...\n"
               "                 [--prefix P] [--slots N] [--device auto|cpu|cuda:N]\n"
               "                 [--log-level L]\n"
               "       meshdockd --version | --probe-device\n");
  return out == stderr ? 2 : 0;
}

int probe() {
  const auto r = meshdock::backend::probe_devices();
  std::printf("cuda backend: %s\n", r.built_with_cuda ? "built in" : "not built");
  std::printf("cuda status: %s\n", r.cuda_status.c_str());
  for (const auto& d : r.devices) {
    std::printf("cuda:%d %s (sm_%d%d, %.1f GiB)\n", d.id, d.name.c_str(), d.major, d.minor,
                static_cast<double>(d.total_memory) / (1ull << 30));
  }
  std::printf("default device: %s\n", r.devices.empty() ? "cpu (host backend)" : "cuda:0");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::printf("meshdockd %s (shm protocol: cuda-link CIPD v0.5.0, catalog layout %u)\n",
                  kVersion, meshdock::shm::kCatalogLayoutVersion);
      return 0;
    }
    if (!std::strcmp(argv[i], "--probe-device")) return probe();
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return usage(stdout);
  }
  std::fprintf(stderr,
               "meshdockd: the control plane is not built yet (tracked in issue 5); this build "
               "answers --version and --probe-device only\n");
  return usage(stderr);
}
