#include "daemon/service/registry.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "daemon/backend/device_probe.hpp"
#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "daemon/slots/layout.hpp"

namespace meshdock::service {

namespace {

// A size in a message: whole MiB as "6 MiB", other sizes from a MiB with one decimal
// ("1.5 MiB"), below a MiB in KiB ("48.2 KiB"), below a KiB in bytes; never "0 MiB" for a
// budget of a few KiB.
std::string size_text(std::uint64_t bytes) {
  constexpr std::uint64_t kMiB = 1 << 20;
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes < 1024) return std::to_string(bytes) + " B";
  char out[32];
  const bool big = bytes >= kMiB;
  std::snprintf(out, sizeof out, big ? "%.1f MiB" : "%.1f KiB",
                static_cast<double>(bytes) / (big ? kMiB : 1024));
  return out;
}

struct FileStamp {
  std::int64_t mtime_ns = 0;
  std::uint64_t size = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const struct stat& st) {
  return {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::uint64_t>(st.st_size)};
}

// The payload of `m` with the reader's notes first: what a client and every consumer see of a
// load (SlotInfo.notes, the frames' manifests) says what the reader converted or skipped too,
// not only what the payload cast or dropped.
payload::DevicePayload payload_of(const mesh::Mesh& m, const payload::Options& options,
                                  const payload::DevicePayload* previous = nullptr) {
  auto p = payload::build_payload(m, options, previous);
  p.notes.insert(p.notes.begin(), m.notes.begin(), m.notes.end());
  return p;
}

// The refusal of a call naming a mesh that is not loaded. A first load still running has taken
// the name, its mesh not there yet: "no mesh named" would read as if the load had been lost.
[[noreturn]] void absent(const std::string& raw, bool loading) {
  // Any caller's name, valid or not, is echoed to that caller's terminal: escaped.
  const std::string name = mesh::terminal_safe(raw);
  if (loading)
    throw ServiceError(Status::kFailedPrecondition,
                       "'" + name + "' is being loaded; it can be described, published to, " +
                           "exported or unloaded once its load is done (meshdockctl watch " + name +
                           " says when)");
  throw ServiceError(Status::kNotFound, "no mesh named '" + name + "'");
}

// A name a new slot may have: valid, and none of another slot's objects (names.hpp).
void check_slot_name(const std::string& name) {
  try {
    shm::validate_name(name);
  } catch (const shm::ProtocolError& e) {
    throw ServiceError(Status::kInvalidArgument, e.what());
  }
  if (auto problem = shm::slot_name_collision(name); !problem.empty())
    throw ServiceError(Status::kInvalidArgument, problem);
}

// A Roots refusal as the status the client gets.
[[noreturn]] void refuse(const RootsError& e) {
  using K = RootsError::Kind;
  switch (e.kind()) {
    case K::kOutside:
    case K::kDenied:
      throw ServiceError(Status::kPermissionDenied, e.what());
    case K::kNotFound:
      throw ServiceError(Status::kNotFound, e.what());
    case K::kNotRegular:
    case K::kInvalid:
      throw ServiceError(Status::kInvalidArgument, e.what());
    case K::kIo:
      break;
  }
  throw ServiceError(Status::kFailedPrecondition, e.what());
}

double now_seconds() {
  return shm::monotonic_seconds();
}

// "upload 46.2 MiB in 3.912 ms (12.37 GB/s)": a load's copy into its slot buffer, as measured
// by the slot (scripts/gpu-check compares it with a plain pinned copy of the same bytes).
std::string upload_text(std::uint64_t bytes, double seconds) {
  char s[96];
  std::snprintf(s, sizeof s, "upload %.1f MiB in %.3f ms (%.2f GB/s)",
                static_cast<double>(bytes) / (1 << 20), seconds * 1e3,
                seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
  return s;
}

[[noreturn]] void refuse_tensor_over_mesh(const std::string& name) {
  throw ServiceError(Status::kInvalidArgument,
                     "tensor: '" + name +
                         "' holds a mesh; publish a tensor under a name of its own (or unload "
                         "the mesh first)");
}

// "(512, 512, 4)"
std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// "float32", "uint8", "bfloat16", "bool": numpy's names of the DLPack scalar types.
std::string dtype_text(const mesh::DType& d) {
  const char* kind = d.code == 0   ? "int"
                     : d.code == 1 ? "uint"
                     : d.code == 2 ? "float"
                     : d.code == 4 ? "bfloat"
                     : d.code == 6 ? "bool"
                                   : "?";
  return d.code == 6 ? std::string(kind) : kind + std::to_string(d.bits);
}

// While a reader parses, a thread of its own samples how far it got (the reader only stores an
// offset now and then) and reports it as READ progress, so the bar moves through a big file
// and a client slow to take its messages never slows the parse. It also passes the client's
// cancel on to the reader. Stops (and joins) when it goes out of scope.
class ReadReporter {
 public:
  static constexpr auto kPeriod = std::chrono::milliseconds(50);

  ReadReporter(mesh::ReadProgress& progress, std::uint64_t size, const Progress& report,
               const Cancelled& cancelled)
      : thread_([&progress, size, &report, &cancelled](std::stop_token stop) {
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          std::uint64_t shown = 0;
          while (!cv.wait_for(lock, stop, kPeriod, [&] { return stop.stop_requested(); })) {
            if (cancelled && cancelled()) progress.cancel();
            const auto done = std::min(progress.bytes(), size);
            if (done <= shown) continue;
            shown = done;
            report(Phase::kRead, done, size, megabytes(done) + " of " + megabytes(size));
          }
        }) {}

 private:
  static std::string megabytes(std::uint64_t bytes) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return s;
  }
  std::jthread thread_;
};

}  // namespace

struct Registry::Entry {
  std::mutex m;  // one publish / export / swap at a time per mesh
  LoadRequest request;
  std::string path, format, device_name;
  mesh::Mesh mesh;
  payload::DevicePayload payload;
  std::unique_ptr<slots::Slot> slot;
  backend::Backend* backend = nullptr;
  double load_seconds = 0;
  FileStamp stamp;
  dev_t source_dev = 0;  // the file read (fstat of the fd that was read): export never replaces it
  ino_t source_ino = 0;
  // Fields published since the load ("point_data/T", "cell_data/T/0") -> the frame of the last
  // publish: a reload serves the file's arrays, and says which of these it replaced or dropped.
  std::map<std::string, std::uint32_t> published;
};

