// A C++ consumer with libmeshdock alone: attach, wait for frames, print each array's name,
// dtype, shape and a checksum (sum of its values as doubles) as one JSON object per frame.
//
//   build/bin/cpp_consumer NAME [--prefix P] [--frames N] [--timeout SECONDS]
//
// The integration tests compare its output with the file read in process.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "meshdock/attach.hpp"

namespace {

double checksum(const meshdock::ArrayRef& a) {
  const auto& d = a.entry.dtype;
  const auto* p = static_cast<const unsigned char*>(a.data);
  const std::size_t item = d.bits / 8, n = a.entry.nbytes / item;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto* v = p + i * item;
    if (d.code == 2 && d.bits == 64) {
      double x;
      std::memcpy(&x, v, 8);
      sum += x;
    } else if (d.code == 2 && d.bits == 32) {
      float x;
      std::memcpy(&x, v, 4);
      sum += x;
    } else if (d.code == 0 && d.bits == 64) {
      std::int64_t x;
      std::memcpy(&x, v, 8);
      sum += static_cast<double>(x);
    } else if (d.code == 0 && d.bits == 32) {
      std::int32_t x;
      std::memcpy(&x, v, 4);
      sum += x;
    }
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "usage: cpp_consumer NAME [--prefix P] [--frames N] [--timeout S]\n";
  if (argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (argc < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  meshdock::AttachOptions o;
  int frames = 1;
  double timeout = 5;
  for (int i = 2; i < argc; i += 2) {
    const std::string k = argv[i];
    if ((k != "--prefix" && k != "--frames" && k != "--timeout") || i + 1 == argc) {
      // A typo (--frame 3) must not be dropped and the defaults run silently.
      std::fprintf(stderr, "cpp_consumer: %s '%s'\n%s",
                   i + 1 == argc ? "no value after" : "unknown option", k.c_str(), usage);
      return 2;
    }
    if (k == "--prefix") o.prefix = argv[i + 1];
    if (k == "--frames") frames = std::atoi(argv[i + 1]);
    if (k == "--timeout") timeout = std::atof(argv[i + 1]);
  }
  o.timeout = std::chrono::milliseconds(static_cast<long>(timeout * 1000));
  try {
    auto slot = meshdock::Slot::attach(argv[1], o);
    for (int f = 0; f < frames; ++f) {
      auto frame = slot.wait(o.timeout);
      if (!frame) {
        std::fprintf(stderr, "cpp_consumer: no frame within %.1f s\n", timeout);
        return 3;
      }
      nlohmann::json out = {{"frame", frame->number()}, {"arrays", nlohmann::json::object()}};
      for (const auto& name : frame->names()) {
        const auto a = frame->array(name);
        out["arrays"][name] = {{"dtype", {a.entry.dtype.code, a.entry.dtype.bits}},
                               {"shape", a.entry.shape},
                               {"sum", checksum(a)}};
      }
      // Also exercise the DLPack path: the tensor keeps the frame alive after `frame` goes. A
      // mesh's points, or a standalone array's "tensor" (publish_tensor: no mesh, no points).
      const auto names = frame->names();
      const bool mesh = std::find(names.begin(), names.end(), "points") != names.end();
      const std::string adopt = mesh ? "points" : "tensor";
      DLManagedTensor* t = frame->to_dlpack(adopt);
      frame.reset();
      out["dlpack_" + adopt + "_ndim"] = t->dl_tensor.ndim;
      t->deleter(t);
      std::printf("%s\n", out.dump().c_str());
      std::fflush(stdout);
    }
  } catch (const meshdock::SdkError& e) {
    std::fprintf(stderr, "cpp_consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
