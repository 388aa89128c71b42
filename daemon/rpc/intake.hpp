// Publishes taking in their data through gRPC, with their progress, so that one which reserved
// the incoming budget (max_decoded_size, shared by the publishes under way) and then stalls
// yields it to a caller that needs it. A header alone reserves the whole array: without this,
// one caller that opened a publish and sent nothing held the budget for as long as its stream
// stayed open, and every other publish was refused. A time limit alone would not do (the
// caller opens another); a publish is cancelled only when someone else needs the budget and it
// takes in its data slower than its rate after its first kStart: kMinRate, or for a big one
// want / kMaxHold (a caller that sent just over kMinRate held a gigabyte's reservation for
// a quarter of an hour; now a publish holds its bytes of the shared budget for about kMaxHold
// at most while others are refused).
#pragma once

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <vector>

namespace meshdock::rpc {

class Intake {
 public:
  static constexpr std::chrono::seconds kStart{2};
  static constexpr std::uint64_t kMinRate = 1 << 20;  // bytes per second, after kStart
  static constexpr std::chrono::seconds kMaxHold{30};

  // The rate (bytes per second, after kStart) below which a publish of `want` bytes is stalled.
  static double min_rate(std::uint64_t want);

  struct Progress {
    grpc::ServerContext* ctx;
    std::string who;  // the slot and field, and the caller, for the log
    std::uint64_t want;
    std::chrono::steady_clock::time_point started;
    std::atomic<std::uint64_t> got{0};
  };

  // A publish's place in the table while it takes in its data (move-only; leaves on
  // destruction, before its ServerContext goes).
  class Entry {
   public:
    Entry(Intake& in, std::list<Progress>::iterator it) : in_(&in), it_(it) {}
    Entry(Entry&& o) noexcept : in_(o.in_), it_(o.it_) { o.in_ = nullptr; }
    Entry& operator=(Entry&&) = delete;
    ~Entry();
    void took(std::uint64_t bytes) { it_->got.fetch_add(bytes, std::memory_order_relaxed); }

   private:
    Intake* in_;
    std::list<Progress>::iterator it_;
  };

  Entry enter(grpc::ServerContext* ctx, std::string who, std::uint64_t want);

  // Cancels every publish but `except`'s that is stalled at `now` (slower than min_rate past
  // kStart); returns a line to log for each.
  std::vector<std::string> cancel_stalled(const grpc::ServerContext* except,
                                          std::chrono::steady_clock::time_point now);

 private:
  std::mutex m_;
  std::list<Progress> open_;  // a list: an Entry's iterator stays valid as others come and go
};

}  // namespace meshdock::rpc
