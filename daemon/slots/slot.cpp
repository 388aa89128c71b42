#include "daemon/slots/slot.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "daemon/slots/layout.hpp"
#include "daemon/slots/lease_scan.hpp"
#include "daemon/slots/squatters.hpp"

namespace meshdock::slots {

namespace {

// Beats `cat`'s heartbeat every 100 ms from a thread of its own until destroyed. A publish holds
// m_ through its copy, and maintain(), which beats for the 100 ms timer, waits for m_: a copy
// longer than a consumer's producer_timeout (1 s by default) made waiting consumers see a
// stuck daemon (ProducerGone) mid-reload. Started only for a copy long enough to need it.
class BeatDuring {
 public:
  explicit BeatDuring(shm::CatalogView& cat)
      : t_([&cat](std::stop_token stop) {
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          while (!cv.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; }) &&
                 !stop.stop_requested())
            cat.beat(shm::monotonic_ns());
        }) {}

 private:
  std::jthread t_;
};

using shm::kShmDir;

// How long a consumer that kept a frame past a whole lease_wait is not waited for again.
constexpr std::uint64_t kKeeperMemoryNs = 10'000'000'000;
// A copy of at least this many bytes beats the heartbeat as it goes (BeatDuring): a host memcpy
// of 32 MiB takes some ms, so a thread per such publish costs nothing that shows.
constexpr std::uint64_t kBeatDuringCopyBytes = 32ull << 20;

// Every data segment of slot `name` ("<prefix>d<hash>.*"), whatever its slot and version.
void remove_data_objects(const std::string& prefix, const std::string& name) {
  char hash[20];
  std::snprintf(hash, sizeof hash, "d%016llx.",
                static_cast<unsigned long long>(shm::fnv1a64(name)));
  const std::string start = prefix + hash;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kShmDir, ec)) {
    const auto file = e.path().filename().string();
    if (file.starts_with(start)) shm::Segment::remove(file);
  }
}

// The pid of the daemon that owns `name`'s catalog, or nullopt when there is none or it is
// unreadable (then it is stale too).
std::optional<std::int32_t> owner_of(const std::string& catalog_object) {
  try {
    auto seg = shm::Segment::open(catalog_object, shm::Access::kReadOnly);
    shm::GuardedRange guard(seg.data(), seg.size());  // its owner may truncate it meanwhile
    auto cat = shm::CatalogView::validate(seg.data(), seg.size(), catalog_object);
    if (guard.hit()) return std::nullopt;
    return cat.daemon_pid();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Sets the shutdown byte of a dead daemon's control block before the block is unlinked.
// cuda-link's consumers map the block once (cuda_ipc_importer.py:364) and learn nothing from its
// name afterwards: a daemon that was killed left shutdown = 0, a frozen write_idx and version,
// so they waited on it for good, even after a new daemon had published under the same name.
// The byte says "producer gone": its importer cleans up, its TouchDesigner receiver reconnects
// by name and finds the new block. Only a block of ours (our uid, valid magic): anything else is
// left to the unlink alone.
void mark_gone(const std::string& control_object, uid_t self) {
  try {
    auto seg = shm::Segment::open(control_object, shm::Access::kReadWrite);
    struct stat st {};
    if (::fstat(seg.fd(), &st) != 0 || st.st_uid != self) return;
    shm::GuardedRange guard(seg.data(), seg.size());  // a truncated one: the guard takes it
    auto cb = shm::ControlBlockView::validate(seg.data(), seg.size(), control_object);
    cb.set_shutdown(true);
  } catch (const std::exception&) {
    // Missing, unreadable or not a control block: nothing of cuda-link's can be waiting on it.
  }
}

// Read permission for a class gives it write permission on the leases segment too.
mode_t leases_mode(mode_t mode) {
  return mode | ((mode & 0444) >> 1);
}

std::string mode_string(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m));
  return buf;
}

}  // namespace

