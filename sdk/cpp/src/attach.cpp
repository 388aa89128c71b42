#include "meshdock/attach.hpp"

#include "meshdock/device_ipc.hpp"
#include "meshdock/dlpack_tensor.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace meshdock {

namespace {

// One slot buffer mapped (host) or opened (CUDA) by this process. Cached per ring slot and
// buffer version; frames share it.
struct Mapping {
  shm::Segment host;  // host slots
  // CUDA slots: the buffer and its upload event as `ipc` opened them, and the registration the
  // import was reported on (its SlotState's, which outlives every Mapping of it).
  std::shared_ptr<DeviceIpc> ipc;
  void* device_ptr = nullptr;
  void* event = nullptr;
  const shm::Registration* reported = nullptr;
  pid_t opener = 0;  // the process that opened it: CUDA state does not survive a fork
  std::uint64_t size = 0;
  // The control block's handle for the buffer this maps (host: "MDH1" + the object's name): a
  // ring slot whose handle is another now got a fresh buffer, and this one is retired.
  shm::Handle handle{};
  // Host slots, guarded by SlotState::m: frames using this mapping now, and whether the pages
  // this process wrote were dropped since the last of them went (see SlotState::hand_out).
  int frames_out = 0;
  bool clean = true;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    // In a forked child the import is the parent's (the runtime's handles are not ours, and a
    // close report would go out as the parent's: Registration::here() drops it).
    if (opener != ::getpid()) return;
    if (event) ipc->destroy_event(event);
    if (device_ptr) ipc->close_memory(device_ptr);
    // Closed: the daemon may free it once no lease names it either.
    if (reported) reported->report_import(false, handle);
  }
  void* base() const { return device_ptr ? device_ptr : host.data(); }
};

// Entries of `table` held by `pid` (ours: only this process writes them).
std::uint32_t held_by(const shm::LeaseTableView& table, pid_t pid) {
  std::uint32_t n = 0;
  for (std::uint32_t k = 0; k < table.capacity(); ++k)
    if (const auto e = table.entry(k); e && e->pid == pid) ++n;
  return n;
}

std::string ms(std::uint64_t ns) {
  return std::to_string(ns / 1000000) + " ms";
}

std::string hex(std::uintptr_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%" PRIxPTR, v);
  return buf;
}

using Clock = std::chrono::steady_clock;
// How often an interrupt hook is polled while sleeping, and the longest plain sleep of wait().
constexpr auto kInterruptPoll = std::chrono::milliseconds(50);
constexpr auto kProducerPoll = std::chrono::milliseconds(100);
constexpr auto kBackoff = std::chrono::milliseconds(1);
// Ended frames of one ring slot that may wait for their consumer streams before a take waits
// for them (half the leases the daemon honours per process and ring slot).
constexpr std::size_t kEndedPerRingSlot = 4;
// A heartbeat further ahead of our clock than this is forged (or not the same clock).
constexpr std::uint64_t kFutureHeartbeatNs = 1000000000;
// How long the daemon has to acknowledge a registration (and the send timeout of its reports).
constexpr auto kRegistrationTimeout = std::chrono::milliseconds(2000);

// `timeout` from now, saturating: milliseconds::max() (or any timeout past the clock's range)
// is "for ever". `now + timeout` converts the timeout to nanoseconds first, which overflows for
// such values and made wait() and attach() give up at once.
Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  if (timeout <= std::chrono::milliseconds::zero()) return now;
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  return timeout >= room ? Clock::time_point::max() : now + timeout;
}

// Closes an fd on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string user_name(uid_t uid) {
  struct passwd pw, *res = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_name;
  return "no user name";
}

std::string group_name(gid_t gid) {
  struct group gr, *res = nullptr;
  char buf[8192];
  if (::getgrgid_r(gid, &gr, buf, sizeof buf, &res) == 0 && res) return res->gr_name;
  return "no group name";
}

std::string mode_string(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// "mode 0640, owner uid 0 (root), group 0 (root)"
std::string describe(const struct stat& st) {
  return "mode " + mode_string(st.st_mode) + ", owner uid " + std::to_string(st.st_uid) + " (" +
         user_name(st.st_uid) + "), group " + std::to_string(st.st_gid) + " (" +
         group_name(st.st_gid) + ")";
}

// POSIX shm objects are files in /dev/shm on Linux (glibc's shm_open opens them there).
std::string shm_path(const std::string& object) {
  return "/dev/shm/" + object;
}

// What an AttachTimeout adds: the slots with a catalog under `prefix` in /dev/shm other than
// `name` ("; published under prefix 'P': a, b"), or that there are none, so a wrong name or
// prefix shows at once. The Python SDK lists the other prefixes after the second form.
std::string published_under(const std::string& prefix, const std::string& name) {
  std::vector<std::string> names;
  std::error_code ec;
  const auto suffix = std::string(shm::kCatalogSuffix);
  for (const auto& f : std::filesystem::directory_iterator(shm::kShmDir, ec)) {
    const auto leaf = f.path().filename().string();
    if (leaf.size() <= prefix.size() + suffix.size() || !leaf.starts_with(prefix) ||
        !leaf.ends_with(suffix))
      continue;
    const auto slot = leaf.substr(prefix.size(), leaf.size() - prefix.size() - suffix.size());
    try {
      shm::validate_name(slot);
    } catch (const shm::ProtocolError&) {
      continue;
    }
    if (slot != name) names.push_back(slot);
  }
  if (names.empty()) return "; nothing is published under prefix '" + prefix + "'";
  std::sort(names.begin(), names.end());
  std::string listed;
  for (std::size_t i = 0; i < names.size() && i < 20; ++i) {
    if (i) listed += ", ";
    listed += names[i];
  }
  if (names.size() > 20) listed += ", ... (" + std::to_string(names.size()) + " in all)";
  return "; published under prefix '" + prefix + "': " + listed;
}

// The system daemon's socket (config/meshdockd.service; the Python Client's default address).
constexpr const char* kSystemSocket = "/run/meshdock/meshdockd.sock";

}  // namespace

// Which uids may own a slot's segments, and where that came from (for messages).
struct OwnerTrust {
  std::vector<uid_t> uids;
  std::string source;

