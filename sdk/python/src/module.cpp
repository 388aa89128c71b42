// _meshdock: the C++ half of the Python package.
//
// Exposes the C++ validators so Python can check that its pure-Python protocol mirror and the
// C++ headers accept and reject exactly the same bytes, plus run-time device detection.
// Protocol errors surface as meshdock.protocol.ProtocolError, the one Python type for them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon/backend/device_probe.hpp"
#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "daemon/payload/dlpack_export.hpp"
#include "daemon/payload/payload.hpp"
#include "meshdock/attach.hpp"
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
  d["daemon_uid"] = cat.daemon_uid();
  d["socket"] = py::bytes(cat.socket_address());
  py::list pages;
  for (std::uint32_t i = 0; i < cat.num_slots(); ++i) {
    auto page = cat.page(i);
    const auto snap = page.read(8);
    pages.append(py::dict(py::arg("seq") = snap.seq, py::arg("frame") = snap.frame,
                          py::arg("data_size") = snap.data_size,
                          py::arg("buffer_version") = snap.buffer_version,
                          py::arg("manifest") = py::bytes(snap.manifest)));
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
                  py::arg("cuda_status") = r.cuda_status,
                  py::arg("runtime_version") = r.runtime_version,
                  py::arg("driver_version") = r.driver_version, py::arg("devices") = devs);
}

// ---- mesh I/O ----------------------------------------------------------------------------------
namespace mesh = meshdock::mesh;

// A numpy view of an Array that keeps its Buffer alive (the Buffer object is the array's base).
py::object to_numpy(const mesh::Array& a) {
  if (!a.valid()) return py::none();
  const auto d = a.dtype();
  // numpy's type characters for DLPack (code, bits): i/u/f/b + bytes; bfloat16 has none.
  if ((d.code != 0 && d.code != 1 && d.code != 2 && d.code != 6) || d.lanes != 1 ||
      (d.code == 2 && d.bits < 16)) {
    throw py::type_error("no numpy dtype for DLPack (code " + std::to_string(d.code) + ", " +
                         std::to_string(d.bits) + " bits)");
  }
  const char kind = d.code == 0 ? 'i' : d.code == 1 ? 'u' : d.code == 2 ? 'f' : 'b';
  py::dtype dt(std::string(kind == 'b' ? "|" : "<") + kind + std::to_string(d.bits / 8));
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(a.itemsize());
  for (std::size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= shape[k];
  }
  return py::array(dt, shape, strides, a.data(), py::cast(a.buffer()));
}

py::dict read_mesh(const std::string& path, const std::string& format) {
  mesh::Mesh m;
  {
    py::gil_scoped_release release;
    m = mesh::read_mesh(path, format);
  }
  py::list cells;
  for (const auto& b : m.cells) {
    cells.append(py::make_tuple(b.type, to_numpy(b.connectivity), to_numpy(b.offsets),
                                to_numpy(b.face_offsets)));
  }
  py::dict point_data, cell_data, field_data;
  for (const auto& [k, v] : m.point_data) point_data[py::str(k)] = to_numpy(v);
  for (const auto& [k, v] : m.cell_data) {
    py::list l;
    for (const auto& a : v) l.append(to_numpy(a));
    cell_data[py::str(k)] = l;
  }
  for (const auto& [k, v] : m.field_data) field_data[py::str(k)] = to_numpy(v);
  py::list regions;
  for (const auto& r : m.regions) {
    regions.append(
        py::make_tuple(r.name, mesh::region_kind_name(r.kind), r.dim, r.tag, to_numpy(r.entries)));
  }
  return py::dict(py::arg("points") = to_numpy(m.points), py::arg("cells") = cells,
                  py::arg("point_data") = point_data, py::arg("cell_data") = cell_data,
                  py::arg("field_data") = field_data, py::arg("regions") = regions,
                  py::arg("notes") = m.notes);
}