Slot::Slot(SlotOptions options, backend::Backend& backend)
    : o_(std::move(options)), backend_(backend), consumers_(o_.consumers) {
  const auto control_name = shm::control_object_name(o_.prefix, o_.name);
  const auto catalog_name = shm::catalog_object_name(o_.prefix, o_.name);
  const auto leases_name = shm::leases_object_name(o_.prefix, o_.name);
  const uid_t self = ::geteuid();
  try {
    for (const auto& object : {control_name, catalog_name, leases_name}) {
      if (auto line = evict_squatter(kShmDir, object, self, [](const std::string& n) {
            return shm::Segment::remove(n) ? 0 : -1;
          }))
        note(*line);
    }
  } catch (const SquatterError& e) {
    throw SlotError("slot '" + o_.name + "': " + e.what());
  }
  // Ours (same uid): believe the pid it names only if that is a live process of our uid.
  if (const auto pid = owner_of(catalog_name);
      pid && *pid != ::getpid() && live_process_of(*pid, self))
    throw SlotError("slot '" + o_.name + "': /" + catalog_name + " belongs to live pid " +
                    std::to_string(*pid) + " (another meshdockd with prefix '" + o_.prefix + "'?)");
  remove_data_objects(o_.prefix, o_.name);  // a dead daemon's, if any
  mark_gone(control_name, self);            // its control block, about to be replaced
  if (!consumers_) {
    try {
      consumers_ = std::make_shared<ConsumerRegistry>();
    } catch (const ConsumerRegistryError& e) {
      throw SlotError("slot '" + o_.name + "': " + e.what());
    }
  }
  buffers_.resize(o_.num_slots);
  buffer_frame_.assign(o_.num_slots, 0);
  buffer_version_.assign(o_.num_slots, 0);
  held_.assign(o_.num_slots, {});
  pages_.assign(o_.num_slots, PageCopy{});
  create_segments();
}

void Slot::create_segments() {
  const auto control_name = shm::control_object_name(o_.prefix, o_.name);
  const auto catalog_name = shm::catalog_object_name(o_.prefix, o_.name);
  const auto leases_name = shm::leases_object_name(o_.prefix, o_.name);
  // Guards go before the segments they cover (reverse destruction order), views first.
  cb_.reset();
  cat_.reset();
  lv_.reset();
  control_guard_ = {};
  catalog_guard_ = {};
  leases_guard_ = {};
  // Unlinked first: a replaced Segment that still owned the name would unlink its successor.
  control_.unlink();
  catalog_.unlink();
  leases_.unlink();
  try {
    control_ = shm::Segment::create(control_name, shm::control_block_size(o_.num_slots), o_.mode,
                                    /*replace=*/true);
    control_guard_ = shm::GuardedRange(control_.data(), control_.size());
    cb_.emplace(shm::ControlBlockView::initialize(control_.data(), control_.size(), o_.num_slots));
    leases_ = shm::Segment::create(leases_name, shm::leases_size(o_.num_slots, o_.lease_capacity),
                                   leases_mode(o_.mode), /*replace=*/true);
    leases_guard_ = shm::GuardedRange(leases_.data(), leases_.size());
    lv_.emplace(shm::LeasesView::initialize(leases_.data(), leases_.size(), o_.num_slots,
                                            o_.lease_capacity));
    shm::CatalogParams p;
    p.num_slots = o_.num_slots;
    p.page_size = o_.page_size;
    p.lease_capacity = o_.lease_capacity;
    p.daemon_pid = ::getpid();
    p.daemon_uid = ::geteuid();
    p.device_type = backend_.device().type;
    p.device_id = backend_.device().id;
    p.device_uuid = backend_.device_uuid();
    p.socket = consumers_->address();
    catalog_ = shm::Segment::create(catalog_name, shm::catalog_size(o_.num_slots, o_.page_size),
                                    o_.mode, /*replace=*/true);
    catalog_guard_ = shm::GuardedRange(catalog_.data(), catalog_.size());
    cat_.emplace(shm::CatalogView::initialize(catalog_.data(), catalog_.size(), p));
  } catch (const shm::ProtocolError& e) {
    throw SlotError("slot '" + o_.name + "': " + e.what());
  } catch (const std::exception& e) {
    throw SlotError("slot '" + o_.name + "': cannot create its segments: " + e.what());
  }
  cat_->beat(shm::monotonic_ns());
  seen_.clear();
}

// Writes everything the Slot published into freshly created segments, from its own copies.
void Slot::restore_segments() {
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) {
    auto& pc = pages_[i];
    if (pc.frame == 0) continue;
    auto page = cat_->page(i);
    const auto begin = page.begin_write(pc.seq);
    page.finish_write(begin, pc.frame, pc.data_size, pc.buffer_version, pc.manifest);
    pc.seq = begin + 1;
    if (buffers_[i]) {
      cb_->set_mem_handle(i, buffers_[i]->mem_handle());
      cb_->set_event_handle(i, buffers_[i]->event_handle());
    }
  }
  cb_->set_metadata(metadata_);  // before the version that announces it (see publish)
  cb_->set_version(version_);
  cb_->set_timestamp(timestamp_);
  cb_->publish_write_idx(write_idx_);
  cat_->publish_futex(write_idx_);
}

