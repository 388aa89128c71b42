// The exposition text of the pinned pool's figures: present only when the daemon has a pool (a
// device answers), with the pool's counters as they are.
#include <gtest/gtest.h>

#include "daemon/service/metrics.hpp"

namespace svc = meshdock::service;

TEST(MetricsRender, ThePinnedPoolIsShownOnlyWhenThereIsOne) {
  svc::Metrics m;
  svc::Stats s;
  s.backend = "host";
  EXPECT_EQ(m.render(s, {}).find("meshdock_pinned"), std::string::npos);
  meshdock::backend::PinnedPool::Counters c;
  c.pinned = 3;
  c.reused = 5;
  c.pageable = 9;
  c.fallbacks = 2;
  c.live_bytes = 6u << 20;
  c.kept_bytes = 4u << 20;
  s.backend = "cuda";
  s.pinned = c;
  const auto text = m.render(s, {});
  for (const char* line : {"meshdock_pinned_bytes{state=\"live\"} 6291456\n",
                           "meshdock_pinned_bytes{state=\"kept\"} 4194304\n",
                           "meshdock_pinned_allocations_total{source=\"new\"} 3\n",
                           "meshdock_pinned_allocations_total{source=\"reused\"} 5\n",
                           "meshdock_pinned_allocations_total{source=\"pageable\"} 7\n",
                           "meshdock_pinned_allocations_total{source=\"fallback\"} 2\n",
                           "# TYPE meshdock_pinned_allocations_total counter\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
}
