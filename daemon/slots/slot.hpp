// One published mesh: its control block (cuda-link, byte-exact), catalog and leases segments,
// and a slot buffer per ring slot, filled by a backend.
//
// Publish follows DESIGN.md: the slot is write_idx % N; if it still has honoured leases, wait up
// to `lease_wait` (not for a consumer that kept a frame past a whole wait in the last 10 s; the
// heartbeat goes on while waiting), then give it a fresh buffer (the old one lives until its leases
// go; version bumps); copy, write the page under the seqlock, release write_idx, wake the futex.
// The destructor sets the shutdown flag, wakes consumers and removes the segments.
//
// Trust (DESIGN.md "Trust boundaries"): the Slot keeps its own copy of every value it writes
// (shape, write_idx, version, page contents) and never reads one back. Control block and
// catalog are created with `mode` (default 0640: consumers read only); the leases segment, the
// one consumers write, gets write permission for whoever may read. A lease is honoured only
// when its pid is registered (ConsumerRegistry) and only up to max_leases_per_pid per pid and
// ring slot; other entries are cleared. Every mapping is under a SIGBUS guard: a segment
// truncated by its owner or root is noticed by maintain(), which recreates the Slot's segments
// (control block, catalog, leases) from its own copies, or drops a damaged data buffer so the
// next publish allocates a fresh one, and reports what it did in take_notes().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/consumers.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::slots {

// The slot layer's one exception type; the message names the slot.
class SlotError : public std::runtime_error {
 public:
  explicit SlotError(const std::string& what) : std::runtime_error(what) {}
};
// A publish its caller abandoned before the frame went out (Slot::publish's `abandon`).
class SlotAbandoned : public SlotError {
 public:
  using SlotError::SlotError;
};

struct SlotOptions {
  std::string prefix{shm::kDefaultPrefix};
  std::string name;
  std::uint32_t num_slots = shm::kDefaultSlots;
  mode_t mode = 0640;
  std::chrono::milliseconds lease_wait{200};
  std::uint32_t page_size = shm::kDefaultPageSize;
  std::uint32_t lease_capacity = shm::kDefaultLeaseCapacity;
  // Leases honoured per consumer pid and ring slot; more are cleared.
  std::uint32_t max_leases_per_pid = shm::kMaxLeasesPerProcess;
  // Bytes of slot buffers (the backend's, retired included) a forced fresh buffer may bring the
  // total to; beyond it the leases on the slot are revoked instead. 0: no limit.
  std::uint64_t memory_budget = 0;
  // Who the known consumers are; a Slot given none starts its own registry.
  std::shared_ptr<ConsumerRegistry> consumers;
  // Copy every array on every publish. Off: a publish into a ring slot's buffer copies only the
  // arrays that buffer does not hold already (the same source array at the same offset, which
  // arrays cannot change once built: a field publish copies the field, not the mesh). On where
  // consumers can write the slot's memory (CUDA IPC maps it read-write), so that a consumer's
  // stray write is overwritten the next time the ring comes round instead of staying.
  bool copy_unchanged = false;
  // Test aid ($MESHDOCK_FAILPOINT=mid_write:MS): sleep between the upload and finishing the
  // page, so a fault test can kill the daemon with a page half written.
  std::chrono::milliseconds pause_mid_write{0};
  // How long a device buffer a publish replaced (a growth) outlives its replacement, for
  // consumers that hold it open unannounced (cuda-link's: kCudaLinkGrace, which the daemon
  // gives every slot). 0: freed at once unless leased or reported open. Host buffers: never.
  std::chrono::milliseconds replaced_grace{0};
};

// cuda-link consumers take no lease and send no import report, yet hold every ring slot's
// buffer open until they next poll and see the version change; cuda-link's own sender defers
// such frees by 30 frames, half a second at 60 fps (CUDAIPCExtension.py:1025-1034).
inline constexpr std::chrono::milliseconds kCudaLinkGrace{500};

