#pragma once

// A TCP connection to this machine, for tests and benchmarks that speak to a server, a proxy or
// an echo server on 127.0.0.1.

namespace drover::testing {

// Connects to 127.0.0.1:`port` (blocking: loopback answers at once) and returns the socket,
// close-on-exec; -1 when it cannot. The caller owns the descriptor.
int ConnectLoopback(int port);

}  // namespace drover::testing
