// libmeshdock against a slot published in this process (the daemon's own slot code): the
// interrupt hook stops attach and wait, a host frame's arrays can be written in place without
// reaching the segment, a forged write_idx cannot make wait spin past its timeout, and a
// segment of an untrusted owner is refused.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/slot.hpp"
#include "meshdock/attach.hpp"

namespace mesh = meshdock::mesh;
namespace shm = meshdock::shm;
namespace slots = meshdock::slots;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

struct Published {
  std::unique_ptr<meshdock::backend::Backend> backend = meshdock::backend::make_host_backend(0600);
  std::unique_ptr<slots::Slot> slot;
  meshdock::AttachOptions options;

  meshdock::payload::DevicePayload payload;
  std::string prefix;

  explicit Published(const std::string& tag, std::uint32_t num_slots = shm::kDefaultSlots,
                     milliseconds lease_wait = milliseconds(200),
                     std::uint32_t lease_capacity = 8) {
    slots::SlotOptions o;
    o.prefix = "sdk" + std::to_string(::getpid()) + tag + ".";
    o.name = "m";
    o.page_size = 16384;
    o.lease_capacity = lease_capacity;
    o.num_slots = num_slots;
    o.lease_wait = lease_wait;
    slot = std::make_unique<slots::Slot>(o, *backend);
    mesh::Mesh m;
    m.points = mesh::Array::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
    m.cells.push_back(mesh::CellBlock::fixed(
        "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
    payload = meshdock::payload::build_payload(m);
    prefix = o.prefix;
    slot->publish(payload);
    slot->maintain(shm::monotonic_ns());
    options.prefix = o.prefix;
    options.timeout = milliseconds(2000);
    options.producer_timeout = milliseconds(60000);
  }
};

// Whether this process maps data segment `object` (a retired one shows as "... (deleted)").
bool mapped(const std::string& object) {
  std::ifstream maps("/proc/self/maps");
  const std::string path = "/dev/shm/" + object;
  for (std::string line; std::getline(maps, line);) {
    const auto at = line.find(path);
    if (at != std::string::npos &&
        (at + path.size() == line.size() || line[at + path.size()] == ' '))
      return true;
  }
  return false;
}

double cpu_seconds() {
  struct rusage r;
  ::getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

TEST(SdkAttach, TheInterruptHookStopsAttachAndWaitWithin50Ms) {
  Published p("i");
  auto stop_at = Clock::now() + milliseconds(200);
  meshdock::AttachOptions o = p.options;
  o.timeout = milliseconds(30000);
  o.interrupt = [&] { return Clock::now() >= stop_at; };
  auto t0 = Clock::now();
  EXPECT_THROW(meshdock::Slot::attach("missing", o), meshdock::Interrupted);
  // The hook is polled every 50 ms: interrupted at 200-250 ms. The bound leaves a loaded
  // 2-core CI machine (and this test's AddressSanitizer pass) room; without the hook the call
  // would take its 30 s timeout.
  EXPECT_LT(Clock::now() - t0, milliseconds(600));

  auto slot = meshdock::Slot::attach("m", o);
  ASSERT_TRUE(slot.wait(milliseconds(1000)));  // frame 1
  stop_at = Clock::now() + milliseconds(200);
  t0 = Clock::now();
  try {
    slot.wait(milliseconds(30000));
    FAIL() << "wait returned";
  } catch (const meshdock::Interrupted& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted while waiting"), std::string::npos);
  }
  EXPECT_LT(Clock::now() - t0, milliseconds(600));  // as above
}

TEST(SdkAttach, AnInPlaceWriteStaysInThisProcess) {
  Published p("w");
  auto slot = meshdock::Slot::attach("m", p.options);
  auto frame = slot.wait(milliseconds(1000));
  ASSERT_TRUE(frame);
  const auto pts = frame->array("points");
  auto* d = static_cast<double*>(pts.data);
  d[0] = -42.0;  // a read-only mapping would SIGSEGV here
  EXPECT_EQ(d[0], -42.0);
  // The object itself is unchanged: map it again, as another consumer would.
  auto again =
      shm::Segment::open(shm::data_object_name(*p.options.prefix, "m", frame->slot_index(), 1),
                         shm::Access::kReadOnly);
  double first;
  std::memcpy(&first, static_cast<std::byte*>(again.data()) + pts.entry.offset, sizeof first);
  EXPECT_EQ(first, 1.0);
}

TEST(SdkAttach, AGarbageWriteIdxCannotMakeWaitSpin) {
  Published p("g");
  auto slot = meshdock::Slot::attach("m", p.options);
  ASSERT_TRUE(slot.wait(milliseconds(1000)));
  // The control block as a hostile writer leaves it: a write_idx no page ever holds.
  auto control =
      shm::Segment::open(shm::control_object_name(*p.options.prefix, "m"), shm::Access::kReadWrite);
  const std::uint32_t garbage = 0xFFFFFFF0u;
  std::memcpy(static_cast<std::byte*>(control.data()) + 16, &garbage, sizeof garbage);
  const auto cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  EXPECT_FALSE(slot.wait(milliseconds(1000)));
  EXPECT_LT(Clock::now() - t0, milliseconds(1200));
  EXPECT_LT(cpu_seconds() - cpu0, 0.3);
}

TEST(SdkAttach, ASegmentOfAnotherOwnerIsRefusedNamingIt) {
  Published p("o");
  meshdock::AttachOptions o = p.options;
  o.owner_uid = ::getuid() + 1;
  try {
    meshdock::Slot::attach("m", o);
    FAIL() << "attached";
  } catch (const meshdock::UntrustedSegment& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("belongs to uid " + std::to_string(::getuid())), std::string::npos) << msg;
    // The control block, checked first: read-only to consumers (catalog layout 2).
    EXPECT_NE(msg.find("segment /dev/shm/" + *o.prefix + "m belongs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mode 0640"), std::string::npos) << msg;
    EXPECT_NE(msg.find("from the attach option owner_uid"), std::string::npos) << msg;
  }
}

TEST(SdkAttach, ThePrefixComesFromTheOptionsThenMeshdockPrefixThenTheDefault) {
  ::unsetenv("MESHDOCK_PREFIX");
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::nullopt), "meshdock.");
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::string("job7.")), "job7.");
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::string()), "");  // empty only when asked for
  ::setenv("MESHDOCK_PREFIX", "md42-", 1);
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::nullopt), "md42-");
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::string("job7.")), "job7.");  // the options win
  ::setenv("MESHDOCK_PREFIX", "", 1);  // set but empty: as unset
  EXPECT_EQ(meshdock::Slot::resolve_prefix(std::nullopt), "meshdock.");
  // A prefix without its separator would silently look for /dev/shm/uxknosuchNAME.
  ::setenv("MESHDOCK_PREFIX", "uxknosuch", 1);
  try {
    meshdock::Slot::resolve_prefix(std::nullopt);
    ADD_FAILURE() << "no error";
  } catch (const meshdock::SdkError& e) {
    EXPECT_EQ(std::string(e.what()),
              "$MESHDOCK_PREFIX 'uxknosuch' does not end with '.', '-' or '_', so segment names "
              "would run into it ('uxknosuchNAME'); meshdock prefixes end with one: did you "
              "mean 'uxknosuch.'?");
  }
  ::unsetenv("MESHDOCK_PREFIX");
  // ... and attach says so at once instead of after its timeout.
  meshdock::AttachOptions o;
  o.prefix = "uxknosuch";
  o.timeout = milliseconds(5000);
  const auto t0 = Clock::now();
  EXPECT_THROW(meshdock::Slot::attach("box", o), meshdock::SdkError);
  EXPECT_LT(Clock::now() - t0, milliseconds(1000));  // not its 5 s timeout (slack: a loaded CI)
}

