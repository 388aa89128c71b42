#include "daemon/mesh/readers/gzip_text.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

std::uint64_t default_inflate_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  constexpr std::uint64_t kCap = std::uint64_t{16} << 30;
  if (pages <= 0 || page <= 0) return kCap;
  return std::min(kCap, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2);
}

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string inflate_gzip(std::string_view data, const std::string& path, const char* what,
                         std::uint64_t limit, ReadProgress* progress) {
  // The stream ends on every way out (a throw from resize or from the progress callback too).
  struct Stream {
    z_stream z{};
    bool live = false;
    ~Stream() {
      if (live) inflateEnd(&z);
    }
  } st;
  auto& z = st.z;
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw ReadError(path + ": zlib could not start");
  st.live = true;
  std::string out;
  out.resize(std::min<std::uint64_t>(limit, std::max<std::size_t>(data.size() * 4, 1 << 16)));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  std::size_t in_left = data.size(), used = 0;
  int rc = Z_OK;
  while (true) {
    if (used == out.size()) {
      if (out.size() >= limit)
        throw SizeLimitError(path + ": the gzipped " + what + " inflates to more than the " +
                             std::to_string(limit) +
                             "-byte limit (max_bytes; unset: half this machine's memory, at "
                             "most 16 GiB); not read");
      out.resize(std::min<std::uint64_t>(limit, std::uint64_t{out.size()} * 2));
    }
    const auto in_now = std::min<std::size_t>(in_left, 1u << 30);
    const auto out_now = std::min<std::size_t>(out.size() - used, 4u << 20);
    z.avail_in = static_cast<uInt>(in_now);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(out_now);
    rc = inflate(&z, Z_NO_FLUSH);
    in_left -= in_now - z.avail_in;
    used += out_now - z.avail_out;
    if (progress) progress->reached(data.size() - in_left, path);
    if (rc == Z_STREAM_END) {
      // Concatenated members (gzip allows them; Python's gzip reads them all).
      if (in_left > 0 &&
          is_gzip(std::string_view(reinterpret_cast<const char*>(z.next_in), in_left))) {
        inflateReset(&z);
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && in_left == 0) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
  }
  const std::string msg = z.msg ? z.msg : "";
  if (rc != Z_STREAM_END)
    throw ReadError(path + ": the gzip data is " +
                    (rc == Z_BUF_ERROR ? std::string("truncated") : "corrupt (" + msg + ")") +
                    " after " + std::to_string(used) + " inflated bytes");
  out.resize(used);
  return out;
}

}  // namespace meshdock::mesh
