#!/usr/bin/env python3
"""The upstream of the egress-secrets tests: HTTPS and HTTP servers that record every request.

Standard library only (python3 in execmcp/runtime, 3.11). Serves, on both ports:
  /echo[?gzip=1][&chunked=1]  the request line, headers and body back as JSON (gzip regardless of
                              Accept-Encoding; chunked instead of Content-Length)
  /need-auth                  200 when the Authorization header carries the expected value, else 401
  /git/...                    git-http-backend as CGI over the bare repository r.git (clone, push)
  /simple/, /simple/probe/    a PEP 503 index of one wheel, probe 1.0, built here with zipfile
  /packages/<wheel>           the wheel
/git, /simple and /packages also want an expected value when one is given (401 with a Basic
challenge otherwise, so git and pip send the credentials of their URLs). The values are read from
a file (--auth-file), never from the command line, and never printed: one a line, either `VALUE`
(good for every host) or `HOST VALUE` (only for requests whose Host is HOST). Every request is appended
to the record file as one JSON line: method, path, headers, body (base64).
"""

import argparse
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import zipfile

GIT_BACKEND = "/usr/lib/git-core/git-http-backend"
WHEEL = "probe-1.0-py3-none-any.whl"
MAX_BODY = 64 << 20


def build_wheel():
    """A pure-python wheel of `probe` 1.0: the module, METADATA, WHEEL and RECORD."""
    files = {
        "probe/__init__.py": b'VALUE = "probe 1.0"\n',
        "probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: probe\nVersion: 1.0\n",
        "probe-1.0.dist-info/WHEEL": (b"Wheel-Version: 1.0\nGenerator: execmcp-test\n"
                                      b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "probe-1.0.dist-info/RECORD,,\n"
    files["probe-1.0.dist-info/RECORD"] = record.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def init_repo(root):
    """A bare repository r.git under `root` with one commit, open to pushes over HTTP."""
    bare = os.path.join(root, "r.git")
    if os.path.isdir(bare):
        return
    env = dict(os.environ, HOME=root, GIT_CONFIG_NOSYSTEM="1")
    work = os.path.join(root, "seed")
    ident = ["-c", "user.name=upstream", "-c", "user.email=upstream@test"]

    def git(*args, cwd=root):
        subprocess.run(["git", *ident, *args], cwd=cwd, env=env, check=True,
                       stdout=subprocess.DEVNULL)

    git("init", "--quiet", "--bare", "--initial-branch=main", bare)
    git("config", "--file", os.path.join(bare, "config"), "http.receivepack", "true")
    git("init", "--quiet", "--initial-branch=main", work)
    with open(os.path.join(work, "README"), "w") as f:
        f.write("seeded by secret_upstream.py\n")
    git("add", "README", cwd=work)
    git("commit", "--quiet", "-m", "seed", cwd=work)
    git("push", "--quiet", bare, "main", cwd=work)


class Upstream:
    def __init__(self, args):
        self.record_path = args.record
        self.lock = threading.Lock()
        self.expected = None  # [(host or None, value)], or None: nothing is asked
        if args.auth_file:
            self.expected = []
            with open(args.auth_file, "rb") as f:
                for line in f.read().decode().splitlines():
                    parts = line.split()
                    if len(parts) == 1:
                        self.expected.append((None, parts[0]))
                    elif len(parts) == 2:
                        self.expected.append((parts[0].lower(), parts[1]))
        self.git_root = os.path.join(args.work, "git")
        os.makedirs(self.git_root, exist_ok=True)
        init_repo(self.git_root)
        self.wheel = build_wheel()

    def record(self, method, path, headers, body):
        line = json.dumps({"method": method, "path": path, "headers": headers,
                           "body": base64.b64encode(body).decode()})
        with self.lock, open(self.record_path, "a") as f:
            f.write(line + "\n")

    def authorized(self, value, host):
        """The Authorization header carries a value expected for `host`: as it is (Bearer, token)
        or in Basic credentials (user or password). The REMOTE_USER for git, or None."""
        if self.expected is None:
            return "anonymous"
        if not value:
            return None
        host = (host or "").rsplit(":", 1)[0].lower()
        values = [v for h, v in self.expected if h is None or h == host]
        scheme, _, rest = value.partition(" ")
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(rest.strip(), validate=True).decode(
                    "utf-8", "replace").partition(":")
            except ValueError:
                return None
            if user in values or password in values:
                return user or "token"
            return None
        return "token" if any(v in value for v in values) else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "secret-upstream/1"

    def setup(self):
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(30)
            self.request.do_handshake()

    def log_message(self, fmt, *args):  # quiet: the record file says what came
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                if len(body) + size > MAX_BODY:
                    raise ValueError("body too large")
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length) if length else b""

    def answer(self, status, body, content_type="text/plain", extra=(), chunked=False):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in extra:
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if self.command != "HEAD":
                step = max(1, len(body) // 3)
                for at in range(0, len(body), step):
                    piece = body[at:at + step]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    def handle_any(self):
        up = self.server.upstream
        try:
            body = self.read_body()
        except ValueError as e:
            self.close_connection = True
            return self.answer(400, str(e).encode())
        headers = [[k, v] for k, v in self.headers.items()]
        up.record(self.command, self.path, headers, body)
        path, _, query = self.path.partition("?")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        if path == "/echo":
            return self.echo(headers, body, params)
        user = up.authorized(self.headers.get("Authorization"), self.headers.get("Host"))
        if path == "/need-auth":
            if user is None:
                return self.answer(401, b"unauthorized\n")
            return self.answer(200, b"authorized\n")
        wants_auth = path.startswith(("/git/", "/simple/", "/packages/")) or path == "/simple"
        if wants_auth and user is None:
            return self.answer(401, b"unauthorized\n",
                               extra=[("WWW-Authenticate", 'Basic realm="upstream"')])
        if path.startswith("/git/"):
            return self.git(path[len("/git"):], query, body, user)
        if path in ("/simple", "/simple/"):
            return self.answer(200, b'<!DOCTYPE html><html><body><a href="/simple/probe/">probe'
                               b"</a></body></html>\n", "text/html")
        if path == "/simple/probe/":
            digest = hashlib.sha256(up.wheel).hexdigest()
            page = (f'<!DOCTYPE html><html><body><a href="/packages/{WHEEL}#sha256={digest}">'
                    f"{WHEEL}</a></body></html>\n")
            return self.answer(200, page.encode(), "text/html")
        if path == "/packages/" + WHEEL:
            return self.answer(200, up.wheel, "application/octet-stream")
        return self.answer(404, b"not found\n")

    def echo(self, headers, body, params):
        doc = {
            "request_line": self.requestline,
            "method": self.command,
            "path": self.path,
            "version": self.request_version,
            "headers": headers,
            "body": body.decode("utf-8", "replace"),
            "body_b64": base64.b64encode(body).decode(),
        }
        out = (json.dumps(doc, indent=1) + "\n").encode()
        extra = []
        if params.get("gzip") == "1":
            out = gzip.compress(out)
            extra.append(("Content-Encoding", "gzip"))
        return self.answer(200, out, "application/json", extra, params.get("chunked") == "1")

    def git(self, path_info, query, body, user):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.upstream.git_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": self.server.upstream.git_root,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path_info,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "SERVER_PROTOCOL": "HTTP/1.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        if user is not None and self.server.upstream.expected is not None:
            env["REMOTE_USER"] = user
        done = subprocess.run([GIT_BACKEND], input=body, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        head, sep, payload = done.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, payload = done.stdout.partition(b"\n\n")
        status, extra, content_type = 200, [], "application/octet-stream"
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            value = value.strip()
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name.lower() == "content-type":
                content_type = value
            elif name:
                extra.append((name, value))
        if done.returncode != 0 and not done.stdout:
            return self.answer(500, done.stderr[-2000:])
        return self.answer(status, payload, content_type, extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cert", required=True, help="server certificate chain (PEM)")
    parser.add_argument("--key", required=True, help="its key (PEM)")
    parser.add_argument("--record", required=True, help="file every request is appended to")
    parser.add_argument("--auth-file", help="file holding the Authorization value to expect")
    parser.add_argument("--work", default="/tmp/upstream", help="where r.git is made")
    parser.add_argument("--https-port", type=int, default=443)
    parser.add_argument("--http-port", type=int, default=80)
    args = parser.parse_args()
    upstream = Upstream(args)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])
    servers = []
    for port, tls in ((args.https_port, True), (args.http_port, False)):
        server = Server(("", port), Handler)
        server.upstream = upstream
        if tls:
            server.socket = context.wrap_socket(server.socket, server_side=True,
                                                do_handshake_on_connect=False)
        servers.append(server)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    print("secret-upstream: listening", flush=True)
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
