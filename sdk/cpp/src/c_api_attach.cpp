// The C ABI of attach: meshdock_slot wraps meshdock::Slot, meshdock_frame a Frame plus the
// table of its arrays (built once per frame, so every later call is index-based).
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "c_api_internal.hpp"
#include "meshdock/attach.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::capi {

// What the frames of one manifest share: its array table without data pointers or owner, and
// its canonical JSON (encoded on the first meshdock_frame_manifest_json only). Consecutive frames
// of a ring slot almost always carry the same manifest (the C++ layer then hands out the same
// decoded Manifest), so a frame costs no JSON encoding and no name or key strings.
struct Layout {
  std::shared_ptr<const shm::Manifest> manifest;
  std::vector<Entry> entries;
  std::once_flag json_once;
  std::string json;
};

}  // namespace meshdock::capi

struct meshdock_slot {
  explicit meshdock_slot(meshdock::Slot s) : slot(std::move(s)), name(slot.name()) {}
  meshdock::Slot slot;
  // meshdock_slot_name's string, borrowed until the handle goes: Slot::name() lives in the
  // slot's state, which a reattach replaces (and frees).
  const std::string name;
  // Per ring slot index: the Layout of the last manifest seen there.
  std::mutex layouts_mutex;
  std::map<std::uint32_t, std::shared_ptr<meshdock::capi::Layout>> layouts;
};

struct meshdock_frame {
  meshdock::Frame frame;
  std::string label;  // "slot 'box' frame 3": names the frame in messages
  meshdock::capi::Table table;
  std::shared_ptr<meshdock::capi::Layout> layout;

  meshdock_frame(meshdock::Frame f, const std::string& slot_name)
      : frame(std::move(f)),
        label("slot '" + slot_name + "' frame " + std::to_string(frame.number())) {}
};

namespace meshdock::capi {
namespace {

// Waits longer than this are "forever": the deadline arithmetic stays far from overflow.
constexpr std::int64_t kForeverMs = 100LL * 365 * 24 * 3600 * 1000;

std::int32_t role_of(shm::ArrayRole r) {
  switch (r) {
    case shm::ArrayRole::kPoints:
      return MESHDOCK_ROLE_POINTS;
    case shm::ArrayRole::kCells:
      return MESHDOCK_ROLE_CELLS;
    case shm::ArrayRole::kPointData:
      return MESHDOCK_ROLE_POINT_DATA;
    case shm::ArrayRole::kCellData:
      return MESHDOCK_ROLE_CELL_DATA;
    case shm::ArrayRole::kRegion:
      return MESHDOCK_ROLE_REGION;
    case shm::ArrayRole::kBlockBases:
      return MESHDOCK_ROLE_BLOCK_BASES;
    case shm::ArrayRole::kTensor:
      return MESHDOCK_ROLE_TENSOR;
  }
  return MESHDOCK_ROLE_POINTS;
}

// The field or region an array belongs to, from its manifest name.
std::string key_of(const shm::Manifest& m, const shm::ArrayEntry& a) {
  const std::string& n = a.name;
  switch (a.role) {
    case shm::ArrayRole::kPointData: {
      const auto slash = n.find('/');
      return slash == std::string::npos ? n : n.substr(slash + 1);
    }
    case shm::ArrayRole::kCellData: {
      const auto first = n.find('/');
      const auto last = n.rfind('/');
      if (first == std::string::npos) return n;
      return last > first ? n.substr(first + 1, last - first - 1) : n.substr(first + 1);
    }
    case shm::ArrayRole::kRegion:
      for (const auto& r : m.regions) {
        if (r.array == n) return r.name;
      }
      return n;
    default:
      return {};
  }
}

// The Layout of `m`: built from the manifest (names, roles, keys, dtypes, shapes, strides).
std::shared_ptr<Layout> layout_of(std::shared_ptr<const shm::Manifest> m) {
  auto l = std::make_shared<Layout>();
  l->entries.reserve(m->arrays.size());
  for (const auto& a : m->arrays) {
    Entry e;
    e.name = a.name;
    e.role = role_of(a.role);
    e.key = key_of(*m, a);
    e.block = a.block;
    e.dtype = DLDataType{a.dtype.code, a.dtype.bits, a.dtype.lanes};
    e.shape = a.shape;
    e.strides = a.strides.empty() ? contiguous_strides(a.shape) : a.strides;
    e.nbytes = a.nbytes;
    l->entries.push_back(std::move(e));
  }
  l->manifest = std::move(m);
  return l;
}

std::unique_ptr<meshdock_frame> wrap(Frame f, meshdock_slot& slot) {
  auto h = std::make_unique<meshdock_frame>(std::move(f), slot.name);
  auto m = h->frame.shared_manifest();
  {
    std::lock_guard lock(slot.layouts_mutex);
    auto& l = slot.layouts[h->frame.slot_index()];
    if (!l || l->manifest != m) l = layout_of(std::move(m));
    h->layout = l;
  }
  const DLDevice dev{static_cast<DLDeviceType>(h->frame.device_type()), h->frame.device_id()};
  const auto keep = h->frame.keepalive();  // the frame state: mapping and lease
  const auto& entries = h->layout->entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Entry e = entries[i];
    e.data = h->frame.data(i);
    e.device = dev;
    e.owner = keep;
    h->table.add(std::move(e));
  }
  return h;
}

constexpr const char* kFrame = "frame";

const char* label(const meshdock_frame* f) {
  return f ? f->label.c_str() : kFrame;
}

}  // namespace
}  // namespace meshdock::capi

