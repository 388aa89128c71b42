// The CUDA path of libmeshdock without a GPU: a slot published by the daemon's slot code on a
// fake device (tests/support/fake_device.hpp: host memory under a CUDA device's name) and read
// by the SDK through a fake DeviceIpc. What runs is the consumer's CUDA logic: the handles read
// for the frame's page, the imports opened and closed, the event a stream is ordered after, and
// the rule that the daemon never frees a buffer a consumer still has open.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "../support/fake_device.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/consumers.hpp"
#include "daemon/slots/graveyard.hpp"
#include "daemon/slots/slot.hpp"
#include "meshdock/attach.hpp"

namespace mesh = meshdock::mesh;
namespace shm = meshdock::shm;
namespace slots = meshdock::slots;
using meshdock::testing::FakeDevice;
using std::chrono::milliseconds;

namespace {

meshdock::payload::DevicePayload payload_of(std::size_t points, double value) {
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>(3 * points, value),
                                      {static_cast<std::int64_t>(points), 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  return meshdock::payload::build_payload(m);
}

struct OnFakeDevice {
  std::shared_ptr<FakeDevice> dev = std::make_shared<FakeDevice>();
  meshdock::testing::FakeDeviceBackend backend{dev};
  std::shared_ptr<slots::ConsumerRegistry> consumers =
      std::make_shared<slots::ConsumerRegistry>(slots::ConsumerRegistry::Reads::kDrainOnly);
  std::unique_ptr<slots::Slot> slot;
  meshdock::AttachOptions options;
  std::string prefix;

  // `daemon_ordinal`: the GPU's number in the daemon (FakeDevice::daemon_ordinal).
  explicit OnFakeDevice(const std::string& tag, std::uint32_t num_slots,
                        std::uint64_t memory_budget = 0, int daemon_ordinal = 0) {
    dev->daemon_ordinal = daemon_ordinal;
    slots::SlotOptions o;
    o.memory_budget = memory_budget;
    o.prefix = "dev" + std::to_string(::getpid()) + tag + ".";
    o.name = "m";
    o.page_size = 16384;
    o.lease_capacity = 8;
    o.num_slots = num_slots;
    o.lease_wait = milliseconds(20);
    // The registry's thread reads nothing: what a publish counts is what its drain() read, so
    // a report sent just before a publish is counted by the slot's own ordering, not by luck.
    o.consumers = consumers;
    slot = std::make_unique<slots::Slot>(o, backend);
    prefix = o.prefix;
    options.prefix = o.prefix;
    options.timeout = milliseconds(2000);
    options.producer_timeout = milliseconds(60000);
    options.device_ipc = std::make_shared<meshdock::testing::FakeDeviceIpc>(dev);
  }
  // A registration of this process, as a consumer's (to send import reports by hand).
  shm::Registration registration() const {
    return shm::Registration::connect(slot->socket_address(), ::getpid(), ::geteuid(),
                                      milliseconds(2000), "test");
  }
  // The control block's memory handle of ring slot i now.
  shm::Handle handle(std::uint32_t i) const {
    auto ctl = shm::Segment::open(prefix + "m");
    return shm::ControlBlockView::validate(ctl.data(), ctl.size()).mem_handle(i);
  }
  // What Registry::unload does: the buffers a consumer has open to `g`, then the slot goes
  // (its shutdown flag set, the rest freed). Returns when (monotonic ns).
  std::uint64_t unload(slots::Graveyard& g) {
    const auto now = shm::monotonic_ns();
    g.bury("m", slot->take_open_imports(), now);
    slot.reset();
    return now;
  }
  std::uint64_t publish(std::size_t points, double value) {
    const auto r = slot->publish(payload_of(points, value));
    slot->maintain(shm::monotonic_ns());
    return r.frame;
  }
};

double first_point(const meshdock::Frame& f) {
  double x = 0;
  std::memcpy(&x, f.array("points").data, sizeof x);  // a fake device pointer is host memory
  return x;
}

// The message of the SdkError a wait on `s` throws, or "no error" where it gives a frame: a
// refused import is checked by what it says.
std::string wait_error(meshdock::Slot& s) {
  try {
    (void)s.wait(milliseconds(1000));
  } catch (const meshdock::SdkError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DevicePath, AFrameOfACudaSlotIsTheDaemonsBytesThroughTheDeviceRuntime) {
  OnFakeDevice d("read", 2);
  d.publish(3, 4.5);
  auto s = meshdock::Slot::attach("m", d.options);
  auto f = s.wait(milliseconds(1000));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->device_type(), shm::kDLDeviceCUDA);
  EXPECT_EQ(f->array("points").device_type, shm::kDLDeviceCUDA);
  EXPECT_EQ(first_point(*f), 4.5);
  EXPECT_EQ(d.dev->imports_open(), 1);
  EXPECT_EQ(d.dev->events_open, 1);
  f->order_after_upload(0x77);  // the stream waits for the event of this frame's buffer
  ASSERT_EQ(d.dev->waits.size(), 1u);
  EXPECT_EQ(d.dev->waits[0].first, 0x77u);
  EXPECT_EQ(d.dev->waits[0].second, shm::data_object_name(d.prefix, "m", 0, 1));
  auto* t = f->to_dlpack("points");
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl_tensor.data, f->array("points").data);
  t->deleter(t);
}

// A publish abandoned (its client went away) after it had replaced the ring slot's buffer (a
// growth) left the control block naming the replacement, unwritten, under a new version while
// write_idx still named the old frame; the page said "no frame". A cuda-link consumer reads ring
// slot (write_idx - 1) % N from the control block alone: with one ring slot, that is the slot
// being written, so it read the unwritten buffer as the newest frame. Now the old buffer, kept
// for cuda-link's grace anyway, is put back: the handles, the page and write_idx agree on frame
// 1, and the replacement waits out the grace (a consumer may have opened its handle meanwhile).
TEST(DevicePath, AnAbandonedPublishPutsBackTheBufferItReplaced) {
  OnFakeDevice d("abandon", 1);
  slots::SlotOptions o;
  d.slot.reset();
  o.prefix = d.prefix;
  o.name = "m";
  o.page_size = 16384;
  o.lease_capacity = 8;
  o.num_slots = 1;
  o.consumers = d.consumers;
  o.replaced_grace = milliseconds(300);
  d.slot = std::make_unique<slots::Slot>(o, d.backend);
  d.publish(3, 4.5);  // frame 1
  const auto first_object = shm::parse_host_handle(d.handle(0));
  EXPECT_THROW(d.slot->publish(payload_of(5000, 9.0), [] { return true; }), slots::SlotAbandoned);
  EXPECT_EQ(shm::parse_host_handle(d.handle(0)), first_object)
      << "the control block names the unwritten replacement";
  {
    auto ctl = shm::Segment::open(d.prefix + "m");
    const auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
    EXPECT_EQ(cb.write_idx(), 1u);
  }
  std::vector<std::string> kept;
  {
    std::lock_guard lock(d.dev->m);
    for (const auto& [object, opens] : d.dev->live) kept.push_back(object);
  }
  EXPECT_EQ(kept.size(), 2u) << "the replacement is kept for the grace";
  auto s = meshdock::Slot::attach("m", d.options);
  auto f = s.wait(milliseconds(1000));
  ASSERT_TRUE(f) << "frame 1 is still the newest frame, in its own buffer";
  EXPECT_EQ(f->number(), 1u);
  EXPECT_EQ(first_point(*f), 4.5);
  f.reset();
  std::this_thread::sleep_for(milliseconds(400));
  d.publish(3, 5.5);  // frame 2, into the restored buffer; the replacement goes past its grace
  {
    std::lock_guard lock(d.dev->m);
    EXPECT_EQ(d.dev->live.size(), 1u);
    EXPECT_EQ(d.dev->live.count(first_object), 1u);
  }
  auto g = s.wait(milliseconds(1000));
  ASSERT_TRUE(g);
  EXPECT_EQ(first_point(*g), 5.5);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
}

// The daemon frees a buffer as soon as no lease names it: a grown frame frees every buffer of
// its ring slot, a lease released frees the retired buffer it pinned. The SDK keeps an import
// cached past its frame (an open costs about a millisecond), so a consumer that read a frame
// and then did something else for a while would hold memory the daemon has cudaFree'd
// (undefined behaviour; in practice another allocation's bytes). It reports its imports on its
// registration instead, and the daemon keeps an imported buffer until the consumer closes it.
// Before: the buffer was freed under the open import.
TEST(DevicePath, NoBufferIsFreedWhileAConsumerHasItOpen) {
  OnFakeDevice d("free", 2);
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  {
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f);
    EXPECT_EQ(first_point(*f), 1.0);
  }  // the frame goes, its lease too; the import stays cached (an idle consumer)
  EXPECT_EQ(d.dev->imports_open(), 1);
  const auto v1 = shm::data_object_name(d.prefix, "m", 0, 1);
  d.publish(5000, 2.0);  // grows: fresh buffers; the old ones go unless imported
  d.publish(5000, 3.0);
  d.publish(5000, 4.0);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
  EXPECT_EQ(d.dev->live.count(v1), 1u);  // kept for the consumer
  auto f = s.wait(milliseconds(1000));   // sees the new handles: closes its stale import
  ASSERT_TRUE(f);
  EXPECT_EQ(f->number(), 4u);
  EXPECT_EQ(first_point(*f), 4.0);
  d.slot->maintain(shm::monotonic_ns());
  EXPECT_EQ(d.dev->live.count(v1), 0u);  // and the daemon frees it at its next tick
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
  EXPECT_EQ(d.dev->opened_when_freed, std::vector<std::string>{});
}

