// Text a writer makes, handed to its file in 1 MiB pieces as it is or through zlib's deflate
// (gzip wrapper): the writers of formats whose readers take x.<ext>.gz (Netgen, PERMAS).
#pragma once

#include <zlib.h>

#include <memory>
#include <string>
#include <string_view>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/writers/out_file.hpp"
#include "daemon/mesh/writers/write_util.hpp"

namespace meshdock::mesh::wr {

class TextOut {
 public:
  TextOut(OutFile& out, bool gzip, const std::string& path) : out_(out), path_(path) {
    s_.reserve(kChunk + 4096);
    if (!gzip) return;
    zbuf_.resize(kChunk);  // before the stream: nothing to end if this throws
    auto z = std::make_unique<z_stream>();
    if (deflateInit2(z.get(), 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw mesh::WriteError(path_ + ": zlib could not start");
    }
    z_.reset(z.release());  // started: from here the deleter ends it
  }
  std::string& str() { return s_; }
  void put(std::string_view x) { s_.append(x); }
  void put(char c) { s_ += c; }
  template <typename T>
  void text(T v) {
    append_number(s_, v);
  }
  void maybe_flush() {
    if (s_.size() >= kChunk) flush(false);
  }
  void finish() { flush(true); }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  OutFile& out_;
  const std::string& path_;
  std::string s_;
  struct DeflateEnd {
    void operator()(z_stream* z) const {
      deflateEnd(z);
      std::default_delete<z_stream>()(z);
    }
  };
  std::unique_ptr<z_stream, DeflateEnd> z_;
  std::string zbuf_;

  void flush(bool last) {
    if (!z_) {
      out_.put(s_);
      s_.clear();
      return;
    }
    z_->next_in = reinterpret_cast<Bytef*>(s_.data());
    z_->avail_in = static_cast<uInt>(s_.size());
    while (true) {
      z_->next_out = reinterpret_cast<Bytef*>(zbuf_.data());
      z_->avail_out = static_cast<uInt>(zbuf_.size());
      const int rc = deflate(z_.get(), last ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) throw mesh::WriteError(path_ + ": zlib's deflate failed");
      out_.write(zbuf_.data(), zbuf_.size() - z_->avail_out);
      if (last ? rc == Z_STREAM_END : (z_->avail_in == 0 && z_->avail_out != 0)) break;
    }
    s_.clear();
  }
};

}  // namespace meshdock::mesh::wr