namespace {

// The notes of a reload onto `fresh` (the file read again) for the fields published into the
// old entry: the file's arrays win, so each published value is either replaced by the file's
// array of that name or gone.
std::vector<std::string> reload_notes(const std::map<std::string, std::uint32_t>& published,
                                      const mesh::Mesh& fresh) {
  std::vector<std::string> notes;
  for (const auto& [field, frame] : published) {
    bool in_file = false;
    if (field.rfind("point_data/", 0) == 0) {
      in_file = fresh.point_data.count(field.substr(11)) != 0;
    } else {  // cell_data/NAME/BLOCK
      const auto rest = field.substr(10);
      const auto slash = rest.rfind('/');
      const auto it = fresh.cell_data.find(rest.substr(0, slash));
      in_file =
          it != fresh.cell_data.end() && std::stoul(rest.substr(slash + 1)) < it->second.size();
    }
    notes.push_back(field + ": the value published at frame " + std::to_string(frame) +
                    (in_file ? " is replaced by the file's (a reload serves the file's arrays)"
                             : " is gone: the file has no such array (a reload serves the "
                               "file's arrays; publish it again)"));
  }
  return notes;
}

std::shared_ptr<const Roots> export_roots_of(const Config& c,
                                             const std::shared_ptr<const Roots>& read) {
  if (!c.export_roots) return read;
  return std::make_shared<const Roots>(*c.export_roots, Roots::Resolver::automatic,
                                       Roots::Use::write_only);
}

// The status of an export the file system refused, by its errno (0: the data cannot be written
// in the format, which is the request's).
Status write_status(int sys_errno) {
  switch (sys_errno) {
    case 0:
      return Status::kInvalidArgument;
    case EACCES:
    case EPERM:
      return Status::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EMFILE:
    case ENFILE:
      return Status::kResourceExhausted;
    case EROFS:
    case ENOENT:
    case ENOTDIR:
      return Status::kFailedPrecondition;
    default:
      return Status::kInternal;
  }
}

}  // namespace

Registry::Registry(Config config, Logger& log, DeviceBackendMaker make_device_backend)
    : c_(std::move(config)),
      log_(log),
      roots_(std::make_shared<const Roots>(c_.roots)),
      export_roots_(export_roots_of(c_, roots_)),
      consumers_(std::make_shared<slots::ConsumerRegistry>()),
      make_device_backend_(std::move(make_device_backend)) {
  if (roots_->walks())
    log_.warn(
        "this kernel has no openat2 (Linux 5.6+): files under the roots are opened "
        "component by component with O_NOFOLLOW, so no symlink under a root is followed");
  host_ = backend::make_host_backend(c_.shm_mode);
  for (const auto& name : slots::Slot::remove_stale(c_.prefix))
    log_.info("removed stale segments of '" + name + "' (their daemon is gone)");
}

Registry::~Registry() {
  clear();
}

Registry::Unmark::~Unmark() {
  {
    std::lock_guard lock(reg.m_);
    reg.loading_.erase(name);
    reg.creating_tensor_.erase(name);
  }
  reg.created_.notify_all();
}

void Registry::make_slot(Entry& e, const std::string& name, std::uint32_t num_slots) {
  slots::SlotOptions so;
  {
    std::lock_guard lock(m_);
    so.prefix = c_.prefix;
    so.mode = c_.shm_mode;
    so.lease_wait = std::chrono::milliseconds(c_.lease_wait_ms);
    so.memory_budget = c_.device_memory_budget;
    so.replaced_grace = std::chrono::milliseconds(c_.cuda_link_grace_ms);  // device slots only
    so.copy_unchanged =
        c_.publish_copy == "all" || (c_.publish_copy == "auto" && e.backend->consumers_can_write());
  }
  so.name = name;
  so.num_slots = num_slots;
  so.consumers = consumers_;
  e.slot = std::make_unique<slots::Slot>(so, *e.backend);
  for (const auto& n : e.slot->take_notes()) log_.warn(n);
}

void Registry::end_slot(std::unique_ptr<slots::Slot>& slot, const std::string& name) {
  if (!slot) return;
  // A device buffer a consumer has open outlives the slot until it is closed (graveyard.hpp).
  auto open = slot->take_open_imports();
  if (!open.empty())
    log_.info("'" + name + "': " + std::to_string(open.size()) +
              " device buffers of its old slot a consumer has open are kept until it closes "
              "them (at most " +
              std::to_string(slots::Graveyard::kGrace.count()) + " s)");
  const auto now = shm::monotonic_ns();
  std::chrono::milliseconds grace;
  {
    std::lock_guard lock(m_);
    grace = std::chrono::milliseconds(c_.cuda_link_grace_ms);
  }
  graveyard_.bury(name, std::move(open), now);
  // The rest of a device slot's buffers wait out cuda-link's grace: its consumers report
  // nothing and may be reading one until they next poll and see the shutdown byte (cuda-link's
  // own sender waits 100 ms after setting it). The memory budget may take them sooner.
  graveyard_.bury(name, slot->take_unannounced(), now, grace);
  slot.reset();
}

void Registry::tend_graveyard(std::uint64_t now_ns, bool end_quiet) {
  for (const auto& n : graveyard_.tend(now_ns, end_quiet)) log_.warn(n);
}

void Registry::clear() {
  std::map<std::string, std::shared_ptr<Entry>> gone;
  {
    std::lock_guard lock(m_);
    gone.swap(entries_);
  }
  for (auto& [name, e] : gone) {
    std::lock_guard lock(e->m);
    e->slot.reset();
  }
}

void Registry::announce_shutdown(const std::string& why) {
  events_.publish({Event::kShutdown, "", 0, why, now_seconds()});
}

std::string Registry::lost_device() {
  std::lock_guard lock(m_);
  for (const auto& [id, b] : cuda_)
    if (auto why = b->lost(); !why.empty()) return "cuda:" + std::to_string(id) + ": " + why;
  return {};
}

ServiceError Registry::device_failure(backend::Backend& b, const std::string& device,
                                      Status otherwise, const std::string& what) {
  if (const auto why = b.lost(); !why.empty())
    return ServiceError(Status::kUnavailable, what + " (" + device + " is lost: " + why +
                                                  "; meshdockd stops so that it is restarted)");
  return ServiceError(otherwise, what);
}

void Registry::reconfigure(const Config& c) {
  auto roots = std::make_shared<const Roots>(c.roots);  // ConfigError: nothing changes
  auto export_roots = export_roots_of(c, roots);
  std::lock_guard lock(m_);
  roots_ = std::move(roots);
  export_roots_ = std::move(export_roots);
  if (c.prefix != c_.prefix)
    log_.warn("prefix change '" + c_.prefix + "' -> '" + c.prefix +
              "' applies after a restart; loaded meshes keep their segments");
  const auto prefix = c_.prefix;
  const auto shm_mode = c_.shm_mode;
  c_ = c;
  c_.prefix = prefix;
  c_.shm_mode = shm_mode;
  log_.set_level(c_.log_level);
}