// A held frame pins its buffer: the ring comes round, the daemon gives that ring slot a fresh
// buffer, the frame still reads its own bytes (the handles of its page, not the control
// block's newer ones); when it goes, its import closes, and the daemon frees the retired
// buffer with nothing open on it.
TEST(DevicePath, AHeldFramesBufferOutlivesTheRingAndClosesBeforeItsLeaseGoes) {
  OnFakeDevice d("held", 1);
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  auto held = s.wait(milliseconds(1000));
  ASSERT_TRUE(held);
  d.publish(3, 2.0);  // ring slot 0 again: leased, so a fresh buffer (version 2)
  d.publish(3, 3.0);
  EXPECT_EQ(first_point(*held), 1.0);
  {
    auto next = s.wait(milliseconds(1000));  // another import, of the fresh buffer
    ASSERT_TRUE(next);
    EXPECT_EQ(next->number(), 3u);
    EXPECT_EQ(first_point(*next), 3.0);
    EXPECT_EQ(d.dev->imports_open(), 2);
  }
  held.reset();  // its import closes (the ring slot's cache holds version 2 now), then its lease
  d.slot->maintain(shm::monotonic_ns());  // frees version 1: no lease, no import names it
  EXPECT_EQ(d.dev->imports_open(), 1);    // version 2, cached
  EXPECT_EQ(d.dev->events_open, 1);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
  EXPECT_EQ(d.dev->live.count(shm::data_object_name(d.prefix, "m", 0, 1)), 0u);
}

