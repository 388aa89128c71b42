// The cuda-link v0.5.0 control block ("CIPD"), byte for byte.
//
// Layout for N slots (little-endian, no padding), size 20 + 128N + 29 (433 for N = 3):
//   [0,4)          magic u32 0x43495044
//   [4,12)         version u64     +1 each time slot buffers / handles are (re)created
//   [12,16)        num_slots u32   1..10
//   [16,20)        write_idx u32   frames published; newest complete slot = (write_idx-1) % N
//   [20+128i,+64)  slot i memory handle (cudaIpcMemHandle_t, or the host handle "MDH1"+name)
//   [84+128i,+64)  slot i event handle  (cudaIpcEventHandle_t, zeros on the host backend)
//   [20+128N]      shutdown u8      1 = producer gone
//   [21+128N,+20)  metadata: width u32, height u32, num_comps u32, format_kind u8, bits u8,
//                  flags u16, data_size u32
//   [41+128N,+8)   timestamp f64    producer monotonic seconds at publish
//
// write_idx and shutdown are the synchronising fields: the producer writes everything else,
// then releases write_idx; consumers acquire write_idx before reading the slot. `version` sits
// at offset 4 and so cannot be an atomic; it only changes together with the handles, before the
// write_idx release that makes them visible.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meshdock/shm/bytes.hpp"
#include "meshdock/shm/error.hpp"
#include "meshdock/shm/names.hpp"

namespace meshdock::shm {

inline constexpr std::uint32_t kControlMagic = 0x43495044u;  // "DPIC" in memory, "CIPD" as u32
inline constexpr std::uint32_t kMinSlots = 1;
inline constexpr std::uint32_t kMaxSlots = 10;
inline constexpr std::uint32_t kDefaultSlots = 3;
inline constexpr std::size_t kHandleBytes = 64;
inline constexpr std::size_t kSlotStride = 128;
inline constexpr std::size_t kMetadataBytes = 20;

constexpr std::size_t control_block_size(std::uint32_t num_slots) {
  return 20 + kSlotStride * num_slots + 29;
}
static_assert(control_block_size(3) == 433);

namespace control_offset {
inline constexpr std::size_t kMagic = 0;
inline constexpr std::size_t kVersion = 4;
inline constexpr std::size_t kNumSlots = 12;
inline constexpr std::size_t kWriteIdx = 16;
constexpr std::size_t mem_handle(std::uint32_t i) {
  return 20 + kSlotStride * i;
}
constexpr std::size_t event_handle(std::uint32_t i) {
  return 84 + kSlotStride * i;
}
constexpr std::size_t shutdown(std::uint32_t n) {
  return 20 + kSlotStride * n;
}
constexpr std::size_t metadata(std::uint32_t n) {
  return 21 + kSlotStride * n;
}
constexpr std::size_t timestamp(std::uint32_t n) {
  return 41 + kSlotStride * n;
}
}  // namespace control_offset

enum class FormatKind : std::uint8_t { kSigned = 0, kUnsigned = 1, kFloat = 2 };

// What a plain cuda-link consumer is told about the slot buffer.
struct BufferMetadata {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t num_comps = 0;
  std::uint8_t format_kind = 0;
  std::uint8_t bits = 0;
  std::uint16_t flags = 0;  // bit 0 = bfloat16; others must be 0
  std::uint32_t data_size = 0;

  bool operator==(const BufferMetadata&) const = default;

  // A mesh slot advertises itself as one flat uint8 buffer of `bytes` bytes; the size
  // saturates at 0xFFFFFFFF (the catalog holds the u64 size).
  static BufferMetadata flat_bytes(std::uint64_t bytes) {
    const auto clamped = static_cast<std::uint32_t>(bytes > 0xFFFFFFFFull ? 0xFFFFFFFFull : bytes);
    return BufferMetadata{clamped, 1, 1,      static_cast<std::uint8_t>(FormatKind::kUnsigned),
                          8,       0, clamped};
  }

