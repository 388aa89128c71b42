#include "daemon/rpc/metrics_http.hpp"

#include <array>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <istream>

#include "daemon/service/config.hpp"

namespace meshdock::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t kMaxHead = 8192;
constexpr std::size_t kMaxConnections = 16;
constexpr auto kHeadTimeout = std::chrono::seconds(5);

// "127.0.0.1:9464", "localhost:9464", "[::1]:9464" -> an endpoint; ConfigError otherwise
// (service::parse_metrics_listen, which check_config uses too).
tcp::endpoint parse_listen(const std::string& listen, const std::string& name) {
  const auto a = service::parse_metrics_listen(listen, name);
  return {asio::ip::make_address(a.host), a.port};
}

}  // namespace

struct MetricsHttp::State : std::enable_shared_from_this<MetricsHttp::State> {
  State(asio::io_context& io, std::function<std::string()> r, service::Logger& l)
      : acceptor(io), render(std::move(r)), log(l) {}
  tcp::acceptor acceptor;
  std::function<std::string()> render;
  service::Logger& log;
  std::size_t open = 0;
  bool closed = false;

  void accept();
};

namespace {

// One connection: read the head (bounded), answer, close.
struct Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket s, std::shared_ptr<MetricsHttp::State> st)
      : sock(std::move(s)), timer(sock.get_executor()), buf(kMaxHead), state(std::move(st)) {}
  ~Session() { --state->open; }
  tcp::socket sock;
  asio::steady_timer timer;
  asio::streambuf buf;
  std::string reply;
  std::shared_ptr<MetricsHttp::State> state;

  void start() {
    auto self = shared_from_this();
    timer.expires_after(kHeadTimeout);
    timer.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->sock.close();  // too slow: the read below fails and the session ends
    });
    asio::async_read_until(sock, buf, "\r\n\r\n",
                           [self](const boost::system::error_code& ec, std::size_t) {
                             self->timer.cancel();
                             if (ec) return;  // closed, timed out, or a head over 8 KiB
                             self->answer();
                           });
  }

  void answer() {
    std::istream in(&buf);
    std::string method, target, version;
    in >> method >> target >> version;
    int code = 200;
    std::string body, type = "text/plain; version=0.0.4; charset=utf-8";
    if (method != "GET" && method != "HEAD") {
      code = 405;
      body = "only GET /metrics\n";
    } else if (target != "/metrics" && target.rfind("/metrics?", 0) != 0) {
      code = 404;
      body = "not found: GET /metrics\n";
    } else {
      try {
        body = state->render();
      } catch (const std::exception& e) {
        code = 500;
        body = std::string("metrics: ") + e.what() + "\n";
        state->log.error("metrics over HTTP: " + body);
      }
    }
    if (code != 200) type = "text/plain; charset=utf-8";
    const char* reason = code == 200   ? "OK"
                         : code == 404 ? "Not Found"
                         : code == 405 ? "Method Not Allowed"
                                       : "Internal Server Error";
    reply = "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
            "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (method != "HEAD") reply += body;
    auto self = shared_from_this();
    timer.expires_after(kHeadTimeout);  // a client that never reads the reply is dropped too
    timer.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->sock.close();
    });
    asio::async_write(sock, asio::buffer(reply),
                      [self](const boost::system::error_code& ec, std::size_t) {
                        if (!ec) self->drain();
                      });
  }

  // Half-close, then read what the client still sends (a request body) until it closes or
  // 1 s passes: closing with unread data would reset the connection before it read the reply.
  void drain() {
    boost::system::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_send, ignored);
    // One deadline for the whole drain: a client trickling bytes cannot hold the connection.
    auto self = shared_from_this();
    timer.expires_after(std::chrono::seconds(1));
    timer.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->sock.close();
    });
    discard();
  }
  // Reads and drops what comes until EOF or an error (the drain's deadline closes the socket).
  void discard() {
    auto self = shared_from_this();
    sock.async_read_some(asio::buffer(sink),
                         [self](const boost::system::error_code& ec, std::size_t) {
                           if (ec)
                             self->timer.cancel();
                           else
                             self->discard();
                         });
  }
  std::array<char, 1024> sink{};
};

}  // namespace

void MetricsHttp::State::accept() {
  auto self = shared_from_this();
  acceptor.async_accept([self](const boost::system::error_code& ec, tcp::socket sock) {
    if (self->closed) return;
    if (!ec) {
      if (self->open >= kMaxConnections) {
        boost::system::error_code ignored;
        sock.close(ignored);  // busy: the scraper retries
      } else {
        ++self->open;
        std::make_shared<Session>(std::move(sock), self)->start();
      }
    }
    self->accept();
  });
}

MetricsHttp::MetricsHttp(asio::io_context& io, const std::string& listen,
                         std::function<std::string()> render, service::Logger& log,
                         const std::string& name)
    : s_(std::make_shared<State>(io, std::move(render), log)) {
  const auto ep = parse_listen(listen, name);
  boost::system::error_code ec;
  s_->acceptor.open(ep.protocol(), ec);
  if (!ec) s_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s_->acceptor.bind(ep, ec);
  if (!ec) s_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw service::ConfigError(name + " '" + listen + "': cannot listen: " + ec.message());
  s_->accept();
}

MetricsHttp::~MetricsHttp() {
  s_->closed = true;
  boost::system::error_code ignored;
  s_->acceptor.close(ignored);
}

std::string MetricsHttp::endpoint() const {
  boost::system::error_code ec;
  const auto ep = s_->acceptor.local_endpoint(ec);
  if (ec) return {};
  const auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

}  // namespace meshdock::rpc
