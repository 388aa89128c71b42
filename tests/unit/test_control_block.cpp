#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../support/protocol_error.hpp"
#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using meshdock::testing::protocol_error_of;

namespace {

// An 8-aligned scratch buffer, as a mapping would be.
struct Buffer {
  explicit Buffer(std::size_t n) : words((n + 7) / 8 + 1, 0), size(n) {}
  void* data() { return words.data(); }
  std::byte* bytes() { return reinterpret_cast<std::byte*>(words.data()); }
  std::vector<std::uint64_t> words;
  std::size_t size;
};

}  // namespace

TEST(ControlBlock, SizeFormula) {
  EXPECT_EQ(shm::control_block_size(1), 177u);
  EXPECT_EQ(shm::control_block_size(3), 433u);
  EXPECT_EQ(shm::control_block_size(10), 1329u);
  for (std::uint32_t n = 1; n <= 10; ++n) EXPECT_EQ(shm::control_block_size(n), 20 + 128 * n + 29);
}

TEST(ControlBlock, FieldsLandAtTheDocumentedOffsets) {
  Buffer buf(433);
  auto cb = shm::ControlBlockView::initialize(buf.data(), buf.size, 3);
  cb.set_version(0x0102030405060708ull);
  cb.publish_write_idx(0x11223344u);
  shm::Handle h{};
  h[0] = std::byte{0xAA};
  h[63] = std::byte{0xBB};
  cb.set_mem_handle(2, h);
  cb.set_event_handle(2, h);
  cb.set_shutdown(true);
  cb.set_metadata({1, 2, 3, 2, 16, 1, 0xDEADBEEF});
  cb.set_timestamp(1.5);

  const auto* b = reinterpret_cast<const unsigned char*>(buf.data());
  EXPECT_EQ(std::memcmp(b, "DPIC", 4), 0);  // 0x43495044 little-endian
  EXPECT_EQ(b[4], 0x08);
  EXPECT_EQ(b[11], 0x01);
  EXPECT_EQ(b[12], 3);
  EXPECT_EQ(b[16], 0x44);
  EXPECT_EQ(b[19], 0x11);
  EXPECT_EQ(b[20 + 128 * 2], 0xAA);
  EXPECT_EQ(b[20 + 128 * 2 + 63], 0xBB);
  EXPECT_EQ(b[84 + 128 * 2], 0xAA);
  EXPECT_EQ(b[20 + 128 * 3], 1);       // shutdown
  EXPECT_EQ(b[21 + 128 * 3], 1);       // width
  EXPECT_EQ(b[21 + 128 * 3 + 12], 2);  // format_kind
  EXPECT_EQ(b[21 + 128 * 3 + 13], 16);
  EXPECT_EQ(b[21 + 128 * 3 + 14], 1);  // flags
  EXPECT_EQ(b[21 + 128 * 3 + 16], 0xEF);
  double t;
  std::memcpy(&t, b + 41 + 128 * 3, 8);
  EXPECT_EQ(t, 1.5);

  auto again = shm::ControlBlockView::validate(buf.data(), buf.size);
  EXPECT_EQ(again.version(), 0x0102030405060708ull);
  EXPECT_EQ(again.write_idx(), 0x11223344u);
  EXPECT_EQ(again.mem_handle(2), h);
  EXPECT_TRUE(again.shutdown());
  EXPECT_EQ(again.metadata(), (shm::BufferMetadata{1, 2, 3, 2, 16, 1, 0xDEADBEEF}));
  EXPECT_EQ(again.timestamp(), 1.5);
}

TEST(ControlBlock, SlotRuleIsCudaLinks) {
  Buffer buf(433);
  auto cb = shm::ControlBlockView::initialize(buf.data(), buf.size, 3);
  EXPECT_FALSE(cb.newest_slot().has_value());
  EXPECT_EQ(cb.next_slot(), 0u);
  for (std::uint32_t w = 1; w < 10; ++w) {
    cb.publish_write_idx(w);
    EXPECT_EQ(*cb.newest_slot(), (w - 1) % 3);
    EXPECT_EQ(cb.next_slot(), w % 3);
  }
}

