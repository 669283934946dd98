"""Interop check of an echo server against the Python `websockets` client.

A second, independent client implementation (asyncio API of websockets 17):
text and binary echo, a 1 MiB message, fragmented messages, ping/pong,
permessage-deflate negotiation, and the closing handshake with code 1000.

Usage (with the venv from scripts/setup-python.sh):
    python tests/interop/python_client.py ws://127.0.0.1:PORT/ --compression=on|off
    python tests/interop/python_client.py wss://127.0.0.1:PORT/ --compression=off --ca CA.pem

With wss://, the server's certificate is verified against --ca for the
name "localhost", and the TLS handshake's version is reported.

Prints one `ok:` line per check; on the first failure prints `FAIL: ...`
and exits 1 (2 for bad arguments). Every step has a timeout, so the script
always ends by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import PerMessageDeflate

# Per-step bound; a 1 MiB echo on loopback takes milliseconds.
STEP_TIMEOUT_S = 10.0
# Bound on the whole script, below the node test's own timeout.
TOTAL_TIMEOUT_S = 60.0
ONE_MIB = 1024 * 1024


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def describe(data: str | bytes, limit: int = 40) -> str:
    kind = "text" if isinstance(data, str) else "binary"
    shown = data[:limit]
    return f"{kind} len={len(data)} {shown!r}{'...' if len(data) > limit else ''}"


async def step(name: str, coro):
    try:
        result = await asyncio.wait_for(coro, STEP_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise CheckFailed(f"{name}: no answer within {STEP_TIMEOUT_S} s") from None
    except ConnectionClosed as closed:
        raise CheckFailed(f"{name}: connection closed: {closed}") from None
    return result


async def expect_echo(ws, name: str, sent, expected) -> None:
    await step(f"{name} (send)", ws.send(sent))
    got = await step(f"{name} (echo)", ws.recv())
    check(type(got) is type(expected), f"{name}: sent {describe(expected)}, echo is {describe(got)}")
    check(got == expected, f"{name}: echo differs: sent {describe(expected)}, got {describe(got)}")
    print(f"ok: {name}")


async def run(url: str, compression: bool, ca: str | None) -> None:
    tls = None
    if url.startswith("wss://"):
        check(ca is not None, "a wss:// URL needs --ca")
        tls = ssl.create_default_context(cafile=ca)
    async with connect(
        url,
        ssl=tls,
        server_hostname="localhost" if tls else None,
        proxy=None,  # loopback only: never route through an env-configured proxy
        open_timeout=STEP_TIMEOUT_S,
        close_timeout=STEP_TIMEOUT_S,
        ping_interval=None,  # no keepalive pings interleaved with the checks
        max_size=4 * ONE_MIB,
    ) as ws:
        if tls:
            version = ws.transport.get_extra_info("ssl_object").version()
            check(version in ("TLSv1.2", "TLSv1.3"), f"tls: unexpected version {version!r}")
            print(f"ok: TLS handshake ({version}), certificate verified for localhost")
        header = ws.response.headers.get("Sec-WebSocket-Extensions")
        negotiated = [ext for ext in ws.protocol.extensions if isinstance(ext, PerMessageDeflate)]
        if compression:
            check(
                header is not None and "permessage-deflate" in header and negotiated,
                f"compression: server has COMPRESSION=1 but did not accept permessage-deflate "
                f"(Sec-WebSocket-Extensions: {header!r})",
            )
            print(f"ok: permessage-deflate negotiated ({header})")
        else:
            check(
                header is None and not negotiated,
                f"compression: server has compression off but answered Sec-WebSocket-Extensions: {header!r}",
            )
            print("ok: no extension negotiated (client offered permessage-deflate)")

        await expect_echo(ws, "text echo", "hello, switchboard", "hello, switchboard")
        await expect_echo(ws, "non-ASCII text echo", "héllo wörld ✓ 🚀", "héllo wörld ✓ 🚀")
        await expect_echo(ws, "empty text echo", "", "")
        await expect_echo(ws, "binary echo", bytes(range(256)), bytes(range(256)))
        await expect_echo(ws, "empty binary echo", b"", b"")

        # Random bytes do not compress: the deflate path has to carry the
        # full 1 MiB. Text made of a repeated pattern compresses well.
        big_binary = os.urandom(ONE_MIB)
        await expect_echo(ws, "1 MiB binary echo", big_binary, big_binary)
        big_text = ("switchboard-" * (ONE_MIB // 12 + 1))[:ONE_MIB]
        await expect_echo(ws, "1 MiB text echo", big_text, big_text)

        # An iterable is sent as one message in several frames (continuation
        # frames); the echo comes back as one message, however framed.
        text_fragments = ["frag", "mented ", "téxt ", "message"]
        await expect_echo(ws, "fragmented text echo", text_fragments, "".join(text_fragments))
        binary_fragments = [b"\x00\x01", b"\x02" * 1000, b"", b"\xff"]
        await expect_echo(ws, "fragmented binary echo", binary_fragments, b"".join(binary_fragments))

        pong = await step("ping (send)", ws.ping(b"switchboard-ping"))
        latency = await step("ping (pong)", pong)
        print(f"ok: ping answered by pong ({latency * 1000:.2f} ms)")

        # Messages still flow after the control frame.
        await expect_echo(ws, "text echo after ping", "after ping", "after ping")

        await step("close", ws.close(1000, "done"))
        await step("close (TCP)", ws.wait_closed())
        sent, rcvd = ws.protocol.close_sent, ws.protocol.close_rcvd
        check(sent is not None and sent.code == 1000, f"close: client sent {sent}, expected code 1000")
        check(
            rcvd is not None and rcvd.code == 1000,
            f"close: server answered {rcvd}, expected a close frame with code 1000",
        )
        check(ws.protocol.close_rcvd_then_sent is False, "close: server closed first, expected to answer ours")
        print("ok: close handshake, code 1000 sent and 1000 received")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="ws:// or wss://127.0.0.1:PORT/ of the echo server")
    parser.add_argument("--ca", help="PEM file of the CA that signed the server's certificate (wss://)")
    parser.add_argument(
        "--compression",
        choices=["on", "off"],
        required=True,
        help="whether the server runs with COMPRESSION=1 (permessage-deflate must then be negotiated)",
    )
    args = parser.parse_args()

    started = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(run(args.url, args.compression == "on", args.ca), TOTAL_TIMEOUT_S))
    except CheckFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    except asyncio.TimeoutError:
        print(f"FAIL: the checks did not finish within {TOTAL_TIMEOUT_S} s", file=sys.stderr)
        return 1
    except Exception as error:  # connection refused, handshake rejected, closed early...
        print(f"FAIL: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(f"all checks passed in {time.monotonic() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