using namespace meshdock::capi;

extern "C" {

void meshdock_attach_options_init(meshdock_attach_options* o) {
  if (!o) return;
  *o = meshdock_attach_options{};
  o->struct_size = sizeof(meshdock_attach_options);
  o->prefix = nullptr;
  o->timeout_ms = 5000;
  o->producer_timeout_ms = 1000;
}

int meshdock_slot_attach(const char* name, const meshdock_attach_options* options,
                         meshdock_slot** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    require(name, "name");
    meshdock_attach_options defaults;
    meshdock_attach_options_init(&defaults);
    const auto c = read_sized(options, defaults, "meshdock_attach_options");
    if (c.timeout_ms < 0)
      throw invalid("timeout_ms is " + std::to_string(c.timeout_ms) + "; must be >= 0");
    if (c.producer_timeout_ms <= 0)
      throw invalid("producer_timeout_ms is " + std::to_string(c.producer_timeout_ms) +
                    "; must be > 0");
    meshdock::AttachOptions o;
    if (c.prefix) o.prefix = c.prefix;  // else $MESHDOCK_PREFIX or meshdock. (resolve_prefix)
    // A malformed name or prefix is the caller's argument, not a segment's fault: say so with
    // INVALID_ARGUMENT before attach (which reports them as SdkError) looks for anything.
    try {
      meshdock::shm::control_object_name(meshdock::Slot::resolve_prefix(o.prefix), name);
    } catch (const meshdock::SdkError& e) {
      // resolve_prefix names the C++ field; a C caller set meshdock_attach_options.prefix.
      std::string what = e.what();
      constexpr std::string_view kCxxField = "AttachOptions::prefix";
      if (what.starts_with(kCxxField))
        what.replace(0, kCxxField.size(), "meshdock_attach_options.prefix");
      throw invalid(what);
    } catch (const meshdock::shm::ProtocolError& e) {
      throw invalid(e.what());
    }
    o.timeout = std::chrono::milliseconds(std::min(c.timeout_ms, kForeverMs));
    o.producer_timeout = std::chrono::milliseconds(std::min(c.producer_timeout_ms, kForeverMs));
    o.reattach = c.reattach != 0;
    if (c.has_owner_uid) o.owner_uid = c.owner_uid;
    if (c.interrupt) {
      const auto fn = c.interrupt;
      void* user = c.interrupt_user;
      o.interrupt = [fn, user] { return fn(user) != 0; };
    }
    auto slot = meshdock::Slot::attach(name, o);
    *out = new meshdock_slot(std::move(slot));
  });
}

