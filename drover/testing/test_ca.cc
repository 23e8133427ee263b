#include "drover/testing/test_ca.h"

#include <fmt/format.h>

#include <cstdlib>

namespace drover::testing {

bool MakeTestCa(const std::string& dir, const std::string& name, bool with_server) {
  std::string script = fmt::format(
      "cd '{0}' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-days 2 -subj /CN={1} -addext basicConstraints=critical,CA:TRUE "
      "-addext keyUsage=keyCertSign -keyout {1}.key -out {1}.pem",
      dir, name);
  if (with_server) {
    script += fmt::format(
        " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-subj /CN=localhost -keyout server.key -out server.csr "
        "&& printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext "
        "&& openssl x509 -req -in server.csr -CA {0}.pem -CAkey {0}.key -CAcreateserial "
        "-days 2 -extfile server.ext -out server.pem",
        name);
  }
  return std::system(("(" + script + ") >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace drover::testing
