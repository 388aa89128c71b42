// The daemon's CUDA backend and libmeshdock's CUDA consumer code, as compiled for a GPU, run
// against the fake CUDA runtime (tests/support/fake_cudart.cpp; built with
// MESHDOCK_WITH_CUDA=FAKE, which scripts/test's sanitizer build uses). What a GPU run must
// still prove (real copies, real IPC, real timings) is scripts/gpu-check's; what runs here is
// every call the code makes, in the order it makes them, checked as strictly as CUDA checks
// them: device pointers the host cannot touch, copies bounded by their allocation, handles
// opened in another process only, streams that run later, events a consumer must wait for.
// The consumer is scripts/gpu-check's own C++ consumer (tests/gpu/cpp_check.cpp) in another
// process, built against the same fake: it copies every array back on a stream of its own after
// the slot's event, and compares checksums with a reference file this test writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include <nlohmann/json.hpp>

#include "../gpu/wsum64.hpp"
#include "../support/child_process.hpp"
#include "daemon/backend/backend.hpp"
#include "daemon/backend/device_probe.hpp"
#include "daemon/backend/pinned_pool.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/service/registry.hpp"
#include "daemon/slots/layout.hpp"
#include "daemon/slots/slot.hpp"
#include "fake_cudart.h"

namespace fs = std::filesystem;
namespace mesh = meshdock::mesh;
namespace payload = meshdock::payload;
namespace slots = meshdock::slots;
using std::chrono::milliseconds;

namespace {

meshdock_fake_cuda_stats stats() {
  meshdock_fake_cuda_stats s{};
  meshdock_fake_cuda_get_stats(&s);
  return s;
}

payload::DevicePayload payload_of(std::size_t points, double value) {
  mesh::Mesh m;
  std::vector<double> xyz(3 * points);
  for (std::size_t i = 0; i < xyz.size(); ++i) xyz[i] = value + static_cast<double>(i);
  m.points = mesh::Array::from_vector(std::move(xyz), {static_cast<std::int64_t>(points), 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 2, 1, 0}, {2, 3})));
  std::vector<float> t(points);
  for (std::size_t i = 0; i < points; ++i) t[i] = static_cast<float>(value) * 0.5f + i;
  m.point_data["T"] = mesh::Array::from_vector(std::move(t));
  return payload::build_payload(m);
}

// The reference cpp_check compares with: every array of `p` as a slot lays it out, in
// DIR/LABEL.json; returns its path.
std::string write_reference(const fs::path& dir, const payload::DevicePayload& p,
                            const std::string& label) {
  const auto layout = slots::plan_layout(p);
  nlohmann::json arrays = nlohmann::json::object();
  for (const auto& e : layout.manifest.arrays)
    for (const auto& pl : layout.placements)
      if (pl.offset == e.offset && pl.array->nbytes() == e.nbytes)
        arrays[e.name] = {{"wsum", wsum64(pl.array->data(), e.nbytes)}};
  const auto path = (dir / (label + ".json")).string();
  std::ofstream(path) << nlohmann::json{{"files", {{label, {{"arrays", arrays}}}}}}.dump();
  return path;
}

// cpp_check's JSON line for slot `name` under `prefix` (`env`: extra variables for it).
nlohmann::json run_consumer(const std::string& prefix, const std::string& name,
                            const std::string& ref, const std::string& label,
                            const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {FAKE_CUDA_CONSUMER, name, prefix, ref, label, "10"});
  meshdock::testing::ChildProcess c(argv);
  const auto line = c.read_line(std::chrono::seconds(30));
  c.wait();
  if (!line) return {{"error", "the consumer said nothing"}};
  return nlohmann::json::parse(*line);
}

// A slot of one mesh on the fake cuda:0, with a consumer process to read it.
struct OnFakeCuda {
  std::string prefix = "fc" + std::to_string(::getpid()) + ".";
  std::unique_ptr<meshdock::backend::Backend> backend;
  std::unique_ptr<slots::Slot> slot;
  fs::path dir = fs::temp_directory_path() / ("md-fakecuda-" + std::to_string(::getpid()));

