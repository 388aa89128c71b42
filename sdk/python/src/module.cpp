// _meshdock: the C++ half of the Python package.
//
// Exposes the C++ validators so Python can check that its pure-Python protocol mirror and the
// C++ headers accept and reject exactly the same bytes, plus run-time device detection.
// Protocol errors surface as meshdock.protocol.ProtocolError, the one Python type for them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/backend/device_probe.hpp"
#include "meshdock/shm.hpp"

namespace py = pybind11;
namespace shm = meshdock::shm;

namespace {

// Mapped segments are page aligned; Python bytes are not, so copy into an 8-aligned buffer.
std::vector<std::uint64_t> aligned_copy(const std::string& bytes) {
  std::vector<std::uint64_t> buf((bytes.size() + 7) / 8 + 1, 0);
  std::memcpy(buf.data(), bytes.data(), bytes.size());
  return buf;
}

py::bytes handle_bytes(const shm::Handle& h) {
  return py::bytes(reinterpret_cast<const char*>(h.data()), h.size());
}

py::dict validate_control_block(const py::bytes& data) {
  const std::string bytes = data;
  auto buf = aligned_copy(bytes);
  auto cb = shm::ControlBlockView::validate(buf.data(), bytes.size(), "bytes");
  py::dict d;
  d["num_slots"] = cb.num_slots();
  d["version"] = cb.version();
  d["write_idx"] = cb.write_idx();
  d["shutdown"] = cb.shutdown_byte();
  const auto m = cb.metadata();
  d["metadata"] = py::dict(py::arg("width") = m.width, py::arg("height") = m.height,
                           py::arg("num_comps") = m.num_comps,
                           py::arg("format_kind") = m.format_kind, py::arg("bits") = m.bits,
                           py::arg("flags") = m.flags, py::arg("data_size") = m.data_size);
  d["timestamp"] = cb.timestamp();
  py::list mem, ev;
  for (std::uint32_t i = 0; i < cb.num_slots(); ++i) {
    mem.append(handle_bytes(cb.mem_handle(i)));
    ev.append(handle_bytes(cb.event_handle(i)));
  }
  d["mem_handles"] = mem;
  d["event_handles"] = ev;
  return d;
}

py::dict validate_catalog(const py::bytes& data) {
  const std::string bytes = data;
  auto buf = aligned_copy(bytes);
  auto cat = shm::CatalogView::validate(buf.data(), bytes.size(), "bytes");
  py::dict d;
  d["num_slots"] = cat.num_slots();
  d["page_size"] = cat.page_size();
  d["lease_capacity"] = cat.lease_capacity();
  d["daemon_pid"] = cat.daemon_pid();
  d["device_type"] = cat.device_type();
  d["device_id"] = cat.device_id();
  d["heartbeat_ns"] = cat.heartbeat_ns();
  d["futex"] = cat.futex_value();
  d["total_size"] = cat.total_size();
  py::list pages;
  for (std::uint32_t i = 0; i < cat.num_slots(); ++i) {
    auto page = cat.page(i);
    const auto snap = page.read(8);
    py::list leases;
    for (const auto& l : page.leases()) {
      leases.append(py::make_tuple(l.index, l.pid, l.claiming, l.frame));
    }
    pages.append(py::dict(
        py::arg("seq") = snap.seq, py::arg("frame") = snap.frame,
        py::arg("data_size") = snap.data_size, py::arg("buffer_version") = snap.buffer_version,
        py::arg("manifest") = py::bytes(snap.manifest), py::arg("leases") = leases));
  }
  d["pages"] = pages;
  return d;
}

// Returns the manifest re-encoded canonically by the C++ encoder.
std::string decode_manifest(const std::string& text, std::uint64_t data_size) {
  return shm::encode_manifest(shm::decode_manifest(text, data_size));
}

py::dict probe_devices() {
  const auto r = meshdock::backend::probe_devices();
  py::list devs;
  for (const auto& dev : r.devices) {
    devs.append(py::dict(py::arg("id") = dev.id, py::arg("name") = dev.name,
                         py::arg("total_memory") = dev.total_memory,
                         py::arg("capability") = py::make_tuple(dev.major, dev.minor)));
  }
  return py::dict(py::arg("built_with_cuda") = r.built_with_cuda,
                  py::arg("cuda_status") = r.cuda_status, py::arg("devices") = devs);
}

}  // namespace

PYBIND11_MODULE(_meshdock, m) {
  m.doc() = "meshdock C++ core (protocol validators, device detection)";
  m.attr("__version__") = "0.1.0";
  m.attr("CONTROL_MAGIC") = shm::kControlMagic;
  m.attr("CATALOG_LAYOUT_VERSION") = shm::kCatalogLayoutVersion;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const shm::ProtocolError& e) {
      py::object cls = py::module_::import("meshdock.protocol").attr("ProtocolError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });

  m.def("validate_control_block", &validate_control_block, py::arg("data"),
        "Validate a control block with the C++ validator; returns its fields.");
  m.def("validate_catalog", &validate_catalog, py::arg("data"),
        "Validate a catalog segment with the C++ validator; returns header and pages.");
  m.def("decode_manifest", &decode_manifest, py::arg("text"), py::arg("data_size"),
        "Check a manifest against a slot buffer size; returns it re-encoded by C++.");
  m.def("control_block_size", &shm::control_block_size, py::arg("num_slots"));
  m.def(
      "validate_name", [](const std::string& n) { shm::validate_name(n); }, py::arg("name"));
  m.def("data_object_name", &shm::data_object_name, py::arg("prefix"), py::arg("name"),
        py::arg("slot"), py::arg("version"));
  m.def("probe_devices", &probe_devices, "Which CUDA devices answer (never raises).");
}