std::shared_ptr<const Roots> Registry::roots_for(const std::string& path, bool for_export) const {
  if (path.find('\0') != std::string::npos)
    throw ServiceError(Status::kInvalidArgument,
                       "path '" + path.substr(0, path.find('\0')) +
                           "\\0...' holds a NUL byte (the file system would read less of it)");
  if (path.size() >= PATH_MAX)
    throw ServiceError(Status::kInvalidArgument, "path is " + std::to_string(path.size()) +
                                                     " bytes, over PATH_MAX (" +
                                                     std::to_string(PATH_MAX) + ")");
  if (path.empty() || path.front() != '/')
    throw ServiceError(Status::kInvalidArgument,
                       "path '" + path + "' is not absolute (meshdockctl makes it so)");
  std::lock_guard lock(m_);
  if (for_export) {
    if (export_roots_->empty())
      throw ServiceError(Status::kPermissionDenied,
                         c_.export_roots ? std::string("export is disabled: \"export_roots\" is "
                                                       "an empty list in meshdockd's config")
                                         : std::string("no roots are configured: meshdockd "
                                                       "exports nothing until started with "
                                                       "--export-root DIR or --root DIR"));
    return export_roots_;
  }
  if (roots_->empty())
    throw ServiceError(Status::kPermissionDenied,
                       "no roots are configured: meshdockd reads nothing until started with "
                       "--root DIR (or \"roots\" in its config)");
  return roots_;
}

