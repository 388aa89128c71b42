#include "daemon/rpc/intake.hpp"

#include <algorithm>
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

double Intake::min_rate(std::uint64_t want) {
  return std::max(static_cast<double>(kMinRate),
                  static_cast<double>(want) / static_cast<double>(kMaxHold.count()));
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
    const double rate = min_rate(p.want);
    if (age <= start || got >= p.want || static_cast<double>(got) >= (age - start) * rate) continue;
    p.ctx->TryCancel();  // thread-safe; its handler's next Read fails and it lets go
    char took[240];
    std::snprintf(took, sizeof took,
                  "took in %llu of %llu bytes in %.1f s (slower than %.1f MiB/s after its first "
                  "%lld s",
                  static_cast<unsigned long long>(got), static_cast<unsigned long long>(p.want),
                  age, rate / (1 << 20), static_cast<long long>(kStart.count()));
    const std::string why = rate > kMinRate ? ", the rate that takes in its size within " +
                                                  std::to_string(kMaxHold.count()) + " s)"
                                            : ")";
    lines.push_back("Publish: cancelled " + p.who + ", which " + took + why +
                    ", to let another publish in: the publishes under way had taken all of "
                    "max_decoded_size");
  }
  return lines;
}

}  // namespace meshdock::rpc