Slot::~Slot() {
  std::lock_guard lock(m_);
  if (cb_) cb_->set_shutdown(true);
  if (cat_) shm::futex_wake_all(cat_->futex_word());  // sleepers see the flag now
  // Segment destructors unlink control, catalog and leases; buffer destructors free the data.
}

std::string Slot::control_object() const {
  return shm::control_object_name(o_.prefix, o_.name);
}
std::string Slot::catalog_object() const {
  return shm::catalog_object_name(o_.prefix, o_.name);
}
std::string Slot::leases_object() const {
  return shm::leases_object_name(o_.prefix, o_.name);
}

std::uint32_t Slot::write_idx() const {
  std::lock_guard lock(m_);
  return write_idx_;
}
std::uint64_t Slot::version() const {
  std::lock_guard lock(m_);
  return version_;
}
std::uint64_t Slot::data_size() const {
  std::lock_guard lock(m_);
  return data_size_;
}

std::uint64_t Slot::copied_bytes() const {
  std::lock_guard lock(m_);
  return copied_bytes_;
}

std::uint64_t Slot::kept_bytes() const {
  std::lock_guard lock(m_);
  return kept_bytes_;
}

std::vector<backend::Placement> Slot::not_held(std::uint32_t i,
                                               const std::vector<backend::Placement>& all) const {
  std::vector<backend::Placement> out;
  for (const auto& p : all) {
    const auto it = held_[i].find(p.offset);
    const auto& source = p.array->buffer();
    const bool held = it != held_[i].end() && source && it->second.bytes == p.array->nbytes() &&
                      it->second.source.lock() == source;
    if (!held) out.push_back(p);
  }
  return out;
}

std::uint64_t Slot::bytes() const {
  std::lock_guard lock(m_);
  std::uint64_t n = 0;
  for (const auto& b : buffers_)
    if (b) n += b->size();
  for (const auto& r : retired_) n += r.buffer->size();
  return n;
}

std::uint32_t Slot::lease_count() {
  std::lock_guard lock(m_);
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) n += static_cast<std::uint32_t>(scan(i).size());
  return n;
}

std::string Slot::newest_manifest() const {
  std::lock_guard lock(m_);
  if (write_idx_ == 0) return {};
  return pages_[(write_idx_ - 1) % o_.num_slots].manifest;
}

std::vector<LeaseInfo> Slot::scan(std::uint32_t i, std::size_t* cleared) {
  const auto scan = scan_lease_table(
      lv_->table(i), [&](std::int32_t pid) { return consumers_->known(pid); },
      o_.max_leases_per_pid);
  if (cleared) *cleared += scan.cleared;
  const auto now = shm::monotonic_ns();
  std::vector<LeaseInfo> out;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Seen> seen;
  for (const auto& h : scan.honoured) {
    const auto key = std::make_pair(i, h.index);
    Seen s{h.state, h.frame, now};
    if (const auto it = seen_.find(key);
        it != seen_.end() && it->second.state == h.state && it->second.frame == h.frame)
      s.since_ns = it->second.since_ns;
    seen[key] = s;
    out.push_back({i, h.pid, h.uid, h.frame, (h.state & shm::kLeaseClaiming) != 0,
                   static_cast<double>(now - s.since_ns) * 1e-9});
  }
  // Entries of slot i not honoured now are forgotten (their age restarts if they come back).
  std::erase_if(seen_, [&](const auto& kv) { return kv.first.first == i; });
  seen_.merge(seen);
  return out;
}

bool Slot::leased(std::uint32_t slot) {
  for (const auto& l : scan(slot))
    if (l.claiming || l.frame >= buffer_frame_[slot]) return true;
  return false;
}

std::vector<LeaseInfo> Slot::leases() {
  std::lock_guard lock(m_);
  std::vector<LeaseInfo> out;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) {
    auto l = scan(i);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

std::size_t Slot::revoke(std::int32_t pid) {
  std::lock_guard lock(m_);
  std::size_t n = 0;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) {
    auto table = lv_->table(i);
    for (std::uint32_t k = 0; k < o_.lease_capacity; ++k) {
      const auto e = table.entry(k);
      if (!e || e->pid != pid) continue;
      if (table.clear(k, static_cast<std::uint32_t>(pid) | (e->claiming ? shm::kLeaseClaiming : 0)))
        ++n;
    }
  }
  if (n)
    note("revoked " + std::to_string(n) + (n == 1 ? " lease" : " leases") + " of pid " +
         std::to_string(pid));
  free_retired();
  return n;
}

