// Buffer (one allocation through the allocator hook, RAII) and Array (a typed C-contiguous
// n-d view that shares ownership of its Buffer). Copying an Array never copies data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/mesh/allocator.hpp"
#include "meshdock/shm/manifest.hpp"

namespace meshdock::mesh {

using shm::DType;

inline constexpr DType kFloat64{2, 64, 1};
inline constexpr DType kFloat32{2, 32, 1};
inline constexpr DType kInt64{0, 64, 1};
inline constexpr DType kInt32{0, 32, 1};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<double>() {
  return kFloat64;
}
template <>
constexpr DType dtype_of<float>() {
  return kFloat32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return kInt64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return kInt32;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType{1, 8, 1};
}

class Buffer {
 public:
  // Throws std::bad_alloc when the allocator refuses.
  static std::shared_ptr<Buffer> allocate(std::size_t bytes) {
    const Allocator a = current_allocator();
    void* p = a.allocate(bytes, a.ctx);
    if (!p) throw std::bad_alloc();
    return std::make_shared<Buffer>(Key{}, p, bytes, a);
  }
  // Takes over memory allocated elsewhere (a numpy array, a DLPack producer): `owner.release`
  // runs with (p, bytes, owner.ctx) when the last Array sharing the Buffer is gone.
  static std::shared_ptr<Buffer> adopt(void* p, std::size_t bytes, Allocator owner) {
    return std::make_shared<Buffer>(Key{}, p, bytes, owner);
  }
  // Bytes [offset, offset + bytes) of `parent`, sharing its memory, which lives as long as the
  // slice does: rows of one array handed out as several (a whole cell_data field split into
  // its blocks) without a copy. std::length_error past the parent's end.
  static std::shared_ptr<Buffer> slice(std::shared_ptr<Buffer> parent, std::size_t offset,
                                       std::size_t bytes);
  struct Key {};  // only allocate() and adopt() can name it, so only they construct a Buffer
  Buffer(Key, void* p, std::size_t n, Allocator a) : data_(p), size_(n), alloc_(a) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { alloc_.release(data_, size_, alloc_.ctx); }

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  const char* allocator_name() const { return alloc_.name; }

 private:
  void* data_;
  std::size_t size_;
  Allocator alloc_;
};

class Array {
 public:
  Array() = default;

  static Array empty(DType dtype, std::vector<std::int64_t> shape) {
    Array a;
    a.dtype_ = dtype;
    a.shape_ = std::move(shape);
    a.buffer_ = Buffer::allocate(a.nbytes());
    return a;
  }
  // A C-contiguous view of `buffer` (which must hold the bytes the shape needs).
  static Array view(std::shared_ptr<Buffer> buffer, DType dtype, std::vector<std::int64_t> shape) {
    Array a;
    a.dtype_ = dtype;
    a.shape_ = std::move(shape);
    if (buffer && buffer->size() < a.nbytes())
      throw std::length_error("Array::view: buffer too small");
    a.buffer_ = std::move(buffer);
    return a;
  }
  template <typename T>
  static Array of(std::vector<std::int64_t> shape) {
    return empty(dtype_of<T>(), std::move(shape));
  }
  template <typename T, typename A>
  static Array from_vector(const std::vector<T, A>& v, std::vector<std::int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(v.size())};
    Array a = of<T>(std::move(shape));
    if (!v.empty()) std::memcpy(a.data(), v.data(), v.size() * sizeof(T));
    return a;
  }

  bool valid() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return i < shape_.size() ? shape_[i] : 1; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t size() const {
    return std::accumulate(
        shape_.begin(), shape_.end(), std::size_t{1},
        [](std::size_t a, std::int64_t b) { return a * static_cast<std::size_t>(b); });
  }
  std::size_t itemsize() const { return dtype_.bits / 8 * dtype_.lanes; }
  std::size_t nbytes() const { return size() * itemsize(); }
  void* data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

 private:
  DType dtype_{};
  std::vector<std::int64_t> shape_;
  std::shared_ptr<Buffer> buffer_;
};