  explicit OnFakeCuda(std::uint32_t num_slots = 2, int device = 0) {
    if (!std::getenv("MESHDOCK_FAKE_CUDA_DEVICES")) ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "1", 1);
    fs::create_directories(dir);
    backend = meshdock::backend::make_cuda_backend(device);
    slots::SlotOptions o;
    o.prefix = prefix;
    o.name = "m";
    o.page_size = 65536;
    o.lease_capacity = 8;
    o.num_slots = num_slots;
    o.lease_wait = milliseconds(20);
    slot = std::make_unique<slots::Slot>(o, *backend);
  }
  ~OnFakeCuda() {
    slot.reset();
    backend.reset();
    fs::remove_all(dir);
  }
  std::string reference(const payload::DevicePayload& p, const std::string& label) {
    return write_reference(dir, p, label);
  }
  nlohmann::json consume(const std::string& ref, const std::string& label,
                         const std::vector<std::string>& env = {}) {
    return run_consumer(prefix, "m", ref, label, env);
  }
};

}  // namespace

// Without MESHDOCK_FAKE_CUDA_DEVICES the fake answers as cudart does on this machine (no
// driver): every other test of the sanitizer build sees what the main build sees.
TEST(FakeCuda, WithoutDevicesTheProbeSaysThereIsNoDriver) {
  ::unsetenv("MESHDOCK_FAKE_CUDA_DEVICES");
  const auto r = meshdock::backend::probe_devices();
  EXPECT_TRUE(r.built_with_cuda);
  EXPECT_EQ(r.cuda_status, "no NVIDIA driver (libcuda.so.1 is not installed or not loadable)");
  EXPECT_TRUE(r.devices.empty());
  EXPECT_THROW(meshdock::backend::make_cuda_backend(0), meshdock::backend::BackendError);
}

TEST(FakeCuda, TheProbeAndTheBackendSeeTheDevicesThereAre) {
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "2", 1);
  const auto r = meshdock::backend::probe_devices();
  EXPECT_EQ(r.cuda_status, "ok");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[1].name, "meshdock fake GPU 1");
  try {
    meshdock::backend::make_cuda_backend(2);
    FAIL() << "cuda:2 made";
  } catch (const meshdock::backend::BackendError& e) {
    EXPECT_STREQ(e.what(), "cuda:2: no such device (2 answer)");
  }
  auto b = meshdock::backend::make_cuda_backend(1);
  EXPECT_EQ(b->device_uuid()[15], 1);  // the UUID of the GPU it is on (the catalog's)
}

// The whole path of a frame: the backend's cudaMalloc'd buffers, its upload on its stream and
// the event recorded after it; the consumer's imports in another process, its stream ordered
// after the event, its copies back. Then every frame is the daemon's bytes, a growth gives a
// fresh buffer the consumer reads too, and the daemon leaves nothing allocated.
TEST(FakeCuda, AConsumerInAnotherProcessReadsEveryFrameThroughTheCudaCalls) {
  {
    OnFakeCuda f;
    const auto base = stats();
    auto p1 = payload_of(100, 1.0);
    f.slot->publish(p1);
    const auto ref1 = f.reference(p1, "one");
    auto out = f.consume(ref1, "one");
    EXPECT_EQ(out.value("ok", false), true) << out.dump();
    EXPECT_EQ(out["device"], nlohmann::json::array({2, 0})) << out.dump();
    EXPECT_EQ(out.value("arrays", 0), 4) << out.dump();  // points, cells/0, block_bases, T
    // Both ring slots hold a buffer (the second a placeholder) with its event.
    EXPECT_EQ(stats().device_allocations - base.device_allocations, 2);
    EXPECT_EQ(stats().events - base.events, 2);
    // Bigger than a 2 MiB granule: fresh buffers for both ring slots as the ring reaches them.
    auto p2 = payload_of(200000, 7.0);
    f.slot->publish(p2);
    f.slot->publish(p2);
    const auto ref2 = f.reference(p2, "two");
    out = f.consume(ref2, "two");
    EXPECT_EQ(out.value("ok", false), true) << out.dump();
    f.slot->maintain(meshdock::shm::monotonic_ns());
    EXPECT_EQ(stats().device_allocations - base.device_allocations, 2) << "a replaced one kept";
    EXPECT_EQ(stats().refused, base.refused) << "a CUDA call was refused: " << stats().last_refused;
  }
  const auto s = stats();
  EXPECT_EQ(s.device_allocations, 0);
  EXPECT_EQ(s.events, 0);
  EXPECT_EQ(s.streams, 0);
  EXPECT_EQ(s.pinned, 0);
}

