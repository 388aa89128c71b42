// A C++ producer with meshdock::Producer (meshdock/producer.hpp, header-only over
// libmeshdock_producer): streams FRAMES frames of a double field into meshdockd, as a C++ solver
// would each step.
//
//   cpp_producer [--frames N] NAME FIELD ROWS [COLS]
//
// FIELD is "point_data/NAME" or "cell_data/NAME" of the loaded mesh NAME (ROWS: its points or
// cells), or "tensor" (a slot of its own, on the host). Frame k holds k * 1000 + row + col / 4 at
// (row, col), as clients/examples/c_producer.c writes. Prints "frame F" per publish; on failure
// the status and the daemon's words, exit status 1. meshdockd's address: $MESHDOCK_ADDR, else the
// system socket.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "meshdock/producer.hpp"

namespace {

int usage() {
  std::fputs("usage: cpp_producer [--frames N] NAME FIELD ROWS [COLS]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 1;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--frames" && i + 1 < argc)
      frames = std::atoi(argv[++i]);
    else if (a.empty() || a[0] == '-' || pos.size() == 4)
      return usage();
    else
      pos.push_back(a);
  }
  if (pos.size() < 3 || frames < 1) return usage();
  const std::int64_t rows = std::atoll(pos[2].c_str());
  const std::int64_t cols = pos.size() == 4 ? std::atoll(pos[3].c_str()) : 1;
  if (rows < 1 || cols < 1) return usage();
  std::vector<std::int64_t> shape{rows};
  if (pos.size() == 4) shape.push_back(cols);
  const char* doing = "open";
  try {
    meshdock::Producer p;
    doing = "publish";
    std::vector<double> a(static_cast<std::size_t>(rows * cols));
    for (int k = 0; k < frames; ++k) {
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          a[static_cast<std::size_t>(r * cols + c)] = k * 1000.0 + r + c / 4.0;
      const auto frame = pos[1] == "tensor" ? p.publish_tensor(pos[0], a.data(), shape, "cpu")
                                            : p.publish(pos[0], pos[1], a.data(), shape);
      std::printf("frame %u\n", frame);
      std::fflush(stdout);
    }
  } catch (const meshdock::ProducerError& e) {
    std::fprintf(stderr, "cpp_producer: %s: %s: %s\n", doing, e.status_name(), e.what());
    return 1;
  }
  return 0;
}