backend::Backend& Registry::backend_for_device(const std::string& requested, std::string& chosen) {
  std::lock_guard lock(m_);
  const std::string spec = requested.empty() ? c_.device : requested;
  if (spec == "cpu") {
    chosen = "cpu";
    return *host_;
  }
  int id = 0;
  if (spec == "auto") {
    if (!backend::has_cuda_device()) {
      chosen = "cpu";
      return *host_;
    }
  } else if (spec.starts_with("cuda:")) {
    try {
      std::size_t used = 0;
      id = std::stoi(spec.substr(5), &used);
      if (used != spec.size() - 5 || id < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw ServiceError(Status::kInvalidArgument, "device '" + spec + "' is not cuda:N");
    }
  } else {
    throw ServiceError(Status::kInvalidArgument,
                       "device '" + spec + "' is not auto, cpu or cuda:N");
  }
  chosen = "cuda:" + std::to_string(id);
  auto& b = cuda_[id];
  if (!b) {
    try {
      b = make_device_backend_(id);
      if (c_.failpoint.phase == "upload_delay") b->delay_uploads(c_.failpoint.pause);
    } catch (const backend::BackendError& e) {
      cuda_.erase(id);
      // cudart's own words mislead here ("CUDA driver version is insufficient" when there is
      // no driver at all): the probe tells the cases apart, as --probe-device prints them.
      const auto report = backend::probe_devices();
      std::string why = e.what();
      if (report.cuda_status != "ok")
        why = chosen + ": " + report.cuda_status;
      else if (static_cast<std::size_t>(id) >= report.devices.size())
        why = chosen + ": this host has " + std::to_string(report.devices.size()) + " CUDA device" +
              (report.devices.size() == 1 ? "" : "s") + " (" + e.what() + ")";
      throw ServiceError(Status::kFailedPrecondition,
                         why + " (meshdockd --probe-device lists what answers)");
    }
  }
  return *b;
}

std::string Registry::backend_for(const std::string& spec) const {
  const std::string s = spec.empty() ? c_.device : spec;
  if (s == "cpu" || (s == "auto" && !backend::has_cuda_device())) return "host";
  return "cuda";
}

Reservation Registry::reserve(std::uint64_t add, const std::string& name) {
  // Buffers of unloaded slots whose consumers have closed them since the last tick count no
  // more: a load right after its consumers let go of an unloaded mesh is not refused for them.
  tend_graveyard(shm::monotonic_ns());
  // Every buffer alive counts (newest, older ring slots, retired ones still leased, those of
  // unloaded slots a consumer has open or within cuda-link's grace), and so does every
  // reservation of a load or publish that has not made its buffers yet. Called under m_.
  std::uint64_t used = 0;
  const auto over = [&] {
    used = host_->memory_used();
    for (const auto& [id, b] : cuda_) used += b->memory_used();
    return c_.device_memory_budget && used + reserved_ + add > c_.device_memory_budget;
  };
  {
    std::lock_guard lock(m_);
    if (!over()) {
      reserved_ += add;
      return Reservation(this, add, &Registry::reserved_);
    }
  }
  // The budget outranks cuda-link's grace: unloaded buffers kept only for it go now (outside
  // m_, as the tick frees them).
  tend_graveyard(shm::monotonic_ns(), /*end_quiet=*/true);
  std::lock_guard lock(m_);
  if (over()) {
    const auto unloaded = graveyard_.bytes();
    throw ServiceError(
        Status::kResourceExhausted,
        "'" + name + "' needs up to " + size_text(add) + " of slot buffers; " + size_text(used) +
            " of the " + size_text(c_.device_memory_budget) + " budget are in use" +
            (unloaded
                 ? " (" + size_text(unloaded) +
                       " by unloaded meshes whose consumers still have them open: freed "
                       "when they let go, at most " +
                       std::to_string(slots::Graveyard::kGrace.count()) + " s after the unload)"
                 : std::string()) +
            " and " + size_text(reserved_) +
            " reserved by loads and publishes under way (device_memory_budget)");
  }
  reserved_ += add;
  return Reservation(this, add, &Registry::reserved_);
}

Reservation Registry::reserve_incoming(std::uint64_t bytes, const std::string& field) {
  std::lock_guard lock(m_);
  const auto limit = decoded_size_limit(c_);
  if (incoming_ + bytes > limit)
    throw ServiceError(Status::kResourceExhausted,
                       field + ": " + size_text(bytes) +
                           " to take in, while publishes under way hold " + size_text(incoming_) +
                           " of the " + size_text(limit) +
                           " they may hold together (max_decoded_size); try again");
  incoming_ += bytes;
  return Reservation(this, bytes, &Registry::incoming_);
}

void Reservation::release() {
  if (!reg_) return;
  std::lock_guard lock(reg_->m_);
  reg_->*of_ -= bytes_;
  reg_ = nullptr;
}

std::shared_ptr<Registry::Entry> Registry::serving(const std::string& name,
                                                   std::unique_lock<std::mutex>& lock,
                                                   bool may_wait) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(may_wait ? 30 : 0);
  for (int tries = 0; tries < 8; ++tries) {
    auto e = find(name);  // NOT_FOUND once unloaded
    lock = std::unique_lock(e->m);
    if (e->slot) return e;
    lock.unlock();
    // A reload took the slot for its new entry (or ended it, onto another device), which
    // serves the name once the copy is done: wait for that (or for the reload to fail and give
    // the slot back) instead of refusing the publish as "has no slot".
    std::unique_lock reg(m_);
    created_.wait_until(reg, deadline, [&] {
      auto it = entries_.find(name);
      return it == entries_.end() || it->second != e || !loading_.count(name);
    });
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  throw ServiceError(Status::kFailedPrecondition,
                     "'" + name +
                         "' is being reloaded (its slot passes to the new mesh); publish again "
                         "once the reload is done (meshdockctl watch " +
                         name + " says RELOADED)");
}

std::shared_ptr<Registry::Entry> Registry::find(const std::string& name) const {
  std::lock_guard lock(m_);
  auto it = entries_.find(name);
  if (it == entries_.end()) absent(name, loading_.count(name) > 0);
  return it->second;
}

MeshInfo Registry::load(const LoadRequest& r, const Progress& report, const Cancelled& cancelled) {
  // A name no slot can have is refused with no event: no watcher could have named it.
  check_slot_name(r.name);
  // Every other failure of a load or reload of the name is a LOAD_FAILED with the error's
  // message, whatever phase it failed in (a file gone or over max_file_size, a device refused,
  // a parse error, a cancelled load), so a watcher waiting for LOADED or RELOADED is never left
  // waiting. Not when the name was taken (loaded and no replace, or another load under way):
  // that refusal changed nothing, and the other load's watchers get its own event. Each event
  // goes out once the name has left loading_, so a watcher told may unload it at once.
  bool taken = false;
  Event done{Event::kLoaded, r.name, 0, "", 0, 0};
  try {
    auto info = load_named(r, report, cancelled, taken, done);
    events_.publish(done);
    return info;
  } catch (const std::exception& err) {
    if (!taken) events_.publish({Event::kLoadFailed, r.name, 0, err.what(), now_seconds()});
    throw;
  }
}

MeshInfo Registry::load_named(const LoadRequest& r, const Progress& report,
                              const Cancelled& cancelled, bool& taken, Event& done) {
  // Reports a phase, then sleeps there when a failpoint names it (fault tests; see Failpoint),
  // then stops if the client has gone: every phase up to kCopy comes before any segment exists.
  const bool failpoint = !c_.failpoint.phase.empty() && loads_begun_++ >= c_.failpoint.after;
  static const std::pair<Phase, const char*> kNames[] = {{Phase::kOpen, "open"},
                                                         {Phase::kRead, "read"},
                                                         {Phase::kBuildPayload, "build_payload"},
                                                         {Phase::kCopy, "copy"}};
  const auto progress = [&](Phase p, std::uint64_t done, std::uint64_t total,
                            const std::string& message) {
    report(p, done, total, message);
    for (const auto& [phase, name] : kNames)
      if (failpoint && phase == p && c_.failpoint.phase == name)
        std::this_thread::sleep_for(c_.failpoint.pause);
    // From kPublish on the frame is out: the load completes whatever the client does.
    if (p > Phase::kCopy || !cancelled || !cancelled()) return;
    const char* at = "";
    for (const auto& [phase, name] : kNames)
      if (phase == p) at = name;
    throw ServiceError(Status::kCancelled, "load of '" + r.name + "' cancelled by its client " +
                                               "(gone or past its deadline) after the " + at +
                                               " phase; nothing was published");
  };
  if (r.num_slots > shm::kMaxSlots)
    throw ServiceError(Status::kInvalidArgument,
                       "num_slots " + std::to_string(r.num_slots) + " is not 1..10");
  // The one open of the file: under its root, never by name again; only this fd is read.
  RootFile file;
  std::shared_ptr<const Roots> roots;
  try {
    roots = roots_for(r.path);
    file = roots->open_for_read(r.path);
  } catch (const RootsError& err) {
    refuse(err);
  }
  const std::string& path = file.path;
  const auto size = static_cast<std::uint64_t>(file.st.st_size);
  std::uint32_t num_slots = r.num_slots;
  mesh::ReadOptions read_options;
  {
    std::lock_guard lock(m_);
    read_options.max_bytes = decoded_size_limit(c_);
    // The pieces a parallel XML file (.pvtu, .pvts, ...) names and the files an Abaqus .inp or
    // a Nastran deck includes: under the same roots, beside it.
    read_options.open_sibling =
        [roots, dir = path.substr(0, path.rfind('/') + 1)](const std::string& relative) {
          try {
            return std::move(roots->open_for_read(dir + relative).fd);
          } catch (const RootsError& err) {
            throw mesh::ReadError(err.what());
          }
        };
    // A DOLFIN mesh's x_<name>.xml mesh functions: the directory listed under the roots.
    read_options.list_siblings = [roots,
                                  dir = path.substr(0, std::max<std::size_t>(path.rfind('/'), 1))] {
      try {
        return roots->list_dir(dir);
      } catch (const RootsError& err) {
        throw mesh::ReadError(err.what());
      }
    };
    if (size > c_.max_file_size)
      throw ServiceError(Status::kResourceExhausted, path + " is " + size_text(size) +
                                                         ", over max_file_size (" +
                                                         size_text(c_.max_file_size) + ")");
    const bool exists = entries_.count(r.name) > 0;
    taken = (exists && !r.replace) || loading_.count(r.name);
    if (exists && !r.replace)
      throw ServiceError(
          Status::kAlreadyExists,
          "a mesh or tensor named '" + r.name +
              "' is loaded; reload it, or load with replace (meshdockctl load --replace, "
              "Client.load(replace=True))");
    check_claim(r.name, exists);
    loading_.insert(r.name);
    if (!num_slots) num_slots = c_.num_slots;
  }
  const Unmark unmark{*this, r.name};

  const auto t0 = std::chrono::steady_clock::now();
  progress(Phase::kOpen, 0, size, path);
  auto e = std::make_shared<Entry>();
  e->request = r;
  e->path = path;
  e->stamp = stamp_of(file.st);
  e->source_dev = file.st.st_dev;
  e->source_ino = file.st.st_ino;
  e->format = r.format.empty() ? mesh::format_of(path) : r.format;
  mesh::ReadProgress read_progress;
  try {
    const ReadReporter reporter(read_progress, size, report, cancelled);
    e->mesh =
        mesh::read_mesh(mesh::InFile{file.fd.get(), path, &read_progress}, r.format, read_options);
  } catch (const mesh::SizeLimitError& err) {
    throw ServiceError(Status::kResourceExhausted, err.what());
  } catch (const mesh::MeshError& err) {
    if (read_progress.cancelled())  // the reader stopped because the client went
      throw ServiceError(Status::kCancelled, "load of '" + r.name + "' cancelled by its client " +
                                                 "(gone or past its deadline) while reading " +
                                                 path + "; nothing was published");
    throw ServiceError(Status::kInvalidArgument, err.what());
  } catch (const std::bad_alloc&) {
    throw ServiceError(Status::kResourceExhausted, path + ": out of memory while reading");
  }
  progress(Phase::kRead, size, size,
           std::to_string(e->mesh.num_points()) + " points, " +
               std::to_string(e->mesh.num_cells()) + " cells");
  try {
    e->payload = payload_of(e->mesh, r.options);
  } catch (const payload::PayloadError& err) {
    throw ServiceError(Status::kInvalidArgument, r.name + ": " + err.what());
  }
  e->backend = &backend_for_device(r.device, e->device_name);
  e->payload.device = e->backend->device();
  progress(
      Phase::kBuildPayload, size, size,
      "device " + (r.device.empty() ? std::string("default") : r.device) + " -> " + e->device_name);
  const auto planned = slots::plan_layout(e->payload);
  const auto total = planned.total;

  std::shared_ptr<Entry> old;
  {
    std::lock_guard lock(m_);
    if (auto it = entries_.find(r.name); it != entries_.end()) old = it->second;
  }
  std::uint64_t old_bytes = 0;
  if (old) {
    std::lock_guard lock(old->m);
    old_bytes = old->slot ? old->slot->bytes() : 0;
  }
  auto reservation = reserve(
      planned.buffer * num_slots > old_bytes ? planned.buffer * num_slots - old_bytes : 0, r.name);
  progress(Phase::kCopy, 0, total, e->device_name);
  bool reused = false;  // e->slot is old's: give it back if publishing fails
  auto give_back = [&] {
    if (reused && e->slot) {
      std::lock_guard lock(old->m);
      old->slot = std::move(e->slot);
    } else if (old) {
      std::lock_guard lock(m_);
      entries_.erase(r.name);  // its segments went with the failed swap to a new slot
    }
  };
  try {
    if (old) {
      std::lock_guard lock(old->m);
      // The fields published into the old entry, said (never silently lost) here, where its
      // slot goes: a publish during the read or the copy phase is among them (before, the
      // notes were taken before the copy phase and missed it, or named an older frame).
      for (auto& n : reload_notes(old->published, e->mesh))
        e->payload.notes.push_back(std::move(n));
      reused = old->backend == e->backend && old->slot && old->slot->num_slots() == num_slots;
      if (reused) e->slot = std::move(old->slot);
      end_slot(old->slot, r.name);  // before a new Slot takes the same segment names
    }
    if (!e->slot) make_slot(*e, r.name, num_slots);
    e->slot->set_pause_mid_write(failpoint && c_.failpoint.phase == "mid_write"
                                     ? c_.failpoint.pause
                                     : std::chrono::milliseconds(0));
    // The last look at the client: a frame that goes out is the load done, whatever it does.
    const auto pub = e->slot->publish(e->payload, [&] { return cancelled && cancelled(); });
    reservation.release();  // the new buffers count themselves now
    progress(Phase::kPublish, total, total,
             "frame " + std::to_string(pub.frame) + ", " +
                 upload_text(pub.copied_bytes, pub.upload_seconds));
  } catch (const slots::SlotAbandoned&) {
    give_back();
    throw ServiceError(Status::kCancelled, "load of '" + r.name + "' cancelled by its client " +
                                               "(gone or past its deadline) during the copy " +
                                               "phase; nothing was published");
  } catch (const slots::SlotError& err) {
    give_back();
    throw device_failure(*e->backend, e->device_name, Status::kFailedPrecondition, err.what());
  } catch (const backend::BackendError& err) {
    give_back();
    throw device_failure(*e->backend, e->device_name, Status::kResourceExhausted,
                         r.name + ": " + err.what());
  }
  e->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard lock(m_);
    entries_[r.name] = e;
  }
  for (const auto& n : e->payload.notes) log_.info(r.name + ": " + n);
  log_.info((old ? "reloaded '" : "loaded '") + r.name + "' from " + path + " on " +
            e->device_name + " in " + std::to_string(e->load_seconds) + " s");
  done = {old ? Event::kReloaded : Event::kLoaded, r.name, e->slot->write_idx(), path,
          now_seconds()};
  auto info = info_of(*e);
  progress(Phase::kDone, total, total, "");
  return info;
}

