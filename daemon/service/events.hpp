// Watch events: every subscriber gets its own queue; publishers never block on slow readers
// (a queue past kMaxQueued drops its oldest event and counts it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace meshdock::service {

struct Event {
  enum Kind { kLoaded = 1, kReloaded, kPublished, kUnloaded, kLoadFailed, kShutdown };
  Kind kind;
  std::string name;
  std::uint32_t frame = 0;
  std::string message;
  double timestamp = 0;
};

class EventBus {
 public:
  static constexpr std::size_t kMaxQueued = 1024;

  class Subscription {
   public:
    // The next event, or nullopt after `timeout` (callers poll their own cancellation).
    std::optional<Event> next(std::chrono::milliseconds timeout) {
      std::unique_lock lock(m_);
      cv_.wait_for(lock, timeout, [&] { return !q_.empty(); });
      if (q_.empty()) return std::nullopt;
      Event e = std::move(q_.front());
      q_.pop_front();
      return e;
    }
    std::size_t dropped() const { return dropped_; }

   private:
    friend class EventBus;
    void push(const Event& e) {
      {
        std::lock_guard lock(m_);
        if (q_.size() >= kMaxQueued) {
          q_.pop_front();
          ++dropped_;
        }
        q_.push_back(e);
      }
      cv_.notify_one();
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<Event> q_;
    std::size_t dropped_ = 0;
  };

  std::shared_ptr<Subscription> subscribe() {
    auto s = std::make_shared<Subscription>();
    std::lock_guard lock(m_);
    subs_.push_back(s);
    return s;
  }

  void publish(const Event& e) {
    std::lock_guard lock(m_);
    std::erase_if(subs_, [](const std::weak_ptr<Subscription>& w) { return w.expired(); });
    for (auto& w : subs_)
      if (auto s = w.lock()) s->push(e);
  }

 private:
  std::mutex m_;
  std::vector<std::weak_ptr<Subscription>> subs_;
};

}  // namespace meshdock::service
