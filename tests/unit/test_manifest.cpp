#include <gtest/gtest.h>

#include <functional>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using nlohmann::json;

namespace {

shm::Manifest sample() {
  shm::Manifest m;
  m.arrays.push_back({"points", shm::ArrayRole::kPoints, -1, {2, 64, 1}, {4, 3}, {3, 1}, 0, 96});
  m.arrays.push_back({"cells/0", shm::ArrayRole::kCells, 0, {0, 64, 1}, {1, 4}, {4, 1}, 256, 32});
  m.arrays.push_back(
      {"region/inlet", shm::ArrayRole::kRegion, -1, {0, 64, 1}, {1, 2}, {2, 1}, 512, 16});
  m.cell_types = {"tetra"};
  m.block_bases = {0, 1};
  m.regions.push_back({"inlet", "side", 2, 3, "region/inlet"});
  m.field_data = {{"inlet", {3, 2}}};
  m.notes = {"golden"};
  return m;
}

std::string error_of(const std::string& text, std::uint64_t size = 4096) {
  try {
    shm::decode_manifest(text, size);
  } catch (const shm::ProtocolError& e) {
    return e.what();
  }
  return "no error";
}

// The sample with one array field replaced.
std::string with(const char* key, json value, int array = 0) {
  json j = json::parse(shm::encode_manifest(sample()));
  j["arrays"][array][key] = value;
  return j.dump();
}

}  // namespace

TEST(Manifest, RoundTrip) {
  const auto m = sample();
  const auto text = shm::encode_manifest(m);
  EXPECT_EQ(shm::decode_manifest(text, 4096), m);
  EXPECT_EQ(shm::decode_manifest(text, 528).arrays.size(), 3u);  // exactly fits
  ASSERT_NE(m.find("cells/0"), nullptr);
  EXPECT_EQ(m.find("cells/0")->offset, 256u);
  EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(Manifest, EveryArrayIsCheckedAgainstTheSlotBuffer) {
  EXPECT_EQ(error_of(shm::encode_manifest(sample()), 527),
            "manifest array 'region/inlet': bytes [512, 528) run past the 527-byte slot buffer");
  EXPECT_EQ(error_of(with("offset", 100)),
            "manifest array 'points': offset 100 is not a multiple of 256");
  EXPECT_EQ(error_of(with("nbytes", 95)),
            "manifest array 'points': nbytes is 95 but shape x 8-byte items gives 96");
  EXPECT_EQ(error_of(with("dtype", {2, 24, 1})),
            "manifest array 'points': dtype [2,24,1] is not a DLPack type meshdock publishes");
  EXPECT_EQ(error_of(with("role", "texture")),
            "manifest array 'points': role 'texture' is not one of points, cells, point_data, "
            "cell_data, region, block_bases, tensor");
  EXPECT_EQ(error_of(with("shape", {-1, 3})),
            "manifest array 'points': negative extent -1 in shape");
  EXPECT_EQ(error_of(with("shape", json::array())),
            "manifest array 'points': shape has 0 dimensions; expected 1..8");
  EXPECT_EQ(error_of(with("strides", {1, 4})),
            "manifest array 'points': strides are not C-contiguous (dimension 1 has stride 4, "
            "expected 1)");
  EXPECT_EQ(error_of(with("name", "cells/0")), "manifest array 'cells/0': listed twice");
  EXPECT_EQ(error_of(with("name", 7)),
            "manifest array 0: field 'name' has the wrong type "
            "([json.exception.type_error.302] type must be string, "
            "but is number)");
}

TEST(Manifest, HostileShapesDoNotOverflow) {
  // 2^62 * 2^62 elements would wrap a 64-bit product to 0.
  const auto msg = error_of(with("shape", {4611686018427387904LL, 4611686018427387904LL}));
  EXPECT_NE(msg.find("more elements than the 4096-byte slot buffer holds"), std::string::npos)
      << msg;
  const auto msg2 = error_of(with("shape", {1024, 3}));
  EXPECT_NE(msg2.find("more bytes than the 4096-byte slot buffer"), std::string::npos) << msg2;
}

TEST(Manifest, TopLevelErrors) {
  EXPECT_NE(error_of("{not json").find("manifest: not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of("[1,2]"), "manifest: top level is not a JSON object");
  EXPECT_NE(error_of("{\"v\":1e400}").find("manifest: not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of("{\"arrays\":[]}"), "manifest: missing field 'v'");
  EXPECT_EQ(error_of("{\"v\":2,\"arrays\":[]}"), "manifest: version 2; this build reads 1");
  EXPECT_EQ(error_of("{\"v\":1,\"arrays\":{}}"), "manifest: field 'arrays' is not a list");
  EXPECT_EQ(error_of("{\"v\":1}"), "manifest: missing field 'arrays'");
  EXPECT_EQ(error_of("{\"v\":1,\"arrays\":[],\"field_data\":[]}"),
            "manifest: field 'field_data' is not an object");
  json j = json::parse(shm::encode_manifest(sample()));
  j["regions"][0]["array"] = "region/outlet";
  EXPECT_EQ(error_of(j.dump()),
            "manifest region 0 'inlet': array 'region/outlet' is not in the manifest");
  j["regions"][0]["kind"] = "edge";
  EXPECT_EQ(error_of(j.dump()),
            "manifest region 0 'inlet': kind 'edge' is not point, cell or side");
}

TEST(Manifest, EveryPublishedDtypeIsAccepted) {
  const std::vector<std::array<int, 2>> ok = {{0, 8},  {0, 16}, {0, 32}, {0, 64}, {1, 8},
                                              {1, 16}, {1, 32}, {1, 64}, {2, 16}, {2, 32},
                                              {2, 64}, {4, 16}, {6, 8}};
  for (auto [code, bits] : ok) {
    json j = json::parse(shm::encode_manifest(sample()));
    j["arrays"][0]["dtype"] = {code, bits, 1};
    j["arrays"][0]["nbytes"] = 12 * bits / 8;
    EXPECT_EQ(error_of(j.dump()), "no error") << code << "/" << bits;
  }
}

TEST(Manifest, ASingleArrayPublishRoundTrips) {
  shm::Manifest m;
  m.arrays.push_back({"tensor",
                      shm::ArrayRole::kTensor,
                      -1,
                      {2, 32, 1},
                      {512, 512, 4},
                      {2048, 4, 1},
                      0,
                      512 * 512 * 4 * 4});
  const auto text = shm::encode_manifest(m);
  EXPECT_NE(text.find("\"role\":\"tensor\""), std::string::npos);
  EXPECT_EQ(shm::decode_manifest(text, 512 * 512 * 4 * 4), m);
  auto bad = json::parse(text);
  bad["arrays"][0]["role"] = "image";
  EXPECT_NE(error_of(bad.dump(), 1 << 22)
                .find("role 'image' is not one of points, cells, "
                      "point_data, cell_data, region, block_bases, "
                      "tensor"),
            std::string::npos)
      << error_of(bad.dump(), 1 << 22);
}
