// The daemon's state: every loaded mesh, by name, with its slot. What the gRPC service asks of
// meshdockd happens here, transport-free, so it is testable without a socket:
//
//   load:    name check -> open under a root (Roots: one fd, fstat) -> size budget -> read that
//            fd (no lock held, decoded sizes capped before inflating) -> payload -> device
//            choice -> memory budget reserved -> slot (created or reused) -> publish ->
//            reservation released (the buffers now count themselves). A cancelled load stops
//            at its next phase.
//   reload, unload, list, describe, publish a field (new frame), export, stats, maintain.
//
// Every failure is a ServiceError with the status the client gets and a message that names
// the thing; a failed load leaves every existing slot as it was.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/service/config.hpp"
#include "daemon/service/events.hpp"
#include "daemon/service/log.hpp"
#include "daemon/service/roots.hpp"
#include "daemon/slots/graveyard.hpp"
#include "daemon/slots/slot.hpp"

namespace meshdock::service {

// The status a request ends with (the gRPC codes it maps to).
enum class Status {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kUnavailable,
  kInternal,
  kCancelled,  // the client went away or its deadline passed
};

class ServiceError : public std::runtime_error {
 public:
  ServiceError(Status s, const std::string& what) : std::runtime_error(what), status_(s) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

struct LoadRequest {
  std::string path, name;
  payload::Options options;
  std::string device;  // "" = the daemon's default
  std::string format;  // "" = by extension
  bool watch = false;
  std::uint32_t num_slots = 0;  // 0 = the daemon's default
  bool replace = false;
};

enum class Phase { kOpen = 1, kRead, kBuildPayload, kCopy, kPublish, kDone };
using Progress =
    std::function<void(Phase, std::uint64_t done, std::uint64_t total, const std::string& message)>;
// Asked after every phase of a load: true stops the load there (ServiceError kCancelled), with
// nothing published and no segment made.
using Cancelled = std::function<bool()>;

struct MeshInfo {
  std::string name, path, format;
  payload::Device device;
  std::uint32_t num_slots = 0, write_idx = 0, leases = 0;
  std::uint64_t version = 0, data_size = 0, num_points = 0, num_cells = 0, bytes = 0;
  // Bytes publishes copied into slot buffers, and bytes they found there already.
  std::uint64_t copied_bytes = 0, kept_bytes = 0;
  std::vector<std::string> cell_types, notes, dropped;
  std::string control_segment, catalog_segment;
  double load_seconds = 0;
  bool watch = false;
};

// One honoured lease (meshdockctl leases): which mesh, and the slot layer's view of it.
struct LeaseReport {
  std::string mesh;
  slots::LeaseInfo lease;
};

struct Stats {
  std::vector<MeshInfo> meshes;
  std::uint64_t device_memory_used = 0, device_memory_budget = 0, host_memory_used = 0;
  std::uint64_t max_decoded_size = 0;  // decoded_size_limit(): what one publish may be
  double uptime_seconds = 0;
  std::string backend;        // what "auto" resolves to: "host" | "cuda"
  std::size_t consumers = 0;  // registered consumer connections
  std::size_t imports = 0;    // CUDA buffer imports consumers reported open (none on the host)
  // Device buffers of unloaded meshes kept because a consumer has them open, or within
  // cuda-link's grace (slots::Graveyard).
  std::uint64_t unloaded_open_bytes = 0;
  slots::ConsumerRegistry::WakeLatency wake;            // consumers' wake reports
  std::optional<backend::PinnedPool::Counters> pinned;  // when a device answers (the pool)
};

class Registry;

// A share of device_memory_budget taken, under the registry's lock, before the buffers it
// stands for are allocated; given back when it goes (by then those buffers count themselves in
// the backends' memory_used, or the request failed). Concurrent loads and publishes each
// reserve, so together they cannot pass the budget. Move-only.
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& o) noexcept : reg_(o.reg_), bytes_(o.bytes_), of_(o.of_) {
    o.reg_ = nullptr;
  }
  Reservation& operator=(Reservation&&) = delete;
  ~Reservation() { release(); }
  void release();
  std::uint64_t bytes() const { return bytes_; }

 private:
  friend class Registry;
  Reservation(Registry* r, std::uint64_t bytes, std::uint64_t Registry::*of)
      : reg_(r), bytes_(bytes), of_(of) {}
  Registry* reg_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::uint64_t Registry::*of_ = nullptr;  // the counter it is held in
};

