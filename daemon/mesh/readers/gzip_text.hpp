// A gzipped text file (Netgen's .vol.gz, DOLFIN's .xml.gz, PERMAS' .post.gz) inflated into memory,
// under a limit that stops a gzip bomb before it is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/read_progress.hpp"

namespace meshdock::mesh {

// Whether `data` starts with gzip's magic bytes (1f 8b).
bool is_gzip(std::string_view data);

// What a gzipped file may inflate to when the caller sets no max_bytes (meshdock.read, `meshdock
// convert`; the daemon sets its own): half this machine's memory, at most 16 GiB, so that a gzip
// bomb is refused before it takes the machine.
std::uint64_t default_inflate_limit();

// The gzip member(s) of `data` inflated (concatenated members too, as Python's gzip), refused
// (SizeLimitError naming `path` and "the gzipped <what>") past `limit` bytes before that much is
// allocated. `progress` (may be null) hears the compressed bytes consumed, at most 4 MiB of
// output apart, and may stop the inflate. Truncated or corrupt data is a ReadError naming
// `path` and how many bytes had inflated.
std::string inflate_gzip(std::string_view data, const std::string& path, const char* what,
                         std::uint64_t limit, ReadProgress* progress);

// The entry of a text reader whose files may come gzipped (Netgen, DOLFIN XML, PERMAS):
// parse(std::string_view text, MappedFile* file, ReadProgress* progress) gets the inflated text
// (file and progress null: progress counted the file's bytes as they inflated, the text's
// offsets are others) when the file starts with gzip's magic, refused past `max_bytes` (0: the
// default_inflate_limit()) as `what`; else the file through a 2 MiB window (Access::window) and
// its progress.
template <typename Parse>
auto parse_maybe_gzipped(const InFile& in, std::uint64_t max_bytes, const char* what,
                         Parse&& parse) {
  if (is_gzip(peek_file(in, 2))) {
    return parse_mapped(
        in,
        [&](std::string_view data, MappedFile&) {
          const std::string text = inflate_gzip(
              data, in.path, what, max_bytes ? max_bytes : default_inflate_limit(), in.progress);
          return parse(std::string_view(text), static_cast<MappedFile*>(nullptr),
                       static_cast<ReadProgress*>(nullptr));
        },
        Access::map);
  }
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) { return parse(data, &file, file.progress()); },
      Access::window);
}

}  // namespace meshdock::mesh
