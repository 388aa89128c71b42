// The daemon's Registry with a fake device as cuda:0 (tests/support/fake_device.hpp: host
// memory under a CUDA device's name) and a consumer through libmeshdock's fake DeviceIpc: what
// the registry does with device buffers across an unload, and what the memory budget counts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../support/fake_device.hpp"
#include "daemon/service/registry.hpp"
#include "meshdock/attach.hpp"

namespace fs = std::filesystem;
namespace service = meshdock::service;
using meshdock::testing::FakeDevice;
using std::chrono::milliseconds;

namespace {

struct RegistryOnFakeDevice {
  std::shared_ptr<FakeDevice> dev = std::make_shared<FakeDevice>();
  fs::path root;
  service::Logger log;
  service::Config config;
  std::unique_ptr<service::Registry> reg;
  meshdock::AttachOptions options;

  explicit RegistryOnFakeDevice(const std::string& tag) {
    root = fs::temp_directory_path() / ("md-regdev-" + std::to_string(::getpid()) + tag);
    fs::create_directories(root);
    fs::copy_file(fs::path(MESHDOCK_TEST_DATA) / "meshes" / "box.v41.msh", root / "box.msh",
                  fs::copy_options::overwrite_existing);
    config.roots = {root.string()};
    config.prefix = "rd" + std::to_string(::getpid()) + tag + ".";
    config.device = "cuda:0";
    config.num_slots = 1;
    config.log_level = "error";
    log.set_level(config.log_level);
    reg = std::make_unique<service::Registry>(config, log, [d = dev](int) {
      return std::make_unique<meshdock::testing::FakeDeviceBackend>(d);
    });
    options.prefix = config.prefix;
    options.timeout = milliseconds(2000);
    options.device_ipc = std::make_shared<meshdock::testing::FakeDeviceIpc>(dev);
  }
  ~RegistryOnFakeDevice() {
    reg.reset();
    fs::remove_all(root);
  }
  service::MeshInfo load(const std::string& name, std::uint32_t num_slots = 0,
                         bool replace = false) {
    service::LoadRequest r;
    r.path = (root / "box.msh").string();
    r.name = name;
    r.num_slots = num_slots;
    r.replace = replace;
    return reg->load(r, [](service::Phase, std::uint64_t, std::uint64_t, const std::string&) {});
  }
  void set_budget(std::uint64_t bytes) {
    config.device_memory_budget = bytes;
    reg->reconfigure(config);
  }
  // A cuda-link consumer's imports: every live buffer's handle opened, unannounced (no lease,
  // no report); returns their objects.
  std::vector<std::string> open_every_buffer() {
    std::vector<std::string> opened;
    std::lock_guard lock(dev->m);
    for (auto& [object, opens] : dev->live) {
      ++opens;
      opened.push_back(object);
    }
    return opened;
  }
  // It polled, saw the change and closed them; false when one was freed before that.
  bool close_imports(const std::vector<std::string>& opened) {
    std::lock_guard lock(dev->m);
    for (const auto& o : opened)
      if (!dev->live.count(o)) return false;
    for (const auto& o : opened) --dev->live[o];
    return true;
  }
  // Waits (up to 5 s: a loaded CI machine, ASan) until the registry's thread has read `n`
  // import reports.
  bool imports_reported(std::size_t n) {
    for (int i = 0; i < 500 && reg->stats().imports != n; ++i)
      std::this_thread::sleep_for(milliseconds(10));
    return reg->stats().imports == n;
  }
};

// An unload keeps the device buffers a consumer has open (the Graveyard); they count against
// device_memory_budget, and a load refused for them says so. Once the consumer lets go, the
// next load is served at once: the budget check frees what nobody has open any more first,
// instead of refusing until the daemon's next tick (before, the load below stayed refused: in a
// unit test no tick comes).
TEST(RegistryDevice, ALoadAfterTheConsumersOfAnUnloadedMeshLetGoIsNotRefusedForThem) {
  RegistryOnFakeDevice r("grave");
  const auto a = r.load("a");
  ASSERT_EQ(a.device.type, meshdock::shm::kDLDeviceCUDA);
  const auto used = r.reg->stats().device_memory_used;
  ASSERT_GT(used, 0u);
  r.set_budget(used + used / 2);  // room for one mesh, not two

  auto slot = std::make_unique<meshdock::Slot>(meshdock::Slot::attach("a", r.options));
  auto frame = slot->wait(milliseconds(2000));
  ASSERT_TRUE(frame);
  ASSERT_TRUE(r.imports_reported(1));
  r.reg->unload("a");
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, used);

