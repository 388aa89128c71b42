// A C++ consumer that hands slot arrays to libtorch without a copy (at::fromDLPack). Built
// when CMake finds Torch (Debian: apt-get install libtorch-dev).
//
//   build/bin/torch_consumer NAME [--prefix P]
#include <ATen/DLConvertor.h>
#include <torch/torch.h>

#include <iostream>

#include "meshdock/attach.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: torch_consumer NAME [--prefix P]\n";
    return 2;
  }
  meshdock::AttachOptions o;
  if (argc >= 4 && std::string(argv[2]) == "--prefix") o.prefix = argv[3];
  auto slot = meshdock::Slot::attach(argv[1], o);
  auto frame = slot.wait(std::chrono::seconds(5));
  if (!frame) return 3;
  at::Tensor points = at::fromDLPack(frame->to_dlpack("points"));  // the deleter ends the lease
  std::cout << "frame " << frame->number() << " points " << points.sizes() << " centroid "
            << points.mean(0) << std::endl;
  return 0;
}
