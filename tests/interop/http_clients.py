"""Python HTTP clients (httpx and requests) against the Switchboard app of
tests/interop/http-clients.test.mjs.

Usage (with the venv from scripts/setup-python.sh):
    python tests/interop/http_clients.py http://127.0.0.1:PORT

Prints one JSON object on stdout: what each client observed, per check
(statuses, headers, bodies, digests, when each piece of a streamed response
arrived, the server-side ports of reused connections). It asserts nothing:
the node test does, so every verdict is in one place. A check that raises
is reported as {"error": "..."} and the others still run. Every request has
a timeout, so the script always ends by itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback

import httpx
import requests

TIMEOUT_S = 15.0
TEN_MIB = 10 * 1024 * 1024
# The streamed upload's pieces: 160 x 64 KiB = 10 MiB.
PIECE = 64 * 1024


def observe(fn):
    """Run one check; its result, or the error it raised."""
    try:
        return fn()
    except Exception as error:  # reported, asserted by the node test
        return {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc(limit=3)}


def payload() -> tuple[bytes, str]:
    data = os.urandom(TEN_MIB)
    return data, hashlib.sha256(data).hexdigest()


def pieces_of(data: bytes):
    for start in range(0, len(data), PIECE):
        yield data[start : start + PIECE]


def run_httpx(base: str) -> dict:
    data, digest = payload()
    out: dict = {"sent_sha256": digest, "sent_size": len(data)}
    with httpx.Client(base_url=base, timeout=TIMEOUT_S) as client:

        def get_params():
            r = client.get("/users/caf%C3%A9", params={"sort": "asc", "tag": ["a", "b"]})
            return {"status": r.status_code, "json": r.json(), "content_type": r.headers.get("content-type")}

        def post_json():
            r = client.post("/echo", json={"name": "ada", "list": [1, 2, 3], "nested": {"ok": True}})
            return {"status": r.status_code, "json": r.json()}

        def upload():
            r = client.post("/sha256", content=data, headers={"content-type": "application/octet-stream"})
            return {"status": r.status_code, "json": r.json()}

        def upload_chunked():
            # An iterator has no length: httpx sends it chunked.
            r = client.post("/sha256", content=pieces_of(data))
            return {"status": r.status_code, "json": r.json(), "request_te": r.request.headers.get("transfer-encoding")}

        def stream():
            started = time.monotonic()
            arrivals = []
            with client.stream("GET", "/stream") as r:
                for piece in r.iter_raw():
                    arrivals.append({"ms": round((time.monotonic() - started) * 1000), "text": piece.decode()})
                return {"status": r.status_code, "transfer_encoding": r.headers.get("transfer-encoding"), "pieces": arrivals}

        def not_found():
            r = client.get("/no/such/path")
            return {"status": r.status_code, "text": r.text}

        def redirect():
            manual = client.get("/redirect")
            followed = client.get("/redirect", follow_redirects=True)
            return {
                "status": manual.status_code,
                "location": manual.headers.get("location"),
                "final_status": followed.status_code,
                "final_path": followed.url.raw_path.decode(),
                "history": [h.status_code for h in followed.history],
                "json": followed.json(),
            }

        def reuse():
            return {"ports": [client.get("/conn").json()["port"] for _ in range(3)]}

        for name, check in [
            ("get_params", get_params),
            ("post_json", post_json),
            ("upload", upload),
            ("upload_chunked", upload_chunked),
            ("stream", stream),
            ("not_found", not_found),
            ("redirect", redirect),
            ("reuse", reuse),
        ]:
            out[name] = observe(check)
    return out


def run_requests(base: str) -> dict:
    data, digest = payload()
    out: dict = {"sent_sha256": digest, "sent_size": len(data)}
    with requests.Session() as session:

        def get_params():
            r = session.get(f"{base}/users/caf%C3%A9", params={"sort": "asc", "tag": ["a", "b"]}, timeout=TIMEOUT_S)
            return {"status": r.status_code, "json": r.json(), "content_type": r.headers.get("content-type")}

        def post_json():
            r = session.post(f"{base}/echo", json={"name": "ada", "list": [1, 2, 3], "nested": {"ok": True}}, timeout=TIMEOUT_S)
            return {"status": r.status_code, "json": r.json()}

        def upload():
            r = session.post(f"{base}/sha256", data=data, headers={"content-type": "application/octet-stream"}, timeout=TIMEOUT_S)
            return {"status": r.status_code, "json": r.json()}

        def upload_chunked():
            # A generator has no length: requests sends it chunked.
            r = session.post(f"{base}/sha256", data=pieces_of(data), timeout=TIMEOUT_S)
            return {"status": r.status_code, "json": r.json(), "request_te": r.request.headers.get("transfer-encoding")}

        def stream():
            started = time.monotonic()
            arrivals = []
            with session.get(f"{base}/stream", stream=True, timeout=TIMEOUT_S) as r:
                # chunk_size=None: each piece as it comes off the socket.
                for piece in r.raw.stream(None, decode_content=False):
                    arrivals.append({"ms": round((time.monotonic() - started) * 1000), "text": piece.decode()})
                return {"status": r.status_code, "transfer_encoding": r.headers.get("transfer-encoding"), "pieces": arrivals}

        def not_found():
            r = session.get(f"{base}/no/such/path", timeout=TIMEOUT_S)
            return {"status": r.status_code, "text": r.text}

        def redirect():
            manual = session.get(f"{base}/redirect", allow_redirects=False, timeout=TIMEOUT_S)
            followed = session.get(f"{base}/redirect", timeout=TIMEOUT_S)
            return {
                "status": manual.status_code,
                "location": manual.headers.get("location"),
                "final_status": followed.status_code,
                "final_path": followed.url[len(base) :],
                "history": [h.status_code for h in followed.history],
                "json": followed.json(),
            }

        def reuse():
            return {"ports": [session.get(f"{base}/conn", timeout=TIMEOUT_S).json()["port"] for _ in range(3)]}

        for name, check in [
            ("get_params", get_params),
            ("post_json", post_json),
            ("upload", upload),
            ("upload_chunked", upload_chunked),
            ("stream", stream),
            ("not_found", not_found),
            ("redirect", redirect),
            ("reuse", reuse),
        ]:
            out[name] = observe(check)
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: http_clients.py http://127.0.0.1:PORT", file=sys.stderr)
        return 2
    base = sys.argv[1].rstrip("/")
    result = {
        "versions": {"python": sys.version.split()[0], "httpx": httpx.__version__, "requests": requests.__version__},
        "httpx": observe(lambda: run_httpx(base)),
        "requests": observe(lambda: run_requests(base)),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