// DLPack stream semantics, as gpu-check's stream_semantics proves them on a GPU: with the
// upload held 3 s on the daemon's stream (the upload_delay failpoint: a host function queued
// before the copies), publish returns before the bytes land; a consumer that orders its stream
// after the slot's event reads the whole frame, one that does not (the negative control) reads
// the fresh buffer's garbage.
TEST(FakeCuda, AConsumerOrderedAfterTheEventSeesTheWholeFrameOfAHeldUpload) {
  OnFakeCuda f;
  f.backend->delay_uploads(milliseconds(3000));
  auto p = payload_of(5000, 3.0);
  const auto t0 = std::chrono::steady_clock::now();
  f.slot->publish(p);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2000)) << "publish waited";
  const auto ref = f.reference(p, "held");
  const auto unordered = f.consume(ref, "held", {"GPU_CHECK_SKIP_ORDER=1"});
  EXPECT_EQ(unordered.value("ok", true), false)
      << "the negative control read a whole frame: " << unordered.dump();
  const auto ordered = f.consume(ref, "held");
  EXPECT_EQ(ordered.value("ok", false), true) << ordered.dump();
}

// Some virtual GPUs give no interprocess events: buffers go out with an all-zero event handle,
// the backend waits for its uploads, the consumer orders on nothing and still reads the frame.
TEST(FakeCuda, WithoutInterprocessEventsFramesStillArriveWhole) {
  ::setenv("MESHDOCK_FAKE_CUDA_NO_IPC_EVENTS", "1", 1);
  OnFakeCuda f;
  auto p = payload_of(1000, 5.0);
  f.slot->publish(p);
  const auto notes = f.backend->take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("gives no interprocess event"), std::string::npos) << notes[0];
  const auto out = f.consume(f.reference(p, "noev"), "noev");
  EXPECT_EQ(out.value("ok", false), true) << out.dump();
  ::unsetenv("MESHDOCK_FAKE_CUDA_NO_IPC_EVENTS");
}

// The daemon's pinned reads: the pool installed as the mesh allocator, a file read into
// cudaHostAlloc'd memory, uploaded from it (the fake's stream reads a pinned source when it
// gets to the copy, so one freed too early is a use-after-free under ASan), and every pinned
// buffer given back when the pool goes.
TEST(FakeCuda, AMeshReadIntoPinnedMemoryIsUploadedFromIt) {
  OnFakeCuda f;
  {
    meshdock::backend::PinnedPool::Options po;
    po.min_bytes = 4096;
    auto pool = meshdock::backend::make_pinned_pool(std::move(po), 0);
    pool->install();
    {
      const auto m =
          mesh::read_mesh((fs::path(MESHDOCK_TEST_DATA) / "meshes" / "box.v41.msh").string());
      const auto p = payload::build_payload(m);
      EXPECT_GT(pool->counters().pinned, 0u);
      EXPECT_GT(stats().pinned, 0);
      f.slot->publish(p);
      const auto out = f.consume(f.reference(p, "box"), "box");
      EXPECT_EQ(out.value("ok", false), true) << out.dump();
    }
  }
  EXPECT_EQ(stats().pinned, 0);
}

