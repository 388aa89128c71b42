// One published mesh: its control block (cuda-link, byte-exact) and catalog segments, and a
// slot buffer per ring slot, filled by a backend.
//
// Publish follows DESIGN.md: the slot is write_idx % N; if it still has live leases, wait up to
// `lease_wait`, then give it a fresh buffer (the old one lives until its leases go; version
// bumps); copy, write the page under the seqlock, release write_idx, wake the futex. The
// destructor sets the shutdown flag, wakes consumers and removes the segments.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::slots {

// The slot layer's one exception type; the message names the slot.
class SlotError : public std::runtime_error {
 public:
  explicit SlotError(const std::string& what) : std::runtime_error(what) {}
};

struct SlotOptions {
  std::string prefix{shm::kDefaultPrefix};
  std::string name;
  std::uint32_t num_slots = shm::kDefaultSlots;
  mode_t mode = 0660;
  std::chrono::milliseconds lease_wait{200};
  std::uint32_t page_size = shm::kDefaultPageSize;
  std::uint32_t lease_capacity = shm::kDefaultLeaseCapacity;
  // Test aid ($MESHDOCK_FAILPOINT=mid_write:MS): sleep between the upload and finishing the
  // page, so a fault test can kill the daemon with a page half written.
  std::chrono::milliseconds pause_mid_write{0};
};

struct Published {
  std::uint32_t frame = 0;  // the new write_idx
  std::uint32_t slot = 0;
  std::uint64_t data_size = 0;
  std::uint64_t version = 0;
};

class Slot {
 public:
  // Creates the segments. Segments of the same name left by a dead daemon are replaced (with
  // their data segments); a live owner is a SlotError.
  Slot(SlotOptions options, backend::Backend& backend);
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot();

  Published publish(const payload::DevicePayload& p);
  // See SlotOptions::pause_mid_write (a slot reused by a reload gets the failpoint this way).
  void set_pause_mid_write(std::chrono::milliseconds pause) { o_.pause_mid_write = pause; }
  // Heartbeat (every 100 ms), reclaims leases of dead pids and frees retired buffers whose
  // leases are gone. Returns the number of leases reclaimed.
  std::size_t maintain(std::uint64_t now_ns);

  const std::string& name() const { return o_.name; }
  std::string control_object() const;
  std::string catalog_object() const;
  std::uint32_t num_slots() const { return o_.num_slots; }
  std::uint32_t write_idx() const;
  std::uint64_t version() const;
  std::uint64_t data_size() const;
  std::uint64_t bytes() const;  // slot buffers alive, retired ones included
  std::uint32_t lease_count() const;
  std::string newest_manifest() const;  // the newest page's manifest JSON ("" before a frame)

  // Removes every segment under `prefix` whose catalog names a dead daemon (and their data
  // segments). Returns the names removed.
  static std::vector<std::string> remove_stale(const std::string& prefix);

 private:
  struct Retired {
    std::uint32_t slot;
    std::uint64_t last_frame;
    std::unique_ptr<backend::SlotBuffer> buffer;
  };
  bool leased(std::uint32_t slot) const;
  void free_retired();

  SlotOptions o_;
  backend::Backend& backend_;
  mutable std::mutex m_;
  shm::Segment control_, catalog_;
  std::optional<shm::ControlBlockView> cb_;
  std::optional<shm::CatalogView> cat_;
  std::vector<std::unique_ptr<backend::SlotBuffer>> buffers_;
  std::vector<std::uint64_t> buffer_frame_;    // frame each buffer holds now
  std::vector<std::uint64_t> buffer_version_;  // control-block version each buffer was made at
  std::vector<Retired> retired_;
  std::uint64_t version_ = 0;
  std::uint64_t data_size_ = 0;
};

}  // namespace meshdock::slots
