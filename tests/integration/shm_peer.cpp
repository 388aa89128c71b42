// A second process for the shm integration tests. Modes:
//   shm_peer create PREFIX NAME SLOTS             create control + catalog, print "ready",
//                                                 keep them until stdin closes, then remove
//   shm_peer write PREFIX NAME FRAMES             publish FRAMES frames (seqlock, write_idx,
//                                                 futex) into existing segments
//   shm_peer read PREFIX NAME FRAMES TIMEOUT_MS   wait on the futex until write_idx reaches
//                                                 FRAMES, checking every page read is whole;
//                                                 print "seen=N torn=T bad=B"; exit 1 if B > 0
//   shm_peer lease PREFIX NAME SLOT               take a lease on SLOT, print "leased I", sleep
// Frame k's manifest is {"v":1,"arrays":[],"notes":[<k repeated letter>]} with data_size = its
// length and buffer_version = 3k, so a reader can tell a torn page from a whole one.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;

namespace {

std::string manifest_for(std::uint64_t frame) {
  const std::size_t len = 10 + (frame * 131) % 6000;
  return "{\"v\":1,\"arrays\":[],\"notes\":[\"" +
         std::string(len, static_cast<char>('a' + frame % 26)) + "\"]}";
}

bool page_is_whole(const shm::PageSnapshot& s) {
  if (s.frame == 0) return s.manifest.empty();
  return s.manifest == manifest_for(s.frame) && s.data_size == s.manifest.size() &&
         s.buffer_version == 3 * s.frame;
}

struct Opened {
  shm::Segment control, catalog;
  std::optional<shm::ControlBlockView> cb;
  std::optional<shm::CatalogView> cat;
};

Opened open_both(const std::string& prefix, const std::string& name) {
  Opened o;
  o.control = shm::Segment::open(shm::control_object_name(prefix, name), shm::Access::kReadWrite);
  o.catalog = shm::Segment::open(shm::catalog_object_name(prefix, name), shm::Access::kReadWrite);
  o.cb.emplace(shm::ControlBlockView::validate(o.control.data(), o.control.size()));
  o.cat.emplace(shm::CatalogView::validate(o.catalog.data(), o.catalog.size()));
  return o;
}

int create(const std::string& prefix, const std::string& name, std::uint32_t slots) {
  auto control = shm::Segment::create(shm::control_object_name(prefix, name),
                                      shm::control_block_size(slots), 0600, true);
  shm::ControlBlockView::initialize(control.data(), control.size(), slots);
  shm::CatalogParams p;
  p.num_slots = slots;
  p.page_size = 16384;
  p.lease_capacity = 16;
  p.daemon_pid = getpid();
  auto catalog = shm::Segment::create(shm::catalog_object_name(prefix, name),
                                      shm::catalog_size(slots, p.page_size), 0600, true);
  auto cat = shm::CatalogView::initialize(catalog.data(), catalog.size(), p);
  auto leases = shm::Segment::create(shm::leases_object_name(prefix, name),
                                     shm::leases_size(slots, p.lease_capacity), 0600, true);
  shm::LeasesView::initialize(leases.data(), leases.size(), slots, p.lease_capacity);
  cat.beat(shm::monotonic_ns());
  std::cout << "ready" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;  // Segment destructors unlink both objects
}

int write(const std::string& prefix, const std::string& name, std::uint64_t frames) {
  auto o = open_both(prefix, name);
  for (std::uint64_t f = 1; f <= frames; ++f) {
    const auto slot = o.cb->next_slot();
    const auto m = manifest_for(f);
    o.cat->page(slot).write(f, m.size(), 3 * f, m);
    o.cb->set_metadata(shm::BufferMetadata::flat_bytes(m.size()));
    o.cb->set_timestamp(shm::monotonic_seconds());
    o.cb->publish_write_idx(static_cast<std::uint32_t>(f));
    o.cat->publish_futex(static_cast<std::uint32_t>(f));
    o.cat->beat(shm::monotonic_ns());
    if (f % 64 == 0) std::this_thread::yield();
  }
  return 0;
}

int read(const std::string& prefix, const std::string& name, std::uint32_t frames, int timeout_ms) {
  auto o = open_both(prefix, name);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  long seen = 0, torn = 0, bad = 0;
  std::uint32_t last = o.cat->futex_value();
  while (true) {
    for (std::uint32_t i = 0; i < o.cb->num_slots(); ++i) {
      auto page = o.cat->page(i);
      for (int attempt = 0; attempt < 1000; ++attempt) {
        auto s = page.try_read();
        if (!s) {
          ++torn;
          continue;
        }
        ++seen;
        if (!page_is_whole(*s)) ++bad;
        break;
      }
    }
    if (o.cb->write_idx() >= frames) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::cout << "timeout at write_idx " << o.cb->write_idx() << std::endl;
      return 2;
    }
    shm::futex_wait(o.cat->futex_word(), last, std::chrono::milliseconds(50));
    last = o.cat->futex_value();
  }
  std::cout << "seen=" << seen << " torn=" << torn << " bad=" << bad << std::endl;
  return bad == 0 ? 0 : 1;
}

int lease(const std::string& prefix, const std::string& name, std::uint32_t slot) {
  auto o = open_both(prefix, name);
  auto page = o.cat->page(slot);
  auto seg = shm::Segment::open(shm::leases_object_name(prefix, name), shm::Access::kReadWrite);
  auto lv =
      shm::LeasesView::over(seg.data(), seg.size(), o.cat->num_slots(), o.cat->lease_capacity());
  // A daemon's slot names its registration socket: register, as the SDK does, so the lease
  // counts (the connection stays open until this process dies).
  shm::Registration reg;
  if (!o.cat->socket_address().empty())
    reg = shm::Registration::connect(o.cat->socket_address(), o.cat->daemon_pid(),
                                     o.cat->daemon_uid(), std::chrono::seconds(2), "shm_peer");
  const auto idx = lv.table(slot).acquire(getpid(), page.read().frame);
  if (!idx) {
    std::cout << "full" << std::endl;
    return 1;
  }
  std::cout << "leased " << *idx << std::endl;
  while (true) pause();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "create" && argc == 5) return create(argv[2], argv[3], std::stoul(argv[4]));
    if (mode == "write" && argc == 5) return write(argv[2], argv[3], std::stoull(argv[4]));
    if (mode == "read" && argc == 6)
      return read(argv[2], argv[3], std::stoul(argv[4]), std::stoi(argv[5]));
    if (mode == "lease" && argc == 5) return lease(argv[2], argv[3], std::stoul(argv[4]));
  } catch (const std::exception& e) {
    std::cerr << "shm_peer: " << e.what() << std::endl;
    return 3;
  }
  std::cerr << "usage: shm_peer create|write|read|lease PREFIX NAME ...\n";
  return 64;
}
