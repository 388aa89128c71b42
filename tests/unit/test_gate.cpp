// daemon/rpc/gate: the token comparison and the stream caps (issue 12, gRPC availability).
#include "daemon/rpc/gate.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace rpc = meshdock::rpc;

TEST(Gate, ConstantTimeEqualIsEqualityWhateverTheLengths) {
  const std::string secret = "Bearer s3cret";
  EXPECT_TRUE(rpc::constant_time_equal(secret, secret));
  EXPECT_TRUE(rpc::constant_time_equal("", ""));
  const std::vector<std::string> wrongs = {"",
                                           "B",
                                           "Bearer s3cre",
                                           "Bearer s3cret ",
                                           "Bearer s3creT",
                                           "bearer s3cret",
                                           "Bearer s3cretBearer s3cret",
                                           std::string("Bearer s3cret\0", 14),
                                           "xearer s3cret"};
  for (const auto& wrong : wrongs) EXPECT_FALSE(rpc::constant_time_equal(wrong, secret)) << wrong;
  EXPECT_FALSE(rpc::constant_time_equal(secret, ""));
  // A repeated prefix of the right length but wrong content (the i % n wrap) is no match.
  EXPECT_FALSE(rpc::constant_time_equal("Bearer", "BearerBearer"));
}

TEST(Gate, PeerKeyDropsThePortAndLumpsUnixClients) {
  EXPECT_EQ(rpc::peer_key("ipv4:127.0.0.1:54321"), "ipv4:127.0.0.1");
  EXPECT_EQ(rpc::peer_key("ipv6:[::1]:40000"), "ipv6:[::1]");
  EXPECT_EQ(rpc::peer_key("unix:/run/meshdock/meshdockd.sock"), "");
  EXPECT_EQ(rpc::peer_key("unix:"), "");
}

TEST(Gate, StreamsAreCappedPerPeerAndInTotalAndGivenBack) {
  rpc::Gate gate("", {/*max_streams=*/5, /*max_streams_per_peer=*/2});
  std::string why;
  std::vector<rpc::Gate::Ticket> held;
  held.push_back(gate.admit_stream("ipv4:10.0.0.1:1000", why));
  held.push_back(gate.admit_stream("ipv4:10.0.0.1:1001", why));
  EXPECT_TRUE(held[0] && held[1]);
  EXPECT_FALSE(gate.admit_stream("ipv4:10.0.0.1:1002", why));  // third from one address
  EXPECT_NE(why.find("ipv4:10.0.0.1 has 2 streams open"), std::string::npos) << why;
  held.push_back(gate.admit_stream("ipv4:10.0.0.2:1000", why));
  held.push_back(gate.admit_stream("unix:", why));  // Unix clients: only the total applies
  held.push_back(gate.admit_stream("unix:", why));
  EXPECT_EQ(gate.streams(), 5u);
  EXPECT_FALSE(gate.admit_stream("unix:", why));
  EXPECT_NE(why.find("max_streams allows (5)"), std::string::npos) << why;
  held.erase(held.begin());  // one of 10.0.0.1's streams ends
  EXPECT_EQ(gate.streams(), 4u);
  EXPECT_TRUE(gate.admit_stream("ipv4:10.0.0.1:1003", why));  // admitted, then let go at once
  EXPECT_EQ(gate.streams(), 4u);
}

TEST(Gate, LoadsAreCappedApartFromStreamsWithTheirOwnKeys) {
  rpc::Gate gate(
      "", {.max_streams = 4, .max_streams_per_peer = 4, .max_loads = 3, .max_loads_per_peer = 2});
  std::string why;
  std::vector<rpc::Gate::Ticket> held;
  held.push_back(gate.admit_load("ipv4:10.0.0.1:1000", why));
  held.push_back(gate.admit_load("ipv4:10.0.0.1:1001", why));
  EXPECT_TRUE(held[0] && held[1]);
  EXPECT_FALSE(gate.admit_load("ipv4:10.0.0.1:1002", why));
  EXPECT_EQ(why, "ipv4:10.0.0.1 has 2 loads open, the most max_loads_per_peer allows (2)");
  held.push_back(gate.admit_load("ipv4:10.0.0.2:1000", why));
  EXPECT_FALSE(gate.admit_load("ipv4:10.0.0.3:1000", why));
  EXPECT_EQ(why, "3 loads are open, the most max_loads allows (3)");
  // Loads take nothing from the streams' caps.
  EXPECT_TRUE(gate.admit_stream("ipv4:10.0.0.1:1003", why));
  EXPECT_EQ(gate.loads(), 3u);
  held.clear();
  EXPECT_EQ(gate.loads(), 0u);
  EXPECT_EQ(gate.streams(), 0u);
}

TEST(Gate, StreamsAndLoadsTogetherKeepSpareThreads) {
  rpc::Gate gate("", {.max_streams = 4,
                      .max_streams_per_peer = 4,
                      .max_loads = 30,
                      .max_loads_per_peer = 30,
                      .max_threads = 24});  // 24 - 16 spare: 8 streams and loads in all
  std::string why;
  std::vector<rpc::Gate::Ticket> held;
  for (int k = 0; k < 3; ++k) held.push_back(gate.admit_stream("unix:", why));
  for (int k = 0; k < 5; ++k) held.push_back(gate.admit_load("unix:", why));
  for (const auto& t : held) EXPECT_TRUE(t);
  EXPECT_FALSE(gate.admit_load("unix:", why));
  EXPECT_EQ(why,
            "3 streams, 5 loads and 0 exports hold RPC threads, the most max_rpc_threads (24) "
            "allows while keeping 16 for other calls");
  EXPECT_FALSE(gate.admit_stream("unix:", why));  // the fourth stream is under max_streams
  held.pop_back();
  EXPECT_TRUE(gate.admit_stream("unix:", why));
}

TEST(Gate, ExportsHaveTheirOwnCapsAndCountTowardTheThreads) {
  rpc::Gate gate("", {.max_exports = 3,
                      .max_exports_per_peer = 2,
                      .max_threads = 21});  // 5 streams, loads and exports in all
  std::string why;
  std::vector<rpc::Gate::Ticket> held;
  held.push_back(gate.admit_export("ipv4:10.0.0.1:1", why));
  held.push_back(gate.admit_export("ipv4:10.0.0.1:2", why));
  EXPECT_FALSE(gate.admit_export("ipv4:10.0.0.1:3", why));
  EXPECT_EQ(why, "ipv4:10.0.0.1 has 2 exports open, the most max_exports_per_peer allows (2)");
  held.push_back(gate.admit_export("ipv4:10.0.0.2:1", why));
  EXPECT_FALSE(gate.admit_export("ipv4:10.0.0.3:1", why));
  EXPECT_EQ(why, "3 exports are open, the most max_exports allows (3)");
  held.push_back(gate.admit_load("ipv4:10.0.0.3:1", why));
  held.push_back(gate.admit_stream("ipv4:10.0.0.3:2", why));
  for (const auto& t : held) EXPECT_TRUE(t);
  EXPECT_FALSE(gate.admit_load("ipv4:10.0.0.4:1", why));
  EXPECT_EQ(why,
            "1 streams, 1 loads and 3 exports hold RPC threads, the most max_rpc_threads (21) "
            "allows while keeping 16 for other calls");
  EXPECT_EQ(gate.exports(), 3u);
}
