// A gzipped text file (Netgen's .vol.gz, DOLFIN's .xml.gz, PERMAS' .post.gz) inflated into memory,
// under a limit that stops a gzip bomb before it is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace meshdock::mesh
