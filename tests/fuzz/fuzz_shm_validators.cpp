// libFuzzer target: random bytes as a control block, as a catalog, as a manifest and as a
// registration message. The validators must reject garbage with ProtocolError and never crash,
// hang or read out of bounds; anything they accept must then be fully readable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Mappings are page aligned; keep the copy 8-aligned and exactly `size` long for ASan.
  std::vector<std::uint64_t> words(size / 8 + 1);
  std::memcpy(words.data(), data, size);
  void* buf = words.data();

  try {
    auto cb = shm::ControlBlockView::validate(buf, size, "fuzz");
    for (std::uint32_t i = 0; i < cb.num_slots(); ++i) {
      const auto h = cb.mem_handle(i);
      if (shm::is_host_handle(h)) {
        try {
          (void)shm::parse_host_handle(h);
        } catch (const shm::ProtocolError&) {
        }
      }
      (void)cb.event_handle(i);
    }
    (void)cb.metadata();
    (void)cb.timestamp();
    (void)cb.newest_slot();
  } catch (const shm::ProtocolError&) {
  }

  // The same bytes as a message on the registration socket (a consumer's, to the daemon).
  if (const auto r = shm::parse_import_report(static_cast<const std::byte*>(buf), size))
    (void)r->handle[shm::kHandleBytes - 1];
  (void)shm::parse_wake_report(static_cast<const std::byte*>(buf), size);

  // The same bytes as a leases segment of the largest shape they can hold.
  try {
    const auto lv = shm::LeasesView::over(
        buf, size, 1, static_cast<std::uint32_t>(std::min<std::size_t>(size / 16, 1024)));
    (void)lv.table(0).leases();
  } catch (const shm::ProtocolError&) {
  }

  try {
    auto cat = shm::CatalogView::validate(buf, size, "fuzz");
    for (std::uint32_t i = 0; i < cat.num_slots(); ++i) {
      auto page = cat.page(i);
      if (auto snap = page.try_read()) {
        try {
          (void)shm::decode_manifest(snap->manifest, snap->data_size);
        } catch (const shm::ProtocolError&) {
        }
      }
    }
  } catch (const shm::ProtocolError&) {
  }

  if (size >= 8) {
    std::uint64_t data_size;
    std::memcpy(&data_size, data, 8);
    try {
      (void)shm::decode_manifest(
          std::string_view(reinterpret_cast<const char*>(data) + 8, size - 8), data_size);
    } catch (const shm::ProtocolError&) {
    }
  }
  return 0;
}
