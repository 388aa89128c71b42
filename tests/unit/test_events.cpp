// Watch's event queues: a watcher that reads too slowly loses the oldest events, and the next
// event it takes says how many; a watcher of one mesh queues (and loses) only that mesh's.
#include <gtest/gtest.h>

#include "daemon/service/events.hpp"
#include "daemon/service/metrics.hpp"

namespace svc = meshdock::service;
using std::chrono::milliseconds;

namespace {
svc::Event published(std::string name, std::uint32_t frame) {
  return svc::Event{svc::Event::kPublished, std::move(name), frame, "", 0.0};
}
}  // namespace

TEST(EventBus, TheFirstEventAfterAnOverflowCountsTheEventsLostBeforeIt) {
  svc::EventBus bus;
  auto sub = bus.subscribe();
  const std::uint32_t extra = 37;
  for (std::uint32_t f = 1; f <= svc::EventBus::kMaxQueued + extra; ++f)
    bus.publish(published("m", f));
  auto first = sub->next(milliseconds(0));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->frame, extra + 1);  // the oldest went
  EXPECT_EQ(first->dropped, extra);
  auto second = sub->next(milliseconds(0));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->frame, extra + 2);
  EXPECT_EQ(second->dropped, 0u);  // told once
  EXPECT_EQ(sub->dropped(), extra);
}

TEST(EventBus, AWatcherOfOneMeshIsNotOverflowedByAnothersEvents) {
  svc::EventBus bus;
  auto one = bus.subscribe("a");
  for (std::uint32_t f = 1; f <= 3 * svc::EventBus::kMaxQueued; ++f) bus.publish(published("b", f));
  bus.publish(published("a", 7));
  bus.publish(svc::Event{svc::Event::kShutdown, "", 0, "", 0.0});
  auto e = one->next(milliseconds(0));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "a");
  EXPECT_EQ(e->frame, 7u);
  EXPECT_EQ(e->dropped, 0u);
  auto s = one->next(milliseconds(0));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, svc::Event::kShutdown);  // every watcher sees the daemon stop
  EXPECT_FALSE(one->next(milliseconds(0)));
}

TEST(EventBus, DroppedEventsAreCountedForPrometheus) {
  svc::Metrics m;
  m.watch_dropped(5);
  m.watch_dropped(2);
  svc::Stats s;
  s.backend = "host";
  EXPECT_NE(m.render(s, {}).find("\nmeshdock_watch_events_dropped_total 7\n"), std::string::npos);
}