std::vector<std::string> Slot::take_notes() {
  std::lock_guard lock(m_);
  auto notes = std::exchange(notes_, {});
  for (auto& n : backend_.take_notes()) notes.push_back(std::move(n));
  return notes;
}

Published Slot::publish(const payload::DevicePayload& p, const std::function<bool()>& abandon) {
  const Layout layout = plan_layout(p);
  const std::string manifest = shm::encode_manifest(layout.manifest);
  std::lock_guard lock(m_);
  repair_if_truncated();
  const std::uint32_t i = write_idx_ % o_.num_slots;
  auto page = cat_->page(i);
  if (manifest.size() > page.manifest_capacity())
    throw SlotError("slot '" + o_.name + "': the manifest is " + std::to_string(manifest.size()) +
                    " bytes; a catalog page holds " + std::to_string(page.manifest_capacity()));
  // From here no consumer can take a new lease on slot i's frame (the page is odd; see
  // PageView::begin_write); the leases already taken are what we wait for.
  const auto seq = page.begin_write(pages_[i].seq);
  // A publish that fails leaves the page as it was. When it had replaced the buffer the
  // page's frame is in and that buffer was kept (retired for its leases, an import report or
  // cuda-link's grace), the buffer is put back: the control block names it again, so a
  // cuda-link consumer, which reads ring slot (write_idx - 1) % N and does not look at pages,
  // never reads the unwritten replacement (with one ring slot it would: that is the slot being
  // written). When the old buffer was freed, the page says "no frame" and the control block
  // names the new buffer, so that a page never names a buffer its handles do not (a consumer
  // opens the handles read under the page's seq: PageView::handles_of).
  struct Abort {
    Slot& slot;
    shm::PageView& page;
    std::uint32_t i;
    std::uint64_t seq;
    bool replaced = false;
    bool done = false;
    const backend::SlotBuffer* previous = nullptr;  // the replaced buffer, when retired
    std::uint64_t previous_version = 0, previous_frame = 0;
    ~Abort() {
      if (done) return;
      auto& copy = slot.pages_[i];
      // Every path below writes `version` after the handles it changes, as publish does: a
      // cuda-link consumer reads the handles at a version change and not again until the next.
      // (Placeholders made for other ring slots changed handles too: their version goes out;
      // the metadata stays the previous frame's, which is still the newest.)
      if (replaced && previous) {
        auto& retired = slot.retired_;
        const auto it = std::find_if(retired.begin(), retired.end(), [&](const Retired& r) {
          return r.buffer.get() == previous && !r.buffer->damaged();
        });
        if (it != retired.end()) {
          // The old buffer comes back with its frame. The replacement's handle has been in the
          // control block since the copy: a device one is kept for cuda-link's grace, as any
          // replaced buffer (a cuda-link consumer starting then may have opened it); a host
          // one is freed (a mapping of it outlives the unlink).
          auto fresh = std::move(slot.buffers_[i]);
          slot.buffers_[i] = std::move(it->buffer);
          if (it->grace_until_ns) {
            it->buffer = std::move(fresh);
            it->last_frame = 0;  // frame 0 is never published
          } else {
            retired.erase(it);
          }
          slot.buffer_version_[i] = previous_version;
          slot.buffer_frame_[i] = previous_frame;
          slot.held_[i].clear();
          slot.cb_->set_mem_handle(i, slot.buffers_[i]->mem_handle());
          slot.cb_->set_event_handle(i, slot.buffers_[i]->event_handle());
          replaced = false;
        }
      }
      if (!replaced) {
        slot.cb_->set_version(slot.version_);
        page.abort_write(seq);
        copy.seq = seq + 1;
        return;
      }
      try {
        const auto v = slot.buffer_version_[i];
        slot.cb_->set_mem_handle(i, slot.buffers_[i]->mem_handle());
        slot.cb_->set_event_handle(i, slot.buffers_[i]->event_handle());
        slot.cb_->set_version(slot.version_);
        page.finish_write(seq, 0, 0, v, "");
        copy = {seq + 1, 0, 0, v, ""};
        slot.buffer_frame_[i] = 0;
      } catch (...) {  // cannot happen (no allocation above can fail); never out of a destructor
        slot.cb_->set_version(slot.version_);
        page.abort_write(seq);
        copy.seq = seq + 1;
      }
    }
  } abort{*this, page, i, seq};
  // A consumer still reading slot i: wait a bounded time, then give the slot a new buffer. Not
  // for a keeper (a pid that outlasted a whole wait lately): it holds frames on purpose.
  const auto deadline = std::chrono::steady_clock::now() + o_.lease_wait;
  std::vector<LeaseInfo> waited;
  for (; buffers_[i];) {
    const auto now_ns = shm::monotonic_ns();
    waited.clear();
    for (auto& l : scan(i)) {
      const auto k = keepers_.find(l.pid);
      if ((l.claiming || l.frame >= buffer_frame_[i]) &&
          (k == keepers_.end() || now_ns - k->second >= kKeeperMemoryNs))
        waited.push_back(l);
    }
    if (waited.empty() || std::chrono::steady_clock::now() >= deadline) break;
    // The heartbeat goes on (maintain(), which beats it, waits for m_, held here): a lease_wait
    // longer than the consumers' producer_timeout must not look like a stuck daemon.
    cat_->beat(now_ns);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!waited.empty() && o_.lease_wait.count() > 0) {  // they outlasted the whole wait
    const auto now_ns = shm::monotonic_ns();
    std::erase_if(keepers_,
                  [&](const auto& k) { return now_ns - k.second >= 6 * kKeeperMemoryNs; });
    for (const auto& l : waited) {
      if (keepers_.insert_or_assign(l.pid, now_ns).second)
        note("pid " + std::to_string(l.pid) + " (uid " + std::to_string(l.uid) + ") kept frame " +
             std::to_string(l.frame) + " of ring slot " + std::to_string(i) +
             " past lease_wait_ms (" + std::to_string(o_.lease_wait.count()) +
             " ms): publishes into ring slots it holds take fresh buffers without waiting for "
             "it (for 10 s, then it is given one wait again)");
    }
  }
  bool still_leased = buffers_[i] && leased(i);
  if (still_leased && o_.memory_budget &&
      backend_.memory_used() + layout.buffer > o_.memory_budget) {
    // A fresh buffer would break the budget: the leases on slot i lose instead (their holders
    // may read a frame being refilled; they asked for more than the budget allows).
    for (const auto& l : scan(i)) {
      for (std::uint32_t k = 0; k < o_.lease_capacity; ++k) {
        const auto e = lv_->table(i).entry(k);
        if (e && e->pid == l.pid)
          lv_->table(i).clear(
              k, static_cast<std::uint32_t>(e->pid) | (e->claiming ? shm::kLeaseClaiming : 0u));
      }
      note("revoked the lease of pid " + std::to_string(l.pid) + " (uid " + std::to_string(l.uid) +
           ") on ring slot " + std::to_string(i) + ", frame " + std::to_string(l.frame) +
           ", held " + std::to_string(l.age_seconds) +
           " s: a fresh buffer would exceed the memory budget of " +
           std::to_string(o_.memory_budget) + " bytes");
    }
    still_leased = leased(i);
  }
  bool fresh = still_leased || !buffers_[i] || buffers_[i]->size() < layout.buffer;
  auto allocate = [&](bool retire) {
    // Allocate first: if that fails, slot i keeps the buffer it had.
    const auto v = version_ + 1;
    std::unique_ptr<backend::SlotBuffer> buffer;
    try {
      buffer = backend_.allocate(shm::data_object_name(o_.prefix, o_.name, i, v), layout.buffer);
    } catch (const backend::BackendError& e) {
      throw SlotError("slot '" + o_.name + "': " + e.what());
    }
    // A buffer a consumer still has open (an import report) is kept as retired too, until the
    // consumer closes it: freeing it would pull memory from under an open CUDA import.
    // A device buffer also for consumers that hold it open unannounced (replaced_grace).
    const bool graced =
        backend_.device().type != shm::kDLDeviceCPU && o_.replaced_grace.count() > 0;
    if (retire || (buffers_[i] && (graced || imported(*buffers_[i])))) {
      if (!abort.replaced) {  // the frame's own buffer (not a damaged replacement): restorable
        abort.previous = buffers_[i].get();
        abort.previous_version = buffer_version_[i];
        abort.previous_frame = buffer_frame_[i];
      }
      retired_.push_back(
          {i, buffer_frame_[i], std::move(buffers_[i]),
           graced ? shm::monotonic_ns() + static_cast<std::uint64_t>(
                                              std::chrono::nanoseconds(o_.replaced_grace).count())
                  : 0});
    }
    buffers_[i] = std::move(buffer);
    held_[i].clear();
    version_ = v;
    buffer_version_[i] = v;
    abort.replaced = true;
  };
  if (fresh) allocate(still_leased);
  // The buffer still holds what its last publish copied: copy only the other arrays (a field
  // publish: the field). A buffer changed since by someone else (truncated, even if grown back)
  // gets every array: a truncation is met by the copy, the SIGBUS guard says damaged(), and a
  // fresh buffer is filled below.
  const bool all = fresh || o_.copy_unchanged || buffers_[i]->changed();
  std::vector<backend::Placement> partial;
  const auto* copies = &layout.placements;
  if (!all) {
    partial = not_held(i, layout.placements);
    copies = &partial;
  }
  held_[i].clear();  // until the copies are done, what the buffer holds is unknown
  const auto bytes_of = [](const std::vector<backend::Placement>& ps) {
    std::uint64_t n = 0;
    for (const auto& p : ps) n += p.array->nbytes();
    return n;
  };
  std::uint64_t copied_bytes = bytes_of(*copies);
  std::optional<BeatDuring> beat;  // through the copy and a mid_write pause (see BeatDuring)
  if (copied_bytes >= kBeatDuringCopyBytes || o_.pause_mid_write.count()) {
    try {
      beat.emplace(*cat_);
    } catch (const std::system_error&) {
      // No thread to be had (RLIMIT_NPROC): the copy goes on unbeaten, as before BeatDuring;
      // a publish failed half-way for a heartbeat would be worse.
    }
  }
  const auto upload_start = std::chrono::steady_clock::now();
  backend_.upload(*buffers_[i], *copies);
  if (buffers_[i]->damaged()) {
    // Truncated under us (its SIGBUS guard fired during the copy): the bytes went to private
    // zero pages no consumer sees. Once more into a fresh buffer.
    note_truncation("data segment of ring slot " + std::to_string(i) + " (version " +
                    std::to_string(buffer_version_[i]) +
                    ") was truncated by another process during a publish; copied again into a "
                    "fresh one");
    allocate(false);
    fresh = true;
    backend_.upload(*buffers_[i], layout.placements);
    copied_bytes = bytes_of(layout.placements);
  }
  const double upload_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count();
  const std::uint64_t all_bytes = bytes_of(layout.placements);
  for (const auto& p : layout.placements) {
    if (p.array->buffer()) held_[i][p.offset] = {p.array->nbytes(), p.array->buffer()};
  }
  if (fresh) {
    cb_->set_mem_handle(i, buffers_[i]->mem_handle());
    cb_->set_event_handle(i, buffers_[i]->event_handle());
  }
  // cuda-link's consumers open every ring slot's memory handle when they start (and again on
  // each version change) and retry forever on an all-zero one: from the first publish on, a
  // ring slot that holds no buffer (not reached yet, or dropped as damaged) carries a
  // placeholder, the backend's smallest buffer (one page on the host, 2 MiB on CUDA), which
  // the publish that reaches it replaces. Its page says no frame, so no consumer reads it.
  bool handles_changed = fresh;
  for (std::uint32_t k = 0; k < o_.num_slots; ++k) {
    if (buffers_[k]) continue;
    if (!handles_changed) ++version_;  // one version for every handle this publish changes
    handles_changed = true;
    try {
      buffers_[k] = backend_.allocate(shm::data_object_name(o_.prefix, o_.name, k, version_), 1);
    } catch (const backend::BackendError& e) {
      throw SlotError("slot '" + o_.name + "': placeholder for ring slot " + std::to_string(k) +
                      ": " + e.what());
    }
    buffer_version_[k] = version_;
    buffer_frame_[k] = 0;
    held_[k].clear();
    cb_->set_mem_handle(k, buffers_[k]->mem_handle());
    cb_->set_event_handle(k, buffers_[k]->event_handle());
  }
  // cuda-link reads the metadata (shape, dtype, data_size) only when `version` changes: a new
  // shape in the same buffers (a reload of a smaller mesh) bumps it too. The new version is
  // written below, after the metadata it announces (see there).
  const auto& metadata = layout.metadata;
  if (!handles_changed && metadata != metadata_ && write_idx_ > 0) ++version_;
  if (o_.pause_mid_write.count()) std::this_thread::sleep_for(o_.pause_mid_write);
  beat.reset();
  if (abandon && abandon())
    throw SlotAbandoned("slot '" + o_.name + "': the publish was abandoned after the copy");
  const std::uint32_t frame = write_idx_ + 1;
  // The page names the version of *this* slot's buffer (its data segment's name), which is
  // older than version_ when another slot's buffer was replaced since.
  page.finish_write(seq, frame, layout.total, buffer_version_[i], manifest);
  abort.done = true;
  pages_[i] = {seq + 1, frame, layout.total, buffer_version_[i], manifest};
  buffer_frame_[i] = frame;
  data_size_ = layout.total;
  write_idx_ = frame;
  metadata_ = metadata;
  timestamp_ = shm::monotonic_seconds();
  // Metadata first, then the version: a cuda-link consumer that sees the version change reads
  // the handles and the metadata at once (cuda_ipc_importer.py:1073-1090) and not again until
  // the next change. A version written before the metadata (as this was, across the catalog
  // page's write) let it cache the previous frame's shape for good.
  cb_->set_metadata(metadata_);
  cb_->set_version(version_);
  cb_->set_timestamp(timestamp_);
  cb_->set_shutdown(false);
  cb_->publish_write_idx(frame);
  cat_->publish_futex(frame);
  cat_->beat(shm::monotonic_ns());
  free_retired();
  repair_if_truncated();  // a segment truncated during this publish: republished from our copy
  copied_bytes_ += copied_bytes;
  kept_bytes_ += all_bytes - copied_bytes;
  return {frame,
          i,
          layout.total,
          buffer_version_[i],
          upload_seconds,
          copied_bytes,
          all_bytes - copied_bytes};
}

