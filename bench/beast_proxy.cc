// beast_proxy: the peer of the HTTP-stack measurement (docs/benchmarks.md, "Inference gateway:
// evhttp against Boost.Beast"; the choice is argued in docs/architecture.md). The smallest
// Boost.Beast reverse proxy doing what the gateway does per non-streamed request, on one thread
// (one io_context, C++20 coroutines): read the request, parse its JSON body and check `model`,
// forward it to the one upstream over a pooled keep-alive connection, read the whole reply, pass
// it back. No routing policy, breakers, retries or metrics: it bounds from below what Beast would
// cost, so the gateway's numbers beside it are the conservative side of the comparison.
//
// Usage: beast_proxy --listen-port N --upstream-port M (both on 127.0.0.1).

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// Idle upstream connections, reused most recent first.
struct Pool {
  tcp::endpoint upstream;
  std::vector<std::unique_ptr<beast::tcp_stream>> idle;
};

http::response<http::string_body> Error(unsigned version, http::status status,
                                        const std::string& code) {
  http::response<http::string_body> reply{status, version};
  reply.set(http::field::content_type, "application/json");
  reply.body() = nlohmann::json{{"error", {{"message", code}, {"code", code}}}}.dump();
  reply.prepare_payload();
  return reply;
}

asio::awaitable<void> Serve(tcp::socket socket, Pool& pool) {
  beast::tcp_stream client(std::move(socket));
  beast::flat_buffer buffer;
  try {
    while (true) {
      http::request<http::string_body> request;
      co_await http::async_read(client, buffer, request, asio::use_awaitable);
      const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
      if (!body.is_object() || !body.contains("model") || !body["model"].is_string()) {
        co_await http::async_write(
            client, Error(request.version(), http::status::bad_request, "missing_model"),
            asio::use_awaitable);
        continue;
      }
      std::unique_ptr<beast::tcp_stream> upstream;
      if (pool.idle.empty()) {
        upstream = std::make_unique<beast::tcp_stream>(client.get_executor());
        co_await upstream->async_connect(pool.upstream, asio::use_awaitable);
      } else {
        upstream = std::move(pool.idle.back());
        pool.idle.pop_back();
      }
      request.keep_alive(true);
      co_await http::async_write(*upstream, request, asio::use_awaitable);
      beast::flat_buffer upstream_buffer;
      http::response<http::string_body> reply;
      co_await http::async_read(*upstream, upstream_buffer, reply, asio::use_awaitable);
      if (reply.keep_alive()) pool.idle.push_back(std::move(upstream));
      reply.keep_alive(request.keep_alive());
      co_await http::async_write(client, reply, asio::use_awaitable);
      if (!request.keep_alive()) break;
    }
  } catch (const std::exception&) {
    // The client left, or the upstream failed: this connection ends.
  }
}

asio::awaitable<void> Listen(tcp::acceptor acceptor, Pool& pool) {
  while (true) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    socket.set_option(tcp::no_delay(true));
    asio::co_spawn(acceptor.get_executor(), Serve(std::move(socket), pool), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int listen_port = 0, upstream_port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--listen-port") {
      listen_port = std::atoi(argv[i + 1]);
    } else if (flag == "--upstream-port") {
      upstream_port = std::atoi(argv[i + 1]);
    }
  }
  if (listen_port <= 0 || upstream_port <= 0) {
    std::fprintf(stderr, "usage: beast_proxy --listen-port N --upstream-port M\n");
    return 2;
  }
  asio::io_context io(1);
  const auto loopback = asio::ip::make_address("127.0.0.1");
  Pool pool{tcp::endpoint(loopback, static_cast<unsigned short>(upstream_port)), {}};
  tcp::acceptor acceptor(io, tcp::endpoint(loopback, static_cast<unsigned short>(listen_port)));
  asio::co_spawn(io, Listen(std::move(acceptor), pool), asio::detached);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, auto) { io.stop(); });
  io.run();
  return 0;
}
