// meshdock::Producer: libmeshdock_producer (meshdock/producer.h) for C++, header-only over its C
// ABI: the handle closed by its destructor, failures thrown as ProducerError (the status of
// meshdock.h and the message naming the slot and field), the DLPack dtype taken from the element
// type. A C++ solver streams its fields in a few lines:
//
//   meshdock::Producer p;                                    // $MESHDOCK_ADDR or the system socket
//   for (int step = 0; step < nsteps; ++step) {
//     solve(T, V);                                           // std::vector<double> T(n), V(3 * n)
//     p.publish("bracket", "point_data/T", T.data(), {n});
//     p.publish("bracket", "point_data/V", V.data(), {n, 3});
//   }
//
// Arrays are C order; `shape` has 1 to 4 extents. Link -lmeshdock_producer -lmeshdock (pkg-config
// meshdock-producer, or meshdock::producer from find_package(meshdock)).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "meshdock/producer.h"

namespace meshdock {

// A failed call: status() is a meshdock_status (MESHDOCK_ERR_NOT_FOUND, ...).
class ProducerError : public std::runtime_error {
 public:
  ProducerError(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
  int status() const noexcept { return status_; }
  const char* status_name() const noexcept { return meshdock_status_name(status_); }

 private:
  int status_;
};

// The DLPack dtype of an element type the daemon takes.
template <typename T>
constexpr DLDataType dtype_of() {
  static_assert(std::is_arithmetic_v<T>, "meshdock::Producer publishes arithmetic elements");
  if constexpr (std::is_same_v<T, bool>)
    return DLDataType{kDLBool, 8, 1};
  else if constexpr (std::is_floating_point_v<T>)
    return DLDataType{kDLFloat, static_cast<std::uint8_t>(sizeof(T) * 8), 1};
  else if constexpr (std::is_signed_v<T>)
    return DLDataType{kDLInt, static_cast<std::uint8_t>(sizeof(T) * 8), 1};
  else
    return DLDataType{kDLUInt, static_cast<std::uint8_t>(sizeof(T) * 8), 1};
}

class Producer {
 public:
  // `target`: "unix:PATH" or "HOST:PORT" ("": $MESHDOCK_ADDR, else the system socket); `token`:
  // the bearer token (nullptr: $MESHDOCK_TOKEN). Nothing is sent yet.
  explicit Producer(const std::string& target = "", const char* token = nullptr) {
    meshdock_producer* p = nullptr;
    check(meshdock_producer_open(target.empty() ? nullptr : target.c_str(), token, &p));
    p_.reset(p);
  }

  // Seconds each call may take (0: no limit).
  void set_timeout(double seconds) { check(meshdock_producer_set_timeout(p_.get(), seconds)); }

  // Publishes the C-order array at `data` of `shape` as `field` of mesh `name` ("point_data/X",
  // "cell_data/X" with `block`); returns the frame number. The array may change once it returns.
  template <typename T>
  std::uint32_t publish(const std::string& name, const std::string& field, const T* data,
                        std::vector<std::int64_t> shape, std::uint32_t block = 0) {
    auto t = tensor(data, shape);
    std::uint32_t frame = 0;
    check(meshdock_producer_publish(p_.get(), name.c_str(), field.c_str(), block, &t, &frame));
    return frame;
  }

  // The array alone in slot `name` (made on `device` by its first publish: "cpu", "cuda:0";
  // "": the daemon's default).
  template <typename T>
  std::uint32_t publish_tensor(const std::string& name, const T* data,
                               std::vector<std::int64_t> shape, const std::string& device = "",
                               std::uint32_t num_slots = 0) {
    auto t = tensor(data, shape);
    std::uint32_t frame = 0;
    check(meshdock_producer_publish_tensor(
        p_.get(), name.c_str(), &t, device.empty() ? nullptr : device.c_str(), num_slots, &frame));
    return frame;
  }

  // `count` elements of writable shared memory for (name, field, block): an array computed in
  // it publishes by name, copying nothing on this side (meshdock_producer_buffer says for how
  // long the pointer holds).
  template <typename T>
  T* buffer(const std::string& name, const std::string& field, std::size_t count,
            std::uint32_t block = 0) {
    void* out = nullptr;
    check(meshdock_producer_buffer(p_.get(), name.c_str(), field.c_str(), block, count * sizeof(T),
                                   &out));
    return static_cast<T*>(out);
  }

 private:
  template <typename T>
  static DLTensor tensor(const T* data, std::vector<std::int64_t>& shape) {
    DLTensor t{};
    t.data = const_cast<T*>(data);  // DLTensor's field is not const; the library only reads it
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<std::int32_t>(shape.size());
    t.dtype = dtype_of<T>();
    t.shape = shape.data();
    return t;
  }
  static void check(int status) {
    if (status != MESHDOCK_OK) throw ProducerError(status, meshdock_last_error());
  }

  std::unique_ptr<meshdock_producer, decltype(&meshdock_producer_close)> p_{
      nullptr, &meshdock_producer_close};
};

}  // namespace meshdock