bool Slot::imported(const backend::SlotBuffer& b, bool drain) {
  // Only device buffers are imported (host consumers map data segments by name, and an
  // unlinked object lives on under their mappings): skip the registry's socket reads.
  if (backend_.device().type == shm::kDLDeviceCPU) return false;
  if (drain) consumers_->drain();
  return consumers_->reported_open(b.mem_handle());
}

std::vector<std::unique_ptr<backend::SlotBuffer>> Slot::take_open_imports() {
  std::lock_guard lock(m_);
  std::vector<std::unique_ptr<backend::SlotBuffer>> open;
  bool drained = false;
  auto take = [&](std::unique_ptr<backend::SlotBuffer>& b) {
    if (!b) return;  // (a ring slot whose buffer a truncation repair dropped)
    if (imported(*b, !drained)) open.push_back(std::move(b));
    drained = true;
  };
  for (auto& b : buffers_) take(b);
  for (auto& r : retired_) take(r.buffer);
  std::erase_if(retired_, [](const Retired& r) { return !r.buffer; });
  return open;
}

std::vector<std::unique_ptr<backend::SlotBuffer>> Slot::take_unannounced() {
  std::lock_guard lock(m_);
  std::vector<std::unique_ptr<backend::SlotBuffer>> left;
  if (backend_.device().type == shm::kDLDeviceCPU || o_.replaced_grace.count() <= 0) return left;
  for (auto& b : buffers_)
    if (b) left.push_back(std::move(b));
  for (auto& r : retired_)
    if (r.buffer) left.push_back(std::move(r.buffer));
  retired_.clear();
  return left;
}