namespace {
int take(meshdock_slot* slot, int64_t timeout_ms, meshdock_frame** out, bool seen_too) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    require(slot, "slot");
    const auto ms =
        std::chrono::milliseconds(timeout_ms < 0 ? kForeverMs : std::min(timeout_ms, kForeverMs));
    auto f = seen_too ? slot->slot.latest(ms) : slot->slot.wait(ms);
    if (f) *out = wrap(std::move(*f), *slot).release();
  });
}
}  // namespace

int meshdock_slot_wait(meshdock_slot* slot, int64_t timeout_ms, meshdock_frame** out) {
  return take(slot, timeout_ms, out, false);
}

int meshdock_slot_latest(meshdock_slot* slot, int64_t timeout_ms, meshdock_frame** out) {
  return take(slot, timeout_ms, out, true);
}

int meshdock_slot_check_producer(const meshdock_slot* slot) {
  return guard([&] { require(slot, "slot")->slot.check_producer(); });
}

void meshdock_slot_release(meshdock_slot* slot) {
  delete slot;
}

const char* meshdock_slot_name(const meshdock_slot* slot) {
  return slot ? slot->name.c_str() : nullptr;
}
uint32_t meshdock_slot_write_idx(const meshdock_slot* slot) {
  return slot ? slot->slot.write_idx() : 0;
}
uint32_t meshdock_slot_num_slots(const meshdock_slot* slot) {
  return slot ? slot->slot.num_slots() : 0;
}
int32_t meshdock_slot_device_type(const meshdock_slot* slot) {
  return slot ? slot->slot.device_type() : 0;
}
double meshdock_slot_publish_time(const meshdock_slot* slot) {
  return slot ? slot->slot.publish_time() : 0.0;
}
uint32_t meshdock_slot_reattaches(const meshdock_slot* slot) {
  return slot ? slot->slot.reattaches() : 0;
}

void meshdock_frame_release(meshdock_frame* frame) {
  delete frame;
}

uint64_t meshdock_frame_number(const meshdock_frame* frame) {
  return frame ? frame->frame.number() : 0;
}
uint32_t meshdock_frame_slot_index(const meshdock_frame* frame) {
  return frame ? frame->frame.slot_index() : 0;
}
DLDevice meshdock_frame_device(const meshdock_frame* frame) {
  if (!frame) return DLDevice{kDLCPU, 0};
  return DLDevice{static_cast<DLDeviceType>(frame->frame.device_type()), frame->frame.device_id()};
}
const char* meshdock_frame_manifest_json(const meshdock_frame* frame) {
  if (!frame) return nullptr;
  try {
    auto& l = *frame->layout;
    std::call_once(l.json_once, [&l] { l.json = meshdock::shm::encode_manifest(*l.manifest); });
  } catch (...) {
    status_of_current_exception();
    return nullptr;  // only out of memory
  }
  return frame->layout->json.c_str();
}

size_t meshdock_frame_array_count(const meshdock_frame* frame) {
  return frame ? frame->table.size() : 0;
}

int meshdock_frame_array(const meshdock_frame* frame, size_t index, meshdock_array_info* info) {
  return array_info(frame, kFrame, label(frame), index, info);
}

int meshdock_frame_array_index(const meshdock_frame* frame, const char* name, size_t* index) {
  return array_index(frame, kFrame, label(frame), name, index);
}

int meshdock_frame_array_dlpack(const meshdock_frame* frame, size_t index,
                                DLManagedTensorVersioned** out) {
  return array_dlpack(frame, kFrame, label(frame), index, out);
}

int meshdock_frame_array_dlpack_legacy(const meshdock_frame* frame, size_t index,
                                       DLManagedTensor** out) {
  return array_dlpack_legacy(frame, kFrame, label(frame), index, out);
}

int meshdock_frame_order_after_upload(const meshdock_frame* frame, uintptr_t stream) {
  return guard([&] { require(frame, kFrame)->frame.order_after_upload(stream); });
}

}  // extern "C"
