// The SDK layer's exception types: attach, wait and inspect failures, with the segment named.
// ProducerGone and AttachTimeout are SdkErrors a consumer may want to tell apart (re-attach
// after the one, keep waiting after the other); the others say why attach refused a segment,
// or that the caller's interrupt hook asked to stop.
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

// AttachOptions::interrupt said stop (Python: a pending KeyboardInterrupt). Nothing is held.
class Interrupted : public SdkError {
 public:
  explicit Interrupted(const std::string& what) : SdkError(what) {}
};

// A segment of the slot belongs to a uid the SDK does not trust (a squatter): its bytes are
// never read. The message names the segment, its owner, mode, and which uids are trusted.
class UntrustedSegment : public SdkError {
 public:
  explicit UntrustedSegment(const std::string& what) : SdkError(what) {}
};

// This process may not open a segment (EACCES): the message names the segment, its mode,
// owner and the group to join.
class SegmentAccessDenied : public SdkError {
 public:
  explicit SegmentAccessDenied(const std::string& what) : SdkError(what) {}
};

}  // namespace meshdock
