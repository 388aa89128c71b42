// The SDK layer's exception types: attach, wait and inspect failures, with the segment named.
// ProducerGone and AttachTimeout are SdkErrors a consumer may want to tell apart (re-attach
// after the one, keep waiting after the other).
#pragma once

#include <stdexcept>
#include <string>

namespace meshdock {

class SdkError : public std::runtime_error {
 public:
  explicit SdkError(const std::string& what) : std::runtime_error(what) {}
};

// The producer set the shutdown flag, or its heartbeat stopped (killed).
class ProducerGone : public SdkError {
 public:
  explicit ProducerGone(const std::string& what) : SdkError(what) {}
};

// The slot did not appear (or publish) within the attach timeout.
class AttachTimeout : public SdkError {
 public:
  explicit AttachTimeout(const std::string& what) : SdkError(what) {}
};

}  // namespace meshdock