MeshInfo Registry::reload(const std::string& name, const Progress& progress,
                          const Cancelled& cancelled) {
  auto e = find(name);
  LoadRequest r;
  {
    std::lock_guard lock(e->m);
    if (e->payload.tensor.valid())
      throw ServiceError(Status::kFailedPrecondition,
                         "'" + name + "' holds a published tensor, not a file: nothing to reload");
    r = e->request;
  }
  r.replace = true;
  return load(r, progress, cancelled);
}

void Registry::unload(const std::string& name) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard lock(m_);
    auto it = entries_.find(name);
    if (it == entries_.end()) absent(name, loading_.count(name) > 0);
    // A reload under way puts its new entry in entries_ when it is done, whatever happened to
    // the old one meanwhile: an unload now answered OK and UNLOADED, and the mesh was back a
    // moment later (in a fresh slot, or in the old one the reload had taken).
    if (loading_.count(name))
      throw ServiceError(Status::kFailedPrecondition,
                         "'" + mesh::terminal_safe(name) +
                             "' is being reloaded; unload it once the reload is done "
                             "(meshdockctl watch " +
                             mesh::terminal_safe(name) + " says RELOADED or LOAD_FAILED)");
    e = it->second;
    entries_.erase(it);
  }
  {
    std::lock_guard lock(e->m);
    end_slot(e->slot, name);
  }
  // The mesh's host arrays go with the entry; big ones would be kept for reuse by the next read
  // of the same size (mesh/allocator.cpp). After an unload nothing says one is coming: the
  // memory goes back to the system now.
  e.reset();
  mesh::release_host_cache();
  log_.info("unloaded '" + name + "'");
  events_.publish({Event::kUnloaded, name, 0, "", now_seconds()});
}

MeshInfo Registry::info_of(const Entry& e) const {
  MeshInfo i;
  i.name = e.request.name;
  i.path = e.path;
  i.format = e.format;
  i.device = e.payload.device;
  if (!e.payload.tensor.valid()) {  // a tensor's slot holds no mesh: 0 points, 0 cells
    i.num_points = static_cast<std::uint64_t>(e.mesh.num_points());
    // The slot's cells: the ragged blocks the payload dropped are not among them.
    for (const auto& blk : e.mesh.cells)
      if (!blk.ragged()) i.num_cells += static_cast<std::uint64_t>(blk.size());
  }
  i.cell_types = e.payload.cell_types;
  i.notes = e.payload.notes;
  i.dropped = e.payload.dropped;
  i.load_seconds = e.load_seconds;
  i.watch = e.request.watch;
  if (e.slot) {
    i.num_slots = e.slot->num_slots();
    i.write_idx = e.slot->write_idx();
    i.version = e.slot->version();
    i.data_size = e.slot->data_size();
    i.copied_bytes = e.slot->copied_bytes();
    i.kept_bytes = e.slot->kept_bytes();
    i.bytes = e.slot->bytes();
    i.leases = e.slot->lease_count();
    i.control_segment = "/" + e.slot->control_object();
    i.catalog_segment = "/" + e.slot->catalog_object();
  }
  return i;
}

