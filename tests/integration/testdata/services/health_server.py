#!/usr/bin/env python3
"""A service replica for the integration tests: an HTTP server on 127.0.0.1:$DROVER_PORT that
answers 200 "ok" to GET /health (and /), 404 to anything else. With $PID_DIR set it writes its
pid to $PID_DIR/$DROVER_PORT once listening, so a test can kill it."""

import http.server
import os


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        code = 200 if self.path in ("/", "/health") else 404
        body = b"ok\n" if code == 200 else b"not found\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    port = int(os.environ["DROVER_PORT"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    pid_dir = os.environ.get("PID_DIR")
    if pid_dir:
        path = os.path.join(pid_dir, str(port))
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(path + ".tmp", path)
    server.serve_forever()


if __name__ == "__main__":
    main()
