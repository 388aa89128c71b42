// The slot layer over the host backend, in process: layout alignment, a publish that lands
// byte-exact in the control block / catalog / data segment, a leased slot that gets a fresh
// buffer (version bump) while the leased one stays readable until its lease goes, stale
// segments of a dead owner removed, a live owner refused; a field publish that copies only the
// arrays a ring slot's buffer does not hold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/layout.hpp"
#include "daemon/slots/slot.hpp"

namespace mesh = meshdock::mesh;
namespace payload = meshdock::payload;
namespace shm = meshdock::shm;
namespace slots = meshdock::slots;

namespace {

std::string unique_prefix() {
  return "u" + std::to_string(::getpid()) + "x.";
}

// A slot of `num_slots` small pages under this test process's own prefix.
slots::SlotOptions small_slot(const std::string& name,
                              std::uint32_t num_slots = shm::kDefaultSlots) {
  slots::SlotOptions o;
  o.prefix = unique_prefix();
  o.name = name;
  o.num_slots = num_slots;
  o.page_size = 16384;
  o.lease_capacity = 8;
  return o;
}

payload::DevicePayload tiny(double x) {
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{x, 0, 0, 1, 0, 0, 0, 1, 0}, {3, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.point_data["t"] = mesh::Array::from_vector(std::vector<float>{1, 2, 3});
  return payload::build_payload(m);
}

bool exists(const std::string& object) {
  return std::filesystem::exists("/dev/shm/" + object);
}

// This process, registered with a one-ring-slot `slot` as a consumer, holding a lease on
// `frame` of ring slot 0 (released when it goes).
struct HeldLease {
  shm::Registration reg;
  shm::Segment segment;
  shm::LeasesView view;
  std::optional<std::uint32_t> lease;
  HeldLease(const slots::Slot& slot, const slots::SlotOptions& o, std::uint64_t frame)
      : reg(shm::Registration::connect(slot.socket_address(), ::getpid(), ::geteuid(),
                                       std::chrono::seconds(2), "test")),
        segment(shm::Segment::open(o.prefix + o.name + ".leases", shm::Access::kReadWrite)),
        view(shm::LeasesView::over(segment.data(), segment.size(), 1, o.lease_capacity)),
        lease(view.table(0).acquire(::getpid(), frame)) {}
  ~HeldLease() { release(); }
  void release() {
    if (lease) view.table(0).release(*lease, ::getpid());
    lease.reset();
  }
};

}  // namespace

TEST(Layout, ArraysAre256AlignedAndDescribed) {
  const auto p = tiny(0.5);
  const auto l = slots::plan_layout(p);
  ASSERT_EQ(l.manifest.arrays.size(), 4u);  // points, cells/0, block_bases, point_data/t
  EXPECT_EQ(l.manifest.arrays[0].name, "points");
  EXPECT_EQ(l.manifest.arrays[1].offset, 256u);
  EXPECT_EQ(l.manifest.arrays[3].name, "point_data/t");
  EXPECT_EQ(l.manifest.arrays[3].offset, 768u);
  EXPECT_EQ(l.total, 768u + 12u);
  EXPECT_EQ(l.manifest.block_bases, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(l.manifest.arrays[0].strides, (std::vector<std::int64_t>{3, 1}));
}

TEST(Layout, AZeroExtentGetsStridesEveryValidatorAccepts) {
  // An (N, 0) field got strides (0, 1), which decode_manifest (every consumer) refused.
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}, {3, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.point_data["e"] = mesh::Array::from_vector(std::vector<float>{}, {3, 0});
  m.point_data["f"] = mesh::Array::from_vector(std::vector<float>{}, {3, 2, 0});
  const auto l = slots::plan_layout(payload::build_payload(m));
  const auto back = shm::decode_manifest(shm::encode_manifest(l.manifest), l.total);
  ASSERT_EQ(back.arrays.size(), 5u);
  EXPECT_EQ(back.arrays[3].strides, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(back.arrays[4].strides, (std::vector<std::int64_t>{2, 1, 1}));
}

TEST(Layout, ASingleArrayIsAloneAtOffsetZeroAndDescribedAsATexture) {
  std::vector<float> px(4 * 3 * 2, 0.25f);
  const auto p = payload::tensor_payload(mesh::Array::from_vector(px, {4, 3, 2}));
  const auto l = slots::plan_layout(p);
  ASSERT_EQ(l.manifest.arrays.size(), 1u);
  EXPECT_EQ(l.manifest.arrays[0].name, "tensor");
  EXPECT_EQ(l.manifest.arrays[0].role, shm::ArrayRole::kTensor);
  EXPECT_EQ(l.manifest.arrays[0].offset, 0u);
  EXPECT_EQ(l.total, 96u);
  EXPECT_TRUE(l.manifest.cell_types.empty() && l.manifest.block_bases.empty());
  EXPECT_EQ(l.metadata, (shm::BufferMetadata{3, 4, 2, 2, 32, 0, 96}));
  EXPECT_EQ(slots::plan_layout(tiny(0.5)).metadata, shm::BufferMetadata::flat_bytes(780));
  // A shape the control block cannot describe is refused before any buffer is made.
  const auto empty = payload::tensor_payload(mesh::Array::from_vector(std::vector<float>{}, {0}));
  EXPECT_THROW(slots::plan_layout(empty), payload::PayloadError);
}

// cuda-link's importer reads height x width x comps of the dtype it decodes
// (cuda_ipc_importer.py:130-140, 855-856): a bfloat16 array as float32, twice its bytes. Its
// slot buffers cover that read; data_size and the metadata stay the array's.
TEST(Layout, ABfloat16ArrayGetsBuffersCoveringCudaLinksFloat32Read) {
  const auto bf16 = payload::tensor_payload(mesh::Array::empty({4, 16, 1}, {300, 400, 4}));
  const auto l = slots::plan_layout(bf16);
  EXPECT_EQ(l.total, 300u * 400 * 4 * 2);
  EXPECT_EQ(l.metadata, (shm::BufferMetadata{400, 300, 4, 2, 16, 1, 300 * 400 * 4 * 2}));
  EXPECT_EQ(l.buffer, 300u * 400 * 4 * 4);
  // Every other dtype: it reads no more than the array (float16, int16 as uint16, float64 as
  // float32: half), so the buffer is the array.
  for (const mesh::DType d : {mesh::DType{2, 16, 1}, mesh::DType{0, 16, 1}, mesh::DType{2, 64, 1},
                              mesh::DType{0, 32, 1}, mesh::DType{1, 8, 1}}) {
    const auto t =
        slots::plan_layout(payload::tensor_payload(mesh::Array::empty(d, {300, 400, 4})));
    EXPECT_EQ(t.buffer, t.total) << int(d.code) << "/" << int(d.bits);
  }
  EXPECT_EQ(slots::cuda_link_reads(shm::BufferMetadata{}), 512u * 512 * 4 * 4);  // its fallback
  EXPECT_EQ(slots::cuda_link_reads(
                shm::BufferMetadata{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 2, 32, 0, 0xFFFFFFFFu}),
            UINT64_MAX);                                  // past 64 bits: saturates
  EXPECT_EQ(slots::plan_layout(tiny(0.5)).buffer, 780u);  // a mesh: the flat bytes
}

TEST(Slot, ATensorAfterAMeshChangesTheMetadataAndTheVersion) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = small_slot("tex", 1);
  slots::Slot slot(o, *backend);
  slot.publish(tiny(0.5));
  auto ctl = shm::Segment::open(o.prefix + "tex");
  auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
  const auto v1 = cb.version();
  EXPECT_EQ(cb.metadata(), shm::BufferMetadata::flat_bytes(780));
  // Smaller than the mesh: the same buffer, so only the metadata bumps the version.
  const auto p = payload::tensor_payload(
      mesh::Array::from_vector(std::vector<std::uint8_t>(16 * 8, 7), {8, 16}));
  slot.publish(p);
  EXPECT_EQ(cb.metadata(), (shm::BufferMetadata{16, 8, 1, 1, 8, 0, 128}));
  EXPECT_EQ(cb.version(), v1 + 1);
  slot.publish(p);  // the same metadata again: the version stays
  EXPECT_EQ(cb.version(), v1 + 1);
}

TEST(Slot, PublishLandsInEverySegment) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = small_slot("tiny");
  {
    slots::Slot slot(o, *backend);
    const auto pub = slot.publish(tiny(0.5));
    EXPECT_EQ(pub.frame, 1u);
    EXPECT_EQ(pub.version, 1u);
    auto ctl = shm::Segment::open(o.prefix + "tiny");
    auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
    EXPECT_EQ(ctl.size(), 433u);
    EXPECT_EQ(cb.write_idx(), 1u);
    EXPECT_EQ(cb.metadata().data_size, pub.data_size);
    const auto data_name = shm::parse_host_handle(cb.mem_handle(0));
    EXPECT_EQ(data_name, shm::data_object_name(o.prefix, "tiny", 0, 1));
    auto data = shm::Segment::open(data_name);
    double x;
    std::memcpy(&x, data.data(), 8);
    EXPECT_EQ(x, 0.5);
    EXPECT_NE(slot.newest_manifest().find("\"point_data/t\""), std::string::npos);
    // The ring slots not reached yet carry placeholders (cuda-link opens every handle), made
    // at the same version: the frame's buffer plus one byte (a page of tmpfs) each.
    ASSERT_EQ(cb.num_slots(), 3u);
    for (std::uint32_t k = 1; k < 3; ++k)
      EXPECT_EQ(shm::parse_host_handle(cb.mem_handle(k)),
                shm::data_object_name(o.prefix, "tiny", k, 1));
    EXPECT_EQ(backend->memory_used(), pub.data_size + 2);
  }
  EXPECT_FALSE(exists(o.prefix + "tiny"));
  EXPECT_FALSE(exists(o.prefix + "tiny.catalog"));
  EXPECT_EQ(backend->memory_used(), 0u);
}

TEST(Slot, LeasedSlotGetsAFreshBufferAndTheOldOneLivesUntilReleased) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = small_slot("ring", 1);  // every publish goes to slot 0
  o.lease_wait = std::chrono::milliseconds(20);
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1.0));
  HeldLease held(slot, o, 1);  // a registered consumer (this process) holds frame 1
  ASSERT_TRUE(held.lease);
  const auto old_name = shm::data_object_name(o.prefix, "ring", 0, 1);
  const auto pub = slot.publish(tiny(2.0));  // waits 20 ms, then a fresh buffer
  EXPECT_EQ(pub.version, 2u);
  EXPECT_TRUE(exists(old_name));  // retired, not freed: its lease is live
  EXPECT_TRUE(exists(shm::data_object_name(o.prefix, "ring", 0, 2)));
  EXPECT_EQ(slot.bytes(), 2 * pub.data_size);
  held.release();
  slot.maintain(shm::monotonic_ns());
  EXPECT_FALSE(exists(old_name));
  EXPECT_EQ(slot.bytes(), pub.data_size);
  const auto again = slot.publish(tiny(3.0));  // no lease: the same buffer is reused
  EXPECT_EQ(again.version, 2u);
}

