#include "daemon/slots/layout.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace meshdock::slots {

namespace {

nlohmann::json numbers(const mesh::Array& a) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.dtype().code == 2)
      out.push_back(mesh::value_at(a, i));
    else if (a.dtype().code == 1)
      out.push_back(static_cast<std::uint64_t>(mesh::int_at(a, i)));
    else
      out.push_back(mesh::int_at(a, i));
  }
  return out;
}

std::vector<std::int64_t> as_int64(const mesh::Array& a) {
  std::vector<std::int64_t> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::int_at(a, i);
  return v;
}

}  // namespace

std::uint64_t cuda_link_reads(const shm::BufferMetadata& m) {
  if (m.width == 0 || m.height == 0 || m.num_comps == 0) return 512ull * 512 * 4 * 4;
  std::uint64_t itemsize = 4;  // its fallback for every other dtype
  if (m.format_kind == static_cast<std::uint8_t>(shm::FormatKind::kFloat))
    itemsize = m.bits == 16 && !(m.flags & shm::kFlagBfloat16) ? 2 : 4;
  else if (m.bits == 8 || m.bits == 16)
    itemsize = m.bits / 8u;
  std::uint64_t n = 0;  // width x height fits 64 bits; the comps and itemsize may not
  if (__builtin_mul_overflow(std::uint64_t{m.width} * m.height, std::uint64_t{m.num_comps}, &n) ||
      __builtin_mul_overflow(n, itemsize, &n))
    return UINT64_MAX;
  return n;
}

Layout plan_layout(const payload::DevicePayload& p) {
  Layout l;
  std::uint64_t cursor = 0;
  for (const auto& na : payload::payload_arrays(p)) {
    const auto& a = *na.array;
    shm::ArrayEntry e;
    e.name = na.name;
    e.role = shm::parse_role(na.role, na.name);
    e.block = na.block;
    e.dtype = a.dtype();
    e.shape = a.shape();
    e.strides.resize(e.shape.size());
    // C-contiguous strides as the protocol's validators compute them, an extent of 0 counting
    // as 1: a published (N, 0) field got strides (0, 1), and every consumer refused the whole
    // frame ("strides are not C-contiguous (dimension 0 has stride 0, expected 1)").
    std::int64_t stride = 1;
    for (std::size_t k = e.shape.size(); k-- > 0;) {
      e.strides[k] = stride;
      stride *= e.shape[k] > 0 ? e.shape[k] : 1;
    }
    e.offset = (cursor + shm::kArrayAlignment - 1) / shm::kArrayAlignment * shm::kArrayAlignment;
    e.nbytes = a.nbytes();
    cursor = e.offset + e.nbytes;
    l.placements.push_back({&a, e.offset});
    l.manifest.arrays.push_back(std::move(e));
  }
  l.total = cursor;
  l.metadata = shm::BufferMetadata::flat_bytes(l.total);
  if (p.tensor.valid()) {
    const auto md = shm::BufferMetadata::of_array(p.tensor.dtype().code, p.tensor.dtype().bits,
                                                  p.tensor.shape());
    if (!md)
      throw payload::PayloadError(
          "tensor: shape and dtype cannot be told to cuda-link consumers "
          "(every dimension 1..2^32-1, 1 to 4 of them)");
    l.metadata = *md;
  }
  // A bfloat16 array: cuda-link's torch view and D2H copy span twice its bytes; in a buffer
  // no bigger than the array they ran past the allocation (on CUDA an illegal address, which
  // is sticky in the consumer's context). The metadata stays true; the buffer covers the read.
  l.buffer = std::max(l.total, p.tensor.valid() ? cuda_link_reads(l.metadata) : l.total);
  auto& m = l.manifest;
  m.cell_types = p.cell_types;
  if (p.block_bases.valid()) m.block_bases = as_int64(p.block_bases);  // none in a tensor's
  for (const auto& r : p.regions)
    m.regions.push_back(
        {r.name, mesh::region_kind_name(r.kind), r.dim, r.tag, "regions/" + r.name});
  for (const auto& [name, a] : p.field_data) m.field_data[name] = numbers(a);
  m.notes = p.notes;
  m.derived = p.derived;
  m.dropped = p.dropped;
  return l;
}

}  // namespace meshdock::slots
