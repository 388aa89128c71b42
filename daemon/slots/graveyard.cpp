#include "daemon/slots/graveyard.hpp"

#include <algorithm>
#include <utility>

namespace meshdock::slots {

void Graveyard::bury(const std::string& name,
                     std::vector<std::unique_ptr<backend::SlotBuffer>> buffers,
                     std::uint64_t now_ns, std::chrono::nanoseconds quiet) {
  const auto until = now_ns + static_cast<std::uint64_t>(std::max<std::int64_t>(quiet.count(), 0));
  std::lock_guard lock(m_);
  for (auto& b : buffers)
    if (b) graves_.push_back({name, std::move(b), now_ns, until});
}

std::vector<std::string> Graveyard::tend(std::uint64_t now_ns, bool end_quiet) {
  std::vector<std::unique_ptr<backend::SlotBuffer>> freed;  // freed after the lock
  std::vector<std::string> notes;
  {
    std::lock_guard lock(m_);
    if (graves_.empty()) return notes;
    consumers_->drain();  // a close sent before now counts
    const auto grace = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(kGrace).count());
    std::vector<Grave> kept;
    for (auto& g : graves_) {
      if (!consumers_->reported_open(g.buffer->mem_handle())) {
        if (!end_quiet && now_ns < g.quiet_until_ns)
          kept.push_back(std::move(g));
        else
          freed.push_back(std::move(g.buffer));
      } else if (now_ns - g.buried_ns >= grace) {
        notes.push_back("unloaded slot '" + g.name + "': freed a buffer of " +
                        std::to_string(g.buffer->size()) +
                        " bytes a consumer still reports open, " + std::to_string(kGrace.count()) +
                        " s after the unload");
        freed.push_back(std::move(g.buffer));
      } else {
        kept.push_back(std::move(g));
      }
    }
    graves_ = std::move(kept);
  }
  return notes;
}

std::size_t Graveyard::buffers() const {
  std::lock_guard lock(m_);
  return graves_.size();
}

std::uint64_t Graveyard::bytes() const {
  std::lock_guard lock(m_);
  std::uint64_t n = 0;
  for (const auto& g : graves_) n += g.buffer->size();
  return n;
}

}  // namespace meshdock::slots
