#!/usr/bin/env python3
"""A remote store that misbehaves, for benchmarks: misbehaving-store.py MODE PORT

  hang     accepts connections and never answers
  garbage  answers every GET with 200 and a web page, takes every PUT
  slow     has nothing and takes every write, each answer after 0.5 s
"""
import http.server
import socket
import sys
import threading
import time

mode, port = sys.argv[1], int(sys.argv[2])


class Store(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body=b"", content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if mode == "slow":
            time.sleep(0.5)
            return self.reply(404)
        page = b"<!DOCTYPE html>\n<html><body><p>Welcome!</p></body></html>\n"
        self.reply(200, page, "text/html")

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if mode == "slow":
            time.sleep(0.5)
        self.reply(201)

    def log_message(self, *arguments):
        pass


if mode == "hang":
    listener = socket.create_server(("127.0.0.1", port), backlog=1024)
    held = []
    while True:
        connection, _ = listener.accept()
        held.append(connection)
else:
    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # a client that gave up and hung up is expected here

    server = Server(("127.0.0.1", port), Store)
    server.serve_forever()
