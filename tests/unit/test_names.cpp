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