// A single-array publish through the C++ API: one array, "tensor", role kTensor, its shape and
// bytes; DLPack of it like any other.
TEST(SdkAttach, ATensorSlotHoldsOneArray) {
  auto backend = meshdock::backend::make_host_backend(0600);
  slots::SlotOptions o;
  o.prefix = "sdk" + std::to_string(::getpid()) + "t.";
  o.name = "img";
  o.page_size = 16384;
  o.lease_capacity = 8;
  slots::Slot slot(o, *backend);
  std::vector<float> px(8 * 6 * 4);
  for (std::size_t k = 0; k < px.size(); ++k) px[k] = static_cast<float>(k);
  slot.publish(meshdock::payload::tensor_payload(mesh::Array::from_vector(px, {8, 6, 4})));
  slot.maintain(shm::monotonic_ns());
  meshdock::AttachOptions options;
  options.prefix = o.prefix;
  options.timeout = milliseconds(2000);
  options.producer_timeout = milliseconds(60000);
  auto s = meshdock::Slot::attach("img", options);
  auto frame = s.wait(milliseconds(1000));
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->names(), std::vector<std::string>{"tensor"});
  const auto t = frame->array("tensor");
  EXPECT_EQ(t.entry.role, shm::ArrayRole::kTensor);
  EXPECT_EQ(t.entry.shape, (std::vector<std::int64_t>{8, 6, 4}));
  EXPECT_EQ(t.entry.offset, 0u);
  EXPECT_EQ(static_cast<const float*>(t.data)[191], 191.0f);
  EXPECT_THROW(frame->array("points"), meshdock::SdkError);
  DLManagedTensor* dl = frame->to_dlpack("tensor");
  ASSERT_NE(dl, nullptr);
  EXPECT_EQ(dl->dl_tensor.ndim, 3);
  EXPECT_EQ(dl->dl_tensor.shape[2], 4);
  dl->deleter(dl);
}

