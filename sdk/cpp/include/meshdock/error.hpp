// The SDK layer's exception type: attach, wait and inspect failures, with the segment named.
#pragma once

#include <stdexcept>
#include <string>

namespace meshdock {

class SdkError : public std::runtime_error {
 public:
  explicit SdkError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace meshdock