// A C-contiguous numpy array adopted as an Array without a copy: the Buffer holds a reference
// to the numpy object and drops it (under the GIL) when the last Array using it is gone.
mesh::Array from_numpy(const py::handle& obj, const std::string& what) {
  if (obj.is_none()) return {};
  auto arr = py::array::ensure(obj);
  if (!arr) throw py::type_error(what + " is not an array");
  if (!(arr.flags() & py::array::c_style))
    throw py::value_error(what + " is not C-contiguous (pass np.ascontiguousarray)");
  const auto dt = arr.dtype();
  const char kind = dt.kind();
  if (dt.byteorder() == '>') throw py::value_error(what + " is big-endian; convert it first");
  std::uint8_t code;
  if (kind == 'i')
    code = 0;
  else if (kind == 'u')
    code = 1;
  else if (kind == 'f')
    code = 2;
  else if (kind == 'b')
    code = 6;
  else if (kind == 'c')
    code = 5;  // kDLComplex: carried so the layer that cannot take it names the array
  else
    throw py::type_error(what + " has dtype " +
                         py::str(static_cast<const py::handle&>(dt)).cast<std::string>() +
                         ", which is not numeric");
  std::vector<std::int64_t> shape(arr.shape(), arr.shape() + arr.ndim());
  const auto nbytes = static_cast<std::size_t>(arr.nbytes());
  // C++ only reads these (writers) or shares them (payload): read-only arrays are fine.
  void* data = const_cast<void*>(arr.data());
  PyObject* owner = arr.release().ptr();
  mesh::Allocator hold;
  hold.ctx = owner;
  hold.name = "numpy";
  hold.release = [](void*, std::size_t, void* ctx) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(ctx));
  };
  auto buffer = mesh::Buffer::adopt(data, nbytes, hold);
  return mesh::Array::view(std::move(buffer),
                           mesh::DType{code, static_cast<std::uint8_t>(dt.itemsize() * 8), 1},
                           std::move(shape));
}

mesh::RegionKind region_kind(const std::string& k) {
  if (k == "point") return mesh::RegionKind::kPoint;
  if (k == "cell") return mesh::RegionKind::kCell;
  if (k == "side") return mesh::RegionKind::kSide;
  throw py::value_error("region kind '" + k + "' is not point, cell or side");
}

// The dict form meshdock/mesh.py builds (the same shape read_mesh returns) -> Mesh.
mesh::Mesh mesh_from_dict(const py::dict& d) {
  mesh::Mesh m;
  m.points = from_numpy(d["points"], "points");
  for (const auto& c : d["cells"].cast<py::list>()) {
    const auto t = c.cast<py::tuple>();
    mesh::CellBlock b;
    b.type = t[0].cast<std::string>();
    const auto what = "cells block '" + b.type + "'";
    b.connectivity = from_numpy(t[1], what + " data");
    b.offsets = from_numpy(t[2], what + " offsets");
    b.face_offsets = from_numpy(t[3], what + " face_offsets");
    m.cells.push_back(std::move(b));
  }
  for (const auto& [k, v] : d["point_data"].cast<py::dict>()) {
    const auto name = k.cast<std::string>();
    m.point_data[name] = from_numpy(v, "point_data '" + name + "'");
  }
  for (const auto& [k, v] : d["cell_data"].cast<py::dict>()) {
    const auto name = k.cast<std::string>();
    auto& parts = m.cell_data[name];
    for (const auto& a : v.cast<py::list>())
      parts.push_back(from_numpy(a, "cell_data '" + name + "'"));
  }
  for (const auto& [k, v] : d["field_data"].cast<py::dict>()) {
    const auto name = k.cast<std::string>();
    m.field_data[name] = from_numpy(v, "field_data '" + name + "'");
  }
  for (const auto& r : d["regions"].cast<py::list>()) {
    const auto t = r.cast<py::tuple>();
    mesh::Region reg;
    reg.name = t[0].cast<std::string>();
    reg.kind = region_kind(t[1].cast<std::string>());
    reg.dim = t[2].cast<int>();
    reg.tag = t[3].cast<std::int64_t>();
    reg.entries = from_numpy(t[4], "region '" + reg.name + "' entries");
    m.regions.push_back(std::move(reg));
  }
  return m;
}

std::vector<std::string> write_mesh(const std::string& path, const py::dict& d,
                                    const std::string& format, const std::string& encoding,
                                    int zlib_level) {
  const auto m = mesh_from_dict(d);
  mesh::WriteOptions o;
  o.format = format;
  o.encoding = encoding;
  o.zlib_level = zlib_level;
  py::gil_scoped_release release;
  return mesh::write_mesh(m, path, o);
}

// ---- payload and DLPack -------------------------------------------------------------------------
namespace payload = meshdock::payload;

// One payload array as Python sees it: speaks DLPack (__dlpack__ / __dlpack_device__), and
// numpy's __array__ for host memory. Holding it keeps the memory alive.
struct Tensor {
  mesh::Array array;
  payload::Device device;
  std::string name;
  // CUDA slot arrays: orders a consumer's stream after the slot's upload event.
  std::function<void(std::uintptr_t)> order_stream;
};

