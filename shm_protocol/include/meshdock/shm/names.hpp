// Slot names, name prefixes and the POSIX shared-memory object names derived from them.
//
// A slot called "bracket" with the default prefix lives in three objects:
//   /meshdock.bracket           the 433-byte cuda-link control block (3 slots), mode 0640
//   /meshdock.bracket.catalog   meshdock's catalog (manifests, heartbeat, socket), mode 0640
//   /meshdock.bracket.leases    the lease tables, the one object consumers write (0660)
// and, on the host backend, one data segment per slot buffer whose name is short enough to fit
// in the 64-byte handle ("MDH1" + NUL-terminated name).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "meshdock/shm/error.hpp"

namespace meshdock::shm {

inline constexpr std::string_view kDefaultPrefix = "meshdock.";
inline constexpr std::size_t kMaxNameLength = 200;
inline constexpr std::size_t kMaxPrefixLength = 24;
inline constexpr std::string_view kCatalogSuffix = ".catalog";
inline constexpr std::string_view kLeasesSuffix = ".leases";

// Where POSIX shm objects live (shm_open's directory on Linux).
inline constexpr const char* kShmDir = "/dev/shm";
// How every producer source object's name begins (Publish's source_shm; libmeshdock's
// SourceBuffer makes "meshdock-src.<pid>.<16 hex>"). The daemon reads no object of any other
// name, so a caller can name none of its own objects of other software.
inline constexpr std::string_view kSourcePrefix = "meshdock-src.";
// The gRPC trailing metadata of every Publish reply (success or error) whose header the daemon
// read and which named a source object: kSourceRefused when the daemon could not use the object
// (its name, owner, type, size; the caller's transport), so the client may send the bytes in
// messages instead; kSourceUnderstood otherwise (read, or the publish refused for the mesh's or the
// field's sake, as it would be through messages). A daemon from before source objects sends
// neither, and refuses such a publish with INVALID_ARGUMENT (it finds no data).
inline constexpr std::string_view kSourceTrailer = "meshdock-source";
inline constexpr const char* kSourceRefused = "refused";
inline constexpr const char* kSourceUnderstood = "understood";

inline bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// `s` with bytes outside printable ASCII written as \xNN, so a hostile name cannot cut an error
// message short (NUL) or garble a terminal.
inline std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Throws ProtocolError unless `name` matches [A-Za-z0-9_.-]{1,200}. `what` says which name
// ("slot name", "prefix") so the message points at the right argument.
inline void validate_name(std::string_view name, std::string_view what = "slot name") {
  if (name.empty()) throw ProtocolError(std::string(what) + " is empty");
  if (name.size() > kMaxNameLength) {
    throw ProtocolError(std::string(what) + " is " + std::to_string(name.size()) +
                        " characters long; the limit is " + std::to_string(kMaxNameLength));
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!is_name_char(c)) {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned char>(c));
      throw ProtocolError(std::string(what) + " '" + printable(name) + "' has " +
                          (c == '/' ? std::string("'/'") : std::string("character ") + code) +
                          " at position " + std::to_string(i) + "; allowed are A-Z a-z 0-9 _ . -");
    }
  }
  if (name == "." || name == "..") {
    throw ProtocolError(std::string(what) + " '" + std::string(name) + "' is reserved");
  }
}

// A prefix may be empty; otherwise same alphabet, at most 24 characters (so host data segment
// names fit in a 64-byte handle).
inline void validate_prefix(std::string_view prefix) {
  if (prefix.empty()) return;
  if (prefix.size() > kMaxPrefixLength) {
    // Its start only, escaped: the prefix comes from a caller or the environment, and a
    // megabyte of it (or an ESC) does not belong in an error message.
    throw ProtocolError("prefix '" + printable(prefix.substr(0, kMaxPrefixLength)) + "...' is " +
                        std::to_string(prefix.size()) + " characters long; the limit is " +
                        std::to_string(kMaxPrefixLength));
  }
  for (char c : prefix) {
    if (!is_name_char(c)) {
      throw ProtocolError("prefix '" + printable(prefix) +
                          "' has a character outside A-Z a-z 0-9 _ . -");
    }
  }
}

