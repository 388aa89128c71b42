#include "daemon/slots/slot.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "daemon/slots/layout.hpp"

namespace meshdock::slots {

namespace {

constexpr const char* kShmDir = "/dev/shm";

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
    auto cat = shm::CatalogView::validate(seg.data(), seg.size(), catalog_object);
    return cat.daemon_pid();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool owned_by_live_other(const std::string& catalog_object) {
  const auto pid = owner_of(catalog_object);
  return pid && *pid != ::getpid() && shm::pid_alive(*pid);
}

}  // namespace

Slot::Slot(SlotOptions options, backend::Backend& backend)
    : o_(std::move(options)), backend_(backend) {
  const auto control_name = shm::control_object_name(o_.prefix, o_.name);
  const auto catalog_name = shm::catalog_object_name(o_.prefix, o_.name);
  if (shm::Segment::exists(catalog_name) && owned_by_live_other(catalog_name))
    throw SlotError("slot '" + o_.name + "': /" + catalog_name + " belongs to live pid " +
                    std::to_string(*owner_of(catalog_name)) + " (another meshdockd with prefix '" +
                    o_.prefix + "'?)");
  remove_data_objects(o_.prefix, o_.name);  // a dead daemon's, if any
  try {
    control_ = shm::Segment::create(control_name, shm::control_block_size(o_.num_slots), o_.mode,
                                    /*replace=*/true);
    cb_.emplace(shm::ControlBlockView::initialize(control_.data(), control_.size(), o_.num_slots));
    shm::CatalogParams p;
    p.num_slots = o_.num_slots;
    p.page_size = o_.page_size;
    p.lease_capacity = o_.lease_capacity;
    p.daemon_pid = ::getpid();
    p.device_type = backend_.device().type;
    p.device_id = backend_.device().id;
    catalog_ = shm::Segment::create(catalog_name, shm::catalog_size(o_.num_slots, o_.page_size),
                                    o_.mode, /*replace=*/true);
    cat_.emplace(shm::CatalogView::initialize(catalog_.data(), catalog_.size(), p));
  } catch (const shm::ProtocolError& e) {
    throw SlotError("slot '" + o_.name + "': " + e.what());
  } catch (const std::exception& e) {
    throw SlotError("slot '" + o_.name + "': cannot create its segments: " + e.what());
  }
  cat_->beat(shm::monotonic_ns());
  buffers_.resize(o_.num_slots);
  buffer_frame_.assign(o_.num_slots, 0);
  buffer_version_.assign(o_.num_slots, 0);
}

Slot::~Slot() {
  std::lock_guard lock(m_);
  if (cb_) cb_->set_shutdown(true);
  if (cat_) shm::futex_wake_all(cat_->futex_word());  // sleepers see the flag now
  // Segment destructors unlink control and catalog; buffer destructors free the data.
}

std::string Slot::control_object() const {
  return shm::control_object_name(o_.prefix, o_.name);
}
std::string Slot::catalog_object() const {
  return shm::catalog_object_name(o_.prefix, o_.name);
}

std::uint32_t Slot::write_idx() const {
  return cb_->write_idx();
}
std::uint64_t Slot::version() const {
  std::lock_guard lock(m_);
  return version_;
}
std::uint64_t Slot::data_size() const {
  std::lock_guard lock(m_);
  return data_size_;
}

std::uint64_t Slot::bytes() const {
  std::lock_guard lock(m_);
  std::uint64_t n = 0;
  for (const auto& b : buffers_)
    if (b) n += b->size();
  for (const auto& r : retired_) n += r.buffer->size();
  return n;
}

std::uint32_t Slot::lease_count() const {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i)
    n += static_cast<std::uint32_t>(cat_->page(i).leases().size());
  return n;
}

std::string Slot::newest_manifest() const {
  const auto w = cb_->write_idx();
  if (w == 0) return {};
  return cat_->page((w - 1) % o_.num_slots).read().manifest;
}

bool Slot::leased(std::uint32_t slot) const {
  return !cat_->page(slot).leases().empty();
}