  bool trusts(uid_t u) const {
    for (auto t : uids)
      if (t == u) return true;
    return false;
  }
  std::string list() const {
    std::string s;
    for (auto u : uids)
      s += (s.empty() ? "" : " or ") + std::to_string(u) + " (" + user_name(u) + ")";
    return "uid " + s + ", from " + source;
  }

  static OwnerTrust of(const AttachOptions& o) {
    if (o.owner_uid) return {{static_cast<uid_t>(*o.owner_uid)}, "the attach option owner_uid"};
    if (const char* env = std::getenv("MESHDOCK_DAEMON_UID"); env && *env) {
      char* end = nullptr;
      errno = 0;
      const auto v = std::strtoul(env, &end, 10);
      if (errno != 0 || *end != '\0' || v > 0xFFFFFFFEul)
        throw SdkError(std::string("$MESHDOCK_DAEMON_UID is '") + env +
                       "', not a uid (a decimal number)");
      return {{static_cast<uid_t>(v)}, "$MESHDOCK_DAEMON_UID"};
    }
    // The daemon's socket: $MESHDOCK_ADDR when it is unix:PATH, else the system socket (the
    // Python Client's default). Only the daemon's user can have created it there.
    const char* addr = std::getenv("MESHDOCK_ADDR");
    std::string path;
    if (addr && std::string_view(addr).starts_with("unix:")) {
      path = addr + 5;
      if (path.starts_with("//")) path.erase(0, 2);  // unix:///abs/path
    } else if (!addr || !*addr) {
      path = kSystemSocket;
    }
    struct stat st;
    if (!path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      return {{st.st_uid}, "the owner of the daemon socket " + path};
    const uid_t me = ::getuid();
    if (me == 0) return {{0}, "this process's uid (root)"};
    return {{me, 0}, "this process's uid or root (set owner_uid or $MESHDOCK_DAEMON_UID)"};
  }
};

namespace {

// Opens shm object `name` and checks who owns it before anything reads its bytes. nullopt
// when it does not exist (or is still being created, size 0, by a trusted owner); throws
// SegmentAccessDenied when this process may not open it, UntrustedSegment when it belongs to a
// uid not in `trust`. `what` names the slot for the messages.
std::optional<shm::Segment> open_trusted(const std::string& name, shm::Access access,
                                         const OwnerTrust& trust, const std::string& what) {
  const std::string path = shm_path(name);
  auto refuse_owner = [&](const struct stat& st) {
    throw UntrustedSegment(what + ": segment " + path + " belongs to uid " +
                           std::to_string(st.st_uid) + " (" + user_name(st.st_uid) +
                           "), not the daemon; trusted: " + trust.list() + ". It has mode " +
                           mode_string(st.st_mode) + ", group " + std::to_string(st.st_gid) + " (" +
                           group_name(st.st_gid) + "). Not reading it (a squatter?)");
  };
  shm::Segment seg;
  try {
    seg = shm::Segment::open(name, access);
  } catch (const shm::ProtocolError&) {
    // Say why: missing, refused, or there but unusable (empty while being created).
    const int flags = (access == shm::Access::kReadWrite ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
                      O_CLOEXEC | O_NONBLOCK;
    Fd probe(::open(path.c_str(), flags));
    const int err = errno;
    struct stat st;
    const bool there = ::stat(path.c_str(), &st) == 0;
    if (!there) return std::nullopt;
    if (probe.fd < 0 && (err == EACCES || err == EPERM)) {
      std::string groups;
      const int n = ::getgroups(0, nullptr);
      std::vector<gid_t> gs(n > 0 ? static_cast<std::size_t>(n) : 0);
      if (n > 0 && ::getgroups(n, gs.data()) == n)
        for (auto g : gs) groups += (groups.empty() ? "" : ", ") + std::to_string(g);
      throw SegmentAccessDenied(
          what + ": cannot open segment " + path +
          (access == shm::Access::kReadWrite ? " for reading and writing" : " for reading") +
          ": EACCES (permission denied); it has " + describe(st) + "; this process is uid " +
          std::to_string(::geteuid()) + ", gid " + std::to_string(::getegid()) + ", groups [" +
          groups + "]: join group '" + group_name(st.st_gid) + "' (gid " +
          std::to_string(st.st_gid) + ") to read it");
    }
    if (!trust.trusts(st.st_uid)) refuse_owner(st);
    return std::nullopt;  // empty (being created) or gone in between: look again
  }
  struct stat st;
  if (::fstat(seg.fd(), &st) != 0)
    throw SdkError(what + ": fstat of segment " + path + ": " + std::strerror(errno));
  if (!trust.trusts(st.st_uid)) refuse_owner(st);
  return seg;
}

// Pages of a copy-on-write mapping that this process wrote to are private (anonymous) copies
// and no longer show the object's bytes. Drops them, so the next read maps the object's page
// again: what makes a cached mapping safe to reuse for a later frame in the same buffer.
// /proc/self/pagemap says which pages are private (present or swapped, not file/shmem); without
// it, every page is dropped (correct, only slower: each is faulted in again).
void drop_private_pages(void* base, std::size_t size, int pagemap) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* b = static_cast<std::byte*>(base);
  const std::size_t pages = (size + page - 1) / page;
  if (pagemap < 0) {
    ::madvise(b, pages * page, MADV_DONTNEED);
    return;
  }
  constexpr std::uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFile = 1ull << 61;
  std::uint64_t entries[512];
  const auto first = reinterpret_cast<std::uintptr_t>(b) / page;
  std::size_t run_start = pages;  // first page of the current run of private pages
  auto flush = [&](std::size_t end) {
    if (run_start < end) ::madvise(b + run_start * page, (end - run_start) * page, MADV_DONTNEED);
    run_start = pages;
  };
  for (std::size_t at = 0; at < pages;) {
    const std::size_t n = std::min<std::size_t>(512, pages - at);
    const auto got = ::pread(pagemap, entries, n * 8, static_cast<off_t>((first + at) * 8));
    if (got != static_cast<ssize_t>(n * 8)) {
      flush(at);
      ::madvise(b + at * page, (pages - at) * page, MADV_DONTNEED);
      return;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const auto e = entries[k];
      const bool priv = (e & (kPresent | kSwapped)) != 0 && (e & kFile) == 0;
      if (priv && run_start == pages) run_start = at + k;
      if (!priv) flush(at + k);
    }
    at += n;
  }
  flush(pages);
}

}  // namespace

struct SlotState : std::enable_shared_from_this<SlotState> {
  std::string name;
  AttachOptions o;
  OwnerTrust trust;
  shm::Segment control, catalog;  // read-only (mode 0640: only the daemon writes them)
  shm::Segment leases;            // read-write: this process's lease entries
  std::optional<shm::ControlBlockView> cb;
  std::optional<shm::CatalogView> cat;
  std::optional<shm::LeasesView> lv;
  // As validated at attach; never re-read from shared memory.
  std::uint32_t num_slots = 0;
  std::int32_t device_type = shm::kDLDeviceCPU;
  // A CUDA slot's GPU under this process's ordinal, found by the catalog's UUID at the first
  // open (resolve_device); the daemon's device_id until then, and where the UUID or the runtime
  // cannot tell. Not at attach: asking the runtime starts it, and a process that attaches and
  // then forks workers must leave them a CUDA they can still initialise.
  std::atomic<std::int32_t> device_id{0};
  bool device_resolved = false;  // under m
  // What opens a CUDA slot's buffers: AttachOptions::device_ipc, else the CUDA runtime's
  // (nullptr in a build without CUDA).
  std::shared_ptr<DeviceIpc> ipc;
  // Open while this process may hold leases: the daemon honours leases of registered pids only.
  shm::Registration registration;
  std::string registration_error;  // why there is none (reported when a lease is needed)
  // When a take first found no registration (under a dead daemon's segments: until the
  // heartbeat goes stale).
  std::optional<Clock::time_point> unregistered_since;
  // What it was made with (the catalog's, as validated at attach): a forked child registers
  // itself with the same daemon (register_here).
  std::string socket_address;
  std::int32_t daemon_pid = 0;
  uid_t daemon_uid = 0;
  std::uint64_t last_seen = 0;
  std::mutex m;  // cache
  std::map<std::uint32_t, std::pair<std::uint64_t, std::shared_ptr<Mapping>>> cache;
  // The last manifest decoded per ring slot, with the data_size it was checked against: a
  // republish of the same layout (the common case) reuses it after a byte compare instead of
  // parsing the JSON again.
  struct Decoded {
    std::string text;
    std::uint64_t data_size = 0;
    std::shared_ptr<const shm::Manifest> manifest;
  };
  std::map<std::uint32_t, Decoded> manifests;
  Fd pagemap{::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)};

