#pragma once

// The client side of TLS for HttpClient (http_client.h): OpenSSL over a connected socket.
// Linked only into drover-full and the tests: the lean `drover` hands command lines that name an
// https:// server to drover-full, so that it never loads OpenSSL (drover/cli/cli.h).
//
// TLS 1.2 at least. The server's certificate must verify against the PEM bundle
// ConnectOptions::ca_file (--ca, DROVER_CA), or the system's store when that is empty, and must
// name the URL's host (a DNS name, or an IP address in its subjectAltName); the host is sent as
// SNI when it is a name. A close-delimited answer may end without TLS's close_notify (as the
// API's event stream does when its server dies); every other answer has a length, so a cut is
// still seen as one.

#include "drover/api/http_client.h"

namespace drover::api {

// A TlsConnector. kTls, with the sentence the user sees, when the bundle cannot be loaded, the
// peer does not speak TLS, or its certificate does not verify or does not name the host.
HttpResult<std::unique_ptr<ByteStream>> ConnectTls(int fd, const ServerAddress& address,
                                                   const ConnectOptions& options);

}  // namespace drover::api