struct Published {
  std::uint32_t frame = 0;  // the new write_idx
  std::uint32_t slot = 0;
  std::uint64_t data_size = 0;
  std::uint64_t version = 0;
  // Wall time of the copy into the slot buffer, complete (the CUDA backend waits for its
  // stream): memcpy into shm on the host, cudaMemcpyAsync + event + sync on a GPU.
  double upload_seconds = 0;
  // Bytes copied into the slot buffer, and bytes it held already (SlotOptions::copy_unchanged).
  std::uint64_t copied_bytes = 0, kept_bytes = 0;
};

// One honoured lease as the daemon sees it.
struct LeaseInfo {
  std::uint32_t slot = 0;
  std::int32_t pid = 0;
  uid_t uid = 0;
  std::uint64_t frame = 0;
  bool claiming = false;   // being taken (its frame not written yet)
  double age_seconds = 0;  // since the daemon first saw this entry
};

class Slot {
 public:
  // Creates the segments. Objects of the same names owned by another uid are squatters:
  // removed when the daemon may (a note says so), else a SlotError naming owner and mode.
  // Segments of our uid left by a dead daemon (or naming a pid that is not a process of our
  // uid) are replaced with their data segments; a live daemon of ours is a SlotError.
  Slot(SlotOptions options, backend::Backend& backend);
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot();

  // Copies `p` into a ring slot and makes it the newest frame. `abandon`, when given, is asked
  // once the copy is done, just before the frame goes out: true throws SlotAbandoned and
  // publishes nothing, as a failed publish (a Load whose client went or passed its deadline
  // during the copy).
  Published publish(const payload::DevicePayload& p, const std::function<bool()>& abandon = {});
  // See SlotOptions::pause_mid_write (a slot reused by a reload gets the failpoint this way).
  void set_pause_mid_write(std::chrono::milliseconds pause) { o_.pause_mid_write = pause; }
  // Heartbeat (every 100 ms); clears leases of dead or unknown pids; frees retired buffers
  // whose leases are gone; repairs truncated segments. Returns the number of leases cleared.
  std::size_t maintain(std::uint64_t now_ns);
  // Lines to log (squatters removed, truncations repaired, leases revoked) since the last call.
  std::vector<std::string> take_notes();
  // Before the Slot goes (an unload): hands over its buffers, current and retired, that a
  // consumer has reported open (reports drained first), so they can outlive it in a Graveyard
  // (graveyard.hpp) until the consumer closes them. None on a host slot.
  std::vector<std::unique_ptr<backend::SlotBuffer>> take_open_imports();
  // After take_open_imports: the device buffers left, current and retired, when the slot gives
  // replaced buffers a grace (SlotOptions::replaced_grace): cuda-link consumers hold them open
  // unannounced until they next poll and see the shutdown byte. None on a host slot or without
  // a grace (they are freed with the Slot).
  std::vector<std::unique_ptr<backend::SlotBuffer>> take_unannounced();

  // The honoured leases, and revocation of every lease of `pid` (returns how many).
  std::vector<LeaseInfo> leases();
  std::size_t revoke(std::int32_t pid);

  const std::string& name() const { return o_.name; }
  std::string control_object() const;
  std::string catalog_object() const;
  std::string leases_object() const;
  std::uint32_t num_slots() const { return o_.num_slots; }
  std::uint32_t write_idx() const;
  std::uint64_t version() const;
  std::uint64_t data_size() const;
  std::uint64_t bytes() const;  // slot buffers alive, retired ones included
  // Bytes every publish so far copied, and bytes they found in place (not copied).
  std::uint64_t copied_bytes() const;
  std::uint64_t kept_bytes() const;
  std::uint32_t lease_count();
  std::string newest_manifest() const;  // the newest page's manifest JSON ("" before a frame)
  std::string socket_address() const { return consumers_->address(); }

