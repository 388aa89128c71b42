// The C++ consumer of scripts/gpu-check: attaches with libmeshdock's C++ API, waits for one
// frame, and checks every array against the reference file the harness wrote (wsum64 of each
// array's bytes, gpucheck_common.py). A CUDA slot's arrays are copied back with cudaMemcpyAsync
// on a non-blocking stream that waits on the slot's IPC event (Frame::order_after_upload), then
// summed on the host. Prints one JSON line; exit 0 when the frame equals one reference file.
//
//   cpp_check NAME PREFIX REF.json LABEL[,LABEL...] [TIMEOUT_S]
//
// Built by scripts/gpu-check (or scripts/gpu-bundle) with c++ against the build tree's headers
// and libmeshdock.so.1; with -DGPU_CHECK_CUDA and cudart_static when a CUDA toolkit is there.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshdock/attach.hpp"

#if defined(GPU_CHECK_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

double monotonic() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string wsum64(const unsigned char* p, std::size_t n) {
  std::uint64_t s = 0;
  const std::size_t words = (n + 7) / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w = 0;  // little-endian word, zero-padded at the end
    const std::size_t take = std::min<std::size_t>(8, n - i * 8);
    std::memcpy(&w, p + i * 8, take);  // x86-64 and aarch64 are little-endian
    s += w * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(s));
  return buf;
}

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#if defined(GPU_CHECK_CUDA)
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failure(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

// The bytes of every array of the frame, on the host.
std::vector<std::pair<std::string, std::vector<unsigned char>>> host_bytes(
    const meshdock::Frame& f) {
  std::vector<std::pair<std::string, std::vector<unsigned char>>> out;
  const auto names = f.names();
  if (f.device_type() != 2) {
    for (const auto& name : names) {
      const auto a = f.array(name);
      const auto* p = static_cast<const unsigned char*>(a.data);
      out.emplace_back(name, std::vector<unsigned char>(p, p + a.entry.nbytes));
    }
    return out;
  }
#if defined(GPU_CHECK_CUDA)
  cuda_check(cudaSetDevice(f.device_id()), "cudaSetDevice");
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  // DLPack stream semantics: s waits on the slot's interprocess event; no host sync before
  // the copies. (GPU_CHECK_SKIP_ORDER=1: the negative control of tests/unit/test_fake_cuda.cpp,
  // which must then read a frame still being copied.)
  const char* skip = std::getenv("GPU_CHECK_SKIP_ORDER");
  if (!skip || std::string(skip) != "1") f.order_after_upload(reinterpret_cast<std::uintptr_t>(s));
  for (const auto& name : names) {
    const auto a = f.array(name);
    std::vector<unsigned char> h(a.entry.nbytes);
    if (!h.empty())
      cuda_check(cudaMemcpyAsync(h.data(), a.data, h.size(), cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
    out.emplace_back(name, std::move(h));
  }
  cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  cuda_check(cudaStreamDestroy(s), "cudaStreamDestroy");
  return out;
#else
  throw Failure("the slot is CUDA memory and cpp_check was built without a CUDA toolkit");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: cpp_check NAME PREFIX REF.json LABEL[,LABEL...] [TIMEOUT_S]\n");
    return 2;
  }
  nlohmann::json out = {{"event", "verified"}, {"lib", "cpp"}, {"ok", false}};
#if defined(GPU_CHECK_CUDA)
  out["built_with_cuda"] = true;
#else
  out["built_with_cuda"] = false;
#endif
  int rc = 1;
  try {
    std::ifstream in(argv[3]);
    if (!in) throw Failure(std::string("cannot read ") + argv[3]);
    const auto ref = nlohmann::json::parse(in);
    std::vector<std::string> labels;
    std::stringstream ls(argv[4]);
    for (std::string l; std::getline(ls, l, ',');) labels.push_back(l);
    const double timeout = argc > 5 ? std::atof(argv[5]) : 30.0;

    meshdock::AttachOptions o;
    o.prefix = argv[2];
    o.timeout = std::chrono::milliseconds(static_cast<long>(timeout * 1000));
    auto slot = meshdock::Slot::attach(argv[1], o);
    auto frame = slot.wait(o.timeout);
    if (!frame) throw Failure("no frame within the timeout");
    const double t_wake = monotonic();
    const auto bytes = host_bytes(*frame);
    std::map<std::string, std::string> sums;
    for (const auto& [name, b] : bytes) sums[name] = wsum64(b.data(), b.size());
    const double t_checked = monotonic();

    std::string matched;
    std::vector<std::string> best;
    for (const auto& label : labels) {
      std::vector<std::string> bad;
      const auto& arrays = ref.at("files").at(label).at("arrays");
      std::set<std::string> want;
      for (const auto& [k, v] : arrays.items()) {
        want.insert(k);
        auto it = sums.find(k);
        if (it == sums.end() || it->second != v.at("wsum").get<std::string>())
          bad.push_back(label + ": " + k);
      }
      for (const auto& [k, _] : sums)
        if (!want.count(k)) bad.push_back(label + ": extra " + k);
      if (bad.empty()) {
        matched = label;
        break;
      }
      if (best.empty() || bad.size() < best.size()) best = bad;
    }
    if (best.size() > 8) best.resize(8);
    out["frame"] = frame->number();
    out["device"] = {frame->device_type(), frame->device_id()};
    out["arrays"] = sums.size();
    out["t_wake"] = t_wake;
    out["check_s"] = t_checked - t_wake;
    out["publish_time"] = slot.publish_time();
    out["matched"] = matched.empty() ? nlohmann::json() : nlohmann::json(matched);
    out["mismatches"] = matched.empty() ? best : std::vector<std::string>{};
    out["ok"] = !matched.empty();
    rc = matched.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    out["event"] = "error";
    out["error"] = e.what();
  }
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  return rc;
}