// The fake is worth running only if it refuses what CUDA refuses: a host read of device memory
// faults, a copy past an allocation or of the wrong kind is an error, a handle does not open
// in its own process, an interprocess event needs cudaEventDisableTiming, and nothing is freed
// twice.
TEST(FakeCuda, TheFakeRuntimeRefusesWhatCudaRefuses) {
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "1", 1);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  EXPECT_DEATH({ std::printf("%d\n", *static_cast<volatile int*>(d)); }, "");
  std::vector<char> host(8192);
  EXPECT_EQ(cudaMemcpyAsync(d, host.data(), 4096, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(d, host.data(), 4097, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), d, 16, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once, then cleared
  cudaIpcMemHandle_t h;
  ASSERT_EQ(cudaIpcGetMemHandle(&h, d), cudaSuccess);
  void* again = nullptr;
  EXPECT_NE(cudaIpcOpenMemHandle(&again, h, cudaIpcMemLazyEnablePeerAccess), cudaSuccess);
  cudaEvent_t e = nullptr;
  EXPECT_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(host.data()), cudaErrorInvalidValue);
}

// The daemon's Registry on the device, as meshdockd runs it (its backend maker is
// make_cuda_backend): a file loaded onto cuda:0, reloaded onto another ring size and unloaded,
// each frame read by the consumer, and every device allocation, event and stream given back.
TEST(FakeCuda, TheRegistryLoadsReloadsAndUnloadsOnTheDevice) {
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "1", 1);
  const auto base = stats();
  const fs::path root =
      fs::temp_directory_path() / ("md-fakecuda-reg-" + std::to_string(::getpid()));
  fs::create_directories(root);
  const auto file = root / "box.msh";
  fs::copy_file(fs::path(MESHDOCK_TEST_DATA) / "meshes" / "box.v41.msh", file,
                fs::copy_options::overwrite_existing);
  const auto ref =
      write_reference(root, payload::build_payload(mesh::read_mesh(file.string())), "box");
  {
    meshdock::service::Config config;
    config.roots = {root.string()};
    config.prefix = "fcr" + std::to_string(::getpid()) + ".";
    config.device = "cuda:0";
    config.num_slots = 2;
    config.log_level = "error";
    meshdock::service::Logger log;
    log.set_level(config.log_level);
    meshdock::service::Registry reg(config, log);
    const auto none = [](meshdock::service::Phase, std::uint64_t, std::uint64_t,
                         const std::string&) {};
    meshdock::service::LoadRequest r;
    r.path = file.string();
    r.name = "box";
    EXPECT_EQ(reg.load(r, none).device.type, meshdock::shm::kDLDeviceCUDA);
    auto out = run_consumer(config.prefix, "box", ref, "box");
    EXPECT_EQ(out.value("ok", false), true) << out.dump();
    r.num_slots = 3;
    r.replace = true;
    reg.load(r, none);
    out = run_consumer(config.prefix, "box", ref, "box");
    EXPECT_EQ(out.value("ok", false), true) << out.dump();
    reg.unload("box");
    std::this_thread::sleep_for(milliseconds(700));  // past cuda-link's grace
    reg.maintain();
    EXPECT_EQ(stats().device_allocations, base.device_allocations);
    EXPECT_EQ(stats().events, base.events);
    EXPECT_EQ(stats().refused, base.refused) << "a CUDA call was refused: " << stats().last_refused;
  }
  EXPECT_EQ(stats().streams, 0);
  fs::remove_all(root);
}