  try {
    r.load("b");
    FAIL() << "the unloaded mesh's open buffer no longer counts against the budget";
  } catch (const service::ServiceError& e) {
    EXPECT_EQ(e.status(), service::Status::kResourceExhausted);
    // The sizes are the buffer's (a few KiB here: never "0 MiB").
    const auto kib = [](std::uint64_t b) {
      char out[32];
      std::snprintf(out, sizeof out, "%.1f KiB", static_cast<double>(b) / 1024);
      return std::string(out);
    };
    EXPECT_NE(std::string(e.what()).find(kib(used) + " of the " + kib(used + used / 2) +
                                         " budget are in use (" + kib(used) +
                                         " by unloaded meshes whose consumers still have them "
                                         "open: freed when they let go, at most 30 s"),
              std::string::npos)
        << e.what();
  }

  frame.reset();
  slot.reset();  // closes its import and reports that
  ASSERT_TRUE(r.imports_reported(0));
  const auto b = r.load("b");  // no maintain() in between
  EXPECT_EQ(b.name, "b");
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, 0u);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}

// A reload onto another ring size ends the slot (Registry::end_slot) while a consumer holds a
// frame of it: the frame's buffer is kept (the consumer reads its own bytes to the end), the
// consumer's next wait says the producer is gone, and once it lets go the buffer is freed with
// nothing open on it.
TEST(RegistryDevice, AReloadOntoAnotherRingSizeKeepsTheBufferOfAHeldFrame) {
  RegistryOnFakeDevice r("ring");
  r.load("a");
  auto slot = std::make_unique<meshdock::Slot>(meshdock::Slot::attach("a", r.options));
  auto frame = slot->wait(milliseconds(2000));
  ASSERT_TRUE(frame);
  ASSERT_TRUE(r.imports_reported(1));
  const auto& points = frame->array("points");
  std::vector<double> before(points.entry.nbytes / sizeof(double));
  std::memcpy(before.data(), points.data, before.size() * sizeof(double));  // fake: host memory

  const auto b = r.load("a", 2, /*replace=*/true);
  EXPECT_EQ(b.num_slots, 2u);
  EXPECT_GT(r.reg->stats().unloaded_open_bytes, 0u);
  EXPECT_EQ(std::memcmp(before.data(), points.data, before.size() * sizeof(double)), 0);
  EXPECT_THROW(slot->wait(milliseconds(1000)), meshdock::ProducerGone);

  frame.reset();
  slot.reset();
  ASSERT_TRUE(r.imports_reported(0));
  r.reg->maintain();
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, 0u);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});

  // The new ring serves the same mesh to a new consumer.
  auto again = meshdock::Slot::attach("a", r.options);
  auto f = again.wait(milliseconds(2000));
  ASSERT_TRUE(f);
  EXPECT_EQ(std::memcmp(before.data(), f->array("points").data, before.size() * sizeof(double)), 0);
}

// A field publish on a device slot copies every array into the ring slot's buffer, not only
// the field: publish_copy "auto" is "all" where consumers can write the memory they are handed
// (CUDA IPC maps it read-write), so a consumer's write lasts one round of the ring. A frame
// held meanwhile keeps its own bytes.
TEST(RegistryDevice, AFieldPublishOnTheDeviceCopiesTheWholeFrame) {
  RegistryOnFakeDevice r("field");
  const auto a = r.load("a", 2);
  auto slot = meshdock::Slot::attach("a", r.options);
  auto held = slot.wait(milliseconds(2000));
  ASSERT_TRUE(held);
  ASSERT_EQ(held->manifest().find("point_data/T"), nullptr);

  const auto copied = a.copied_bytes;
  std::uint64_t frame_bytes = 0;
  for (int k = 1; k <= 3; ++k) {
    const auto data = meshdock::mesh::Array::from_vector(
        std::vector<double>(a.num_points, 10.0 * k), {static_cast<std::int64_t>(a.num_points)});
    r.reg->publish_field("a", "point_data/T", data, 0);
    const auto info = r.reg->describe("a").first;
    EXPECT_EQ(info.kept_bytes, 0u) << "publish " << k << " kept arrays in a device buffer";
    if (k == 1) frame_bytes = info.copied_bytes - copied;
    EXPECT_EQ(info.copied_bytes, copied + k * frame_bytes) << "publish " << k;
  }
  EXPECT_GT(frame_bytes, a.num_points * sizeof(double));  // the mesh too, not the field alone

  auto f = slot.wait(milliseconds(2000));
  ASSERT_TRUE(f);
  double t = 0;
  std::memcpy(&t, f->array("point_data/T").data, sizeof t);  // fake: host memory
  EXPECT_EQ(t, 30.0);
  EXPECT_EQ(held->manifest().find("point_data/T"), nullptr);  // the held frame: still its own
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}

}  // namespace