TEST(SdkAttach, ARetiredBufferIsUnmappedWhenItsLastFrameGoes) {
  // Before: the consumer's cache kept the mapping of the buffer its frame had pinned until it
  // next read that ring slot, after the daemon freed it (on CUDA, an import open across the
  // exporter's cudaFree: undefined behaviour).
  Published p("r", 1, milliseconds(20));
  auto s = meshdock::Slot::attach("m", p.options);
  auto frame = s.wait(milliseconds(1000));
  ASSERT_TRUE(frame);
  const auto v1 = shm::data_object_name(p.prefix, "m", 0, 1);
  EXPECT_TRUE(mapped(v1));
  EXPECT_EQ(p.slot->publish(p.payload).version, 2u);  // our lease: a fresh buffer, v1 retired
  frame.reset();
  p.slot->maintain(shm::monotonic_ns());  // no lease names v1: the daemon (this process) frees it
  EXPECT_FALSE(mapped(v1));               // and the consumer had let go of it already
  auto next = s.wait(milliseconds(1000));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->number(), 2u);
  EXPECT_TRUE(mapped(shm::data_object_name(p.prefix, "m", 0, 2)));
}

TEST(SdkAttach, AStaleMappingOfAnotherRingSlotIsDroppedAtTheNextFrame) {
  Published p("q", 2, milliseconds(20));
  p.slot->publish(p.payload);  // frame 2: ring slot 1, a fresh buffer (v2) for the placeholder
  auto s = meshdock::Slot::attach("m", p.options);
  std::optional<meshdock::Frame> frame = s.wait(milliseconds(1000));
  ASSERT_TRUE(frame);
  ASSERT_EQ(frame->number(), 2u);
  frame.reset();  // ring slot 1's mapping stays cached, the buffer is current
  const auto v2 = shm::data_object_name(p.prefix, "m", 1, 2);
  EXPECT_TRUE(mapped(v2));
  // Another holder of frame 2 (a raw lease of this registered pid) makes the daemon retire v2.
  auto leaseseg = shm::Segment::open(p.prefix + "m.leases", shm::Access::kReadWrite);
  auto table = shm::LeasesView::over(leaseseg.data(), leaseseg.size(), 2, 8).table(1);
  const auto lease = table.acquire(::getpid(), 2);
  ASSERT_TRUE(lease);
  p.slot->publish(p.payload);                         // frame 3: ring slot 0
  EXPECT_EQ(p.slot->publish(p.payload).version, 3u);  // frame 4: ring slot 1, fresh (v3)
  p.slot->publish(p.payload);                         // frame 5: ring slot 0
  table.release(*lease, ::getpid());
  p.slot->maintain(shm::monotonic_ns());  // v2 freed (unlinked) by the daemon
  frame = s.wait(milliseconds(1000));
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->number(), 5u);
  EXPECT_FALSE(mapped(v2));
}

// latest(): the newest frame again and again (each with its own lease), where wait() gives a
// frame once and then sleeps for a newer one; a wait() after it still returns only newer ones.
TEST(SdkAttach, LatestReturnsTheNewestFrameEvenIfSeen) {
  Published p("latest");
  auto slot = meshdock::Slot::attach("m", p.options);
  ASSERT_EQ(slot.wait(milliseconds(1000))->number(), 1u);
  EXPECT_FALSE(slot.wait(milliseconds(20)));  // seen: wait() has nothing newer
  auto a = slot.latest(milliseconds(20));
  auto b = slot.latest(milliseconds(20));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->number(), 1u);
  EXPECT_EQ(b->number(), 1u);
  EXPECT_EQ(static_cast<const double*>(b->array("points").data)[4], 5.0);
  p.slot->publish(p.payload);
  EXPECT_EQ(slot.latest(milliseconds(1000))->number(), 2u);
  EXPECT_FALSE(slot.wait(milliseconds(20)));  // 2 was returned by latest()
  p.slot->publish(p.payload);
  EXPECT_EQ(slot.wait(milliseconds(1000))->number(), 3u);
}