// A framework calls a DLPack deleter when its tensor goes, with kernels reading it possibly
// still queued on the stream it adopted the tensor on (torch does). Before: the lease went
// with the deleter, and the daemon's next publish to that ring slot copied into the buffer in
// place, under those kernels. Now the frame's end is marked on every stream it was ordered on
// (order_after_upload), and its lease is kept until the marks are passed: the daemon gives the
// ring slot a fresh buffer meanwhile, as for a held frame.
TEST(DevicePath, AFrameKeepsItsLeaseUntilTheWorkQueuedOnItsStreamsIsOver) {
  OnFakeDevice d("ending", 1);
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  const auto v1 = d.handle(0);
  {
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f);
    f->order_after_upload(0x55);
    f->order_after_upload(0x55);  // one stream, however often: one mark
    auto* t = f->to_dlpack("points");
    f.reset();
    d.dev->busy = true;  // the consumer's kernels still run
    t->deleter(t);       // the tensor goes: the last owner of the frame
  }
  EXPECT_EQ(d.dev->marked, std::vector<std::uintptr_t>{0x55});
  EXPECT_EQ(d.dev->marks_live, 1);
  d.publish(3, 2.0);  // the lease is still there: a fresh buffer, not a copy under the kernels
  EXPECT_NE(d.handle(0), v1);
  d.dev->busy = false;  // the kernels are done
  const auto v2 = d.handle(0);
  {
    auto g = s.wait(milliseconds(1000));  // lets the ended frame go first
    ASSERT_TRUE(g);
    EXPECT_EQ(g->number(), 2u);
    EXPECT_EQ(first_point(*g), 2.0);
    EXPECT_EQ(d.dev->marks_live, 0);
  }  // no stream ordered on: its lease goes at once
  EXPECT_EQ(d.dev->marked.size(), 1u);
  d.publish(3, 3.0);  // no lease on ring slot 0: the copy goes into the same buffer
  EXPECT_EQ(d.handle(0), v2);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
  EXPECT_EQ(d.dev->blocking_waits, 0);
}

