// GET /metrics over HTTP for Prometheus, on a loopback address (config key metrics_listen,
// e.g. "127.0.0.1:9464"; port 0 picks one). Each request gets the text `render` returns now.
// A scrape endpoint and nothing more, so that a local client cannot hold it: loopback
// addresses only, one request per connection (Connection: close), the request head capped at
// 8 KiB and 5 s, at most 16 connections at once (more are closed at accept). Runs on the
// daemon's io_context thread; destroying it closes the listener and every connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "daemon/service/log.hpp"

namespace meshdock::rpc {

class MetricsHttp {
 public:
  // Throws service::ConfigError starting with `name` (what the caller calls the value: the key,
  // "FILE: metrics_listen", a flag) when it is not HOST:PORT, not a loopback address, or cannot
  // be bound.
  MetricsHttp(boost::asio::io_context& io, const std::string& listen,
              std::function<std::string()> render, service::Logger& log,
              const std::string& name = "metrics_listen");
  ~MetricsHttp();
  MetricsHttp(const MetricsHttp&) = delete;
  MetricsHttp& operator=(const MetricsHttp&) = delete;

  // The address bound, "127.0.0.1:9464" (the port chosen when 0 was asked for).
  std::string endpoint() const;

  struct State;

 private:
  std::shared_ptr<State> s_;
};

}  // namespace meshdock::rpc