void Slot::free_retired() {
  std::map<std::uint32_t, std::vector<LeaseInfo>> honoured;
  for (const auto& r : retired_)
    if (!honoured.count(r.slot)) honoured[r.slot] = scan(r.slot);
  // Each retired buffer: kept for a lease on its frame, else for a consumer's open import
  // (reports, read once per pass; after a growth, which drained before its copy, this drains
  // again: a report sent during the copy counts), else freed. Imports pin at most 2 x num_slots
  // buffers (a consumer caches one per ring slot, so two generations of buffers: consumers idle
  // since before the last growth and those that took a frame since; a hostile one could report
  // every buffer whose handle it can read) and only within the memory budget: past either, the
  // oldest go first.
  std::vector<bool> keep(retired_.size(), false), graced(retired_.size(), false);
  std::vector<std::size_t> pinned;  // by imports or grace alone, oldest first (retired_'s order)
  bool drained = false;
  const auto now_ns = shm::monotonic_ns();
  for (std::size_t k = 0; k < retired_.size(); ++k) {
    const auto& r = retired_[k];
    for (const auto& l : honoured[r.slot])
      if (l.frame == r.last_frame) keep[k] = true;
    if (keep[k]) continue;
    const bool reported = imported(*r.buffer, !drained);
    drained = true;
    graced[k] = !reported && now_ns < r.grace_until_ns;
    if (reported || graced[k]) pinned.push_back(k);
  }
  const std::uint64_t used = backend_.memory_used();
  const std::size_t cap = 2 * std::size_t{o_.num_slots};
  std::uint64_t freed = 0;
  for (std::size_t j = 0; j < pinned.size(); ++j) {
    const auto& r = retired_[pinned[j]];
    const bool too_many = pinned.size() - j > cap;
    const bool over = o_.memory_budget && used - freed > o_.memory_budget;
    if (!too_many && !over) {
      keep[pinned[j]] = true;
      continue;
    }
    freed += r.buffer->size();
    note("freed the retired buffer of ring slot " + std::to_string(r.slot) + " (frame " +
         std::to_string(r.last_frame) + ") " +
         (graced[pinned[j]] ? "within cuda-link consumers' grace after its replacement"
                            : "though a consumer reported it open") +
         ": " +
         (too_many
              ? "more than " + std::to_string(cap) + " retired buffers were held by " +
                    (graced[pinned[j]] ? "cuda-link consumers' grace" : "import reports") + " alone"
              : "slot buffers exceed the memory budget of " + std::to_string(o_.memory_budget) +
                    " bytes"));
  }
  std::vector<Retired> kept;
  for (std::size_t k = 0; k < retired_.size(); ++k)
    if (keep[k]) kept.push_back(std::move(retired_[k]));
  retired_ = std::move(kept);  // the others freed here
}