class Registry {
 public:
  // Makes the backend of device cuda:N when a load first names it (BackendError when it
  // cannot). The daemon's is the CUDA runtime's; tests give a fake device (fake_device.hpp).
  using DeviceBackendMaker = std::function<std::unique_ptr<backend::Backend>(int id)>;
  Registry(Config config, Logger& log,
           DeviceBackendMaker make_device_backend = backend::make_cuda_backend);
  ~Registry();

  MeshInfo load(const LoadRequest& r, const Progress& progress, const Cancelled& cancelled = {});
  MeshInfo reload(const std::string& name, const Progress& progress,
                  const Cancelled& cancelled = {});
  void unload(const std::string& name);
  std::vector<MeshInfo> list() const;
  // The mesh and its newest manifest (JSON, verbatim from the catalog page).
  std::pair<MeshInfo, std::string> describe(const std::string& name) const;
  // Replaces "point_data/NAME" or "cell_data/NAME" (one block) with `data` and publishes a new
  // frame. Returns the frame. `may_wait`: whether a publish during a reload of `name` waits for
  // it (serving); false refuses it at once (the caller holds no thread it may park).
  std::uint32_t publish_field(const std::string& name, const std::string& field,
                              const mesh::Array& data, std::uint32_t block, bool may_wait = true);
  // `bytes` of a published array about to be allocated and taken in (from Publish messages or
  // a producer's shm object): all publishes under way together stay under max_decoded_size,
  // so concurrent ones cannot multiply what one may take (RESOURCE_EXHAUSTED naming `field`).
  // Held until the array has been published (or refused).
  Reservation reserve_incoming(std::uint64_t bytes, const std::string& field);
  // The checks publish_field makes on a field's name and rows, made before its data arrive
  // (Publish streams them): `bytes` the array will take is capped by max_decoded_size.
  void check_publish(const std::string& name, const std::string& field, std::int64_t rows,
                     std::uint32_t block, std::uint64_t bytes, bool may_wait = true) const;
  // A single-array publish (field "tensor", DESIGN.md "Control block"): `data` alone becomes
  // the frame of slot `name`, and the control block's metadata describes it (width, height,
  // comps, dtype) for cuda-link consumers. The first publish to a free name creates the slot
  // (on `device`, "" = the daemon's default, with `num_slots`, 0 = the default); later ones
  // replace the array (any shape or dtype). A mesh's name is INVALID_ARGUMENT. Returns the
  // frame. `may_wait`: whether a first publish waits while another client creates the slot.
  std::uint32_t publish_tensor(const std::string& name, const mesh::Array& data,
                               const std::string& device = "", std::uint32_t num_slots = 0,
                               bool may_wait = true);
  // The checks publish_tensor makes, before the data arrive (Publish streams them).
  void check_publish_tensor(const std::string& name, const mesh::DType& dtype,
                            const std::vector<std::int64_t>& shape, std::uint64_t bytes,
                            const std::string& device, std::uint32_t num_slots) const;
  // Takes `bytes` of the device memory budget for `name` (ServiceError kResourceExhausted when
  // the buffers alive plus every reservation would pass it).
  Reservation reserve(std::uint64_t bytes, const std::string& name);
  // Writes the mesh as the slot serves it to `path` (under a root): the bytes written and the
  // writer's notes (what the format could not hold; each is logged too). An existing file is
  // replaced only when `overwrite`; the source file of a loaded mesh never.
  struct Exported {
    std::uint64_t bytes = 0;
    std::vector<std::string> notes;
  };
  Exported export_to(const std::string& name, const std::string& path, const std::string& format,
                     bool overwrite = false);
  Stats stats() const;
  // Heartbeats, dead leases; returns the watched meshes whose file changed (to reload).
  std::vector<std::string> maintain();
  // Every honoured lease of every mesh, and revocation of every lease a pid holds (returns how
  // many were revoked; its frames may then be refilled under it).
  std::vector<LeaseReport> leases() const;
  std::size_t revoke(std::int32_t pid);
  EventBus& events() { return events_; }
  // Tells every Watch stream the daemon is stopping (a SHUTDOWN event saying `why`), before
  // the streams end.
  void announce_shutdown(const std::string& why = "meshdockd stopping");
  // "cuda:N: why" for a GPU whose context this process can never use again (Backend::lost: a
  // sticky CUDA error); "" when none is. The daemon then stops with status 1, to be restarted.
  std::string lost_device();
  // Unloads everything (shutdown flags set, segments removed).
  void clear();
  // Applies a new configuration (SIGHUP): roots, budgets, log level, defaults for new loads.
  void reconfigure(const Config& c);
  std::string backend_for(const std::string& device_spec) const;  // for messages
  // The pinned pool readers allocate from (it outlives the registry), for stats(). Once, at
  // start; none on the host backend.
  void set_pinned_pool(const backend::PinnedPool* pool) { pinned_ = pool; }