  std::shared_ptr<const shm::Manifest> decode(std::uint32_t i, const shm::PageSnapshot& snap) {
    std::lock_guard lock(m);
    auto& slot = manifests[i];
    if (slot.manifest && slot.data_size == snap.data_size && slot.text == snap.manifest)
      return slot.manifest;
    auto decoded =
        std::make_shared<const shm::Manifest>(shm::decode_manifest(snap.manifest, snap.data_size));
    slot = {snap.manifest, snap.data_size, decoded};
    return decoded;
  }

  // Throws Interrupted when the caller's hook says stop. Called before every sleep.
  void poll_interrupt(const char* during) const {
    if (o.interrupt && o.interrupt()) throw Interrupted(what() + ": interrupted " + during);
  }
  // The longest one sleep may last: the interrupt hook must be polled at least every 50 ms.
  std::chrono::milliseconds max_sleep(std::chrono::milliseconds other) const {
    return o.interrupt ? std::min(other, std::chrono::milliseconds(kInterruptPoll)) : other;
  }

  std::string what() const { return "slot '" + name + "' (/" + *o.prefix + name + ")"; }

  // The ordinal under which this process sees a CUDA slot's GPU: the daemon's device_id names
  // it among the daemon's CUDA_VISIBLE_DEVICES, which a consumer's need not be (a container
  // given one GPU sees it as cuda:0), so the catalog's UUID decides where the runtime can tell.
  // A GPU this process does not see is an error naming it, not an open on another GPU.
  std::int32_t resolve_device() const {
    const auto daemon_id = cat->device_id();
    const auto& uuid = cat->device_uuid();
    if (device_type != shm::kDLDeviceCUDA || !ipc || !shm::uuid_known(uuid)) return daemon_id;
    const auto mine = ipc->ordinal_of(uuid);
    if (!mine) return daemon_id;
    if (*mine < 0) {
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      throw SdkError(what() + ": a CUDA slot on " + shm::uuid_string(uuid) +
                     " (the daemon's cuda:" + std::to_string(daemon_id) +
                     "), which this process does not see (" +
                     (visible ? "CUDA_VISIBLE_DEVICES=" + std::string(visible)
                              : std::string("CUDA_VISIBLE_DEVICES is unset")) +
                     "): give it that GPU, by index or by UUID");
    }
    return *mine;
  }

  // A forked child (a DataLoader worker of a Dataset attached before the fork) holds its
  // parent's registration, under which the daemon would not count the child's leases: it
  // registers itself before its first lease. A CUDA slot cannot follow: the runtime's state
  // (contexts, imports, events) does not survive fork.
  void register_here() {
    if (!registration.valid() || registration.here()) return;
    if (device_type != shm::kDLDeviceCPU)
      throw SdkError(what() + ": attached before this process forked (pid " +
                     std::to_string(::getpid()) +
                     "); CUDA does not survive a fork: attach in the child (a DataLoader: in the "
                     "worker, e.g. in worker_init_fn, or multiprocessing_context=\"spawn\")");
    connect_registration();
  }
  // Registers this process with the daemon (socket, pid and owner as validated at attach). A
  // failure is kept for the first lease to report (a dead daemon's segments: wait() says
  // ProducerGone first).
  void connect_registration() {
    try {
      // Its own deadline, not the attach timeout: attach(timeout=0) means "do not wait for the
      // publication", not "give the daemon no time to acknowledge" (every lease would fail).
      registration = shm::Registration::connect(socket_address, daemon_pid, daemon_uid,
                                                kRegistrationTimeout, what());
    } catch (const shm::ProtocolError& e) {
      registration = {};
      registration_error = e.what();
    }
  }