// A repeated truncation (a loop of ftruncate by root) must not flood the log: one line per
// second per slot, with the count of the ones left out.
void Slot::note_truncation(const std::string& line) {
  const auto now = shm::monotonic_ns();
  if (last_truncation_note_ns_ && now - last_truncation_note_ns_ < 1000000000ull) {
    ++truncations_unsaid_;
    return;
  }
  std::string more;
  if (truncations_unsaid_)
    more = " (and " + std::to_string(truncations_unsaid_) + " more truncations in the last second)";
  truncations_unsaid_ = 0;
  last_truncation_note_ns_ = now;
  note(line + more);
}

void Slot::repair_if_truncated() {
  shm::ensure_sigbus_handler();  // another module may have put its own in since
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) {
    if (!buffers_[i] || !buffers_[i]->damaged()) continue;
    note_truncation("data segment of ring slot " + std::to_string(i) + " (version " +
                    std::to_string(buffer_version_[i]) +
                    ") was truncated by another process: its frame is lost; the next publish of "
                    "this slot gets a fresh buffer");
    buffers_[i].reset();
    held_[i].clear();
  }
  std::erase_if(retired_, [](const Retired& r) { return r.buffer->damaged(); });
  if (!control_guard_.hit() && !catalog_guard_.hit() && !leases_guard_.hit()) return;
  std::string which;
  if (control_guard_.hit()) which += " /" + control_object();
  if (catalog_guard_.hit()) which += " /" + catalog_object();
  if (leases_guard_.hit()) which += " /" + leases_object();
  // Consumers of the old control block see the shutdown flag (if they still can) and attach
  // again; the old mappings go when their segments are replaced below.
  cb_->set_shutdown(true);
  shm::futex_wake_all(cat_->futex_word());
  create_segments();
  restore_segments();
  note_truncation("segment" + which +
                  " was truncated by another process; recreated every segment of the slot (mode " +
                  mode_string(o_.mode) + ") and republished frame " + std::to_string(write_idx_) +
                  " from the daemon's own copy");
}