Published Slot::publish(const payload::DevicePayload& p) {
  const Layout layout = plan_layout(p);
  const std::string manifest = shm::encode_manifest(layout.manifest);
  std::lock_guard lock(m_);
  const std::uint32_t i = cb_->next_slot();
  auto page = cat_->page(i);
  if (manifest.size() > page.manifest_capacity())
    throw SlotError("slot '" + o_.name + "': the manifest is " + std::to_string(manifest.size()) +
                    " bytes; a catalog page holds " + std::to_string(page.manifest_capacity()));
  // From here no consumer can take a new lease on slot i's frame (the page is odd; see
  // PageView::begin_write); the leases already taken are what we wait for.
  const auto seq = page.begin_write();
  struct Abort {
    shm::PageView& page;
    std::uint64_t seq;
    bool done = false;
    ~Abort() {
      if (!done) page.abort_write(seq);
    }
  } abort{page, seq};
  // A consumer still reading slot i: wait a bounded time, then give the slot a new buffer.
  const auto deadline = std::chrono::steady_clock::now() + o_.lease_wait;
  while (buffers_[i] && leased(i) && std::chrono::steady_clock::now() < deadline) {
    page.reclaim_dead_leases(shm::pid_alive);
    if (!leased(i)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool still_leased = buffers_[i] && leased(i);
  const bool fresh = still_leased || !buffers_[i] || buffers_[i]->size() < layout.total;
  if (fresh) {
    // Allocate first: if that fails, slot i keeps the buffer it had.
    const auto v = version_ + 1;
    std::unique_ptr<backend::SlotBuffer> buffer;
    try {
      buffer = backend_.allocate(shm::data_object_name(o_.prefix, o_.name, i, v), layout.total);
    } catch (const backend::BackendError& e) {
      throw SlotError("slot '" + o_.name + "': " + e.what());
    }
    if (still_leased) retired_.push_back({i, buffer_frame_[i], std::move(buffers_[i])});
    buffers_[i] = std::move(buffer);
    version_ = v;
    buffer_version_[i] = v;
  }
  backend_.upload(*buffers_[i], layout.placements);
  if (fresh) {
    cb_->set_mem_handle(i, buffers_[i]->mem_handle());
    cb_->set_event_handle(i, buffers_[i]->event_handle());
    cb_->set_version(version_);
  }
  if (o_.pause_mid_write.count()) std::this_thread::sleep_for(o_.pause_mid_write);
  const std::uint32_t frame = cb_->write_idx() + 1;
  // The page names the version of *this* slot's buffer (its data segment's name), which is
  // older than version_ when another slot's buffer was replaced since.
  page.finish_write(seq, frame, layout.total, buffer_version_[i], manifest);
  abort.done = true;
  buffer_frame_[i] = frame;
  data_size_ = layout.total;
  cb_->set_metadata(shm::BufferMetadata::flat_bytes(layout.total));
  cb_->set_timestamp(shm::monotonic_seconds());
  cb_->set_shutdown(false);
  cb_->publish_write_idx(frame);
  cat_->publish_futex(frame);
  cat_->beat(shm::monotonic_ns());
  free_retired();
  return {frame, i, layout.total, buffer_version_[i]};
}

void Slot::free_retired() {
  std::erase_if(retired_, [&](const Retired& r) {
    for (const auto& l : cat_->page(r.slot).leases())
      if (l.frame <= r.last_frame) return false;
    return true;
  });
}

std::size_t Slot::maintain(std::uint64_t now_ns) {
  std::lock_guard lock(m_);
  cat_->beat(now_ns);
  cb_->set_shutdown(false);  // reasserted while alive (DESIGN.md)
  std::size_t freed = 0;
  for (std::uint32_t i = 0; i < o_.num_slots; ++i)
    freed += cat_->page(i).reclaim_dead_leases(shm::pid_alive);
  free_retired();
  return freed;
}

std::vector<std::string> Slot::remove_stale(const std::string& prefix) {
  shm::validate_prefix(prefix);
  std::vector<std::string> removed;
  std::error_code ec;
  const std::string suffix(shm::kCatalogSuffix);
  for (const auto& e : std::filesystem::directory_iterator(kShmDir, ec)) {
    const auto file = e.path().filename().string();
    if (!file.starts_with(prefix) || !file.ends_with(suffix)) continue;
    const auto name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    try {
      shm::validate_name(name);
    } catch (const shm::ProtocolError&) {
      continue;  // not one of ours
    }
    const auto pid = owner_of(file);
    if (pid && shm::pid_alive(*pid)) continue;
    remove_data_objects(prefix, name);
    shm::Segment::remove(shm::control_object_name(prefix, name));
    shm::Segment::remove(file);
    removed.push_back(name);
  }
  return removed;
}

}  // namespace meshdock::slots
