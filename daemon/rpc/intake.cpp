#include "daemon/rpc/intake.hpp"

#include <cstdio>

namespace meshdock::rpc {

Intake::Entry::~Entry() {
  if (!in_) return;
  std::lock_guard lock(in_->m_);
  in_->open_.erase(it_);
}

Intake::Entry Intake::enter(grpc::ServerContext* ctx, std::string who, std::uint64_t want) {
  std::lock_guard lock(m_);
  open_.emplace_back(ctx, std::move(who), want, std::chrono::steady_clock::now());
  return Entry(*this, std::prev(open_.end()));
}

std::vector<std::string> Intake::cancel_stalled(const grpc::ServerContext* except,
                                                std::chrono::steady_clock::time_point now) {
  std::vector<std::string> lines;
  std::lock_guard lock(m_);  // an Entry leaves under it: every ctx here is still alive
  for (auto& p : open_) {
    if (p.ctx == except) continue;
    const auto age = std::chrono::duration<double>(now - p.started).count();
    const double start = std::chrono::duration<double>(kStart).count();
    const auto got = p.got.load(std::memory_order_relaxed);
    if (age <= start || got >= p.want ||
        static_cast<double>(got) >= (age - start) * static_cast<double>(kMinRate))
      continue;
    p.ctx->TryCancel();  // thread-safe; its handler's next Read fails and it lets go
    char took[160];
    std::snprintf(took, sizeof took, "took in %llu of %llu bytes in %.1f s",
                  static_cast<unsigned long long>(got), static_cast<unsigned long long>(p.want),
                  age);
    lines.push_back("Publish: cancelled " + p.who + ", which " + took +
                    " (slower than 1 MiB/s after its first 2 s), to let another publish in: the "
                    "publishes under way had taken all of max_decoded_size");
  }
  return lines;
}

}  // namespace meshdock::rpc