TEST(Slot, StaleSegmentsAreRemovedAndALiveOwnerIsRefused) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = small_slot("stale");
  // Leftovers as a SIGKILLed daemon leaves them: control block, a catalog naming its (dead)
  // pid 0x7ffffff0, one data segment.
  auto ctl = shm::Segment::create(o.prefix + "stale", shm::control_block_size(3), 0600, true);
  shm::ControlBlockView::initialize(ctl.data(), ctl.size(), 3);
  shm::CatalogParams p;
  p.page_size = 16384;
  p.lease_capacity = 8;
  p.daemon_pid = 0x7ffffff0;
  auto cat =
      shm::Segment::create(o.prefix + "stale.catalog", shm::catalog_size(3, 16384), 0600, true);
  shm::CatalogView::initialize(cat.data(), cat.size(), p);
  auto data = shm::Segment::create(shm::data_object_name(o.prefix, "stale", 0, 7), 64, 0600, true);
  ctl.release_ownership();
  cat.release_ownership();
  data.release_ownership();
  EXPECT_EQ(slots::Slot::remove_stale(o.prefix), std::vector<std::string>{"stale"});
  EXPECT_FALSE(exists(o.prefix + "stale"));
  EXPECT_FALSE(exists(shm::data_object_name(o.prefix, "stale", 0, 7)));
  // A live owner (this process's parent stands in for another daemon) is refused.
  {
    auto ctl2 = shm::Segment::create(o.prefix + "stale", shm::control_block_size(3), 0600, true);
    shm::ControlBlockView::initialize(ctl2.data(), ctl2.size(), 3);
    p.daemon_pid = ::getppid();
    auto cat2 =
        shm::Segment::create(o.prefix + "stale.catalog", shm::catalog_size(3, 16384), 0600, true);
    shm::CatalogView::initialize(cat2.data(), cat2.size(), p);
    try {
      slots::Slot slot(o, *backend);
      FAIL() << "a live owner must be refused";
    } catch (const slots::SlotError& e) {
      EXPECT_NE(std::string(e.what()).find("belongs to live pid " + std::to_string(::getppid())),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Slot, EachPageNamesItsOwnBuffersVersion) {
  // Regression: a page once carried the slot's newest version, not its buffer's, so a consumer
  // looked for a data segment that did not exist after another ring slot grew.
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = small_slot("pages", 2);
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1.0));  // slot 0, buffer v1
  slot.publish(tiny(2.0));  // slot 1, buffer v2
  mesh::Mesh big;
  big.points = mesh::Array::from_vector(std::vector<double>(300, 0.5), {100, 3});
  const auto pub = slot.publish(payload::build_payload(big));  // slot 0 grows: v3
  EXPECT_EQ(pub.version, 3u);
  auto catseg = shm::Segment::open(o.prefix + "pages.catalog");
  auto cat = shm::CatalogView::validate(catseg.data(), catseg.size());
  EXPECT_EQ(cat.page(0).read().buffer_version, 3u);
  EXPECT_EQ(cat.page(1).read().buffer_version, 2u);
  EXPECT_TRUE(exists(shm::data_object_name(o.prefix, "pages", 1, 2)));
}