// Element i (flat index) of an integer or bool array, widened to int64 (a uint64 beyond
// INT64_MAX wraps; callers that need the full range read it as unsigned).
inline std::int64_t int_at(const Array& a, std::size_t i) {
  std::uint64_t raw = 0;
  const std::size_t item = a.itemsize();
  std::memcpy(&raw, static_cast<const std::uint8_t*>(a.data()) + i * item, item < 8 ? item : 8);
  if (a.dtype().code != 0 || item >= 8) return static_cast<std::int64_t>(raw);
  const unsigned shift = 64 - 8 * static_cast<unsigned>(item);  // sign-extend
  return static_cast<std::int64_t>(raw << shift) >> shift;
}

// Element i (flat index) of any numeric array as a double (float16 / bfloat16: not handled,
// callers check dtypes first).
inline double value_at(const Array& a, std::size_t i) {
  const auto d = a.dtype();
  const auto* p = static_cast<const std::uint8_t*>(a.data()) + i * a.itemsize();
  if (d.code == 2 && d.bits == 64) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (d.code == 2 && d.bits == 32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (d.code == 1 && d.bits == 64) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  return static_cast<double>(int_at(a, i));
}

// Index of the first of `parts` whose dtype or shape past the first axis differs from
// parts[0]'s; parts.size() when they all agree (and so can be stacked by concat_rows).
inline std::size_t first_mismatch(const std::vector<Array>& parts) {
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto& a = parts[i].shape();
    const auto& b = parts[0].shape();
    if (parts[i].dtype() != parts[0].dtype() || a.size() != b.size() ||
        !std::equal(a.begin() + 1, a.end(), b.begin() + 1))
      return i;
  }
  return parts.size();
}

// `parts` stacked along the first axis (they must agree: see first_mismatch); one part is
// returned as it is, without a copy.
inline Array concat_rows(const std::vector<Array>& parts) {
  if (parts.size() == 1) return parts[0];
  auto shape = parts[0].shape();
  shape[0] = 0;
  for (const auto& p : parts) shape[0] += p.dim(0);
  Array out = Array::empty(parts[0].dtype(), shape);
  auto* dst = static_cast<std::uint8_t*>(out.data());
  for (const auto& p : parts) {
    if (p.nbytes()) std::memcpy(dst, p.data(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

namespace detail {
// What Buffer::slice's shared_ptr owns: the parent (kept alive) and the Buffer naming the part,
// whose release does nothing (the parent's frees the memory).
struct BufferSlice {
  BufferSlice(std::shared_ptr<Buffer> p, std::size_t offset, std::size_t bytes)
      : parent(std::move(p)),
        part(Buffer::Key{}, static_cast<std::uint8_t*>(parent->data()) + offset, bytes,
             Allocator{nullptr, [](void*, std::size_t, void*) {}, nullptr, nullptr,
                       parent->allocator_name()}) {}
  std::shared_ptr<Buffer> parent;
  Buffer part;
};
}  // namespace detail

inline std::shared_ptr<Buffer> Buffer::slice(std::shared_ptr<Buffer> parent, std::size_t offset,
                                             std::size_t bytes) {
  if (!parent || offset > parent->size() || bytes > parent->size() - offset)
    throw std::length_error("Buffer::slice: past the buffer's end");
  auto holder = std::make_shared<detail::BufferSlice>(std::move(parent), offset, bytes);
  return std::shared_ptr<Buffer>(holder, &holder->part);  // aliasing: owns the holder
}

// Rows [begin, end) of `a` (along its first axis), sharing its memory (C-contiguous `a`).
inline Array rows_view(const Array& a, std::size_t begin, std::size_t end) {
  auto shape = a.shape();
  shape[0] = static_cast<std::int64_t>(end - begin);
  const std::size_t row = a.dim(0) > 0 ? a.nbytes() / static_cast<std::size_t>(a.dim(0)) : 0;
  return Array::view(Buffer::slice(a.buffer(), begin * row, (end - begin) * row), a.dtype(),
                     std::move(shape));
}

// Rows [begin, end) of `a` (along its first axis) copied into a new Array.
inline Array slice_rows(const Array& a, std::size_t begin, std::size_t end) {
  auto shape = a.shape();
  shape[0] = static_cast<std::int64_t>(end - begin);
  Array out = Array::empty(a.dtype(), shape);
  const std::size_t row = a.dim(0) > 0 ? a.nbytes() / static_cast<std::size_t>(a.dim(0)) : 0;
  if (out.nbytes()) {
    std::memcpy(out.data(), static_cast<const std::uint8_t*>(a.data()) + begin * row, out.nbytes());
  }
  return out;
}

}  // namespace meshdock::mesh
