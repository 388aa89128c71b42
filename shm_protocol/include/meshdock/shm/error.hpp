// The shm_protocol layer's one exception type.
//
// Every validation failure names the segment field that is wrong and the value found, so a
// consumer that cannot attach can say exactly why ("catalog 'meshdock.x.catalog': num_slots
// is 12, outside 1..10").
#pragma once

#include <stdexcept>
#include <string>

namespace meshdock::shm {

class ProtocolError : public std::runtime_error {
 public:
  explicit ProtocolError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace meshdock::shm
