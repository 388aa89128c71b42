// The message of the shm::ProtocolError a call throws, for the tests of the shared-memory
// validators (test_catalog.cpp, test_control_block.cpp): they check what it names.
#pragma once

#include <functional>
#include <string>

#include "meshdock/shm.hpp"

namespace meshdock::testing {

// "no error" where `f` throws nothing, so a check for the expected words fails on it too.
inline std::string protocol_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const shm::ProtocolError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace meshdock::testing