  void check_producer() const {
    if (cb->shutdown_byte() != 0)
      throw ProducerGone(what() +
                         ": producer gone (shutdown flag set; the daemon stopped or "
                         "unloaded it)");
    const auto now = shm::monotonic_ns();
    const auto hb = cat->heartbeat_ns();
    const auto max = static_cast<std::uint64_t>(o.producer_timeout.count()) * 1000000;
    // The daemon beats from the same CLOCK_MONOTONIC: a beat from the future is a lie (a
    // forged catalog), and trusting it would keep a dead producer "alive" forever.
    if (hb > now && hb - now > kFutureHeartbeatNs)
      throw ProducerGone(what() + ": producer gone or lying (heartbeat " + ms(hb - now) +
                         " in the future of this host's CLOCK_MONOTONIC; daemon pid " +
                         std::to_string(cat->daemon_pid()) + ")");
    if (now > hb && now - hb > max)
      throw ProducerGone(what() + ": producer gone (heartbeat " + ms(now - hb) +
                         " old; daemon pid " + std::to_string(cat->daemon_pid()) +
                         (shm::pid_alive(cat->daemon_pid()) ? " alive but stuck)" : " dead)"));
  }

  void check_size(const Mapping& mp, std::uint32_t i, std::uint64_t version,
                  std::uint64_t data_size) const {
    if (mp.size < data_size)
      throw SdkError(what() + ": slot " + std::to_string(i) + " buffer (version " +
                     std::to_string(version) + ") is " + std::to_string(mp.size) +
                     " bytes; the page says data_size " + std::to_string(data_size));
  }

  // Under m: a host mapping handed to a frame. When the last frame using it goes, the pages
  // it wrote (private copy-on-write copies) are dropped there, off the wake path, so the cached
  // mapping shows the daemon's bytes again when the buffer serves a later frame.
  std::shared_ptr<Mapping> hand_out(const std::shared_ptr<Mapping>& mp) {
    struct Use {
      std::shared_ptr<Mapping> mp;
      std::shared_ptr<SlotState> s;
      Use(std::shared_ptr<Mapping> m, std::shared_ptr<SlotState> st)
          : mp(std::move(m)), s(std::move(st)) {}
      Use(const Use&) = delete;
      Use& operator=(const Use&) = delete;
      ~Use() { s->returned(*mp); }
    };
    ++mp->frames_out;
    mp->clean = false;
    auto use = std::make_shared<Use>(mp, shared_from_this());
    return std::shared_ptr<Mapping>(use, mp.get());
  }
  void returned(Mapping& mp) {
    std::lock_guard lock(m);
    if (--mp.frames_out > 0) return;
    drop_private_pages(mp.host.data(), mp.host.size(), pagemap.fd);
    mp.clean = true;
  }

  // Under m: forgets the cached mappings no frame uses whose buffer the control block no longer
  // names (the ring slot got a fresh buffer; `only`: of that ring slot alone): a host mapping
  // would keep the unlinked object's pages alive, and a CUDA import keeps the daemon from
  // freeing the buffer (it was reported open, see map()). A torn read of the handle can only
  // make a mapping look stale: it is opened again when needed.
  // `keep`: a ring slot whose cached mapping is the very buffer a page names that our lease
  // pins, kept whatever the control block says now (the daemon may have given the slot a fresh
  // buffer since the page was read; the frame is still in the old one).
  // Returns what it took out of the cache: the caller lets go of it after unlocking m, as a
  // CUDA mapping's destructor sends its close report (a blocking send) on the registration.
  // A CUDA import the daemon was not told of (its report could not be sent) is not kept past
  // the frames using it: nothing else would stop the daemon from freeing it.
  [[nodiscard]] std::vector<std::shared_ptr<Mapping>> drop_stale(
      std::optional<std::uint32_t> only = std::nullopt,
      std::optional<std::uint32_t> keep = std::nullopt) {
    std::vector<std::shared_ptr<Mapping>> dropped;
    for (auto it = cache.begin(); it != cache.end();) {
      auto& mp = it->second.second;
      const bool mine = (!only || it->first == *only) && it->first != keep;
      const bool unreported = mp->device_ptr && !mp->reported;
      if (mine && mp.use_count() == 1 && (unreported || cb->mem_handle(it->first) != mp->handle)) {
        dropped.push_back(std::move(mp));
        it = cache.erase(it);
      } else {
        ++it;
      }
    }
    return dropped;
  }
  void frame_done(std::uint32_t i) {
    std::vector<std::shared_ptr<Mapping>> dropped;  // released after the lock
    std::lock_guard lock(m);
    dropped = drop_stale(i);
  }

  // A frame that went while work queued on its consumer streams may still read its buffer:
  // its mapping and lease, kept until the marks recorded on those streams are passed.
  struct Ending {
    std::shared_ptr<Mapping> mapping;
    std::uint32_t index = 0;
    std::uint32_t lease = 0;
    std::vector<void*> marks;
  };
  std::mutex ending_m;
  std::vector<Ending> ending;

