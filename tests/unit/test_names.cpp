#include <gtest/gtest.h>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;

TEST(Names, AcceptsTheDocumentedAlphabet) {
  EXPECT_NO_THROW(shm::validate_name("bracket"));
  EXPECT_NO_THROW(shm::validate_name("A-z_0.9"));
  EXPECT_NO_THROW(shm::validate_name(std::string(200, 'x')));
}

TEST(Names, RejectionsNameTheProblem) {
  auto message = [](const std::string& n) {
    try {
      shm::validate_name(n);
    } catch (const shm::ProtocolError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(""), "slot name is empty");
  EXPECT_EQ(message(std::string(201, 'x')), "slot name is 201 characters long; the limit is 200");
  EXPECT_EQ(message("a/b"), "slot name 'a/b' has '/' at position 1; allowed are A-Z a-z 0-9 _ . -");
  EXPECT_EQ(message("a b"),
            "slot name 'a b' has character 0x20 at position 1; allowed are A-Z a-z 0-9 _ . -");
  EXPECT_EQ(message(".."), "slot name '..' is reserved");
  EXPECT_EQ(message(std::string("x\0y", 3)),
            "slot name 'x\\x00y' has character 0x00 at position 1; allowed are A-Z a-z 0-9 _ . -");
}

TEST(Names, ATooLongPrefixIsQuotedShortAndEscaped) {
  std::string hostile = "\x1b[2J" + std::string(100000, 'p');
  try {
    shm::validate_prefix(hostile);
    FAIL() << "accepted";
  } catch (const shm::ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what,
              "prefix '\\x1b[2Jpppppppppppppppppppp...' is 100004 characters long; the limit "
              "is 24");
  }
}

TEST(Names, ObjectNamesMatchPythonSharedMemory) {
  EXPECT_EQ(shm::control_object_name("meshdock.", "bracket"), "meshdock.bracket");
  EXPECT_EQ(shm::catalog_object_name("meshdock.", "bracket"), "meshdock.bracket.catalog");
  EXPECT_THROW(shm::control_object_name("bad/prefix", "x"), shm::ProtocolError);
  EXPECT_THROW(shm::control_object_name(std::string(25, 'p'), "x"), shm::ProtocolError);
}

TEST(Names, DataObjectNameAlwaysFitsAHostHandle) {
  const std::string longest_prefix(shm::kMaxPrefixLength, 'p');
  const std::string longest_name(shm::kMaxNameLength, 'n');
  const auto name = shm::data_object_name(longest_prefix, longest_name, 9, ~0ull);
  EXPECT_LE(name.size() + 5, shm::kHandleBytes) << name;
  EXPECT_NO_THROW(shm::make_host_handle(name));
  // Stable across runs and implementations (the Python mirror computes the same string).
  EXPECT_EQ(shm::data_object_name("meshdock.", "golden", 0, 1001),
            "meshdock.d2b72c88efe37d9c4.s0.v000003e9");
}

// Under one prefix, "a.catalog" would be slot a's catalog, "a.leases" its leases, and a name of
// the data segments' form some slot's buffer: meshdockd refuses to load such a name (a trial
// loaded "box.catalog" beside "box", which truncated box's catalog to a control block).
TEST(Names, ANameThatIsAnotherSlotsSegmentIsACollision) {
  EXPECT_EQ(shm::slot_name_collision("box"), "");
  EXPECT_EQ(shm::slot_name_collision("box.catalogue"), "");
  EXPECT_EQ(shm::slot_name_collision("catalog"), "");
  EXPECT_EQ(shm::slot_name_collision("box.catalog"),
            "slot name 'box.catalog' ends with '.catalog', so its control block would be slot "
            "'box''s catalog segment; choose a name that does not end with '.catalog'");
  EXPECT_NE(shm::slot_name_collision("a.leases").find("slot 'a''s leases segment"),
            std::string::npos);
  EXPECT_NE(shm::slot_name_collision(".leases"), "");
  // Every data segment name the daemon makes, whatever the slot and version, is refused...
  for (const std::uint32_t slot : {0u, 9u, 4294967295u})
    for (const std::uint64_t version : {0ull, 4ull, ~0ull}) {
      const auto object = shm::data_object_name("", "box", slot, version);
      EXPECT_NE(shm::slot_name_collision(object).find("data segment"), std::string::npos) << object;
    }
  // ... and near misses are names like any other.
  EXPECT_EQ(shm::slot_name_collision("d004d2e191349e4f2.s0.v0000000"), "");    // 7 hex
  EXPECT_EQ(shm::slot_name_collision("d004d2e191349e4f2.s0.v000000041"), "");  // 9 hex
  EXPECT_EQ(shm::slot_name_collision("d004d2e191349e4f2.s.v00000004"), "");    // no slot
  EXPECT_EQ(shm::slot_name_collision("D004d2e191349e4f2.s0.v00000004"), "");
  EXPECT_EQ(shm::slot_name_collision("d004d2e191349e4fX.s0.v00000004"), "");
}