// A consumer that numbers the GPUs otherwise than the daemon (CUDA_VISIBLE_DEVICES=1,0; a
// container given one GPU): the slot on the daemon's cuda:1 is the consumer's cuda:0, found by
// the UUID in the catalog (CudaIpc::ordinal_of through cudaGetDeviceProperties), and opened
// there. Opened on the daemon's ordinal instead, it would be the other GPU: the fake refuses
// that open, as CUDA without peer access does. (A GPU machine with one GPU cannot try this.)
TEST(FakeCuda, AConsumerOpensTheSlotOnItsOwnOrdinalOfTheSlotsGpu) {
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "2", 1);
  OnFakeCuda f(2, 1);
  auto p = payload_of(300, 2.0);
  f.slot->publish(p);
  const auto ref = f.reference(p, "gpu1");
  auto out = f.consume(ref, "gpu1", {"MESHDOCK_FAKE_CUDA_ORDER=1,0"});
  EXPECT_EQ(out.value("ok", false), true) << out.dump();
  EXPECT_EQ(out["device"], nlohmann::json::array({2, 0})) << out.dump();
  out = f.consume(ref, "gpu1");  // the same numbering as the daemon's
  EXPECT_EQ(out["device"], nlohmann::json::array({2, 1})) << out.dump();
  EXPECT_EQ(out.value("ok", false), true) << out.dump();
}

// The default streams as CUDA has them, which the late reader below relies on: the legacy
// default stream waits for the work queued before on every blocking stream (another thread's
// per-thread default stream included), a per-thread default stream is the calling thread's
// own, and a non-blocking stream waits for neither.
TEST(FakeCuda, TheLegacyDefaultStreamWaitsForEveryBlockingStream) {
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "1", 1);
  static long hold_ms = 1500;  // long beside the 200 ms looks: a loaded machine cannot end it early
  const auto sleep = [](void* ms) {
    std::this_thread::sleep_for(milliseconds(*static_cast<long*>(ms)));
  };
  std::thread([&] {  // the held work: on this other thread's per-thread default stream
    ASSERT_EQ(cudaLaunchHostFunc(cudaStreamPerThread, sleep, &hold_ms), cudaSuccess);
  })
      .join();
  cudaStream_t free_running = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&free_running, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t on_own = nullptr, on_free = nullptr, on_legacy = nullptr;
  for (auto* e : {&on_own, &on_free, &on_legacy})
    ASSERT_EQ(cudaEventCreateWithFlags(e, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(on_own, cudaStreamPerThread), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(on_free, free_running), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(on_legacy, cudaStreamLegacy), cudaSuccess);
  // The streams' threads complete the free events: polled up to 1 s (still within the hold), as
  // a fixed 200 ms was a guess about a loaded machine's scheduling.
  const auto until = std::chrono::steady_clock::now() + milliseconds(1000);
  while ((cudaEventQuery(on_own) != cudaSuccess || cudaEventQuery(on_free) != cudaSuccess) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(cudaEventQuery(on_own), cudaSuccess) << "this thread's stream waited for another's";
  EXPECT_EQ(cudaEventQuery(on_free), cudaSuccess) << "a non-blocking stream waited";
  EXPECT_EQ(cudaEventQuery(on_legacy), cudaErrorNotReady)
      << "the legacy stream did not wait for another thread's per-thread stream";
  ASSERT_EQ(cudaEventSynchronize(on_legacy), cudaSuccess);
  // ... and a blocking stream's later work waits for the legacy stream's.
  ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, sleep, &hold_ms), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(on_own, cudaStreamPerThread), cudaSuccess);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(cudaEventQuery(on_own), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  for (auto* e : {on_own, on_free, on_legacy}) EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(free_running), cudaSuccess);
}

