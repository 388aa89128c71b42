// Device buffers of slots that are gone (a mesh unloaded) which a consumer still has open: CUDA
// calls a cudaFree under an importer's open handle undefined, so an unload hands such buffers
// here (Slot::take_open_imports) instead of freeing them with the slot, and they are freed
// when no registration reports them open any more (the consumer saw the shutdown flag and let
// go of its Slot), or kGrace after the unload whatever the reports say (they are claims: a
// consumer that never closes must not keep device memory for ever; a note says so). Buffers
// nobody reported open may be buried with a quiet time (cuda-link's consumers, which never
// report, hold every ring slot's buffer until they next poll and see the shutdown byte): kept
// that long, or until the memory budget needs them (tend's end_quiet). Host buffers never come
// here: an unlinked object lives on under its consumers' mappings.
//
// Owned by the service next to the backends it outlives (the buffers are theirs); thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/slots/consumers.hpp"

namespace meshdock::slots {

class Graveyard {
 public:
  static constexpr std::chrono::seconds kGrace{30};

  explicit Graveyard(std::shared_ptr<ConsumerRegistry> consumers)
      : consumers_(std::move(consumers)) {}

  // Keeps `buffers` of slot `name` until their imports close (see above), and at least `quiet`
  // after `now_ns` whatever the reports say (0: no such time).
  void bury(const std::string& name, std::vector<std::unique_ptr<backend::SlotBuffer>> buffers,
            std::uint64_t now_ns, std::chrono::nanoseconds quiet = {});
  // Frees what nobody reports open any more (past its quiet time, or within it too when
  // `end_quiet`: the memory budget outranks it), and what has waited kGrace; returns lines to
  // log for the second kind.
  std::vector<std::string> tend(std::uint64_t now_ns, bool end_quiet = false);
  std::size_t buffers() const;
  std::uint64_t bytes() const;

 private:
  struct Grave {
    std::string name;
    std::unique_ptr<backend::SlotBuffer> buffer;
    std::uint64_t buried_ns;
    std::uint64_t quiet_until_ns;  // kept till then even when nobody reports it open
  };
  std::shared_ptr<ConsumerRegistry> consumers_;
  mutable std::mutex m_;
  std::vector<Grave> graves_;
};

}  // namespace meshdock::slots
