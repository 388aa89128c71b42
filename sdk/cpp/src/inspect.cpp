#include "meshdock/inspect.hpp"

namespace meshdock {

namespace {

std::string describe_handle(const shm::Handle& h) {
  bool zero = true;
  for (auto b : h) zero = zero && b == std::byte{0};
  if (zero) return "";
  if (shm::is_host_handle(h)) return "host:" + shm::parse_host_handle(h);
  return "cuda";
}

}  // namespace

SlotReport inspect_slot(std::string_view name, std::string_view prefix) {
  SlotReport r;
  try {
    r.control_object = shm::control_object_name(prefix, name);
    r.catalog_object = shm::catalog_object_name(prefix, name);
    if (!shm::Segment::exists(r.control_object)) {
      throw SdkError("slot '" + std::string(name) + "': no control block /" + r.control_object +
                     " (is meshdockd running with prefix '" + std::string(prefix) + "'?)");
    }
    auto control = shm::Segment::open(r.control_object);
    auto cb = shm::ControlBlockView::validate(control.data(), control.size(), r.control_object);
    r.num_slots = cb.num_slots();
    r.write_idx = cb.write_idx();
    r.version = cb.version();
    r.shutdown = cb.shutdown();
    r.metadata = cb.metadata();
    r.timestamp = cb.timestamp();

    if (!shm::Segment::exists(r.catalog_object)) return r;
    auto catalog = shm::Segment::open(r.catalog_object);
    auto cat = shm::CatalogView::validate(catalog.data(), catalog.size(), r.catalog_object);
    if (cat.num_slots() != r.num_slots) {
      throw SdkError("slot '" + std::string(name) + "': catalog has " +
                     std::to_string(cat.num_slots()) + " pages but the control block " +
                     std::to_string(r.num_slots) + " slots");
    }
    r.has_catalog = true;
    r.daemon_pid = cat.daemon_pid();
    r.daemon_alive = shm::pid_alive(r.daemon_pid);
    const auto now = shm::monotonic_ns();
    const auto hb = cat.heartbeat_ns();
    r.heartbeat_age_ns = hb && now > hb ? now - hb : 0;
    r.device_type = cat.device_type();
    r.device_id = cat.device_id();
    if (shm::uuid_known(cat.device_uuid())) r.device_uuid = shm::uuid_string(cat.device_uuid());
    // The leases live in their own segment since layout 2; its shape is the catalog's.
    const auto leases_object = shm::leases_object_name(prefix, name);
    shm::Segment leases_seg;
    std::optional<shm::LeasesView> leases;
    if (shm::Segment::exists(leases_object)) {
      leases_seg = shm::Segment::open(leases_object);
      leases.emplace(shm::LeasesView::over(leases_seg.data(), leases_seg.size(), cat.num_slots(),
                                           cat.lease_capacity(), leases_object));
    }
    for (std::uint32_t i = 0; i < r.num_slots; ++i) {
      const auto page = cat.page(i);
      const auto snap = page.read();
      PageReport p;
      p.index = i;
      p.seq = snap.seq;
      p.frame = snap.frame;
      p.data_size = snap.data_size;
      p.buffer_version = snap.buffer_version;
      p.handle = describe_handle(cb.mem_handle(i));
      if (leases) p.leases = leases->table(i).leases();
      if (!snap.manifest.empty()) p.manifest = shm::decode_manifest(snap.manifest, snap.data_size);
      r.pages.push_back(std::move(p));
    }
  } catch (const shm::ProtocolError& e) {
    throw SdkError("slot '" + std::string(name) + "': " + e.what());
  }
  return r;
}

nlohmann::json to_json(const shm::BufferMetadata& m) {
  return {{"width", m.width},         {"height", m.height},
          {"num_comps", m.num_comps}, {"format_kind", m.format_kind},
          {"bits", m.bits},           {"flags", m.flags},
          {"data_size", m.data_size}};
}

nlohmann::json to_json(const SlotReport& r) {
  nlohmann::json pages = nlohmann::json::array();
  for (const auto& p : r.pages) {
    nlohmann::json leases = nlohmann::json::array();
    for (const auto& l : p.leases) {
      leases.push_back(
          {{"index", l.index}, {"pid", l.pid}, {"claiming", l.claiming}, {"frame", l.frame}});
    }
    nlohmann::json arrays = nlohmann::json::array();
    if (p.manifest) {
      for (const auto& a : p.manifest->arrays) {
        arrays.push_back({{"name", a.name},
                          {"role", shm::role_name(a.role)},
                          {"shape", a.shape},
                          {"dtype", {a.dtype.code, a.dtype.bits, a.dtype.lanes}},
                          {"offset", a.offset},
                          {"nbytes", a.nbytes}});
      }
    }
    pages.push_back({{"index", p.index},
                     {"seq", p.seq},
                     {"frame", p.frame},
                     {"data_size", p.data_size},
                     {"buffer_version", p.buffer_version},
                     {"handle", p.handle},
                     {"leases", leases},
                     {"arrays", arrays}});
  }
  return {{"control_object", r.control_object},
          {"catalog_object", r.catalog_object},
          {"num_slots", r.num_slots},
          {"write_idx", r.write_idx},
          {"version", r.version},
          {"shutdown", r.shutdown},
          {"metadata", to_json(r.metadata)},
          {"timestamp", r.timestamp},
          {"has_catalog", r.has_catalog},
          {"daemon_pid", r.daemon_pid},
          {"daemon_alive", r.daemon_alive},
          {"heartbeat_age_ns", r.heartbeat_age_ns},
          {"device", {{"device_type", r.device_type}, {"device_id", r.device_id}}},
          {"device_uuid", r.device_uuid},
          {"pages", pages}};
}

}  // namespace meshdock
