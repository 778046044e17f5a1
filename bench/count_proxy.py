#!/usr/bin/env python3
"""A reverse proxy in front of an S3 server that counts the requests it forwards.

bench/auto_bench.sh puts it between `etcdadm auto` and MinIO to measure the store requests a
controller makes. Requests are forwarded byte for byte with their own Host header, so SigV4
signatures made for the proxy's address still verify at the server. GET /__counts (answered by the
proxy itself) returns the counts so far as JSON: {"GET": n, "LIST": n, "PUT": n, ...}; POST /__reset zeroes them.

Usage: count_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT
"""
import http.client
import http.server
import json
import sys
import threading

counts = {}
lock = threading.Lock()
upstream = sys.argv[2]


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def own(self):
        if self.path == "/__counts":
            with lock:
                body = json.dumps(counts).encode()
        elif self.path == "/__reset":
            with lock:
                counts.clear()
            body = b"{}"
        else:
            return False
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def forward(self):
        if self.own():
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        # A ListObjects call is a GET on the bucket with a list-type or prefix query: priced apart.
        label = self.command
        if label == "GET" and ("list-type=" in self.path or "prefix=" in self.path or "uploads" in self.path):
            label = "LIST"
        with lock:
            counts[label] = counts.get(label, 0) + 1
        conn = http.client.HTTPConnection(upstream, timeout=60)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status, resp.reason)
        for name, value in resp.getheaders():
            if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(name, value)
        # A HEAD answer has no body but the object's length: the upstream's, not the empty body's.
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length if length is not None else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Proxy).serve_forever()
