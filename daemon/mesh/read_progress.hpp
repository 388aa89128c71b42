// How far a reader has got through its file, for a caller that shows progress or wants to stop
// a long read. A reader's cursors store the furthest byte they have parsed into it every
// kEvery bytes (a compare per value in between, an atomic store per MiB); the caller samples
// it from another thread, so a slow progress consumer never slows the parse. The caller may
// also ask the read to stop: the next store throws ReadError.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

class ReadProgress {
 public:
  // Bytes between two reports: often enough for a bar to move on a 10 MB file, rare enough
  // to cost nothing measurable.
  static constexpr std::uint64_t kEvery = std::uint64_t{1} << 20;

  // The furthest byte offset any of the reader's cursors has reached (monotonic; pieces parsed
  // in parallel report the furthest of them).
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  // Asks the reader to stop at its next report (any thread).
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Called by readers: records `offset`; throws ReadError naming `file` once cancel() was asked.
  void reached(std::uint64_t offset, const std::string& file) {
    if (cancelled()) throw ReadError(file + ": read stopped by its caller at byte " +
                                     std::to_string(offset));
    std::uint64_t seen = bytes_.load(std::memory_order_relaxed);
    while (offset > seen &&
           !bytes_.compare_exchange_weak(seen, offset, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace meshdock::mesh