// gpu-check's late_reader through the CUDA calls: a consumer queues its copies behind 4 s of
// other work on its stream and drops the frame at once (a framework freeing a tensor with its
// kernels still queued). The daemon republishes the whole ring meanwhile; the consumer's late
// copies must still read the frame it adopted, so its lease outlived the queued work and the
// ring slot got a fresh buffer. On the per-thread default stream with the frame dropped on
// another thread, only the legacy default stream can mark the end of that work
// (FrameState::mark_stream): marked on the dropping thread's own stream, the lease went at once
// and the late copies read the next frames' bytes.
TEST(FakeCuda, ALateReadersLeaseOutlastsTheWorkQueuedOnItsStream) {
  for (const std::string stream : {"own", "per-thread"}) {
    SCOPED_TRACE(stream);
    OnFakeCuda f;
    auto first = payload_of(3000, 1.0), next = payload_of(3000, 9.0);
    f.slot->publish(first);
    const auto ref = f.reference(first, "first");
    meshdock::testing::ChildProcess c({"/usr/bin/env", "GPU_CHECK_LATE_MS=4000",
                                       "GPU_CHECK_STREAM=" + stream, FAKE_CUDA_CONSUMER, "m",
                                       f.prefix, ref, "first", "10"});
    const auto queued = c.read_line(std::chrono::seconds(30));
    ASSERT_TRUE(queued) << "the consumer said nothing";
    ASSERT_EQ(nlohmann::json::parse(*queued).value("event", ""), "queued") << *queued;
    const auto before = stats().device_allocations;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i <= 2; ++i) f.slot->publish(next);  // past every ring slot
    EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(3000)) << "too slow to tell";
    EXPECT_EQ(stats().device_allocations - before, 1) << "no fresh buffer for the held slot";
    std::optional<std::string> line;  // the daemon's heartbeat goes on while the consumer polls
    for (int i = 0; i < 300 && !line; ++i) {
      line = c.read_line(milliseconds(100));
      f.slot->maintain(meshdock::shm::monotonic_ns());
    }
    c.wait();
    ASSERT_TRUE(line) << "the consumer said nothing after its copies";
    const auto out = nlohmann::json::parse(*line);
    EXPECT_EQ(out.value("ok", false), true) << out.dump();
  }
}

// A sticky CUDA error (the fake's context lost right after the daemon's first cudaMalloc): the
// backend says so (Backend::lost, by the error's name), the Registry names the device
// (lost_device: what meshdockd's tick stops on, with exit status 1), and the load that met it
// answers UNAVAILABLE naming the error, where a full device would be RESOURCE_EXHAUSTED. In a
// child process (a lost context is lost for good, as on CUDA).
TEST(FakeCuda, ALoadThatMeetsALostContextSaysSoAndTheRegistryNamesTheDevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ::setenv("MESHDOCK_FAKE_CUDA_DEVICES", "1", 1);
  ::setenv("MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS", "0", 1);
  const fs::path root =
      fs::temp_directory_path() / ("md-fakecuda-lost-" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::copy_file(fs::path(MESHDOCK_TEST_DATA) / "meshes" / "box.v41.msh", root / "box.msh",
                fs::copy_options::overwrite_existing);
  const auto body = [&] {
    meshdock::service::Config config;
    config.roots = {root.string()};
    config.prefix = "fcl" + std::to_string(::getpid()) + ".";
    config.device = "cuda:0";
    config.log_level = "error";
    meshdock::service::Logger log;
    log.set_level(config.log_level);
    meshdock::service::Registry reg(config, log);
    if (!reg.lost_device().empty()) std::_Exit(2);  // nothing on the device yet
    meshdock::service::LoadRequest r;
    r.path = (root / "box.msh").string();
    r.name = "box";
    try {
      reg.load(r,
               [](meshdock::service::Phase, std::uint64_t, std::uint64_t, const std::string&) {});
      std::fprintf(stderr, "loaded\n");
    } catch (const meshdock::service::ServiceError& e) {
      std::fprintf(stderr, "status %d: %s\n", static_cast<int>(e.status()), e.what());
      if (e.status() != meshdock::service::Status::kUnavailable) std::_Exit(3);
    }
    std::fprintf(stderr, "lost_device: %s\n", reg.lost_device().c_str());
    std::_Exit(reg.lost_device().starts_with("cuda:0: cudaErrorIllegalAddress (an illegal") ? 0
                                                                                            : 4);
  };
  EXPECT_EXIT(body(), ::testing::ExitedWithCode(0),
              "cuda:0 is lost: cudaErrorIllegalAddress \\(an illegal memory access was "
              "encountered \\(fake CUDA\\)\\); meshdockd stops so that it is restarted");
  ::unsetenv("MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS");
  fs::remove_all(root);
}
