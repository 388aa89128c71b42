// The C++ consumer of scripts/gpu-check: attaches with libmeshdock's C++ API, waits for one
// frame, and checks every array against the reference file the harness wrote (wsum64 of each
// array's bytes, gpucheck_common.py). A CUDA slot's arrays are copied back with cudaMemcpyAsync
// on a non-blocking stream that waits on the slot's IPC event (Frame::order_after_upload), then
// summed on the host. Prints one JSON line; exit 0 when the frame equals one reference file.
//
//   cpp_check NAME PREFIX REF.json LABEL[,LABEL...] [TIMEOUT_S]
//
// A late reader (GPU_CHECK_LATE_MS=N): the copies wait behind N ms of other work queued on the
// stream first (a host function standing in for a long kernel), land in pinned memory, and the
// frame is dropped as soon as they are queued, as a framework drops a tensor whose kernels are
// still queued; a {"event": "queued"} line says so before the sums. GPU_CHECK_STREAM picks the
// stream: "own" (a non-blocking one, the default) or "per-thread" (cudaStreamPerThread, with
// the frame then dropped on another thread, as a garbage collector would). The lease must
// outlast that work (Frame::order_after_upload): a republish meanwhile gets a fresh buffer.
//
// Built by scripts/gpu-check (or scripts/gpu-bundle) with c++ against the build tree's headers
// and libmeshdock.so.1; with -DGPU_CHECK_CUDA and cudart_static when a CUDA toolkit is there.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshdock/attach.hpp"
#include "wsum64.hpp"

#if defined(GPU_CHECK_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

double monotonic() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#if defined(GPU_CHECK_CUDA)
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failure(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

#if defined(GPU_CHECK_CUDA)
void CUDART_CB sleep_ms(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<long*>(ms)));
}
#endif

// The bytes of every array of the frame, on the host. A late reader (see the top) drops the
// frame (`frame` reset) once its copies are queued.
std::vector<std::pair<std::string, std::vector<unsigned char>>> host_bytes(
    [[maybe_unused]] meshdock::Slot& slot, std::optional<meshdock::Frame>& frame) {
  const meshdock::Frame& f = *frame;
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
  long late_ms = std::atol(env_or("GPU_CHECK_LATE_MS", "0").c_str());
  const std::string which = env_or("GPU_CHECK_STREAM", "own");
  if (which != "own" && which != "per-thread") throw Failure("GPU_CHECK_STREAM: " + which);
  const bool per_thread = which == "per-thread";
  cudaStream_t s = cudaStreamPerThread;
  if (!per_thread)
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  // DLPack stream semantics: s waits on the slot's interprocess event; no host sync before
  // the copies. (GPU_CHECK_SKIP_ORDER=1: the negative control of tests/unit/test_fake_cuda.cpp,
  // which must then read a frame still being copied.)
  if (env_or("GPU_CHECK_SKIP_ORDER", "0") != "1")
    f.order_after_upload(per_thread ? meshdock::DeviceIpc::kPerThreadStream
                                    : reinterpret_cast<std::uintptr_t>(s));
  if (late_ms > 0) cuda_check(cudaLaunchHostFunc(s, sleep_ms, &late_ms), "cudaLaunchHostFunc");
  std::vector<void*> pinned;  // where each array's copy lands (a late reader: pinned memory)
  for (const auto& name : names) {
    const auto a = f.array(name);
    std::vector<unsigned char> h(a.entry.nbytes);
    void* to = h.data();
    if (late_ms > 0 && !h.empty()) {
      cuda_check(cudaHostAlloc(&to, h.size(), cudaHostAllocDefault), "cudaHostAlloc");
    }
    pinned.push_back(to == h.data() ? nullptr : to);
    if (!h.empty())
      cuda_check(cudaMemcpyAsync(to, a.data, h.size(), cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
    out.emplace_back(name, std::move(h));
  }
  if (late_ms > 0) {
    cudaEvent_t copied = nullptr;
    cuda_check(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventRecord(copied, s), "cudaEventRecord");
    const auto number = f.number();
    if (per_thread)  // ended where the per-thread stream that ordered it cannot be named
      std::thread([&frame] { frame.reset(); }).join();
    else
      frame.reset();
    std::printf("%s\n", nlohmann::json{{"event", "queued"}, {"frame", number}}.dump().c_str());
    std::fflush(stdout);
    // Meanwhile a consumer's loop goes on: each look lets the ended frames whose streams are
    // done give their leases back (and the frames it takes are dropped at once).
    cudaError_t state;
    while ((state = cudaEventQuery(copied)) == cudaErrorNotReady)
      slot.wait(std::chrono::milliseconds(20));
    cuda_check(state, "cudaEventQuery");
    cuda_check(cudaEventDestroy(copied), "cudaEventDestroy");
  }
  cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!pinned[i]) continue;
    std::memcpy(out[i].second.data(), pinned[i], out[i].second.size());
    cuda_check(cudaFreeHost(pinned[i]), "cudaFreeHost");
  }
  if (!per_thread) cuda_check(cudaStreamDestroy(s), "cudaStreamDestroy");
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
    const auto number = frame->number();
    const auto device = nlohmann::json{frame->device_type(), frame->device_id()};
    const auto bytes = host_bytes(slot, frame);
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
    out["frame"] = number;
    out["device"] = device;
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