namespace {

// A mesh whose point_data "a" sorts before "z" in the layout, so "a" lies at a lower offset.
mesh::Mesh fields_mesh(std::size_t n) {
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>(3 * n, 0.25), {static_cast<std::int64_t>(n), 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.point_data["a"] = mesh::Array::from_vector(std::vector<double>(n, 1.0));
  m.point_data["z"] = mesh::Array::from_vector(std::vector<double>(n, 7.0));
  return m;
}

std::uint64_t offset_of(const payload::DevicePayload& p, const std::string& name) {
  for (const auto& a : slots::plan_layout(p).manifest.arrays)
    if (a.name == name) return a.offset;
  ADD_FAILURE() << name << " is not in the layout";
  return 0;
}

double double_at(const shm::Segment& s, std::uint64_t offset) {
  double x;
  std::memcpy(&x, static_cast<const char*>(s.data()) + offset, 8);
  return x;
}

// A Slot of `num_slots` ring slots over the host backend, and fields_mesh(n) published once.
struct FieldRing {
  std::unique_ptr<meshdock::backend::Backend> backend = meshdock::backend::make_host_backend(0600);
  slots::SlotOptions o;
  std::unique_ptr<slots::Slot> slot;
  mesh::Mesh m;
  payload::Options options;
  payload::DevicePayload p;  // the payload published last
  slots::Published first;

  FieldRing(const std::string& name, std::uint32_t num_slots, std::size_t n,
            payload::Options opts = {}, bool copy_unchanged = false)
      : o(small_slot(name, num_slots)), m(fields_mesh(n)), options(opts) {
    o.copy_unchanged = copy_unchanged;
    slot = std::make_unique<slots::Slot>(o, *backend);
    p = payload::build_payload(m, options);
    first = slot->publish(p);
  }
  // A field publish: "a" set to `v` everywhere, the payload built on the last one.
  slots::Published publish_a(double v) {
    m.point_data["a"] =
        mesh::Array::from_vector(std::vector<double>(static_cast<std::size_t>(m.points.dim(0)), v));
    auto next = payload::build_payload(m, options, &p);
    p = std::move(next);
    return slot->publish(p);
  }
  // The data segment of the buffer `pub` went to.
  shm::Segment data(const slots::Published& pub) const {
    return shm::Segment::open(shm::data_object_name(o.prefix, o.name, pub.slot, pub.version));
  }
  // Truncates the first publish's buffer (ring slot 0, version 1) to each size in turn, as a
  // process that may write it (its owner, root) can.
  void truncate(std::initializer_list<off_t> sizes) const {
    const int fd =
        ::shm_open(("/" + shm::data_object_name(o.prefix, o.name, 0, 1)).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    for (const auto size : sizes) EXPECT_EQ(::ftruncate(fd, size), 0);
    ::close(fd);
  }
};

}  // namespace

TEST(Slot, AFieldPublishCopiesOnlyWhatTheRingSlotsBufferDoesNotHold) {
  FieldRing r("delta", 2, 1000);  // frame 1: ring slot 0
  EXPECT_EQ(r.first.kept_bytes, 0u);
  EXPECT_EQ(r.first.copied_bytes, 24000u + 24u + 16u + 8000u + 8000u);
  r.slot->publish(r.p);  // ring slot 1: a buffer of its own, filled whole
  for (int k = 2; k < 6; ++k) {
    const auto pub = r.publish_a(k);
    // The field and block_bases (built again by every build_payload) are copied; the points,
    // the cells and "z" are where the publish two frames ago put them.
    EXPECT_EQ(pub.copied_bytes, 8000u + 16u) << "frame " << pub.frame;
    EXPECT_EQ(pub.kept_bytes, 24000u + 24u + 8000u);
    const auto data = r.data(pub);
    EXPECT_EQ(double_at(data, offset_of(r.p, "points")), 0.25);
    EXPECT_EQ(double_at(data, offset_of(r.p, "point_data/a") + 8 * 999), double(k));
    EXPECT_EQ(double_at(data, offset_of(r.p, "point_data/z")), 7.0);
  }
  EXPECT_EQ(r.slot->copied_bytes(), 2 * r.first.copied_bytes + 4 * (8000u + 16u));
  EXPECT_EQ(r.slot->kept_bytes(), 4 * (24000u + 24u + 8000u));
}

TEST(Slot, CopyUnchangedCopiesEveryArrayEveryTime) {
  // copy_unchanged: what publish_copy "all" (and "auto" on CUDA) sets
  FieldRing r("alldata", 1, 100, {}, true);
  const auto b = r.slot->publish(r.p);
  EXPECT_EQ(b.copied_bytes, r.first.copied_bytes);
  EXPECT_EQ(b.kept_bytes, 0u);
  EXPECT_EQ(r.slot->kept_bytes(), 0u);
}

TEST(Slot, ACastArrayIsCastOnceAndKeptAcrossFieldPublishes) {
  payload::Options f32;
  f32.float32 = true;
  FieldRing r("cast", 1, 500, f32);
  const auto before = r.p;
  const auto pub = r.publish_a(3.0);
  // The same float32 points as before (no second cast), still noted as a copy of the mesh's.
  EXPECT_EQ(r.p.points.buffer(), before.points.buffer());
  EXPECT_NE(r.p.point_data.at("a").buffer(), before.point_data.at("a").buffer());
  EXPECT_NE(std::find(r.p.notes.begin(), r.p.notes.end(), "points: float64 -> float32 (copy)"),
            r.p.notes.end());
  EXPECT_EQ(pub.copied_bytes, 500u * 4 + 16u);  // "a" as float32, and block_bases
  float a;
  std::memcpy(&a, static_cast<const char*>(r.data(pub).data()) + offset_of(r.p, "point_data/a"), 4);
  EXPECT_EQ(a, 3.0f);
}

TEST(Slot, ABufferTruncatedBetweenPublishesIsFilledAgainWhole) {
  // Only "a" changes and it lies before "z": without the size check the publish would copy "a"
  // into the pages that are left and keep a "z" that is no longer there.
  FieldRing r("shrunk", 1, 100000);  // 800 KB per field: pages past the truncation
  r.truncate({static_cast<off_t>(offset_of(r.p, "point_data/z"))});
  const auto pub = r.publish_a(2.0);
  ASSERT_EQ(pub.version, 2u);  // a fresh buffer (reading the old one's "z" would fault)
  EXPECT_EQ(pub.kept_bytes, 0u);
  const auto data = r.data(pub);
  EXPECT_EQ(double_at(data, offset_of(r.p, "point_data/z") + 8 * 99999), 7.0);
  EXPECT_EQ(double_at(data, offset_of(r.p, "point_data/a")), 2.0);
  EXPECT_EQ(double_at(data, offset_of(r.p, "points")), 0.25);
}

TEST(Slot, ABufferTruncatedAndGrownBackIsFilledAgainWhole) {
  // ftruncate to 0 and back to the same size leaves zero pages where the points were, and no
  // copy of the changed field alone would meet them: ctime says the object changed.
  FieldRing r("regrow", 1, 1000);
  r.truncate({0, static_cast<off_t>(r.first.data_size)});
  const auto pub = r.publish_a(2.0);
  EXPECT_EQ(pub.kept_bytes, 0u);
  const auto data = r.data(pub);
  EXPECT_EQ(double_at(data, offset_of(r.p, "points")), 0.25);
  EXPECT_EQ(double_at(data, offset_of(r.p, "point_data/z")), 7.0);
  // Untouched since: the publish after keeps the mesh again.
  EXPECT_GT(r.publish_a(3.0).kept_bytes, 0u);
}

TEST(HostBackend, ConsumersCanWriteOnlyWhenShmModeGivesThemWriteBits) {
  // publish_copy "auto" copies every array where they can (a group-writable shm_mode).
  EXPECT_FALSE(meshdock::backend::make_host_backend(0640)->consumers_can_write());
  EXPECT_FALSE(meshdock::backend::make_host_backend(0600)->consumers_can_write());
  EXPECT_TRUE(meshdock::backend::make_host_backend(0660)->consumers_can_write());
  EXPECT_TRUE(meshdock::backend::make_host_backend(0642)->consumers_can_write());
}

namespace {

// The host backend, whose uploads throw once `fail` is set (a device error mid-publish).
struct FailingUploads : meshdock::backend::Backend {
  std::unique_ptr<meshdock::backend::Backend> real = meshdock::backend::make_host_backend(0600);
  bool fail = false;
  const char* name() const override { return real->name(); }
  payload::Device device() const override { return real->device(); }
  std::unique_ptr<meshdock::backend::SlotBuffer> allocate(const std::string& object,
                                                          std::uint64_t bytes) override {
    return real->allocate(object, bytes);
  }
  void upload(meshdock::backend::SlotBuffer& b,
              const std::vector<meshdock::backend::Placement>& arrays) override {
    if (fail) throw meshdock::backend::BackendError("upload failed (test)");
    real->upload(b, arrays);
  }
  std::uint64_t memory_used() const override { return real->memory_used(); }
};

}  // namespace

// A publish that fails after it gave its ring slot a fresh buffer (growth frees the old one)
// must not leave the page naming its old frame in a buffer that is gone while the control
// block names the new one: the page says no frame, the handles name the buffer that exists,
// and the next publish works.
// The same failure when the old buffer was kept for a lease on its frame: it is put back, and
// the frame stays the newest (before: the page said "no frame" while a consumer held it and the
// control block named the unwritten replacement).
TEST(Slot, APublishThatFailsAfterReplacingALeasedBufferPutsItBack) {
  FailingUploads backend;
  auto o = small_slot("abortlease", 1);
  o.lease_wait = std::chrono::milliseconds(0);
  slots::Slot slot(o, backend);
  const auto first = slot.publish(tiny(1.0));  // frame 1, ring slot 0, version 1
  HeldLease held(slot, o, 1);
  ASSERT_TRUE(held.lease);
  backend.fail = true;
  EXPECT_THROW(slot.publish(tiny(2.0)), meshdock::backend::BackendError);
  auto cat_seg = shm::Segment::open(o.prefix + "abortlease" + std::string(shm::kCatalogSuffix));
  auto cat = shm::CatalogView::validate(cat_seg.data(), cat_seg.size());
  auto ctl = shm::Segment::open(o.prefix + "abortlease");
  auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
  const auto snap = cat.page(0).read();
  EXPECT_EQ(snap.frame, 1u);
  EXPECT_EQ(snap.buffer_version, first.version);
  const auto named = shm::parse_host_handle(cb.mem_handle(0));
  EXPECT_EQ(named, shm::data_object_name(o.prefix, o.name, 0, first.version));
  EXPECT_EQ(cb.write_idx(), 1u);
  EXPECT_EQ(slot.bytes(), first.data_size) << "the replacement is freed";
  backend.fail = false;
  const auto next = slot.publish(tiny(2.0));  // the lease still holds frame 1: a fresh buffer
  EXPECT_EQ(next.frame, 2u);
  EXPECT_TRUE(exists(named));
}

TEST(Slot, APublishThatFailsAfterReplacingTheBufferLeavesNoFrameInAFreedOne) {
  FailingUploads backend;
  auto o = small_slot("abortfresh", 1);
  slots::Slot slot(o, backend);
  const auto first = slot.publish(tiny(1.0));  // frame 1, ring slot 0, version 1
  mesh::Mesh big;
  big.points = mesh::Array::from_vector(std::vector<double>(3 * 1000, 0.5), {1000, 3});
  backend.fail = true;
  EXPECT_THROW(slot.publish(payload::build_payload(big)), meshdock::backend::BackendError);
  auto cat_seg = shm::Segment::open(o.prefix + "abortfresh" + std::string(shm::kCatalogSuffix));
  auto cat = shm::CatalogView::validate(cat_seg.data(), cat_seg.size());
  auto ctl = shm::Segment::open(o.prefix + "abortfresh");
  auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
  const auto snap = cat.page(0).read();
  const auto named = shm::parse_host_handle(cb.mem_handle(0));
  EXPECT_EQ(named, shm::data_object_name(o.prefix, o.name, 0, snap.buffer_version));
  EXPECT_TRUE(exists(named)) << named;
  EXPECT_EQ(snap.frame, 0u);  // frame 1's buffer is gone: no frame, not a dangling one
  EXPECT_FALSE(exists(shm::data_object_name(o.prefix, o.name, 0, first.version)));
  EXPECT_EQ(cb.write_idx(), 1u);
  EXPECT_GT(cb.version(), first.version);
  backend.fail = false;
  const auto next = slot.publish(tiny(2.0));
  EXPECT_EQ(next.frame, 2u);
  EXPECT_EQ(cat.page(0).read().frame, 2u);
}