// DLPack's stream 2 is the per-thread default stream of the thread that adopts the tensor: a
// different stream in every thread, which no other thread can name. A framework may drop the
// tensor on another thread (a DataLoader's pin thread, a garbage collector's); before, the end
// was marked there on stream 2, that thread's own stream, and the lease went before the
// consumer's kernels did. Now such a deleter marks the legacy default stream, which waits for
// every blocking stream's work; on the adopting thread, stream 2 is marked as it is.
TEST(DevicePath, APerThreadStreamEndedOnAnotherThreadIsMarkedOnTheLegacyStream) {
  OnFakeDevice d("perthread", 2);
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  DLManagedTensor* t = nullptr;
  {
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f);
    f->order_after_upload(meshdock::DeviceIpc::kPerThreadStream);
    f->order_after_upload(meshdock::DeviceIpc::kPerThreadStream);  // one use
    f->order_after_upload(0x55);
    t = f->to_dlpack("points");
  }
  std::thread([t] { t->deleter(t); }).join();
  EXPECT_EQ(d.dev->marked, (std::vector<std::uintptr_t>{meshdock::DeviceIpc::kLegacyStream, 0x55}));

  d.dev->marked.clear();
  d.publish(3, 2.0);
  {
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f);
    f->order_after_upload(meshdock::DeviceIpc::kPerThreadStream);
    std::thread([&f] { f->order_after_upload(meshdock::DeviceIpc::kPerThreadStream); }).join();
  }  // ends here: this thread's stream 2 as itself, the other thread's as the legacy stream
  EXPECT_EQ(d.dev->marked, (std::vector<std::uintptr_t>{meshdock::DeviceIpc::kPerThreadStream,
                                                        meshdock::DeviceIpc::kLegacyStream}));
}

// Where the runtime gives no interprocess event (the CUDA backend then publishes an all-zero
// event handle and waits for every upload itself), the consumer opens none and orders its
// stream on nothing, and still marks the frame's end on it. Before: the all-zero handle went
// to cudaIpcOpenEventHandle, and every frame failed.
TEST(DevicePath, AnAllZeroEventHandleIsNoEventToOpen) {
  OnFakeDevice d("noevent", 2);
  d.dev->no_events = true;
  d.dev->fail_events = true;  // an open of the zero handle would fail, as on CUDA
  d.publish(3, 7.0);
  auto s = meshdock::Slot::attach("m", d.options);
  auto f = s.wait(milliseconds(1000));
  ASSERT_TRUE(f);
  EXPECT_EQ(first_point(*f), 7.0);
  EXPECT_EQ(d.dev->events_open, 0);
  f->order_after_upload(0x44);
  EXPECT_TRUE(d.dev->waits.empty());
  f.reset();
  EXPECT_EQ(d.dev->marked, std::vector<std::uintptr_t>{0x44});
  EXPECT_EQ(d.dev->marks_live, 0);
}

// A consumer that queues work faster than its GPU runs it ends frames whose leases stay. The
// daemon honours 8 leases per process and ring slot (and clears the rest), and a lease table
// has so many entries: past 4 ended frames on a ring slot, the next take waits for their work
// (backpressure) instead of letting leases go unhonoured or failing with "every lease of slot
// 0 is taken" (what the code before did at the table's 9th entry).
TEST(DevicePath, EndedFramesHoldingEveryLeaseAreWaitedForNotAnError) {
  OnFakeDevice d("backpressure", 1);  // 8 lease entries per ring slot
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  d.dev->busy = true;
  for (int k = 0; k < 8; ++k) {
    auto f = s.latest(milliseconds(1000));
    ASSERT_TRUE(f);
    f->order_after_upload(0x10 + k);
  }
  // At most 4 wait on one ring slot (the daemon honours 8 leases per process and ring slot):
  // the 5th take waited for the first 4, the 9th for the next 4.
  EXPECT_EQ(d.dev->marks_live, 4);
  EXPECT_EQ(d.dev->blocking_waits, 4);
  auto f = s.latest(milliseconds(1000));
  ASSERT_TRUE(f);
  EXPECT_EQ(first_point(*f), 1.0);
  EXPECT_EQ(d.dev->marks_live, 0);
  EXPECT_EQ(d.dev->blocking_waits, 8);
}