std::size_t Slot::maintain(std::uint64_t now_ns) {
  std::lock_guard lock(m_);
  repair_if_truncated();
  cat_->beat(now_ns);
  cb_->set_shutdown(false);  // reasserted while alive (DESIGN.md)
  std::size_t cleared = 0;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i) scan(i, &cleared);
  free_retired();
  repair_if_truncated();  // what the accesses above met
  return cleared;
}

std::vector<std::string> Slot::remove_stale(const std::string& prefix) {
  shm::validate_prefix(prefix);
  std::vector<std::string> removed;
  std::error_code ec;
  const std::string suffix(shm::kCatalogSuffix);
  const uid_t self = ::geteuid();
  for (const auto& e : std::filesystem::directory_iterator(kShmDir, ec)) {
    const auto file = e.path().filename().string();
    if (!file.starts_with(prefix) || !file.ends_with(suffix)) continue;
    const auto name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    try {
      shm::validate_name(name);
    } catch (const shm::ProtocolError&) {
      continue;  // not one of ours
    }
    const auto owner = object_owner(kShmDir, file);
    if (owner && owner->uid == self) {
      const auto pid = owner_of(file);
      if (pid && live_process_of(*pid, self)) continue;
    }
    remove_data_objects(prefix, name);
    mark_gone(shm::control_object_name(prefix, name), self);
    shm::Segment::remove(shm::control_object_name(prefix, name));
    shm::Segment::remove(shm::leases_object_name(prefix, name));
    shm::Segment::remove(file);
    removed.push_back(name);
  }
  return removed;
}

}  // namespace meshdock::slots