TEST(ControlBlock, FlatBytesMetadataSaturates) {
  const auto m = shm::BufferMetadata::flat_bytes(5'000'000'000ull);
  EXPECT_EQ(m.width, 0xFFFFFFFFu);
  EXPECT_EQ(m.data_size, 0xFFFFFFFFu);
  EXPECT_EQ(m.height, 1u);
  EXPECT_EQ(m.num_comps, 1u);
  EXPECT_EQ(m.format_kind, 1);
  EXPECT_EQ(m.bits, 8);
  EXPECT_EQ(shm::BufferMetadata::flat_bytes(1000).width, 1000u);
}

TEST(ControlBlock, ValidationNamesFieldAndValue) {
  Buffer buf(433);
  shm::ControlBlockView::initialize(buf.data(), buf.size, 3);
  EXPECT_EQ(protocol_error_of([&] { shm::ControlBlockView::validate(buf.data(), 10, "x"); }),
            "control block 'x': segment is 10 bytes, smaller than the 20-byte header");
  EXPECT_EQ(protocol_error_of([&] { shm::ControlBlockView::validate(buf.data(), 432, "x"); }),
            "control block 'x': segment is 432 bytes but 3 slots need 433");

  buf.bytes()[0] = std::byte{0};
  EXPECT_EQ(protocol_error_of([&] { shm::ControlBlockView::validate(buf.data(), buf.size, "x"); }),
            "control block 'x': magic is 0x43495000, expected 0x43495044 (\"CIPD\")");
  buf.bytes()[0] = std::byte{0x44};

  for (std::uint32_t bad : {0u, 11u, 0xFFFFFFFFu}) {
    shm::store_le<std::uint32_t>(buf.bytes(), 12, bad);
    EXPECT_EQ(
        protocol_error_of([&] { shm::ControlBlockView::validate(buf.data(), buf.size, "x"); }),
        "control block 'x': num_slots is " + std::to_string(bad) + ", outside 1..10");
  }
  shm::store_le<std::uint32_t>(buf.bytes(), 12, 3);

  buf.bytes()[21 + 128 * 3 + 14] = std::byte{2};
  EXPECT_NE(protocol_error_of([&] {
              shm::ControlBlockView::validate(buf.data(), buf.size, "x");
            }).find("flags 0x0002"),
            std::string::npos);
  buf.bytes()[21 + 128 * 3 + 14] = std::byte{0};
  buf.bytes()[21 + 128 * 3 + 12] = std::byte{3};
  EXPECT_NE(protocol_error_of([&] {
              shm::ControlBlockView::validate(buf.data(), buf.size, "x");
            }).find("format_kind is 3"),
            std::string::npos);
  buf.bytes()[21 + 128 * 3 + 12] = std::byte{0};
  EXPECT_NO_THROW(shm::ControlBlockView::validate(buf.data(), buf.size, "x"));

  EXPECT_THROW(shm::ControlBlockView::initialize(buf.data(), buf.size, 11), shm::ProtocolError);
  EXPECT_THROW(shm::ControlBlockView::initialize(buf.data(), 300, 3), shm::ProtocolError);
}

TEST(ControlBlock, SlotIndexOutOfRangeThrows) {
  Buffer buf(433);
  auto cb = shm::ControlBlockView::initialize(buf.data(), buf.size, 3);
  EXPECT_THROW(cb.mem_handle(3), shm::ProtocolError);
  EXPECT_THROW(cb.set_event_handle(7, shm::Handle{}), shm::ProtocolError);
}

TEST(HostHandle, RoundTripAndRejections) {
  const auto h = shm::make_host_handle("meshdock.d0123.s1.v00000002");
  EXPECT_TRUE(shm::is_host_handle(h));
  EXPECT_EQ(shm::parse_host_handle(h), "meshdock.d0123.s1.v00000002");
  EXPECT_EQ(static_cast<char>(h[4 + 27]), '\0');

  EXPECT_THROW(shm::make_host_handle(std::string(60, 'a')), shm::ProtocolError);
  EXPECT_NO_THROW(shm::make_host_handle(std::string(59, 'a')));

  shm::Handle unterminated;
  unterminated.fill(std::byte{'a'});
  for (int i = 0; i < 4; ++i) unterminated[i] = std::byte("MDH1"[i]);
  EXPECT_EQ(protocol_error_of([&] { shm::parse_host_handle(unterminated); }),
            "host handle: object name is not NUL-terminated within 64 bytes");

  shm::Handle cuda{};
  cuda[0] = std::byte{0x10};
  EXPECT_FALSE(shm::is_host_handle(cuda));
  EXPECT_THROW(shm::parse_host_handle(cuda), shm::ProtocolError);

  auto slash = shm::make_host_handle("ok");
  slash[5] = std::byte{'/'};
  EXPECT_THROW(shm::parse_host_handle(slash), shm::ProtocolError);
}

// A single-array publish tells cuda-link the array itself (DESIGN.md "Control block"): the
// texture layout (H, W, C) -> width W, height H, comps C, and the DLPack dtype as kind/bits/flag.
TEST(ControlBlock, ArrayMetadataIsTheTextureCudaLinkReads) {
  using M = shm::BufferMetadata;
  const auto md = [](std::uint8_t code, std::uint8_t bits, std::vector<std::int64_t> shape) {
    return M::of_array(code, bits, shape);
  };
  EXPECT_EQ(md(2, 32, {512, 512, 4}), (M{512, 512, 4, 2, 32, 0, 512u * 512 * 4 * 4}));
  EXPECT_EQ(md(1, 8, {480, 640}), (M{640, 480, 1, 1, 8, 0, 640u * 480}));
  EXPECT_EQ(md(2, 16, {1000}), (M{1000, 1, 1, 2, 16, 0, 2000}));
  EXPECT_EQ(md(0, 32, {3, 32, 64, 2}), (M{64, 96, 2, 0, 32, 0, 64u * 96 * 2 * 4}));
  EXPECT_EQ(md(4, 16, {8, 8}), (M{8, 8, 1, 2, 16, shm::kFlagBfloat16, 128}));
  EXPECT_EQ(md(6, 8, {5, 7}), (M{7, 5, 1, 1, 8, 0, 35}));
  // data_size saturates like a mesh's; dimensions that do not fit u32 cannot be described.
  EXPECT_EQ(md(2, 64, {1 << 20, 1 << 10})->data_size, 0xFFFFFFFFu);
  EXPECT_EQ(md(1, 8, {std::int64_t{1} << 33}), std::nullopt);
  // Nothing to describe: no dimensions, a zero or negative one, more than 4, an unknown code.
  EXPECT_EQ(md(2, 32, {}), std::nullopt);
  EXPECT_EQ(md(2, 32, {0, 4}), std::nullopt);
  EXPECT_EQ(md(2, 32, {-1}), std::nullopt);
  EXPECT_EQ(md(2, 32, {1, 1, 1, 1, 1}), std::nullopt);
  EXPECT_EQ(md(3, 32, {4}), std::nullopt);
}
