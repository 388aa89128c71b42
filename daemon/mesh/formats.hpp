// Which format a path names: its extension, lower-cased; shared by read_mesh and write_mesh.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace meshdock::mesh {

// "" when the file name has no extension.
inline std::string format_of(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return {};
  std::string fmt = path.substr(dot + 1);
  std::transform(fmt.begin(), fmt.end(), fmt.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return fmt;
}

}  // namespace meshdock::mesh