  std::size_t ended_on(std::uint32_t index) {
    std::lock_guard lock(ending_m);
    return static_cast<std::size_t>(std::count_if(
        ending.begin(), ending.end(), [&](const Ending& e) { return e.index == index; }));
  }
  void end_frame(std::shared_ptr<Mapping> mp, std::uint32_t index, std::uint32_t lease,
                 std::vector<void*> marks) {
    Ending e{std::move(mp), index, lease, std::move(marks)};
    if (!over(e, false)) {
      std::lock_guard lock(ending_m);
      ending.push_back(std::move(e));
      return;
    }
    finish(std::move(e));
  }
  // Whether every mark of `e` is passed (`block`: waits); frees the passed ones.
  static bool over(Ending& e, bool block) {
    auto& marks = e.marks;
    for (auto it = marks.begin(); it != marks.end();) {
      if (e.mapping->ipc->use_over(*it, block)) {
        e.mapping->ipc->end_use(*it);
        it = marks.erase(it);
      } else {
        ++it;
      }
    }
    return marks.empty();
  }
  void finish(Ending e) {
    e.mapping.reset();
    frame_done(e.index);
    lv->table(e.index).release(e.lease, ::getpid());
  }
  // Lets the ended frames whose work is over go (`block`: all of them, waiting for their
  // streams). take() calls it at every look (at least every 100 ms while it waits); the last
  // owner of the slot's state with `block`.
  void settle(bool block) {
    std::vector<Ending> done;
    {
      std::lock_guard lock(ending_m);
      if (ending.empty()) return;
      for (auto it = ending.begin(); it != ending.end();) {
        if (over(*it, block)) {
          done.push_back(std::move(*it));
          it = ending.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& e : done) finish(std::move(e));
  }
  SlotState() = default;
  SlotState(const SlotState&) = delete;
  SlotState& operator=(const SlotState&) = delete;
  ~SlotState() { settle(true); }

  // The buffer of the frame whose page snapshot is `snap` (ring slot i), mapped or opened;
  // nullptr when the page changed before a CUDA buffer's handles could be read for it (the
  // caller looks again: a newer frame is being written).
  std::shared_ptr<Mapping> map(std::uint32_t i, const shm::PageSnapshot& snap) {
    const std::uint64_t version = snap.buffer_version, data_size = snap.data_size;
    std::vector<std::shared_ptr<Mapping>> dropped;  // released after the lock (drop_stale)
    std::lock_guard lock(m);
    {
      const auto held = cache.find(i);
      dropped = drop_stale(std::nullopt, held != cache.end() && held->second.first == version
                                             ? std::optional<std::uint32_t>(i)
                                             : std::nullopt);
    }
    auto it = cache.find(i);
    const bool host = device_type == shm::kDLDeviceCPU;
    if (it != cache.end() && it->second.first == version) {
      auto& mp = it->second.second;
      // A device buffer's size is what its pages say (an IPC import does not tell it), and a
      // later frame in the same buffer may be bigger: a field added to the mesh fits the 2 MiB
      // granules the daemon allocates, so it gets no fresh buffer. Refusing it (as this did)
      // broke every consumer of a mesh whose published fields grew.
      if (!host) mp->size = std::max(mp->size, data_size);
      // The page is re-read for every frame, the mapping is not: check it still covers it.
      check_size(*mp, i, version, data_size);
      if (!host) return mp;
      // No frame of ours uses it (a live one would hold a lease, and the daemon would have
      // given the slot a fresh buffer): reuse it, its written pages already dropped. Otherwise
      // map afresh, leaving the live frame's private writes alone.
      if (mp->frames_out == 0) {
        if (!mp->clean) drop_private_pages(mp->host.data(), mp->host.size(), pagemap.fd);
        return hand_out(mp);
      }
    }
    auto mp = std::make_shared<Mapping>();
    if (host) {
      // The name is a function of (slot, version): a buffer the daemon retired while we hold
      // its lease is still there under it, whatever the control block's handle says now.
      // Copy-on-write: a consumer's in-place write stays in its own pages (and cannot fault).
      const auto object = shm::data_object_name(*o.prefix, name, i, version);
      std::optional<shm::Segment> seg;
      try {
        seg = open_trusted(object, shm::Access::kCopyOnWrite, trust, what());
      } catch (const SdkError&) {
        throw;
      } catch (const std::exception& e) {
        throw SdkError(what() + ": slot " + std::to_string(i) + " buffer /" + object + ": " +
                       e.what());
      }
      if (!seg)
        throw SdkError(what() + ": slot " + std::to_string(i) + " buffer /" + object +
                       ": missing or empty");
      mp->host = std::move(*seg);
      mp->size = mp->host.size();
      mp->handle = shm::make_host_handle(object);
    } else {
      if (!ipc) throw SdkError(what() + " is a CUDA slot; this libmeshdock was built without CUDA");
      if (!device_resolved) {  // throws, naming the GPU, when this process does not see it
        device_id = resolve_device();
        device_resolved = true;
      }
      // The handles as they were for this page: the control block may name a fresher buffer
      // already (our lease made the daemon give the slot one), and opening that would show
      // this frame another frame's bytes.
      const auto handles = cat->page(i).handles_of(*cb, snap.seq);
      if (!handles) return nullptr;
      const auto& [mh, eh] = *handles;
      mp->handle = mh;
      mp->ipc = ipc;
      const auto buffer = [&] {
        return what() + ": slot " + std::to_string(i) + " buffer (version " +
               std::to_string(version) + ")";
      };
      mp->opener = ::getpid();  // before the open: a failure below still closes it
      try {
        mp->device_ptr = ipc->open_memory(device_id, mh);
      } catch (const std::exception& e) {
        throw SdkError(buffer() + ": " + e.what());
      }
      // An all-zero event handle: the daemon's runtime gave no interprocess event, and it
      // waits for every upload before announcing the frame (nothing to order on).
      const bool no_event =
          std::all_of(eh.begin(), eh.end(), [](std::byte b) { return b == std::byte{0}; });
      try {
        if (!no_event) mp->event = ipc->open_event(device_id, eh);
      } catch (const std::exception& e) {
        throw SdkError(buffer() + ": its upload event: " + e.what());
      }
      // The import is cached past this frame (an open costs about a millisecond), so the daemon
      // must not free the buffer while it is open, lease or not: tell it now, while this
      // frame's lease still protects the buffer (registration.hpp, import reports). Untold (the
      // daemon gone, or its socket full past the timeout), the import is closed with the last
      // frame using it instead (drop_stale).
      if (registration.report_import(true, mh)) mp->reported = &registration;
      mp->size = data_size;
    }
    check_size(*mp, i, version, data_size);
    if (const auto old = cache.find(i); old != cache.end())
      dropped.push_back(std::move(old->second.second));
    cache[i] = {version, mp};
    return host ? hand_out(mp) : mp;
  }
};

struct FrameState {
  std::shared_ptr<SlotState> slot;
  std::shared_ptr<Mapping> mapping;
  std::uint32_t index = 0;
  std::uint32_t lease = 0;
  std::uint64_t frame = 0;
  std::shared_ptr<const shm::Manifest> manifest;
  // CUDA slots: the consumer streams ordered after the upload (order_after_upload: what the
  // frame's tensors were adopted on). The last tensor's deleter runs when the framework drops
  // it, kernels reading it possibly still queued on them: the lease waits for those.
  // The per-thread default stream (DeviceIpc::kPerThreadStream) is another stream in every
  // thread, so it is kept with the thread that ordered it (`thread`; empty for other streams).
  struct Use {
    std::uintptr_t stream;
    std::thread::id thread;
    bool operator==(const Use&) const = default;
  };
  mutable std::mutex streams_m;
  mutable std::vector<Use> streams;
  // The frame ends: when its work on those streams is over (at once without any), a retired
  // buffer no other frame uses is unmapped (so a CUDA import is closed before the daemon may
  // free it), and only then the lease goes (SlotState::end_frame).
  ~FrameState() {
    std::vector<void*> marks;
    if (mapping && mapping->device_ptr && mapping->opener == ::getpid())
      for (const auto& use : streams)
        if (void* m = mapping->ipc->record_use(slot->device_id, mark_stream(use)))
          marks.push_back(m);
    slot->end_frame(std::move(mapping), index, lease, std::move(marks));
  }
  // Where the end of a use is marked, on the thread running the last deleter (any thread: the
  // one that drops the tensor, a garbage collector's). Another thread's per-thread default
  // stream cannot be named from here: the legacy default stream stands in for it, since it
  // waits for the work queued on every blocking stream, per-thread default streams included.
  static std::uintptr_t mark_stream(const Use& use) {
    if (use.stream == DeviceIpc::kPerThreadStream && use.thread != std::this_thread::get_id())
      return DeviceIpc::kLegacyStream;
    return use.stream;
  }
};

// ---- Slot
// ----------------------------------------------------------------------------------------

namespace {

// Opens and validates the segments of `name` and registers with the daemon. Returns nullptr
// when they are not there (yet); throws SdkError when they are there but malformed.
std::shared_ptr<SlotState> open_segments(const std::string& name, const AttachOptions& options,
                                         const std::string& control_name,
                                         const std::string& catalog_name) {
  const auto leases_name =
      catalog_name.substr(0, catalog_name.size() - shm::kCatalogSuffix.size()) +
      std::string(shm::kLeasesSuffix);
  auto s = std::make_shared<SlotState>();
  s->name = name;
  s->o = options;
  s->trust = OwnerTrust::of(options);
  s->ipc = options.device_ipc ? options.device_ipc : cuda_device_ipc();
  try {
    // Owner checked (and EACCES named) before a byte is read: see open_trusted.
    auto control = open_trusted(control_name, shm::Access::kReadOnly, s->trust, s->what());
    if (!control) return nullptr;
    auto catalog = open_trusted(catalog_name, shm::Access::kReadOnly, s->trust, s->what());
    if (!catalog) return nullptr;
    s->control = std::move(*control);
    s->catalog = std::move(*catalog);
    if (!shm::CatalogView::ready(s->catalog.data(), s->catalog.size()))
      return nullptr;  // the daemon is creating it right now: look again
    s->cb.emplace(
        shm::ControlBlockView::validate(s->control.data(), s->control.size(), control_name));
    s->cat.emplace(shm::CatalogView::validate(s->catalog.data(), s->catalog.size(), catalog_name));
    auto leases = open_trusted(leases_name, shm::Access::kReadWrite, s->trust, s->what());
    if (!leases) return nullptr;
    s->leases = std::move(*leases);
    // The shape is the catalog's (validated, read-only to us), never the leases segment's.
    s->lv.emplace(shm::LeasesView::over(s->leases.data(), s->leases.size(), s->cat->num_slots(),
                                        s->cat->lease_capacity(), leases_name));
  } catch (const shm::ProtocolError& e) {
    throw SdkError(e.what());
  } catch (const SdkError&) {
    throw;
  } catch (const std::exception&) {
    return nullptr;  // removed while we opened it: look again
  }
  s->num_slots = s->cb->num_slots();
  s->device_type = s->cat->device_type();
  s->device_id = s->cat->device_id();
  if (s->num_slots != s->cat->num_slots())
    throw SdkError(s->what() + ": control block has " + std::to_string(s->num_slots) +
                   " slots, catalog " + std::to_string(s->cat->num_slots()));
  // The daemon must be the catalog's pid, running as the catalog's owner.
  struct stat st {};
  const bool owner_known = ::stat(("/dev/shm/" + catalog_name).c_str(), &st) == 0;
  if (!owner_known) {
    s->registration_error = s->what() + ": cannot stat /" + catalog_name;
    return s;
  }
  s->socket_address = std::string(s->cat->socket_address());
  s->daemon_pid = s->cat->daemon_pid();
  s->daemon_uid = st.st_uid;
  s->connect_registration();
  return s;
}

}  // namespace

std::string Slot::resolve_prefix(const std::optional<std::string>& prefix) {
  std::string value = prefix.value_or(""), source = "AttachOptions::prefix";
  if (!prefix) {
    const char* env = std::getenv("MESHDOCK_PREFIX");  // set but empty: as unset
    if (env && *env) {
      value = env;
      source = "$MESHDOCK_PREFIX";
    } else {
      value = shm::kDefaultPrefix;
    }
  }
  try {
    shm::validate_prefix(value);
  } catch (const shm::ProtocolError& e) {
    throw SdkError(source + ": " + e.what());
  }
  if (const auto problem = shm::prefix_separator_problem(value); !problem.empty())
    throw SdkError(source + " " + problem);
  return value;
}

Slot Slot::attach(const std::string& name, const AttachOptions& given) {
  AttachOptions options = given;
  options.prefix = resolve_prefix(given.prefix);
  const std::string& prefix = *options.prefix;
  std::string control_name, catalog_name;
  try {
    control_name = shm::control_object_name(prefix, name);
    catalog_name = shm::catalog_object_name(prefix, name);
  } catch (const shm::ProtocolError& e) {
    throw SdkError(e.what());
  }
  // Zero would call every live producer gone, and a negative one wraps around in
  // check_producer's unsigned compare: a killed daemon would never be noticed.
  if (options.producer_timeout <= std::chrono::milliseconds::zero())
    throw SdkError("slot '" + name + "' (/" + control_name +
                   "): AttachOptions::producer_timeout is " +
                   std::to_string(options.producer_timeout.count()) + " ms; it must be > 0");
  // The segments appear when the daemon loads the mesh: until then there is nothing to sleep
  // on, so look every 10 ms (polling the interrupt hook before each look's sleep).
  const auto deadline = deadline_after(options.timeout);
  std::shared_ptr<SlotState> s;
  while (!(s = open_segments(name, options, control_name, catalog_name))) {
    if (options.interrupt && options.interrupt())
      throw Interrupted("slot '" + name + "' (/" + prefix + name +
                        "): interrupted while attaching");
    if (Clock::now() >= deadline)
      throw AttachTimeout("slot '" + name + "' (/" + prefix + name + "): not published within " +
                          std::to_string(options.timeout.count()) +
                          " ms (is meshdockd running with prefix '" + prefix +
                          "' and the mesh loaded?)" + published_under(prefix, name));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s->check_producer();
  return Slot(std::move(s));
}

// With reattach: the producer is gone (`why`); look every 20 ms for segments of the same name
// whose producer is alive (a restarted daemon replaces the dead one's segments), until the
// deadline. Held frames keep the old SlotState, and so the old mappings.
void Slot::reattach_after(const ProducerGone& why, std::chrono::steady_clock::time_point deadline) {
  const auto control_name = shm::control_object_name(*s_->o.prefix, s_->name);
  const auto catalog_name = shm::catalog_object_name(*s_->o.prefix, s_->name);
  while (true) {
    if (auto fresh = open_segments(s_->name, s_->o, control_name, catalog_name)) {
      try {
        fresh->check_producer();
        s_ = std::move(fresh);
        ++reattaches_;
        return;
      } catch (const ProducerGone&) {
        // still the dead producer's segments
      }
    }
    if (Clock::now() >= deadline)
      throw ProducerGone(std::string(why.what()) + "; no live producer published it again in time");
    s_->poll_interrupt("while reattaching");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::uint32_t Slot::reattaches() const {
  return reattaches_;
}

const std::string& Slot::name() const {
  return s_->name;
}
std::uint32_t Slot::write_idx() const {
  return s_->cb->write_idx();
}
std::uint32_t Slot::num_slots() const {
  return s_->cb->num_slots();
}
std::int32_t Slot::device_type() const {
  return s_->device_type;
}
void Slot::check_producer() const {
  s_->check_producer();
}
double Slot::publish_time() const {
  return s_->cb->timestamp();
}

std::optional<Frame> Slot::wait(std::chrono::milliseconds timeout) {
  return take(timeout, false);
}

std::optional<Frame> Slot::latest(std::chrono::milliseconds timeout) {
  return take(timeout, true);
}

std::optional<Frame> Slot::take(std::chrono::milliseconds timeout, bool seen_too) {
  const auto deadline = deadline_after(timeout);
  const auto pid = ::getpid();
  s_->register_here();  // a forked child: its own registration
  int retries = 0;      // look-agains in a row at a page that did not hold frame w
  int empty_wakes = 0;  // futex wakes in a row that brought no new frame
  bool woken = false;   // slept on the futex and was woken: the frame's wake is reported
  while (true) {
    s_->settle(false);  // frames whose streams finished with them: their leases go
    try {
      s_->check_producer();
    } catch (const ProducerGone& gone) {
      if (!s_->o.reattach) throw;
      reattach_after(gone, deadline);
      continue;
    }
    // The futex value before write_idx: a publish after this read changes the futex, so the
    // sleep below returns at once. Sleeping on the value read (not on write_idx) means a
    // futex word that never equals write_idx (garbage) still sleeps instead of spinning.
    const std::uint32_t fv = s_->cat->futex_value();
    const std::uint32_t w = s_->cb->write_idx();
    if ((w > s_->last_seen || seen_too) && w > 0) {
      const std::uint32_t i = (w - 1) % s_->num_slots;
      auto page = s_->cat->page(i);
      if (!s_->registration.valid()) {
        // Refused at attach (or at a forked child's first wait). A daemon killed moments before
        // left segments whose heartbeat still looks fresh: within producer_timeout it says
        // ProducerGone above (or reattach finds the next producer), which is what the caller
        // must hear, not the refused registration. A daemon pid that is alive (or a heartbeat
        // fresh for longer than that: a pid of another pid namespace) is a live daemon this
        // process cannot register with (another network namespace): the error. Meanwhile there
        // is no frame to give.
        const auto now = Clock::now();
        if (!s_->unregistered_since) s_->unregistered_since = now;
        if (shm::pid_alive(s_->daemon_pid) ||
            now - *s_->unregistered_since > s_->o.producer_timeout + 5 * kProducerPoll)
          throw SdkError(s_->registration_error +
                         " (a lease of an unregistered process would not count)");
        if (now >= deadline) return std::nullopt;
        s_->poll_interrupt("while waiting for a frame");
        std::this_thread::sleep_for(
            std::min<Clock::duration>(deadline - now, s_->max_sleep(kProducerPoll)));
        continue;
      }
      // Ended frames waiting for their streams hold leases: past kEndedPerRingSlot on this
      // ring slot (the daemon honours 8 leases per process and ring slot and clears the rest),
      // or when they hold every entry, wait for that work first: backpressure on a consumer
      // queueing faster than its GPU runs.
      if (s_->ended_on(i) >= kEndedPerRingSlot) s_->settle(true);
      auto table = s_->lv->table(i);
      auto lease = table.acquire(pid, w);
      if (!lease) {
        s_->settle(true);
        lease = table.acquire(pid, w);
      }
      if (!lease)
        throw SdkError(s_->what() + ": every lease of slot " + std::to_string(i) +
                       " is taken (too many frames held; release some)");
      // The daemon honours kMaxLeasesPerProcess leases of a process on a ring slot and clears
      // the rest: a frame past them would be overwritten while held. Refuse it instead (after
      // letting ended frames whose streams are done go).
      if (held_by(table, pid) > shm::kMaxLeasesPerProcess) {
        s_->settle(true);
        if (held_by(table, pid) > shm::kMaxLeasesPerProcess) {
          table.release(*lease, pid);
          throw SdkError(s_->what() + ": this process holds " +
                         std::to_string(shm::kMaxLeasesPerProcess) + " frames of ring slot " +
                         std::to_string(i) +
                         " already, as many as the daemon protects per "
                         "process and ring slot; release one (a Frame and every array taken "
                         "from it) before taking another");
        }
      }
      // The consumer's half of the handshake in PageView::begin_write.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      std::optional<shm::PageSnapshot> snap;
      try {
        snap = page.try_read();
      } catch (const shm::ProtocolError& e) {
        table.release(*lease, pid);
        throw SdkError(s_->what() + ": " + e.what());
      }
      // A page being refilled settles in microseconds; one that stays odd or never holds
      // frame w (a dead writer, or forged bytes) must not spin: back off, keep the deadline.
      // False: the deadline has passed.
      auto pause_before_looking_again = [&] {
        if (++retries <= 3) {
          std::this_thread::yield();
          return true;
        }
        const auto now = Clock::now();
        if (now >= deadline) return false;
        s_->poll_interrupt("while waiting for a frame");
        std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, kBackoff));
        return true;
      };
      if (!snap || snap->frame != w) {  // being refilled, or already newer: look again
        table.release(*lease, pid);
        if (!pause_before_looking_again()) return std::nullopt;
        continue;
      }
      auto f = std::make_shared<FrameState>();
      f->slot = s_;
      f->index = i;
      f->lease = *lease;  // from here the FrameState releases it
      f->frame = w;
      try {
        f->manifest = s_->decode(i, *snap);
      } catch (const shm::ProtocolError& e) {
        throw SdkError(s_->what() + ": frame " + std::to_string(w) + ": " + e.what());
      }
      f->mapping = s_->map(i, *snap);
      if (!f->mapping) {  // the page moved on before its buffer was opened: look again
        f.reset();        // releases the lease
        if (!pause_before_looking_again()) return std::nullopt;
        continue;
      }
      s_->last_seen = w;
      if (woken) {
        // Publish (the control block's timestamp, CLOCK_MONOTONIC) to this frame in hand.
        const double late = shm::monotonic_seconds() - s_->cb->timestamp();
        if (late >= 0 && late < 60)
          s_->registration.report_wake(w, static_cast<std::uint64_t>(late * 1e9));
      }
      return Frame(std::move(f));
    }
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    s_->poll_interrupt("while waiting for a frame");
    // Sleep until the futex moves; wake every 100 ms to notice a dead producer (50 ms with an
    // interrupt hook). The daemon moves the futex only after write_idx, so a wake without a
    // new frame happens at most once in a row honestly; more means somebody is toggling the
    // word: sleep 1 ms plainly then.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const auto nap = std::min(left, s_->max_sleep(kProducerPoll));
    if (empty_wakes >= 2) {
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, kBackoff));
      empty_wakes = 0;
    } else if (shm::futex_wait(s_->cat->futex_word(), fv, nap) == shm::WaitResult::kChanged) {
      ++empty_wakes;
      woken = true;
    } else {
      empty_wakes = 0;
    }
  }
}

// ---- Frame
// ---------------------------------------------------------------------------------------

std::uint64_t Frame::number() const {
  return s_->frame;
}
std::uint32_t Frame::slot_index() const {
  return s_->index;
}
const shm::Manifest& Frame::manifest() const {
  return *s_->manifest;
}
std::shared_ptr<const shm::Manifest> Frame::shared_manifest() const {
  return s_->manifest;
}
std::int32_t Frame::device_type() const {
  return s_->slot->device_type;
}
std::int32_t Frame::device_id() const {
  return s_->slot->device_id;
}
std::shared_ptr<const void> Frame::keepalive() const {
  return s_;
}

std::vector<std::string> Frame::names() const {
  std::vector<std::string> v;
  for (const auto& a : s_->manifest->arrays) v.push_back(a.name);
  return v;
}

ArrayRef Frame::array(const std::string& name) const {
  const auto* e = s_->manifest->find(name);
  if (!e)
    throw SdkError(s_->slot->what() + ": frame " + std::to_string(s_->frame) + " has no array '" +
                   name + "'");
  return array(static_cast<std::size_t>(e - s_->manifest->arrays.data()));
}

ArrayRef Frame::array(std::size_t index) const {
  const auto& arrays = s_->manifest->arrays;
  if (index >= arrays.size())
    throw SdkError(s_->slot->what() + ": frame " + std::to_string(s_->frame) + " has no array " +
                   std::to_string(index) + " (" + std::to_string(arrays.size()) + " arrays)");
  const auto* e = &arrays[index];
  ArrayRef r;
  r.name = e->name;
  r.entry = *e;
  r.data = data(index);
  r.device_type = device_type();
  r.device_id = device_id();
  return r;
}

void* Frame::data(std::size_t index) const {
  const auto& arrays = s_->manifest->arrays;
  if (index >= arrays.size())
    throw SdkError(s_->slot->what() + ": frame " + std::to_string(s_->frame) + " has no array " +
                   std::to_string(index) + " (" + std::to_string(arrays.size()) + " arrays)");
  return static_cast<std::byte*>(s_->mapping->base()) + arrays[index].offset;
}

DLManagedTensor* Frame::to_dlpack(const std::string& name) const {
  const auto r = array(name);
  return make_dlpack(r.data, DLDevice{static_cast<DLDeviceType>(r.device_type), r.device_id},
                     DLDataType{r.entry.dtype.code, r.entry.dtype.bits, r.entry.dtype.lanes},
                     r.entry.shape, r.entry.strides, s_);  // s_ holds the frame and its lease
}

void Frame::order_after_upload(std::uintptr_t stream) const {
  const auto& mp = *s_->mapping;
  if (!mp.device_ptr) return;  // a host slot
  if (mp.event) {
    try {
      mp.ipc->stream_wait(stream, mp.event);
    } catch (const std::exception& e) {
      throw SdkError(s_->slot->what() + ": frame " + std::to_string(s_->frame) + ": stream 0x" +
                     hex(stream) + " waiting for the slot's upload event: " + e.what());
    }
  }
  const FrameState::Use use{stream, stream == DeviceIpc::kPerThreadStream
                                        ? std::this_thread::get_id()
                                        : std::thread::id{}};
  std::lock_guard lock(s_->streams_m);
  if (std::find(s_->streams.begin(), s_->streams.end(), use) == s_->streams.end())
    s_->streams.push_back(use);
}

}  // namespace meshdock