// The last owner of the slot's state (the Slot and every frame gone) waits for what is still
// queued on ended frames' streams, then lets their leases and imports go.
TEST(DevicePath, TheLastOwnerOfASlotWaitsForItsEndedFramesStreams) {
  OnFakeDevice d("ending2", 2);
  d.publish(3, 1.0);
  {
    auto s = meshdock::Slot::attach("m", d.options);
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f);
    f->order_after_upload(0x66);
    d.dev->busy = true;
    f.reset();
    EXPECT_EQ(d.dev->marks_live, 1);
    EXPECT_EQ(d.dev->blocking_waits, 0);
  }
  EXPECT_EQ(d.dev->blocking_waits, 1);
  EXPECT_EQ(d.dev->marks_live, 0);
  EXPECT_EQ(d.dev->imports_open(), 0);
  EXPECT_EQ(d.dev->events_open, 0);
}

// Two frames of one buffer share one import (CUDA counts the opens of a handle; one is enough).
TEST(DevicePath, FramesOfOneBufferShareOneImport) {
  OnFakeDevice d("share", 2);
  d.publish(3, 1.0);
  auto s = meshdock::Slot::attach("m", d.options);
  auto a = s.wait(milliseconds(1000));
  ASSERT_TRUE(a);
  auto b = *a;  // a copy of the frame
  EXPECT_EQ(d.dev->imports_open(), 1);
  a.reset();
  EXPECT_EQ(d.dev->imports_open(), 1);  // b still reads it
  EXPECT_EQ(first_point(b), 1.0);
}

// Two attachments in one process (a C++ consumer beside the Python SDK, which goes through the
// same libmeshdock, or two clients of one training process) open the same buffer: CUDA returns
// the same pointer and counts the opens, so one attachment closing must leave the other's
// mapping, and the daemon must keep the buffer while either registration reports it open.
TEST(DevicePath, TwoAttachmentsInOneProcessShareOneCountedMapping) {
  OnFakeDevice d("two", 2);
  d.publish(3, 1.0);
  auto ipc = std::static_pointer_cast<meshdock::testing::FakeDeviceIpc>(d.options.device_ipc);
  std::optional<meshdock::Slot> a(meshdock::Slot::attach("m", d.options));
  std::optional<meshdock::Slot> b(meshdock::Slot::attach("m", d.options));
  auto fa = a->wait(milliseconds(1000));
  auto fb = b->wait(milliseconds(1000));
  ASSERT_TRUE(fa && fb);
  const void* p = fb->array("points").data;
  EXPECT_EQ(fa->array("points").data, p);  // one mapping, opened twice
  EXPECT_EQ(ipc->refs(p), 2);
  EXPECT_EQ(d.dev->imports_open(), 2);
  fa.reset();
  a.reset();  // its import closed and reported closed; b's stays
  EXPECT_EQ(ipc->refs(p), 1);
  EXPECT_EQ(first_point(*fb), 1.0);
  const auto v1 = shm::data_object_name(d.prefix, "m", 0, 1);
  fb.reset();            // b's import stays cached (an idle consumer), its lease goes
  d.publish(5000, 2.0);  // growth: v1 is kept for b's report alone
  d.publish(5000, 3.0);
  EXPECT_EQ(d.dev->live.count(v1), 1u);
  b.reset();
  d.slot->maintain(shm::monotonic_ns());
  EXPECT_EQ(ipc->refs(p), 0);
  EXPECT_EQ(d.dev->live.count(v1), 0u);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
}

