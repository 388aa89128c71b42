// Watch events: every subscriber gets its own queue of the events it asked for (one mesh's, or
// all); publishers never block on slow readers. A queue past kMaxQueued drops its oldest event,
// and the next event the subscriber takes says how many it lost before it (Event::dropped), so
// a watcher that reads too slowly is told, never silently left behind.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace meshdock::service {

struct Event {
  enum Kind { kLoaded = 1, kReloaded, kPublished, kUnloaded, kLoadFailed, kShutdown };
  Kind kind;
  std::string name;
  std::uint32_t frame = 0;
  std::string message;
  double timestamp = 0;
  // Events of this subscription dropped just before this one (set by Subscription::next).
  std::uint64_t dropped = 0;
};

class EventBus {
 public:
  static constexpr std::size_t kMaxQueued = 1024;

  class Subscription {
   public:
    // Only `name`'s events and SHUTDOWN; every event when `name` is empty.
    explicit Subscription(std::string name) : name_(std::move(name)) {}

    // The next event, or nullopt after `timeout` (callers poll their own cancellation). Its
    // `dropped` counts the events lost since the last one taken.
    std::optional<Event> next(std::chrono::milliseconds timeout) {
      std::unique_lock lock(m_);
      cv_.wait_for(lock, timeout, [&] { return !q_.empty(); });
      if (q_.empty()) return std::nullopt;
      Event e = std::move(q_.front());
      q_.pop_front();
      e.dropped = std::exchange(unreported_, 0);
      return e;
    }
    // Every event this subscription lost, reported or not.
    std::uint64_t dropped() const {
      std::lock_guard lock(m_);
      return dropped_;
    }

   private:
    friend class EventBus;
    bool wants(const Event& e) const {
      return name_.empty() || e.name == name_ || e.kind == Event::kShutdown;
    }
    void push(const Event& e) {
      if (!wants(e)) return;
      {
        std::lock_guard lock(m_);
        if (q_.size() >= kMaxQueued) {
          q_.pop_front();
          ++dropped_;
          ++unreported_;
        }
        q_.push_back(e);
      }
      cv_.notify_one();
    }
    const std::string name_;
    mutable std::mutex m_;
    std::condition_variable cv_;
    std::deque<Event> q_;
    std::uint64_t dropped_ = 0;
    std::uint64_t unreported_ = 0;
  };

  std::shared_ptr<Subscription> subscribe(std::string name = {}) {
    auto s = std::make_shared<Subscription>(std::move(name));
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