  // Removes every segment under `prefix` whose catalog names no live daemon of our uid, and
  // every one owned by another uid (and their data segments). Returns the names removed.
  static std::vector<std::string> remove_stale(const std::string& prefix);

 private:
  struct Retired {
    std::uint32_t slot;
    std::uint64_t last_frame;
    std::unique_ptr<backend::SlotBuffer> buffer;
    std::uint64_t grace_until_ns = 0;  // SlotOptions::replaced_grace after its replacement
  };
  struct PageCopy {  // what the Slot last wrote to a page
    std::uint64_t seq = 0, frame = 0, data_size = 0, buffer_version = 0;
    std::string manifest;
  };
  // An array a ring slot's buffer holds, complete: its bytes at `offset` are those of `source`
  // (weak: a source freed since can never be taken for a new one at the same address).
  struct Held {
    std::uint64_t bytes;
    std::weak_ptr<mesh::Buffer> source;
  };
  using HeldArrays = std::map<std::uint64_t, Held>;  // by offset
  // The placements whose array buffer i does not hold already.
  std::vector<backend::Placement> not_held(std::uint32_t i,
                                           const std::vector<backend::Placement>& all) const;
  struct Seen {  // a lease entry as last seen, for its age
    std::uint32_t state;
    std::uint64_t frame;
    std::uint64_t since_ns;
  };
  void create_segments();
  void restore_segments();
  void repair_if_truncated();
  // Honoured leases of ring slot i (clearing the others); `cleared` counts what went.
  std::vector<LeaseInfo> scan(std::uint32_t i, std::size_t* cleared = nullptr);
  // Whether a lease pins ring slot i's current buffer: one being taken, or one on the frame it
  // holds (or, forged, a later one). A lease on an older frame pins only the retired buffer
  // that held exactly that frame, so a stuck lease pins one buffer, not one per publish.
  bool leased(std::uint32_t slot);
  void free_retired();
  // Whether a consumer has reported `b` open and not closed it (ConsumerRegistry::reported_open);
  // `drain`: read the reports sent so far first (false: a caller that just did).
  bool imported(const backend::SlotBuffer& b, bool drain = true);
  void note(const std::string& line) { notes_.push_back("slot '" + o_.name + "': " + line); }
  void note_truncation(const std::string& line);

  SlotOptions o_;
  backend::Backend& backend_;
  std::shared_ptr<ConsumerRegistry> consumers_;
  mutable std::mutex m_;
  shm::Segment control_, catalog_, leases_;
  shm::GuardedRange control_guard_, catalog_guard_, leases_guard_;
  std::optional<shm::ControlBlockView> cb_;
  std::optional<shm::CatalogView> cat_;
  std::optional<shm::LeasesView> lv_;
  std::vector<std::unique_ptr<backend::SlotBuffer>> buffers_;
  std::vector<std::uint64_t> buffer_frame_;    // frame each buffer holds now
  std::vector<std::uint64_t> buffer_version_;  // control-block version each buffer was made at
  std::vector<HeldArrays> held_;               // what each buffer holds (empty: nothing known)
  std::uint64_t copied_bytes_ = 0, kept_bytes_ = 0;
  std::vector<PageCopy> pages_;
  std::vector<Retired> retired_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Seen> seen_;
  // Consumer pids that kept a frame past a whole lease_wait, and when that was last seen: a
  // publish does not wait for their leases again for a while (a consumer keeping a window of
  // frames would otherwise cost every publish into a ring slot it holds the whole wait).
  std::map<std::int32_t, std::uint64_t> keepers_;
  std::vector<std::string> notes_;
  std::uint64_t last_truncation_note_ns_ = 0;
  std::uint64_t truncations_unsaid_ = 0;
  std::uint32_t write_idx_ = 0;
  std::uint64_t version_ = 0;
  std::uint64_t data_size_ = 0;
  shm::BufferMetadata metadata_{};
  double timestamp_ = 0;
};

}  // namespace meshdock::slots