// A non-empty prefix also ends with a separator ('.', '-' or '_'): under "md7" slot "a" would be
// /dev/shm/md7a, which reads as slot "7a" of prefix "md", and a consumer that forgets the
// separator would wait for a name nobody publishes. Not a protocol rule (the names work), so
// validate_prefix allows it; meshdockd refuses such a prefix at start and the SDKs at attach,
// both with this message (empty when the prefix is fine).
inline std::string prefix_separator_problem(std::string_view prefix) {
  if (prefix.empty() || prefix.back() == '.' || prefix.back() == '-' || prefix.back() == '_')
    return {};
  const std::string p = printable(prefix);
  return "'" + p + "' does not end with '.', '-' or '_', so segment names would run into it ('" +
         p + "NAME'); meshdock prefixes end with one: did you mean '" + p + ".'?";
}

// A name that is a valid name but would be one of another slot's objects under the same prefix
// (empty when it is not): "a.catalog" is slot a's catalog, "a.leases" its leases, and a name of
// the data segments' form ("d<16 hex>.s<N>.v<8 hex>") is some slot's buffer. Loading such a name
// would overwrite or unlink that slot's segment, so meshdockd refuses it (the names work as
// far as the protocol goes: a consumer may still attach to one that another producer made).
inline std::string slot_name_collision(std::string_view name) {
  const std::string n = "slot name '" + printable(name) + "'";
  for (const auto suffix : {kCatalogSuffix, kLeasesSuffix})
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return n + " ends with '" + std::string(suffix) + "', so its control block would be slot '" +
             printable(name.substr(0, name.size() - suffix.size())) + "''s " +
             std::string(suffix.substr(1)) + " segment; choose a name that does not end with '" +
             std::string(suffix) + "'";
  auto hex = [&](std::size_t from, std::size_t count) {
    if (from + count > name.size()) return false;
    for (std::size_t k = from; k < from + count; ++k) {
      const char c = name[k];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
  };
  // d + 16 hex + ".s" + 1..10 digits + ".v" + 8 hex
  if (name.size() >= 29 && name[0] == 'd' && hex(1, 16) && name.substr(17, 2) == ".s") {
    std::size_t k = 19;
    while (k < name.size() && name[k] >= '0' && name[k] <= '9') ++k;
    if (k > 19 && k - 19 <= 10 && name.substr(k, 2) == ".v" && k + 2 + 8 == name.size() &&
        hex(k + 2, 8))
      return n +
             " has the form of a data segment's name (d<hash>.s<slot>.v<version>), so it "
             "could be another slot's buffer; choose another name";
  }
  return {};
}

// Object names as Boost.Interprocess and Python's multiprocessing.shared_memory spell them
// (no leading slash; both add it when they call shm_open).
inline std::string control_object_name(std::string_view prefix, std::string_view name) {
  validate_prefix(prefix);
  validate_name(name);
  return std::string(prefix) + std::string(name);
}

inline std::string catalog_object_name(std::string_view prefix, std::string_view name) {
  return control_object_name(prefix, name) + std::string(kCatalogSuffix);
}

inline std::string leases_object_name(std::string_view prefix, std::string_view name) {
  return control_object_name(prefix, name) + std::string(kLeasesSuffix);
}

// 64-bit FNV-1a: a stable, dependency-free hash so the data segment name of a long slot name
// stays short. Collisions are harmless: the daemon creates data segments exclusively and
// retries with the next version.
inline std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// "<prefix>d<16 hex>.s<slot>.v<8 hex>": at most 24 + 1 + 16 + 4 + 10 = 55 characters, which
// with "MDH1" and the NUL fits in the 64-byte handle.
inline std::string data_object_name(std::string_view prefix, std::string_view name,
                                    std::uint32_t slot, std::uint64_t version) {
  validate_prefix(prefix);
  validate_name(name);
  char buf[64];
  std::snprintf(buf, sizeof buf, "d%016llx.s%u.v%08llx",
                static_cast<unsigned long long>(fnv1a64(name)), slot,
                static_cast<unsigned long long>(version & 0xffffffffull));
  return std::string(prefix) + buf;
}

}  // namespace meshdock::shm