// The daemon honours 8 leases of a process on a ring slot and clears the rest, then refills the
// buffer in place: a 9th frame held would change under its holder (found by a streaming trial:
// numpy arrays of kept frames changed value). The SDK refuses it instead, naming the limit.
TEST(SdkAttach, ANinthFrameOfOneRingSlotIsRefusedNotLeftUnprotected) {
  Published p("ninth", shm::kDefaultSlots, milliseconds(200), 16);  // room in the table
  auto slot = meshdock::Slot::attach("m", p.options);
  std::vector<meshdock::Frame> held;
  for (std::uint32_t k = 0; k < meshdock::shm::kMaxLeasesPerProcess; ++k) {
    auto f = slot.latest(milliseconds(1000));
    ASSERT_TRUE(f);
    held.push_back(*f);
  }
  try {
    slot.latest(milliseconds(1000));
    FAIL() << "a 9th frame of one ring slot was handed out";
  } catch (const meshdock::SdkError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 8 frames of ring slot"), std::string::npos)
        << e.what();
  }
  held.pop_back();  // one released: the next take works
  EXPECT_TRUE(slot.latest(milliseconds(1000)));
}

// milliseconds::max() is how C++ spells "no deadline" (the C ABI's negative timeout, Python's
// None). Now + max overflowed in the conversion to the clock's nanoseconds, so such a wait
// returned nullopt at once and such an attach threw AttachTimeout at once ("not published
// within 9223372036854775807 ms"). Both must wait: here until the interrupt hook stops them.
TEST(SdkAttach, ATimeoutOfMillisecondsMaxWaitsForEver) {
  Published p("max");
  auto stop_at = Clock::now() + milliseconds(300);
  meshdock::AttachOptions o = p.options;
  o.timeout = milliseconds::max();
  o.interrupt = [&] { return Clock::now() >= stop_at; };
  auto t0 = Clock::now();
  EXPECT_THROW(meshdock::Slot::attach("missing", o), meshdock::Interrupted);
  EXPECT_GE(Clock::now() - t0, milliseconds(250));

  auto slot = meshdock::Slot::attach("m", o);  // stop_at has passed: attach does not sleep
  stop_at = Clock::now() + milliseconds(300);
  ASSERT_TRUE(slot.wait(milliseconds::max()));  // frame 1 is there
  t0 = Clock::now();
  EXPECT_THROW(slot.wait(milliseconds::max()), meshdock::Interrupted);
  EXPECT_GE(Clock::now() - t0, milliseconds(250));
  stop_at = Clock::now() + milliseconds(300);
  EXPECT_THROW(
      slot.wait(std::chrono::duration_cast<milliseconds>(std::chrono::hours(24 * 365 * 300))),
      meshdock::Interrupted);
  // Zero and negative timeouts still look once and return.
  t0 = Clock::now();
  EXPECT_FALSE(slot.wait(milliseconds(0)));
  EXPECT_FALSE(slot.wait(milliseconds(-5)));
  EXPECT_FALSE(slot.wait(milliseconds::min()));
  EXPECT_LT(Clock::now() - t0, milliseconds(500));  // three looks, no sleep
}

// A producer_timeout of zero or less has no meaning: zero called every live daemon gone at once
// ("heartbeat 3 ms old; daemon pid N alive but stuck"), and a negative one wrapped around in the
// unsigned nanosecond compare, so a killed daemon was never noticed. Refused at attach, naming
// the option, as the C ABI refuses producer_timeout_ms <= 0.
TEST(SdkAttach, AProducerTimeoutOfZeroOrLessIsRefusedNamingIt) {
  Published p("pt");
  for (const auto bad : {milliseconds(0), milliseconds(-5)}) {
    meshdock::AttachOptions o = p.options;
    o.producer_timeout = bad;
    try {
      meshdock::Slot::attach("m", o);
      FAIL() << "attached with producer_timeout " << bad.count() << " ms";
    } catch (const meshdock::ProducerGone& e) {
      FAIL() << "ProducerGone for a live producer: " << e.what();
    } catch (const meshdock::SdkError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("AttachOptions::producer_timeout is " + std::to_string(bad.count()) +
                          " ms; it must be > 0"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("slot 'm'"), std::string::npos) << what;
    }
  }
}
