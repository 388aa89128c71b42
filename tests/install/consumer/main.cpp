// A program outside the meshdock tree, built only against an installed meshdock (headers,
// libmeshdock.so, and meshdockConfig.cmake or meshdock.pc): tests/install/install_consumer.sh
// builds it both ways and runs it. It calls into libmeshdock.so (inspect_slot, Slot::attach)
// for a slot nobody publishes and checks the errors it gets back.
#include <unistd.h>
#include <meshdock/attach.hpp>
#include <meshdock/dlpack_tensor.hpp>
#include <meshdock/error.hpp>
#include <meshdock/inspect.hpp>
#include <meshdock/shm.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main() {
  const std::string name = "install-consumer-" + std::to_string(::getpid());
  try {
    meshdock::inspect_slot(name);
    std::printf("FAIL: inspect_slot('%s') found a slot nobody published\n", name.c_str());
    return 1;
  } catch (const meshdock::SdkError& e) {
    if (std::string(e.what()).find(name) == std::string::npos) {
      std::printf("FAIL: the error does not name the slot: %s\n", e.what());
      return 1;
    }
  }
  meshdock::AttachOptions o;
  o.timeout = std::chrono::milliseconds(0);
  try {
    meshdock::Slot::attach(name, o);
    std::printf("FAIL: attached to '%s'\n", name.c_str());
    return 1;
  } catch (const meshdock::AttachTimeout& e) {
    std::printf("ok: libmeshdock answered (%s); protocol slots %u..%u\n", e.what(),
                meshdock::shm::kMinSlots, meshdock::shm::kMaxSlots);
  }
  return 0;
}