 private:
  struct Entry;
  // load() past the name check, which publishes what this says: `done` (LOADED or RELOADED)
  // when it returns; when it throws, LOAD_FAILED unless `taken` (the name was loaded and no
  // replace asked, or another load had it: refused, nothing changed).
  MeshInfo load_named(const LoadRequest& r, const Progress& report, const Cancelled& cancelled,
                      bool& taken, Event& done);
  // Checks the path as a string (NUL, length, absolute) and returns the roots to open it under:
  // the read roots, or (for_export) the export roots.
  std::shared_ptr<const Roots> roots_for(const std::string& path, bool for_export = false) const;
  backend::Backend& backend_for_device(const std::string& spec, std::string& chosen);
  MeshInfo info_of(const Entry& e) const;
  // A Slot for `e` (its backend chosen) with the configured prefix, mode, budget and leases.
  void make_slot(Entry& e, const std::string& name, std::uint32_t num_slots);
  // The error for a load or publish that failed on `b` (named `device`): `otherwise`, or
  // UNAVAILABLE naming the sticky error when the device is lost.
  static ServiceError device_failure(backend::Backend& b, const std::string& device,
                                     Status otherwise, const std::string& what);
  // Ends `slot` (an unload, or a reload onto another device or ring size): the device buffers a
  // consumer has open go to graveyard_ first, the rest with the Slot. Under the entry's m.
  void end_slot(std::unique_ptr<slots::Slot>& slot, const std::string& name);
  // Frees what graveyard_ holds that no consumer reports open any more (and what has waited
  // its grace, logged; with `end_quiet`, also what is kept only for cuda-link's grace). Not
  // under m_: the maintenance tick and every budget check.
  void tend_graveyard(std::uint64_t now_ns, bool end_quiet = false);
  // Publishes `p` into e's slot (e.m held) with the budget reserved first; errors as
  // ServiceErrors.
  slots::Published publish_into(Entry& e, const payload::DevicePayload& p, const std::string& name);
  // Under m_: whether a load or a tensor's first publish may claim `name` (none is filling it;
  // when it is new, max_meshes leaves room). Throws the ServiceError that says why not.
  void check_claim(const std::string& name, bool exists) const;
  static void refuse_field_of_tensor(const Entry& e, const std::string& name,
                                     const std::string& field);
  // Takes `name` (put in loading_ by a load or a tensor's first publish) out of loading_ when
  // it goes.
  struct Unmark {
    Registry& reg;
    const std::string& name;
    ~Unmark();
  };
  std::shared_ptr<Entry> find(const std::string& name) const;
  // The entry serving `name` with a slot, its m held by `lock`: a reload takes the old
  // entry's slot a moment before its own entry serves the name, and a publish in between waits
  // for it (at most 30 s: FAILED_PRECONDITION; at once when !may_wait). NOT_FOUND once unloaded.
  std::shared_ptr<Entry> serving(const std::string& name, std::unique_lock<std::mutex>& lock,
                                 bool may_wait = true) const;
  friend class Reservation;

  Config c_;
  Logger& log_;
  std::shared_ptr<const Roots> roots_;  // under m_; replaced whole by reconfigure
  // Where Export writes: roots_ itself when the config has no export_roots. Under m_.
  std::shared_ptr<const Roots> export_roots_;
  EventBus events_;
  mutable std::mutex m_;  // entries_, loading_, backends_, c_
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::set<std::string> loading_;
  // The names in loading_ that a tensor's first publish is making: another publish to such a
  // name waits (created_) and goes into the slot it makes, as any later publish does.
  std::set<std::string> creating_tensor_;
  // Notified when a name leaves loading_ (Unmark): a tensor made, a load or reload done.
  mutable std::condition_variable created_;
  std::uint64_t reserved_ = 0;                 // bytes of the budget held by Reservations
  std::uint64_t incoming_ = 0;                 // bytes of publishes being taken in
  std::atomic<std::uint32_t> loads_begun_{0};  // counts loads for Failpoint::after
  std::unique_ptr<backend::Backend> host_;
  std::shared_ptr<slots::ConsumerRegistry> consumers_;  // one registration socket for all meshes
  DeviceBackendMaker make_device_backend_;
  std::map<int, std::unique_ptr<backend::Backend>> cuda_;
  // Device buffers of unloaded meshes a consumer still has open (after the backends: theirs).
  slots::Graveyard graveyard_{consumers_};
  const backend::PinnedPool* pinned_ = nullptr;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_watch_check_{};
};

}  // namespace meshdock::service