std::vector<MeshInfo> Registry::list() const {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard lock(m_);
    for (const auto& [n, e] : entries_) all.push_back(e);
  }
  std::vector<MeshInfo> out;
  for (const auto& e : all) {
    std::lock_guard lock(e->m);
    out.push_back(info_of(*e));
  }
  return out;
}

std::pair<MeshInfo, std::string> Registry::describe(const std::string& name) const {
  auto e = find(name);
  std::lock_guard lock(e->m);
  return {info_of(*e), e->slot ? e->slot->newest_manifest() : std::string()};
}

namespace {

// "point_data/NAME" or "cell_data/NAME": the kind and NAME, or a ServiceError; `rows` must be
// the mesh's points, or the cells of `block`.
// A cell_data publish that carries the whole field: block 0 and one row per cell of every block
// (block order), on a mesh of several blocks. It is split into the blocks' arrays, so that a new
// field can be made on such a mesh and every block of one changes in one frame (per block, each
// publish is a frame, and a consumer sees frames with some blocks new and some old). When block
// 0 holds every cell the two readings are the same publish.
bool whole_field_rows(const mesh::Mesh& m, std::int64_t rows, std::uint32_t block) {
  return m.cells.size() > 1 && block == 0 && rows == m.num_cells() && rows != m.cells[0].size();
}

std::pair<std::string, std::string> check_field(const mesh::Mesh& m, const std::string& field,
                                                std::int64_t rows, std::uint32_t block) {
  const auto slash = field.find('/');
  const std::string kind = field.substr(0, slash);
  const std::string key = slash == std::string::npos ? "" : field.substr(slash + 1);
  if (key.empty() || (kind != "point_data" && kind != "cell_data"))
    throw ServiceError(Status::kInvalidArgument,
                       "field '" + field + "' is not point_data/NAME or cell_data/NAME");
  // NAME becomes part of array names ("cell_data/NAME/BLOCK"): a '/' would make them ambiguous.
  if (key.size() > 255 || key.find_first_of(std::string("/\0", 2)) != std::string::npos)
    throw ServiceError(Status::kInvalidArgument,
                       "field '" + field + "': NAME must be 1..255 bytes without '/' or NUL");
  if (kind == "point_data") {
    if (rows != m.num_points())
      throw ServiceError(Status::kInvalidArgument, field + ": " + std::to_string(rows) +
                                                       " rows for " +
                                                       std::to_string(m.num_points()) + " points");
    return {kind, key};
  }
  if (block >= m.cells.size())
    throw ServiceError(Status::kInvalidArgument, field + ": block " + std::to_string(block) +
                                                     " of " + std::to_string(m.cells.size()));
  // The whole field at once (whole_field_rows): every block's rows, in block order.
  if (whole_field_rows(m, rows, block)) return {kind, key};
  if (rows != m.cells[block].size())
    throw ServiceError(
        Status::kInvalidArgument,
        field + ": " + std::to_string(rows) + " rows for the " +
            std::to_string(m.cells[block].size()) + " cells of block " + std::to_string(block) +
            (m.cells.size() > 1 && block == 0
                 ? std::string(" (or the ") + std::to_string(m.num_cells()) + " cells of all " +
                       std::to_string(m.cells.size()) + " blocks, for the whole field)"
                 : std::string()));
  if (!m.cell_data.count(key) && m.cells.size() != 1)
    throw ServiceError(
        Status::kInvalidArgument,
        field + " does not exist; on a mesh of " + std::to_string(m.cells.size()) +
            " blocks a new cell_data field is published whole: " + std::to_string(m.num_cells()) +
            " rows (every block's cells, in block order), block 0");
  return {kind, key};
}

}  // namespace

void Registry::check_publish(const std::string& name, const std::string& field, std::int64_t rows,
                             std::uint32_t block, std::uint64_t bytes, bool may_wait) const {
  std::uint64_t limit = 0;
  {
    std::lock_guard lock(m_);
    limit = decoded_size_limit(c_);
  }
  {
    std::unique_lock<std::mutex> lock;
    const auto e = serving(name, lock, may_wait);
    refuse_field_of_tensor(*e, name, field);
    check_field(e->mesh, field, rows, block);
  }
  if (bytes > limit)
    throw ServiceError(Status::kResourceExhausted, field + ": " + std::to_string(bytes) +
                                                       " bytes are over max_decoded_size (" +
                                                       std::to_string(limit) + ")");
}

std::uint32_t Registry::publish_field(const std::string& name, const std::string& field,
                                      const mesh::Array& data, std::uint32_t block, bool may_wait) {
  std::unique_lock<std::mutex> lock;
  auto e = serving(name, lock, may_wait);
  refuse_field_of_tensor(*e, name, field);
  mesh::Mesh m = e->mesh;  // arrays shared; only the replaced one is new
  const auto [kind, key] = check_field(m, field, data.dim(0), block);
  const bool whole = kind == "cell_data" && whole_field_rows(m, data.dim(0), block);
  if (kind == "point_data") {
    m.point_data[key] = data;
  } else if (whole) {
    // One dtype and row shape in every block by construction: each is rows of `data`, shared
    // (a copy would double the field for as long as the mesh holds it).
    std::vector<mesh::Array> parts;
    std::size_t begin = 0;
    for (const auto& blk : m.cells) {
      const auto end = begin + static_cast<std::size_t>(blk.size());
      parts.push_back(mesh::rows_view(data, begin, end));
      begin = end;
    }
    m.cell_data[key] = std::move(parts);
  } else if (auto it = m.cell_data.find(key); it == m.cell_data.end()) {
    m.cell_data[key] = {data};
  } else {
    // One dtype and row shape in every block: the field is one array over all cells to every
    // writer (VTU, legacy VTK) and reader, and an Export would refuse the mesh later.
    const std::vector<std::int64_t> row(data.shape().begin() + 1, data.shape().end());
    for (std::size_t k = 0; k < it->second.size(); ++k) {
      const auto& other = it->second[k];
      if (k == block || !other.valid()) continue;
      const std::vector<std::int64_t> other_row(other.shape().begin() + 1, other.shape().end());
      if (other.dtype() == data.dtype() && other_row == row) break;
      throw ServiceError(Status::kInvalidArgument,
                         field + ": block " + std::to_string(block) + " is " +
                             dtype_text(data.dtype()) + " rows of shape " + shape_text(row) +
                             ", and block " + std::to_string(k) + " of the field is " +
                             dtype_text(other.dtype()) + " rows of shape " + shape_text(other_row) +
                             "; a cell_data field has one dtype and row shape in every block");
    }
    it->second[block] = data;
  }
  payload::DevicePayload p;
  try {
    p = payload_of(m, e->request.options, &e->payload);
  } catch (const payload::PayloadError& err) {
    throw ServiceError(Status::kInvalidArgument, field + ": " + err.what());
  }
  p.device = e->backend->device();
  const auto pub = publish_into(*e, p, name);
  e->mesh = std::move(m);
  e->payload = std::move(p);
  if (kind == "point_data")
    e->published[field] = pub.frame;
  else
    for (std::size_t b = whole ? 0 : block; b < (whole ? e->mesh.cells.size() : block + 1u); ++b)
      e->published[field + "/" + std::to_string(b)] = pub.frame;
  events_.publish({Event::kPublished, name, pub.frame, field, now_seconds()});
  return pub.frame;
}

