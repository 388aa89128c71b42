// RAII ownership of one POSIX shared-memory object and its mapping (Boost.Interprocess).
//
// Names are given without the leading slash ("meshdock.bracket"), as Boost.Interprocess and
// Python's multiprocessing.shared_memory.SharedMemory(name=...) both take them; each adds the
// slash before calling shm_open, so all three see /dev/shm/meshdock.bracket.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "meshdock/shm/error.hpp"

namespace meshdock::shm {

// kCopyOnWrite: the object is opened read-only and mapped MAP_PRIVATE, writable: this
// process's writes land in private copies of the pages and never reach the object.
enum class Access { kReadOnly, kReadWrite, kCopyOnWrite };

class Segment {
 public:
  Segment() = default;
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept {
    if (this != &o) {
      drop();
      shm_ = std::move(o.shm_);
      region_ = std::move(o.region_);
      name_ = std::move(o.name_);
      owner_ = o.owner_;
      o.owner_ = false;
      o.name_.clear();
    }
    return *this;
  }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates `name` with `size` zeroed bytes and permission bits `mode`. With replace = true an
  // existing object of that name (a dead producer's) is unlinked first; otherwise an existing
  // object is an error. The object is unlinked again on destruction only if `owner` is set.
  static Segment create(const std::string& name, std::size_t size, unsigned mode = 0660,
                        bool replace = false) {
    namespace bip = boost::interprocess;
    if (size == 0) throw ProtocolError("segment '" + name + "': cannot create with size 0");
    if (replace) bip::shared_memory_object::remove(name.c_str());
    Segment s;
    try {
      bip::permissions perm(mode);
      s.shm_ = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perm);
      s.shm_.truncate(static_cast<bip::offset_t>(size));
      s.region_ = bip::mapped_region(s.shm_, bip::read_write);
    } catch (const bip::interprocess_exception& e) {
      throw ProtocolError("segment '" + name + "': cannot create (" + e.what() + ")");
    }
    s.name_ = name;
    s.owner_ = true;
    return s;
  }

  // Maps an existing object whole. Throws naming the object when it is missing or empty.
  static Segment open(const std::string& name, Access access = Access::kReadOnly) {
    namespace bip = boost::interprocess;
    Segment s;
    const auto mode = access == Access::kReadWrite ? bip::read_write : bip::read_only;
    const auto map_mode = access == Access::kCopyOnWrite ? bip::copy_on_write : mode;
    try {
      s.shm_ = bip::shared_memory_object(bip::open_only, name.c_str(), mode);
      bip::offset_t size = 0;
      if (!s.shm_.get_size(size) || size <= 0) {
        throw ProtocolError("segment '" + name + "' is empty");
      }
      s.region_ = bip::mapped_region(s.shm_, map_mode);
    } catch (const bip::interprocess_exception& e) {
      throw ProtocolError("segment '" + name + "': cannot open (" + e.what() + ")");
    }
    s.name_ = name;
    return s;
  }

  static bool exists(const std::string& name) {
    namespace bip = boost::interprocess;
    try {
      bip::shared_memory_object probe(bip::open_only, name.c_str(), bip::read_only);
      return true;
    } catch (const bip::interprocess_exception&) {
      return false;
    }
  }

  static bool remove(const std::string& name) {
    return boost::interprocess::shared_memory_object::remove(name.c_str());
  }

  ~Segment() { drop(); }

  // Keeps the object after this handle dies (e.g. a test that hands it to another process).
  void release_ownership() { owner_ = false; }
  // Unlinks now; the mapping stays valid until destruction.
  void unlink() {
    if (!name_.empty()) boost::interprocess::shared_memory_object::remove(name_.c_str());
    owner_ = false;
  }

  void* data() const { return region_.get_address(); }
  std::size_t size() const { return region_.get_size(); }
  const std::string& name() const { return name_; }
  bool valid() const { return region_.get_address() != nullptr; }
  // The open object's file descriptor (for fstat: owner, mode), or -1 when there is none.
  int fd() const { return shm_.get_mapping_handle().handle; }

 private:
  void drop() noexcept {
    if (owner_ && !name_.empty()) boost::interprocess::shared_memory_object::remove(name_.c_str());
    owner_ = false;
  }

  boost::interprocess::shared_memory_object shm_;
  boost::interprocess::mapped_region region_;
  std::string name_;
  bool owner_ = false;
};

}  // namespace meshdock::shm
