#!/usr/bin/env python3
"""A loopback file server that trickles a small valid GeoJSON out over
about two seconds: the stand-in for a slow remote host."""
import http.server
import json
import sys
import time

FEATURES = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [i / 10, 1]},
             "properties": {"i": i}} for i in range(20)]
BODY = json.dumps({"type": "FeatureCollection", "features": FEATURES}).encode()


class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/geo+json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        step = len(BODY) // 20 + 1
        for start in range(0, len(BODY), step):
            self.wfile.write(BODY[start:start + step])
            self.wfile.flush()
            time.sleep(0.1)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