py::object dlpack_capsule(const Tensor& t, const py::object& stream) {
  if (!stream.is_none() && t.device.type != 2)
    throw py::value_error(t.name + ": stream must be None for a host array");
  if (t.device.type == 2 && t.order_stream) {
    // DLPack stream semantics: None / 1 = the legacy default stream, 2 = per-thread default,
    // -1 = the consumer synchronises itself; any other value is a cudaStream_t.
    const std::intptr_t s = stream.is_none() ? 1 : stream.cast<std::intptr_t>();
    if (s != -1) t.order_stream(static_cast<std::uintptr_t>(s == 1 ? 0 : s));
  }
  DLManagedTensor* mt = payload::to_dlpack(t.array, t.device, t.name);
  // A consumer renames the capsule to "used_dltensor" and owns the tensor from then on; a
  // capsule never consumed runs the deleter itself.
  PyObject* cap = PyCapsule_New(mt, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* p = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      if (p && p->deleter) p->deleter(p);
    }
  });
  if (!cap) {
    mt->deleter(mt);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

py::object tensor(const mesh::Array& a, const payload::Device& dev, const std::string& name) {
  return py::cast(Tensor{a, dev, name, {}});
}

// ---- attach (libmeshdock)
// The interrupt hook of every Slot made here: wait() and attach() run with the GIL released, so
// nothing else would run Python's signal handlers; this takes the GIL back at least every 50 ms
// and runs them. A handler that raises (SIGINT's KeyboardInterrupt) leaves its exception pending
// on this thread and stops the wait; the binding then raises exactly that exception.
bool check_signals() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

// Runs `f` with the GIL released; an Interrupted from the hook becomes the pending exception.
template <typename F>
auto without_gil(F&& f) {
  try {
    py::gil_scoped_release release;
    return f();
  } catch (const meshdock::Interrupted&) {
    if (PyErr_Occurred()) throw py::error_already_set();
    throw;
  }
}

// ------------------------------------------------------------------------ A frame's array as an
// Array: its Buffer adopts the slot memory and holds the frame (so the lease) until the last
// Tensor, numpy view or DLPack consumer of it is gone.
mesh::Array frame_array(const meshdock::Frame& f, const std::string& name) {
  const auto r = f.array(name);
  using Keep = std::shared_ptr<const void>;
  auto keep = std::make_unique<Keep>(f.keepalive());
  mesh::Allocator hold;
  hold.name = "slot";
  hold.ctx = keep.get();
  hold.release = [](void*, std::size_t, void* ctx) {
    std::unique_ptr<Keep>(static_cast<Keep*>(ctx));
  };
  auto buffer = mesh::Buffer::adopt(r.data, r.entry.nbytes, hold);
  keep.release();  // the Buffer owns it now
  return mesh::Array::view(std::move(buffer), r.entry.dtype, r.entry.shape);
}

py::dict frame_dict(const meshdock::Frame& f) {
  const auto& m = f.manifest();
  const payload::Device dev{f.device_type(), f.device_id()};
  std::function<void(std::uintptr_t)> order;
  if (dev.type == 2) order = [f](std::uintptr_t s) { f.order_after_upload(s); };
  py::dict arrays;
  for (const auto& a : m.arrays)
    arrays[py::str(a.name)] = py::cast(Tensor{frame_array(f, a.name), dev, a.name, order});
  py::list regions;
  for (const auto& r : m.regions)
    regions.append(py::make_tuple(r.name, r.kind, r.dim, r.tag, r.array));
  return py::dict(py::arg("number") = f.number(), py::arg("slot") = f.slot_index(),
                  py::arg("device") = py::make_tuple(dev.type, dev.id), py::arg("arrays") = arrays,
                  py::arg("cell_types") = m.cell_types, py::arg("block_bases") = m.block_bases,
                  py::arg("regions") = regions, py::arg("field_data") = m.field_data.dump(),
                  py::arg("notes") = m.notes, py::arg("derived") = m.derived,
                  py::arg("dropped") = m.dropped);
}

py::dict build_payload(const py::dict& d, bool float32, bool int32, bool zero_copy_only) {
  const auto m = mesh_from_dict(d);
  payload::Options o;
  o.float32 = float32;
  o.int32 = int32;
  o.zero_copy_only = zero_copy_only;
  payload::DevicePayload p;
  {
    py::gil_scoped_release release;
    p = payload::build_payload(m, o);
  }
  // Every dtype is checked here, so an unsupported one fails at build time naming the array.
  for (const auto& na : payload::payload_arrays(p)) payload::dlpack_dtype(*na.array, na.name);
  const auto& dev = p.device;
  py::list cells, regions;
  for (std::size_t b = 0; b < p.cells.size(); ++b)
    cells.append(tensor(p.cells[b], dev, "cells/" + std::to_string(b)));
  py::dict point_data, cell_data, field_data;
  for (const auto& [k, v] : p.point_data)
    point_data[py::str(k)] = tensor(v, dev, "point_data/" + k);
  for (const auto& [k, v] : p.cell_data) {
    py::list l;
    for (std::size_t b = 0; b < v.size(); ++b)
      l.append(tensor(v[b], dev, "cell_data/" + k + "/" + std::to_string(b)));
    cell_data[py::str(k)] = l;
  }
  for (const auto& [k, v] : p.field_data) field_data[py::str(k)] = to_numpy(v);
  for (const auto& r : p.regions) {
    regions.append(py::make_tuple(r.name, mesh::region_kind_name(r.kind), r.dim, r.tag,
                                  tensor(r.entries, dev, "regions/" + r.name)));
  }
  return py::dict(
      py::arg("points") = tensor(p.points, dev, "points"), py::arg("cell_types") = p.cell_types,
      py::arg("cells") = cells, py::arg("block_bases") = tensor(p.block_bases, dev, "block_bases"),
      py::arg("point_data") = point_data, py::arg("cell_data") = cell_data,
      py::arg("field_data") = field_data, py::arg("regions") = regions,
      py::arg("device") = py::make_tuple(dev.type, dev.id), py::arg("dropped") = p.dropped,
      py::arg("shared") = p.shared, py::arg("notes") = p.notes, py::arg("derived") = p.derived);
}

// Adopts any host object speaking DLPack as an Array (no copy) and back as a numpy view.
py::object numpy_from_dlpack(const py::object& obj, const std::string& name) {
  py::object cap = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
    throw py::value_error(name + ": __dlpack__ did not return a 'dltensor' capsule");
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  return to_numpy(payload::from_dlpack(mt, name));
}

std::string numpy_dtype_name(const mesh::Array& a) {
  const auto d = a.dtype();
  if (d.code == 4) return "bfloat16";
  if (d.code == 6) return "bool";
  return std::string(d.code == 0 ? "int" : d.code == 1 ? "uint" : "float") + std::to_string(d.bits);
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
    } catch (const mesh::ReadError& e) {
      py::object cls = py::module_::import("meshdock.mesh").attr("ReadError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const mesh::WriteError& e) {
      py::object cls = py::module_::import("meshdock.mesh").attr("WriteError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const mesh::MeshError& e) {
      py::object cls = py::module_::import("meshdock.mesh").attr("MeshError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const payload::PayloadError& e) {
      py::object cls = py::module_::import("meshdock.payload").attr("PayloadError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const meshdock::ProducerGone& e) {
      py::object cls = py::module_::import("meshdock.attach").attr("ProducerGone");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const meshdock::AttachTimeout& e) {
      py::object cls = py::module_::import("meshdock.attach").attr("AttachTimeout");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const meshdock::UntrustedSegment& e) {
      py::object cls = py::module_::import("meshdock.attach").attr("UntrustedSegment");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const meshdock::SegmentAccessDenied& e) {
      py::object cls = py::module_::import("meshdock.attach").attr("SegmentAccessDenied");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const meshdock::Interrupted& e) {
      // Normally the hook's pending KeyboardInterrupt is raised instead (see without_gil).
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const meshdock::SdkError& e) {
      py::object cls = py::module_::import("meshdock.attach").attr("SdkError");
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
  py::class_<mesh::Buffer, std::shared_ptr<mesh::Buffer>>(
      m, "Buffer", "Owner of one mesh array allocation; numpy views keep it alive as their base.")
      .def_property_readonly("nbytes", &mesh::Buffer::size)
      .def_property_readonly("allocator", &mesh::Buffer::allocator_name);
  m.def("read_mesh", &read_mesh, py::arg("path"), py::arg("format") = "",
        "Read a mesh file with the C++ readers; returns a dict of numpy views (no copies).");
  m.def(
      "release_host_cache",
      [] {
        const auto kept = mesh::host_cached_bytes();
        mesh::release_host_cache();
        return kept;
      },
      "Unmap the released big array buffers kept for reuse; returns their size in bytes.");
  m.def("write_mesh", &write_mesh, py::arg("path"), py::arg("mesh"), py::arg("format") = "",
        py::arg("encoding") = "", py::arg("zlib_level") = 6,
        "Write a mesh (the dict form of meshdock.Mesh) with the C++ writers; returns the notes.");
  py::class_<Tensor>(m, "Tensor",
                     "One payload array: speaks DLPack (torch/np/cupy .from_dlpack adopt it "
                     "without a copy) and keeps its memory alive.")
      .def("__dlpack__", &dlpack_capsule, py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const Tensor& t) { return py::make_tuple(t.device.type, t.device.id); })
      .def(
          "__array__",
          [](const Tensor& t, const py::object& dtype) {
            if (t.device.type != 1 && t.device.type != 3)
              throw py::type_error(t.name + " is device memory; use cupy or torch");
            py::object a = to_numpy(t.array);
            return dtype.is_none() ? a : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def_property_readonly("shape",
                             [](const Tensor& t) { return py::tuple(py::cast(t.array.shape())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return numpy_dtype_name(t.array); })
      .def_property_readonly("nbytes", [](const Tensor& t) { return t.array.nbytes(); })
      .def_property_readonly(
          "data_ptr",
          [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.array.data()); })
      .def_property_readonly("name", [](const Tensor& t) { return t.name; })
      .def("__len__", [](const Tensor& t) { return t.array.dim(0); })
      .def("__repr__", [](const Tensor& t) {
        std::string s = "<meshdock.Tensor " + t.name + " " + numpy_dtype_name(t.array) + " (";
        for (std::size_t k = 0; k < t.array.ndim(); ++k)
          s += (k ? ", " : "") + std::to_string(t.array.dim(k));
        return s + (t.array.ndim() == 1 ? ",)" : ")") + " device (" +
               std::to_string(t.device.type) + ", " + std::to_string(t.device.id) + ")>";
      });
  m.def("build_payload", &build_payload, py::arg("mesh"), py::arg("float32") = false,
        py::arg("int32") = false, py::arg("zero_copy_only") = false,
        "Mesh (dict form) -> host DevicePayload (dict of Tensors), by the C++ builder.");
  m.def("numpy_from_dlpack", &numpy_from_dlpack, py::arg("obj"), py::arg("name"),
        "Adopt a host DLPack exporter as a numpy array without a copy.");
  py::class_<meshdock::Slot>(m, "Slot",
                             "A slot attached with libmeshdock (meshdock.attach wraps it).")
      .def_static(
          "attach",
          [](const std::string& name, const std::string& prefix, double timeout,
             double producer_timeout, bool reattach, std::optional<std::uint32_t> owner_uid) {
            meshdock::AttachOptions o;
            o.reattach = reattach;
            o.prefix = prefix;
            o.timeout = std::chrono::milliseconds(static_cast<long>(timeout * 1000));
            o.producer_timeout =
                std::chrono::milliseconds(static_cast<long>(producer_timeout * 1000));
            o.owner_uid = owner_uid;
            o.interrupt = check_signals;
            return without_gil([&] { return meshdock::Slot::attach(name, o); });
          },
          py::arg("name"), py::arg("prefix"), py::arg("timeout"), py::arg("producer_timeout"),
          py::arg("reattach") = false, py::arg("owner_uid") = py::none())
      .def(
          "wait",
          [](meshdock::Slot& s, double timeout) -> py::object {
            const auto f = without_gil([&] {
              return s.wait(std::chrono::milliseconds(static_cast<long>(timeout * 1000)));
            });
            if (!f) return py::none();
            return frame_dict(*f);
          },
          py::arg("timeout"))
      .def_property_readonly("name", &meshdock::Slot::name)
      .def_property_readonly("write_idx", &meshdock::Slot::write_idx)
      .def_property_readonly("num_slots", &meshdock::Slot::num_slots)
      .def_property_readonly("device_type", &meshdock::Slot::device_type)
      .def_property_readonly("publish_time", &meshdock::Slot::publish_time)
      .def_property_readonly("reattaches", &meshdock::Slot::reattaches)
      .def("check_producer", &meshdock::Slot::check_producer);
  m.def("probe_devices", &probe_devices, "Which CUDA devices answer (never raises).");
}
