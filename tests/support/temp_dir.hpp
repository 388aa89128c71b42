// A directory of its own for a test's files: made under the system's temporary directory
// (named by a tag and the process id, so parallel test processes do not meet), removed with
// everything in it at scope exit.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace meshdock::test {

class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("meshdock-" + tag + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;  // never throw from a destructor
    std::filesystem::remove_all(path_, ec);
  }
  // A path in the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace meshdock::test
