// The C++ encoder rebuilds each golden vector from its JSON description and must produce the
// committed bytes exactly; the Python mirror does the same in tests/python/test_protocol.py, so
// the two implementations agree byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using nlohmann::json;

namespace {

std::string golden(const std::string& file) {
  return std::string(MESHDOCK_TEST_DATA) + "/golden/" + file;
}

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return {std::istreambuf_iterator<char>(f), {}};
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

shm::Handle handle_from_hex(const std::string& hex) {
  shm::Handle h{};
  EXPECT_EQ(hex.size(), 128u);
  for (std::size_t i = 0; i < 64; ++i) {
    h[i] = static_cast<std::byte>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return h;
}

}  // namespace

TEST(Golden, ControlBlocksMatchByteForByte) {
  const auto spec = read_json(golden("control_blocks.json"));
  ASSERT_EQ(spec["cases"].size(), 5u);
  for (const auto& c : spec["cases"]) {
    const std::uint32_t n = c["num_slots"];
    SCOPED_TRACE("num_slots " + std::to_string(n));
    std::vector<std::uint64_t> buf(shm::control_block_size(n) / 8 + 1, 0);
    auto cb = shm::ControlBlockView::initialize(buf.data(), shm::control_block_size(n), n);
    cb.set_version(c["version"]);
    cb.publish_write_idx(c["write_idx"]);
    for (std::uint32_t i = 0; i < n; ++i) {
      cb.set_mem_handle(i, handle_from_hex(c["mem_handles"][i]));
      cb.set_event_handle(i, handle_from_hex(c["event_handles"][i]));
    }
    cb.set_shutdown(c["shutdown"].get<int>() != 0);
    const auto& m = c["metadata"];
    cb.set_metadata({m["width"], m["height"], m["num_comps"], m["format_kind"], m["bits"],
                     m["flags"], m["data_size"]});
    cb.set_timestamp(c["timestamp"]);

    const auto expect = read_bytes(golden(c["file"]));
    ASSERT_EQ(expect.size(), shm::control_block_size(n));
    EXPECT_EQ(std::memcmp(buf.data(), expect.data(), expect.size()), 0);

    // And decoding the committed bytes gives the described values.
    std::vector<std::uint64_t> in(expect.size() / 8 + 1, 0);
    std::memcpy(in.data(), expect.data(), expect.size());
    auto view =
        shm::ControlBlockView::validate(in.data(), expect.size(), c["file"].get<std::string>());
    EXPECT_EQ(view.version(), c["version"].get<std::uint64_t>());
    EXPECT_EQ(view.write_idx(), c["write_idx"].get<std::uint32_t>());
    EXPECT_EQ(view.metadata().data_size, m["data_size"].get<std::uint32_t>());
    EXPECT_EQ(view.timestamp(), c["timestamp"].get<double>());
    if (n >= 1) {
      EXPECT_TRUE(shm::is_host_handle(view.mem_handle(0)));
      EXPECT_EQ(shm::parse_host_handle(view.mem_handle(0)),
                shm::data_object_name("meshdock.", "golden", 0, c["version"]));
    }
  }
}

TEST(Golden, CatalogMatchesByteForByte) {
  const auto spec = read_json(golden("catalog_n2.json"));
  shm::CatalogParams p;
  p.num_slots = spec["num_slots"];
  p.page_size = spec["page_size"];
  p.lease_capacity = spec["lease_capacity"];
  p.daemon_pid = spec["daemon_pid"];
  p.device_type = spec["device_type"];
  p.device_id = spec["device_id"];
  p.daemon_uid = spec["daemon_uid"];
  p.socket = spec["socket"].get<std::string>();
  const auto size = shm::catalog_size(p.num_slots, p.page_size);
  std::vector<std::uint64_t> buf(size / 8, 0);
  auto cat = shm::CatalogView::initialize(buf.data(), size, p);
  cat.beat(spec["heartbeat_ns"]);
  cat.publish_futex(spec["futex"]);
  const auto& pg = spec["pages"][0];
  auto manifest = shm::decode_manifest(pg["manifest"].dump(), pg["data_size"]);
  auto page = cat.page(0);
  page.write(pg["frame"], pg["data_size"], pg["buffer_version"], shm::encode_manifest(manifest));

  const auto expect = read_bytes(golden(spec["file"]));
  ASSERT_EQ(expect.size(), size);
  std::size_t first_diff = size;
  for (std::size_t i = 0; i < size; ++i) {
    if (reinterpret_cast<const std::uint8_t*>(buf.data())[i] != expect[i]) {
      first_diff = i;
      break;
    }
  }
  EXPECT_EQ(first_diff, size) << "first differing byte at offset " << first_diff;

  auto view = shm::CatalogView::validate(buf.data(), size, "golden");
  EXPECT_EQ(view.page(0).read().frame, 9u);
  EXPECT_EQ(view.page(1).read().manifest, "");
  EXPECT_EQ(view.daemon_uid(), spec["daemon_uid"].get<std::uint32_t>());
  EXPECT_EQ(view.socket_address(), spec["socket"].get<std::string>());
}

TEST(Golden, LeasesMatchByteForByte) {
  const auto spec = read_json(golden("catalog_n2.json"));
  const std::uint32_t n = spec["num_slots"], cap = spec["lease_capacity"];
  const auto size = shm::leases_size(n, cap);
  std::vector<std::uint64_t> buf(size / 8, 0);
  auto lv = shm::LeasesView::initialize(buf.data(), size, n, cap);
  for (const auto& l : spec["leases"]) {
    auto table = lv.table(l["slot"]);
    ASSERT_EQ(*table.acquire(l["pid"], l["frame"]), l["index"].get<std::uint32_t>());
  }
  const auto expect = read_bytes(golden(spec["leases_file"]));
  ASSERT_EQ(expect.size(), size);
  EXPECT_EQ(std::memcmp(buf.data(), expect.data(), size), 0);
  EXPECT_EQ(lv.table(1).leases().at(0).pid, 778);
}