// A forked child (a DataLoader worker) with its parent's attachment of a CUDA slot: its wait()
// says to attach in the child, and what it lets go of (the Slot, with the parent's import)
// sends nothing on the parent's registration. Before: the child's close report counted as the
// parent's, and the daemon freed a buffer the parent still had open.
TEST(DevicePath, AForkedChildNeitherUsesNorClosesItsParentsImports) {
  OnFakeDevice d("fork", 2);
  d.publish(3, 1.0);
  std::optional<meshdock::Slot> s(meshdock::Slot::attach("m", d.options));
  ASSERT_TRUE(s->wait(milliseconds(1000)));  // imported, reported open, cached
  const auto v1 = shm::data_object_name(d.prefix, "m", 0, 1);
  const pid_t child = ::fork();
  if (child == 0) {
    int code = 2;  // wait() gave a frame
    try {
      s->wait(milliseconds(100));
    } catch (const meshdock::SdkError& e) {
      code =
          std::string(e.what()).find("CUDA does not survive a fork") != std::string::npos ? 0 : 3;
    } catch (...) {
      code = 4;
    }
    s.reset();  // the parent's import and registration, let go of in the child
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  d.publish(5000, 2.0);  // growth: v1 is kept for the parent's report
  d.publish(5000, 3.0);
  EXPECT_EQ(d.dev->live.count(v1), 1u);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
}

// An unload while a consumer has a buffer open (its Slot not yet gone, a frame in hand): the
// daemon's Registry hands the slot's open buffers to a Graveyard before the slot goes, and frees
// each when the consumer's close report comes, or kGrace after the unload. Before: the slot
// freed them with itself, under the consumer's open import.
TEST(DevicePath, AnUnloadKeepsWhatAConsumerHasOpenUntilItClosesIt) {
  OnFakeDevice d("unload", 2);
  d.publish(3, 1.0);
  slots::Graveyard graveyard(d.consumers);
  std::optional<meshdock::Slot> s(meshdock::Slot::attach("m", d.options));
  auto held = s->wait(milliseconds(1000));
  ASSERT_TRUE(held);
  const auto v1 = shm::data_object_name(d.prefix, "m", 0, 1);
  const auto t0 = d.unload(graveyard);
  EXPECT_EQ(graveyard.buffers(), 1u);
  EXPECT_EQ(d.dev->live.count(v1), 1u);
  EXPECT_EQ(first_point(*held), 1.0);  // still the daemon's bytes
  EXPECT_THROW(s->wait(milliseconds(200)), meshdock::ProducerGone);
  EXPECT_TRUE(graveyard.tend(t0 + 1000).empty());
  EXPECT_EQ(d.dev->live.count(v1), 1u);  // the frame's import is still open
  held.reset();
  s.reset();  // the consumer lets go: its import closes and says so
  EXPECT_TRUE(graveyard.tend(t0 + 2000).empty());
  EXPECT_EQ(graveyard.buffers(), 0u);
  EXPECT_EQ(d.dev->live.count(v1), 0u);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
}

// A consumer that never closes keeps nothing past kGrace (reports are claims), and says so.
TEST(DevicePath, AnUnloadedBufferIsFreedAfterTheGraceWhateverTheReports) {
  OnFakeDevice d("grace", 1);
  d.publish(3, 1.0);
  slots::Graveyard graveyard(d.consumers);
  auto reg = d.registration();
  ASSERT_TRUE(reg.report_import(true, d.handle(0)));
  const auto t0 = d.unload(graveyard);
  const auto grace = std::chrono::nanoseconds(slots::Graveyard::kGrace).count();
  EXPECT_TRUE(graveyard.tend(t0 + grace - 1).empty());
  EXPECT_EQ(graveyard.buffers(), 1u);
  const auto notes = graveyard.tend(t0 + grace);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("unloaded slot 'm': freed a buffer"), std::string::npos) << notes[0];
  EXPECT_EQ(graveyard.buffers(), 0u);
  EXPECT_EQ(graveyard.bytes(), 0u);
}

