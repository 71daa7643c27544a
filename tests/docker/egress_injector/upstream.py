"""The upstream of the injector test: HTTPS on 443 (and plain HTTP on 80) for every name it is
given on the network. /echo answers the request's headers as JSON (?gzip=1: gzip-coded whatever
the request accepts), /1k a KiB, /brotli a body in Content-Encoding br, /partial a 206, /bomb
64 MiB of gzip-coded zeros, /drop closes the connection without an answer; every request's Authorization is appended to /tmp/record/requests
(read by the test with docker exec), with the scheme and the path.
   python3 upstream.py CERT KEY"""
import gzip
import hashlib
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RECORD = "/tmp/record/requests"
BOMB = gzip.compress(b"\0" * (64 << 20))  # 64 MiB inflated from about 64 KiB
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per response, without Nagle: otherwise the latency measured is delayed ACKs.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "1024")
        self.send_header("X-Echo-Authorization", self.headers.get("Authorization", "-"))
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock, open(RECORD, "a") as record:
            record.write(f"post {self.headers.get('Host')} {self.path} {len(body)} "
                         f"{hashlib.sha256(body).hexdigest()}\n")
        answer = json.dumps({"length": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                             "authorization": self.headers.get("Authorization", "-")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):
        scheme = "https" if isinstance(self.connection, ssl.SSLSocket) else "http"
        with lock, open(RECORD, "a") as record:
            record.write(f"{scheme} {self.headers.get('Host')} {self.path} "
                         f"{self.headers.get('Authorization', '-')}\n")
        if self.path.startswith("/drop"):  # closes without a byte (a stale kept connection)
            self.close_connection = True
            return
        status = 200
        if self.path.startswith("/1k"):
            body, coding = b"x" * 1024, None
        elif self.path.startswith("/brotli"):
            body, coding = b"not really brotli", "br"
        elif self.path.startswith("/bomb"):
            body, coding = BOMB, "gzip"
        elif self.path.startswith("/partial"):
            body, coding, status = b"xx", None, 206
        elif self.path.startswith("/echo"):
            body = json.dumps({k: v for k, v in self.headers.items()}).encode()
            coding = "gzip" if "gzip=1" in self.path else None
            if coding:
                body = gzip.compress(body)
        else:
            body, coding = b"not here\n", None
        self.send_response(status if body != b"not here\n" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Echo-Authorization", self.headers.get("Authorization", "-"))
        if coding:
            self.send_header("Content-Encoding", coding)
        self.end_headers()
        self.wfile.write(body)


def main():
    os.makedirs(os.path.dirname(RECORD), exist_ok=True)
    open(RECORD, "a").close()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    tls = ThreadingHTTPServer(("0.0.0.0", 443), Handler)
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    plain = ThreadingHTTPServer(("0.0.0.0", 80), Handler)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    print("upstream: listening", flush=True)
    tls.serve_forever()


if __name__ == "__main__":
    main()