// cuda-link's consumers take no lease and send no import report, yet hold every ring slot's
// buffer open (cudaIpcOpenMemHandle, cuda_ipc_importer.py:469-479) until they next poll and see
// the version change. A growth replaced the buffer and freed the old one in the same publish,
// with such a consumer's import open on it (on CUDA: undefined behaviour). Now the old buffer
// outlives its replacement by cuda-link's grace, then goes at the next tick.
TEST(RegistryDevice, AGrowthKeepsTheReplacedBufferForCudaLinksGrace) {
  RegistryOnFakeDevice r("grow");
  fs::copy_file(fs::path(MESHDOCK_TEST_DATA) / "meshes" / "blocks.v41.msh", r.root / "small.msh",
                fs::copy_options::overwrite_existing);
  service::LoadRequest req;
  req.path = (r.root / "small.msh").string();
  req.name = "g";
  const auto none = [](service::Phase, std::uint64_t, std::uint64_t, const std::string&) {};
  r.reg->load(req, none);  // one ring slot (config.num_slots = 1)
  const auto opened = r.open_every_buffer();
  ASSERT_EQ(opened.size(), 1u);
  req.path = (r.root / "box.msh").string();  // bigger: a fresh buffer
  req.replace = true;
  r.reg->load(req, none);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
  ASSERT_TRUE(r.close_imports(opened)) << "freed at once";  // it saw the version change
  std::this_thread::sleep_for(milliseconds(600));
  r.reg->maintain();  // past it: freed, with nothing open on it
  EXPECT_EQ(r.dev->live.count(opened[0]), 0u);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}

// An unload freed a device slot's buffers that no consumer reported open at once, while
// cuda-link's consumers (no lease, no report) may be reading one until they next poll and see
// the shutdown byte. Now they wait out cuda-link's grace in the Graveyard, then go at a tick.
TEST(RegistryDevice, AnUnloadKeepsUnreportedDeviceBuffersForCudaLinksGrace) {
  RegistryOnFakeDevice r("ugrace");
  r.load("u", 2);
  const auto opened = r.open_every_buffer();  // both ring slots' buffers
  ASSERT_EQ(opened.size(), 2u);
  r.reg->unload("u");
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
  ASSERT_TRUE(r.close_imports(opened)) << "freed at the unload";  // it saw the shutdown byte
  std::this_thread::sleep_for(milliseconds(600));
  r.reg->maintain();  // past the grace: freed, with nothing open on them
  for (const auto& o : opened) EXPECT_EQ(r.dev->live.count(o), 0u) << o;
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, 0u);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}

// A cuda-link consumer that polls less often than half a second: cuda_link_grace_ms gives it
// longer (the key reread on SIGHUP applies to the next unload).
TEST(RegistryDevice, CudaLinkGraceMsSetsHowLongUnloadedBuffersWait) {
  RegistryOnFakeDevice r("ugrace2");
  r.config.cuda_link_grace_ms = 1500;
  r.reg->reconfigure(r.config);
  r.load("u", 2);
  const auto opened = r.open_every_buffer();
  ASSERT_EQ(opened.size(), 2u);
  r.reg->unload("u");
  std::this_thread::sleep_for(milliseconds(700));  // past the default half second
  r.reg->maintain();
  for (const auto& o : opened) EXPECT_EQ(r.dev->live.count(o), 1u) << o << " freed too soon";
  ASSERT_TRUE(r.close_imports(opened));
  std::this_thread::sleep_for(milliseconds(1000));
  r.reg->maintain();  // past 1.5 s: freed
  for (const auto& o : opened) EXPECT_EQ(r.dev->live.count(o), 0u) << o;
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}

// The memory budget outranks that grace: a load right after an unload is not refused for
// buffers kept only for it.
TEST(RegistryDevice, TheBudgetTakesBuffersKeptOnlyForCudaLinksGrace) {
  RegistryOnFakeDevice r("ubudget");
  r.load("a");
  const auto used = r.reg->stats().device_memory_used;
  ASSERT_GT(used, 0u);
  r.set_budget(used + used / 2);  // room for one mesh, not two
  r.reg->unload("a");
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, used);  // within the grace
  EXPECT_EQ(r.load("b").name, "b");                     // no tick in between
  EXPECT_EQ(r.reg->stats().unloaded_open_bytes, 0u);
  EXPECT_EQ(r.dev->freed_while_open, std::vector<std::string>{});
}