TEST(DevicePath, AnImportTheRuntimeRefusesNamesTheSlotAndBuffer) {
  OnFakeDevice d("refuse", 2);
  d.publish(3, 1.0);
  d.dev->fail_opens = true;
  auto s = meshdock::Slot::attach("m", d.options);
  auto msg = wait_error(s);
  EXPECT_NE(msg.find("slot 0 buffer (version 1): invalid resource handle"), std::string::npos)
      << msg;
  d.dev->fail_opens = false;
  // The buffer opens but its event does not: the error names the event, and the buffer's
  // import is closed again (before: left open, an import nothing would ever close).
  d.dev->fail_events = true;
  msg = wait_error(s);
  EXPECT_NE(msg.find("slot 0 buffer (version 1): its upload event"), std::string::npos) << msg;
  EXPECT_EQ(d.dev->imports_open(), 0);
  d.dev->fail_events = false;
  auto f = s.wait(milliseconds(1000));  // the leases of the failed attempts were given back
  ASSERT_TRUE(f);
  EXPECT_EQ(first_point(*f), 1.0);
}

// The daemon's half of import reports, played by a raw registration: an open report pins a
// buffer the daemon would free, a close report or the registration's end lets it go, and a
// connection's reports count up to kMaxImportsPerConnection (a consumer cannot pin every
// buffer by flooding reports).
TEST(DevicePath, ImportReportsPinBuffersUpToTheLimitAndEndWithTheRegistration) {
  OnFakeDevice d("reports", 1);
  d.publish(3, 1.0);
  auto reg = d.registration();
  const auto v1 = d.handle(0);
  ASSERT_TRUE(reg.report_import(true, v1));
  d.publish(5000, 2.0);  // growth: v1 would go
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v1)), 1u);
  const auto v2 = d.handle(0);
  ASSERT_TRUE(reg.report_import(true, v2));
  ASSERT_TRUE(reg.report_import(false, v1));  // closed: v1 goes at the next tick
  d.slot->maintain(shm::monotonic_ns());
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v1)), 0u);
  d.publish(10000, 3.0);  // growth: v2 pinned
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v2)), 1u);
  reg = shm::Registration{};  // the consumer goes: its reports with it
  d.slot->maintain(shm::monotonic_ns());
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v2)), 0u);
  // A flood: the first kMaxImportsPerConnection reports (of handles that are no buffer) count,
  // the real one after them does not.
  auto flood = d.registration();
  for (std::size_t k = 0; k < shm::kMaxImportsPerConnection; ++k) {
    shm::Handle h{};
    std::memcpy(h.data(), &k, sizeof k);
    ASSERT_TRUE(flood.report_import(true, h));
  }
  const auto v3 = d.handle(0);
  ASSERT_TRUE(flood.report_import(true, v3));
  d.publish(20000, 4.0);
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v3)), 0u);
  EXPECT_EQ(d.dev->freed_while_open, std::vector<std::string>{});
}

// Past the daemon's memory budget an import no longer pins a retired buffer (as a lease loses
// when a fresh buffer would break it), and the daemon says so.
TEST(DevicePath, PastTheMemoryBudgetAnImportPinsNothing) {
  OnFakeDevice d("budget", 1, 64 << 10);
  d.publish(3, 1.0);
  auto reg = d.registration();
  const auto v1 = d.handle(0);
  ASSERT_TRUE(reg.report_import(true, v1));
  d.publish(5000, 2.0);  // 120 KB of points: over the 64 KiB budget with v1 kept
  EXPECT_EQ(d.dev->live.count(shm::parse_host_handle(v1)), 0u);
  bool said = false;
  for (const auto& n : d.slot->take_notes())
    said |= n.find("though a consumer reported it open: slot buffers exceed the memory budget") !=
            std::string::npos;
  EXPECT_TRUE(said);
}

// Import reports pin at most 2 x num_slots retired buffers of a slot: a consumer that reports
// every buffer whose handle it can read (each one retired by a growth) pins only the newest,
// and the daemon says what it freed.
TEST(DevicePath, ImportReportsPinAtMostTwoBuffersPerRingSlot) {
  OnFakeDevice d("cap", 1);
  d.publish(3, 1.0);
  auto reg = d.registration();
  std::vector<std::string> reported;
  for (std::size_t n = 1000; n <= 5000; n += 1000) {
    const auto h = d.handle(0);
    ASSERT_TRUE(reg.report_import(true, h));
    reported.push_back(shm::parse_host_handle(h));
    d.publish(n, 2.0);  // growth: the reported buffer is retired, pinned by the report alone
  }
  std::size_t live = 0;
  for (const auto& r : reported) live += d.dev->live.count(r);
  EXPECT_EQ(live, 2u);
  EXPECT_EQ(d.dev->live.count(reported.back()), 1u);  // the newest are the ones kept
  EXPECT_EQ(d.dev->live.count(reported[reported.size() - 2]), 1u);
  bool said = false;
  for (const auto& n : d.slot->take_notes())
    said |= n.find(
                "though a consumer reported it open: more than 2 retired buffers were held by "
                "import reports alone") != std::string::npos;
  EXPECT_TRUE(said);
}