slots::Published Registry::publish_into(Entry& e, const payload::DevicePayload& p,
                                        const std::string& name) {
  // The budget before the buffers: the ring grows to the new size in every slot, and a leased
  // slot gets a fresh buffer while the old one lives on (retired) until its lease goes.
  std::uint64_t total = 0;
  try {
    total = slots::plan_layout(p).buffer;  // what each ring slot's buffer is made of
  } catch (const payload::PayloadError& err) {
    throw ServiceError(Status::kInvalidArgument, name + ": " + err.what());
  }
  const auto ring = total * e.slot->num_slots(), have = e.slot->bytes();
  auto reservation = reserve(
      std::max<std::uint64_t>(ring > have ? ring - have : 0, e.slot->lease_count() ? total : 0),
      name);
  try {
    return e.slot->publish(p);
  } catch (const slots::SlotError& err) {
    throw device_failure(*e.backend, e.device_name, Status::kFailedPrecondition, err.what());
  } catch (const backend::BackendError& err) {
    throw device_failure(*e.backend, e.device_name, Status::kResourceExhausted,
                         name + ": " + err.what());
  }
}

void Registry::check_claim(const std::string& name, bool exists) const {
  if (loading_.count(name))
    throw ServiceError(Status::kFailedPrecondition, "'" + name + "' is being loaded already");
  if (!exists && entries_.size() + loading_.size() >= c_.max_meshes)
    throw ServiceError(Status::kResourceExhausted, "every slot max_meshes allows (" +
                                                       std::to_string(c_.max_meshes) +
                                                       ") holds a mesh or tensor");
}

void Registry::refuse_field_of_tensor(const Entry& e, const std::string& name,
                                      const std::string& field) {
  if (e.payload.tensor.valid())
    throw ServiceError(Status::kInvalidArgument,
                       field + ": '" + name +
                           "' holds a tensor (a single-array publish), not a mesh: publish to it "
                           "with field 'tensor'");
}

void Registry::check_publish_tensor(const std::string& name, const mesh::DType& dtype,
                                    const std::vector<std::int64_t>& shape, std::uint64_t bytes,
                                    const std::string& device, std::uint32_t num_slots) const {
  check_slot_name(name);
  if (!shm::BufferMetadata::of_array(dtype.code, dtype.bits, shape))
    throw ServiceError(Status::kInvalidArgument,
                       "tensor: shape " + shape_text(shape) +
                           " cannot be a single-array publish: every dimension must be 1 or "
                           "more (cuda-link consumers read a 0 width as 512x512x4)");
  if (num_slots > shm::kMaxSlots)
    throw ServiceError(Status::kInvalidArgument,
                       "num_slots " + std::to_string(num_slots) + " is not 1..10");
  if (!device.empty() && device != "auto" && device != "cpu" && !device.starts_with("cuda:"))
    throw ServiceError(Status::kInvalidArgument,
                       "device '" + device + "' is not auto, cpu or cuda:N");
  std::shared_ptr<Entry> e;
  {
    std::lock_guard lock(m_);
    if (bytes > decoded_size_limit(c_))
      throw ServiceError(Status::kResourceExhausted,
                         "tensor: " + std::to_string(bytes) + " bytes are over max_decoded_size (" +
                             std::to_string(decoded_size_limit(c_)) + ")");
    if (auto it = entries_.find(name); it != entries_.end())
      e = it->second;
    else if (!creating_tensor_.count(name))  // else: publish_tensor waits for it
      check_claim(name, false);
  }
  if (!e) return;
  std::lock_guard lock(e->m);
  if (!e->payload.tensor.valid()) refuse_tensor_over_mesh(name);
}

std::uint32_t Registry::publish_tensor(const std::string& name, const mesh::Array& data,
                                       const std::string& device, std::uint32_t num_slots,
                                       bool may_wait) {
  check_publish_tensor(name, data.dtype(), data.shape(), data.nbytes(), device, num_slots);
  auto p = payload::tensor_payload(data);
  const std::string what = "tensor " + shape_text(data.shape()) + " " + dtype_text(data.dtype());
  std::shared_ptr<Entry> e;
  {
    std::unique_lock lock(m_);
    // Two producers' first publishes to one name: the second was refused ("'cam' is being
    // loaded already") while the first made the slot; it is a later publish, into that slot.
    created_.wait_for(lock, std::chrono::seconds(may_wait ? 30 : 0),
                      [&] { return !creating_tensor_.count(name); });
    if (auto it = entries_.find(name); it != entries_.end()) {
      e = it->second;
    } else {
      // The checks again, under the lock that also makes the name ours until it is published.
      check_claim(name, false);
      loading_.insert(name);
      creating_tensor_.insert(name);
      if (!num_slots) num_slots = c_.num_slots;
    }
  }
  if (e) {  // a new array in the tensor's slot
    std::lock_guard lock(e->m);
    if (!e->payload.tensor.valid()) refuse_tensor_over_mesh(name);
    if (!e->slot) throw ServiceError(Status::kFailedPrecondition, "'" + name + "' has no slot");
    p.device = e->backend->device();
    const auto pub = publish_into(*e, p, name);
    e->payload = std::move(p);
    events_.publish({Event::kPublished, name, pub.frame, what, now_seconds()});
    return pub.frame;
  }
  const Unmark unmark{*this, name};
  const auto t0 = std::chrono::steady_clock::now();
  e = std::make_shared<Entry>();
  e->request.name = name;
  e->request.device = device;
  e->request.num_slots = num_slots;
  e->format = "tensor";
  e->backend = &backend_for_device(device, e->device_name);
  p.device = e->backend->device();
  try {
    make_slot(*e, name, num_slots);
  } catch (const slots::SlotError& err) {
    throw device_failure(*e->backend, e->device_name, Status::kFailedPrecondition, err.what());
  } catch (const backend::BackendError& err) {
    throw device_failure(*e->backend, e->device_name, Status::kResourceExhausted,
                         name + ": " + err.what());
  }
  const auto pub = publish_into(*e, p, name);
  e->payload = std::move(p);
  e->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard lock(m_);
    entries_[name] = e;
  }
  log_.info("published '" + name + "': " + what + " on " + e->device_name);
  events_.publish({Event::kLoaded, name, pub.frame, what, now_seconds()});
  return pub.frame;
}