  // A single-array publish advertises the array itself, so that a cuda-link consumer reads it as
  // a texture: (W,) -> W x 1 x 1; (H, W) -> W x H x 1; (H, W, C) -> W x H x C; (N, H, W, C) ->
  // W x N*H x C (the images stacked). DLPack dtype (code, bits): int -> kind 0, uint and bool
  // -> kind 1, float -> kind 2, bfloat -> kind 2 with flag bit 0. nullopt when a dimension
  // does not fit u32 or the shape is empty (the caller refuses such a publish).
  static std::optional<BufferMetadata> of_array(std::uint8_t dtype_code, std::uint8_t bits,
                                                const std::vector<std::int64_t>& shape) {
    if (shape.empty() || shape.size() > 4) return std::nullopt;
    std::uint64_t w = 1, h = 1, c = 1;
    const auto n = shape.size();
    for (auto d : shape)
      if (d <= 0) return std::nullopt;
    if (n == 1) {
      w = static_cast<std::uint64_t>(shape[0]);
    } else {
      if (n >= 3) c = static_cast<std::uint64_t>(shape[n - 1]);
      w = static_cast<std::uint64_t>(shape[n >= 3 ? n - 2 : 1]);
      for (std::size_t k = 0; k + (n >= 3 ? 2 : 1) < n; ++k)
        h *= static_cast<std::uint64_t>(shape[k]);
    }
    constexpr std::uint64_t kMax = 0xFFFFFFFFull;
    if (w > kMax || h > kMax || c > kMax) return std::nullopt;
    FormatKind kind = FormatKind::kFloat;
    std::uint16_t flags = 0;
    switch (dtype_code) {
      case 0:
        kind = FormatKind::kSigned;
        break;
      case 1:
      case 6:
        kind = FormatKind::kUnsigned;
        break;
      case 2:
        break;
      case 4:
        flags = 1;  // kFlagBfloat16
        break;
      default:
        return std::nullopt;
    }
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(w, h, &bytes) || __builtin_mul_overflow(bytes, c, &bytes) ||
        __builtin_mul_overflow(bytes, std::uint64_t{bits / 8u}, &bytes))
      bytes = kMax;
    const auto clamped = static_cast<std::uint32_t>(bytes > kMax ? kMax : bytes);
    return BufferMetadata{static_cast<std::uint32_t>(w),
                          static_cast<std::uint32_t>(h),
                          static_cast<std::uint32_t>(c),
                          static_cast<std::uint8_t>(kind),
                          bits,
                          flags,
                          clamped};
  }
};

inline constexpr std::uint16_t kFlagBfloat16 = 1;

using Handle = std::array<std::byte, kHandleBytes>;

// Host backend handle: "MDH1" then the NUL-terminated shared-memory object name.
inline constexpr std::array<char, 4> kHostHandleTag = {'M', 'D', 'H', '1'};

inline Handle make_host_handle(std::string_view object_name) {
  if (object_name.size() + kHostHandleTag.size() + 1 > kHandleBytes) {
    throw ProtocolError("host handle: object name '" + std::string(object_name) + "' is " +
                        std::to_string(object_name.size()) + " characters; at most " +
                        std::to_string(kHandleBytes - kHostHandleTag.size() - 1) + " fit");
  }
  Handle h{};
  for (std::size_t i = 0; i < kHostHandleTag.size(); ++i) h[i] = std::byte(kHostHandleTag[i]);
  for (std::size_t i = 0; i < object_name.size(); ++i) h[4 + i] = std::byte(object_name[i]);
  return h;
}

inline bool is_host_handle(const Handle& h) {
  for (std::size_t i = 0; i < kHostHandleTag.size(); ++i) {
    if (h[i] != std::byte(kHostHandleTag[i])) return false;
  }
  return true;
}

// The object name in a host handle; throws if the handle is tagged "MDH1" but its name is not
// NUL-terminated or not a valid object name.
inline std::string parse_host_handle(const Handle& h) {
  if (!is_host_handle(h)) throw ProtocolError("handle does not start with \"MDH1\"");
  std::string name;
  for (std::size_t i = 4; i < kHandleBytes; ++i) {
    const char c = static_cast<char>(h[i]);
    if (c == '\0') {
      validate_name(name, "host handle object name");
      return name;
    }
    name.push_back(c);
  }
  throw ProtocolError("host handle: object name is not NUL-terminated within 64 bytes");
}