// The daemon's ordinal names the GPU in the daemon's CUDA_VISIBLE_DEVICES; a consumer given
// only that GPU (a container, a Slurm step) sees it as cuda:0. The catalog's UUID finds it:
// before, the consumer opened on the daemon's cuda:1, which here is no GPU or another one.
TEST(DevicePath, AConsumerFindsTheSlotsGpuByItsUuidUnderItsOwnOrdinal) {
  OnFakeDevice d("uuid", 2, 0, /*daemon_ordinal=*/1);  // the daemon sees it as cuda:1 ...
  d.publish(3, 2.5);
  {
    auto cat = shm::Segment::open(d.prefix + "m.catalog");
    const auto v = shm::CatalogView::validate(cat.data(), cat.size());
    EXPECT_EQ(v.device_id(), 1);
    EXPECT_EQ(v.device_uuid(), d.dev->uuid);
  }
  auto s = meshdock::Slot::attach("m", d.options);  // ... this process as cuda:0
  // The attach leaves the runtime alone (a process may attach, then fork workers)...
  EXPECT_EQ(d.dev->uuid_lookups, 0);
  auto f = s.wait(milliseconds(1000));
  ASSERT_TRUE(f);
  EXPECT_EQ(d.dev->uuid_lookups, 1);  // ... the first open asks it, once
  EXPECT_EQ(f->device_id(), 0);
  EXPECT_EQ(f->array("points").device_id, 0);
  EXPECT_EQ(first_point(*f), 2.5);
  auto* t = f->to_dlpack("points");
  EXPECT_EQ(t->dl_tensor.device.device_id, 0);
  t->deleter(t);
  f.reset();
  d.publish(3, 3.5);
  auto g = s.wait(milliseconds(1000));
  ASSERT_TRUE(g);
  EXPECT_EQ(first_point(*g), 3.5);
  EXPECT_EQ(g->device_id(), 0);
  EXPECT_EQ(d.dev->uuid_lookups, 1);
}

TEST(DevicePath, AGpuThisProcessDoesNotSeeIsRefusedAtTheFirstFrameNamingIt) {
  OnFakeDevice d("unseen", 2, 0, /*daemon_ordinal=*/3);
  d.publish(3, 1.0);
  d.dev->visible = std::vector<shm::DeviceUuid>{shm::DeviceUuid{9}};  // another GPU only
  auto s = meshdock::Slot::attach("m", d.options);
  const auto msg = wait_error(s);  // "no error": a frame of a slot on a GPU it does not see
  EXPECT_NE(msg.find("a CUDA slot on GPU-6d64fa4e-0102-0304-0506-0708090a0b0c (the daemon's "
                     "cuda:3), which this process does not see (CUDA_VISIBLE_DEVICES"),
            std::string::npos)
      << msg;
  EXPECT_THROW((void)s.wait(milliseconds(200)), meshdock::SdkError);  // every time, by name
  EXPECT_EQ(d.dev->imports_open(), 0);
}

TEST(DevicePath, WithoutAUuidOrARuntimeThatCanTellTheDaemonsOrdinalIsUsed) {
  for (const bool no_uuid : {true, false}) {
    OnFakeDevice d(no_uuid ? "nouuid" : "cannottell", 2);
    if (no_uuid)
      d.dev->daemon_writes_uuid = false;  // an older daemon: all zero
    else
      d.dev->visible.reset();  // the consumer's runtime cannot enumerate
    d.publish(3, 7.0);
    auto s = meshdock::Slot::attach("m", d.options);
    auto f = s.wait(milliseconds(1000));
    ASSERT_TRUE(f) << no_uuid;
    EXPECT_EQ(f->device_id(), 0);
    EXPECT_EQ(first_point(*f), 7.0);
  }
}