Registry::Exported Registry::export_to(const std::string& name, const std::string& path,
                                       const std::string& format, bool overwrite) {
  auto e = find(name);
  {
    std::lock_guard lock(e->m);
    if (e->payload.tensor.valid())
      throw ServiceError(Status::kFailedPrecondition,
                         "'" + name +
                             "' holds a tensor (a single-array publish), not a mesh: Export "
                             "writes meshes; read the tensor from its slot (meshdock.attach)");
  }
  RootDir dir;
  try {
    dir = roots_for(path, /*for_export=*/true)->open_dir_for_write(path);
  } catch (const RootsError& err) {
    refuse(err);
  }
  // What each name the writer writes holds now (not followed): never a loaded mesh's source,
  // never a directory. The writer links or renames into the directory fd, so what it replaces is
  // the name itself. TetGen writes two names (x.node and x.ele, both in this directory fd).
  mesh::WriteOptions o;
  o.format = format;
  mesh::OutTarget target{dir.fd.get(), dir.leaf, dir.path, overwrite};
  const auto names = mesh::written_names(target, o);
  // A name beside dir.leaf as the client would write it (for messages).
  auto shown_as = [&](const std::string& leaf) {
    return dir.path.ends_with(dir.leaf)
               ? dir.path.substr(0, dir.path.size() - dir.leaf.size()) + leaf
               : leaf;
  };
  struct stat st {};
  for (const auto& leaf : names) {
    const std::string shown = shown_as(leaf);
    if (::fstatat(dir.fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode))
      throw ServiceError(Status::kInvalidArgument, shown + " is a directory, not a file");
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      throw ServiceError(Status::kInvalidArgument, shown + " is not a regular file");
    std::lock_guard lock(m_);
    for (const auto& [other, entry] : entries_)
      if (S_ISREG(st.st_mode) && entry->source_dev == st.st_dev && entry->source_ino == st.st_ino)
        throw ServiceError(Status::kFailedPrecondition,
                           shown + " is the source of the loaded mesh '" + other +
                               "'; export never replaces it (unload it first, or pick another "
                               "name)");
  }
  // The mesh as it is now, then written without the entry's lock: a copy shares its arrays (a
  // publish replaces an array in a new Mesh, never writes one in place). Held during the write,
  // the lock stalled every List, Describe, Stats and publish of the mesh for as long as the
  // export took (seconds for a big VTU), and concurrent exports queued on it.
  mesh::Mesh snapshot;
  {
    std::lock_guard lock(e->m);
    snapshot = e->mesh;
  }
  Exported out;
  try {
    out.notes = mesh::write_mesh(snapshot, target, o);
    for (const auto& n : out.notes) log_.info(name + ": export: " + n);
  } catch (const mesh::FileExists&) {
    std::string existing = dir.path;  // the name that exists (TetGen's pair: either)
    for (const auto& leaf : names)
      if (::fstatat(dir.fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        existing = shown_as(leaf);
        break;
      }
    throw ServiceError(Status::kAlreadyExists,
                       existing +
                           " exists; export replaces a file only when asked (overwrite "
                           "in the request, meshdockctl export --force, "
                           "Client.export(overwrite=True))");
  } catch (const mesh::WriteError& err) {
    throw ServiceError(write_status(err.sys_errno()), err.what());
  } catch (const mesh::MeshError& err) {
    throw ServiceError(Status::kInvalidArgument, err.what());
  }
  // The size of what is at the name now (fstatat, never followed): another export may have
  // replaced it since, which only makes this number theirs.
  if (::fstatat(dir.fd.get(), dir.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    out.bytes = static_cast<std::uint64_t>(st.st_size);
  return out;
}

Stats Registry::stats() const {
  Stats s;
  s.meshes = list();
  std::lock_guard lock(m_);
  s.host_memory_used = host_->memory_used();
  for (const auto& [id, b] : cuda_) s.device_memory_used += b->memory_used();
  s.device_memory_budget = c_.device_memory_budget;
  s.max_decoded_size = decoded_size_limit(c_);
  s.uptime_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  s.backend = backend_for("auto");
  s.consumers = consumers_ ? consumers_->connections() : 0;
  s.imports = consumers_ ? consumers_->imports_open() : 0;
  s.unloaded_open_bytes = graveyard_.bytes();
  if (consumers_) s.wake = consumers_->wake_latency();
  if (pinned_) s.pinned = pinned_->counters();
  return s;
}

std::vector<std::string> Registry::maintain() {
  std::vector<std::shared_ptr<Entry>> all;
  bool check_files = false;
  std::shared_ptr<const Roots> roots;
  {
    std::lock_guard lock(m_);
    roots = roots_;
    for (const auto& [n, e] : entries_) all.push_back(e);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_watch_check_ >= std::chrono::milliseconds(c_.watch_interval_ms)) {
      last_watch_check_ = now;
      check_files = true;
    }
  }
  const auto now_ns = shm::monotonic_ns();
  tend_graveyard(now_ns);
  std::vector<std::string> changed;
  for (const auto& e : all) {
    std::unique_lock lock(e->m, std::try_to_lock);
    if (!lock.owns_lock() || !e->slot) continue;  // busy publishing: its publish beats
    if (const auto n = e->slot->maintain(now_ns))
      log_.info(e->request.name + ": cleared " + std::to_string(n) +
                " leases (of dead or unregistered consumers, or past " +
                std::to_string(shm::kMaxLeasesPerProcess) + " of one process on a ring slot)");
    for (const auto& n : e->slot->take_notes()) log_.warn(n);
    if (check_files && e->request.watch) {
      const auto now = roots->stat(e->path);  // under the root, as the load opened it
      const auto st = now && S_ISREG(now->st_mode) ? stamp_of(*now) : FileStamp{};
      if (st.size && !(st == e->stamp)) {
        e->stamp = st;
        changed.push_back(e->request.name);
      }
    }
  }
  return changed;
}

std::vector<LeaseReport> Registry::leases() const {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard lock(m_);
    for (const auto& [n, e] : entries_) all.push_back(e);
  }
  std::vector<LeaseReport> out;
  for (const auto& e : all) {
    std::lock_guard lock(e->m);
    if (!e->slot) continue;
    for (const auto& l : e->slot->leases()) out.push_back({e->request.name, l});
  }
  return out;
}

std::size_t Registry::revoke(std::int32_t pid) {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard lock(m_);
    for (const auto& [n, e] : entries_) all.push_back(e);
  }
  std::size_t n = 0;
  for (const auto& e : all) {
    std::lock_guard lock(e->m);
    if (!e->slot) continue;
    n += e->slot->revoke(pid);
    for (const auto& line : e->slot->take_notes()) log_.warn(line);
  }
  return n;
}

}  // namespace meshdock::service