// Non-owning typed view over a mapped control block. Construct with `validate` (a consumer
// mapping a segment someone else wrote) or `initialize` (the producer formatting a new one).
class ControlBlockView {
 public:
  // Checks magic, num_slots and that `size` holds the whole block. `what` names the segment in
  // messages. `base` must be 4-byte aligned (mappings are page aligned).
  static ControlBlockView validate(void* base, std::size_t size,
                                   std::string_view what =
                                       "control "
                                       "block") {
    auto* b = static_cast<std::byte*>(base);
    const std::string where = "control block '" + std::string(what) + "'";
    if (reinterpret_cast<std::uintptr_t>(base) % alignof(std::uint32_t) != 0) {
      throw ProtocolError(where + ": mapping is not 4-byte aligned");
    }
    if (size < 20) {
      throw ProtocolError(where + ": segment is " + std::to_string(size) +
                          " bytes, smaller than the 20-byte header");
    }
    const auto magic = load_le<std::uint32_t>(b, control_offset::kMagic);
    if (magic != kControlMagic) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": magic is 0x%08x, expected 0x%08x (\"CIPD\")", magic,
                    kControlMagic);
      throw ProtocolError(where + buf);
    }
    const auto n = load_le<std::uint32_t>(b, control_offset::kNumSlots);
    if (n < kMinSlots || n > kMaxSlots) {
      throw ProtocolError(where + ": num_slots is " + std::to_string(n) + ", outside 1..10");
    }
    if (size < control_block_size(n)) {
      throw ProtocolError(where + ": segment is " + std::to_string(size) + " bytes but " +
                          std::to_string(n) + " slots need " +
                          std::to_string(control_block_size(n)));
    }
    const auto meta = ControlBlockView(b, n).metadata();
    if ((meta.flags & ~kFlagBfloat16) != 0) {
      throw ProtocolError(where + ": metadata flags 0x" + to_hex(meta.flags) +
                          " has bits other than bit 0 (bfloat16) set");
    }
    if (meta.format_kind > 2) {
      throw ProtocolError(where + ": metadata format_kind is " + std::to_string(meta.format_kind) +
                          ", expected 0 (signed), 1 (unsigned) or 2 (float)");
    }
    return ControlBlockView(b, n);
  }

  // Zeroes the block and writes magic and num_slots; version, write_idx and shutdown start at 0.
  static ControlBlockView initialize(void* base, std::size_t size, std::uint32_t num_slots) {
    if (num_slots < kMinSlots || num_slots > kMaxSlots) {
      throw ProtocolError("control block: num_slots " + std::to_string(num_slots) +
                          " is outside 1..10");
    }
    if (size < control_block_size(num_slots)) {
      throw ProtocolError("control block: " + std::to_string(size) + " bytes cannot hold " +
                          std::to_string(num_slots) + " slots (" +
                          std::to_string(control_block_size(num_slots)) + " needed)");
    }
    auto* b = static_cast<std::byte*>(base);
    std::memset(b, 0, control_block_size(num_slots));
    store_le<std::uint32_t>(b, control_offset::kMagic, kControlMagic);
    store_le<std::uint32_t>(b, control_offset::kNumSlots, num_slots);
    return ControlBlockView(b, num_slots);
  }

  std::uint32_t magic() const { return load_le<std::uint32_t>(base_, control_offset::kMagic); }
  std::uint32_t num_slots() const { return num_slots_; }
  std::size_t size() const { return control_block_size(num_slots_); }
  const std::byte* data() const { return base_; }

  std::uint64_t version() const { return load_le<std::uint64_t>(base_, control_offset::kVersion); }
  void set_version(std::uint64_t v) { store_le<std::uint64_t>(base_, control_offset::kVersion, v); }

  // Acquire: everything the producer wrote before publish_write_idx is visible after this.
  std::uint32_t write_idx() const { return write_idx_ref().load(std::memory_order_acquire); }
  void publish_write_idx(std::uint32_t v) { write_idx_ref().store(v, std::memory_order_release); }

  // The slot the producer writes next (cuda-link's rule) and the newest complete slot.
  std::uint32_t next_slot() const { return write_idx() % num_slots_; }
  std::optional<std::uint32_t> newest_slot() const {
    const auto w = write_idx();
    if (w == 0) return std::nullopt;
    return (w - 1) % num_slots_;
  }

  Handle mem_handle(std::uint32_t i) const { return load_handle(control_offset::mem_handle(i), i); }
  Handle event_handle(std::uint32_t i) const {
    return load_handle(control_offset::event_handle(i), i);
  }
  void set_mem_handle(std::uint32_t i, const Handle& h) {
    store_handle(control_offset::mem_handle(i), i, h);
  }
  void set_event_handle(std::uint32_t i, const Handle& h) {
    store_handle(control_offset::event_handle(i), i, h);
  }

  bool shutdown() const { return shutdown_ref().load(std::memory_order_acquire) != 0; }
  std::uint8_t shutdown_byte() const { return shutdown_ref().load(std::memory_order_acquire); }
  void set_shutdown(bool gone) { shutdown_ref().store(gone ? 1 : 0, std::memory_order_release); }

  BufferMetadata metadata() const {
    const std::size_t o = control_offset::metadata(num_slots_);
    BufferMetadata m;
    m.width = load_le<std::uint32_t>(base_, o + 0);
    m.height = load_le<std::uint32_t>(base_, o + 4);
    m.num_comps = load_le<std::uint32_t>(base_, o + 8);
    m.format_kind = load_le<std::uint8_t>(base_, o + 12);
    m.bits = load_le<std::uint8_t>(base_, o + 13);
    m.flags = load_le<std::uint16_t>(base_, o + 14);
    m.data_size = load_le<std::uint32_t>(base_, o + 16);
    return m;
  }
  void set_metadata(const BufferMetadata& m) {
    const std::size_t o = control_offset::metadata(num_slots_);
    store_le<std::uint32_t>(base_, o + 0, m.width);
    store_le<std::uint32_t>(base_, o + 4, m.height);
    store_le<std::uint32_t>(base_, o + 8, m.num_comps);
    store_le<std::uint8_t>(base_, o + 12, m.format_kind);
    store_le<std::uint8_t>(base_, o + 13, m.bits);
    store_le<std::uint16_t>(base_, o + 14, m.flags);
    store_le<std::uint32_t>(base_, o + 16, m.data_size);
  }

  double timestamp() const { return load_le<double>(base_, control_offset::timestamp(num_slots_)); }
  void set_timestamp(double t) {
    store_le<double>(base_, control_offset::timestamp(num_slots_), t);
  }

 private:
  ControlBlockView(std::byte* base, std::uint32_t n) : base_(base), num_slots_(n) {}

  static std::string to_hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04x", v);
    return buf;
  }

  void check_slot(std::uint32_t i) const {
    if (i >= num_slots_) {
      throw ProtocolError("control block: slot " + std::to_string(i) + " out of range (" +
                          std::to_string(num_slots_) + " slots)");
    }
  }
  Handle load_handle(std::size_t offset, std::uint32_t i) const {
    check_slot(i);
    Handle h;
    std::memcpy(h.data(), base_ + offset, kHandleBytes);
    return h;
  }
  void store_handle(std::size_t offset, std::uint32_t i, const Handle& h) {
    check_slot(i);
    std::memcpy(base_ + offset, h.data(), kHandleBytes);
  }

  std::atomic_ref<std::uint32_t> write_idx_ref() const {
    return std::atomic_ref<std::uint32_t>(
        *reinterpret_cast<std::uint32_t*>(base_ + control_offset::kWriteIdx));
  }
  std::atomic_ref<std::uint8_t> shutdown_ref() const {
    return std::atomic_ref<std::uint8_t>(
        *reinterpret_cast<std::uint8_t*>(base_ + control_offset::shutdown(num_slots_)));
  }

  std::byte* base_;
  std::uint32_t num_slots_;
};

}  // namespace meshdock::shm
