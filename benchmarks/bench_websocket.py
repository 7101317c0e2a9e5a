"""Benchmark the gateway's WebSocket framing; prints figures, asserts nothing.

    python -m benchmarks.bench_websocket [--frames 50000]

The unit is one caller audio frame: 20 ms of 16 kHz PCM16, 640 bytes. Figures: unmasking alone
(the big-integer XOR the module uses, against a per-byte loop as the baseline it replaces),
`recv` of masked client frames and `send` of server frames through a real socketpair and the
event loop, and what one call's 50 frames/s each way cost as a share of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import time

from media_gateway.websocket import WebSocket, encode_frame, unmask

FRAME = 640


def masked_frame(payload: bytes, mask: bytes) -> bytes:
    head = struct.pack("!BBH", 0x82, 0x80 | 126, len(payload))
    return head + mask + unmask(payload, mask)  # XOR is its own inverse


def per_byte(payload: bytes, mask: bytes) -> bytes:
    return bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


def rate(fn: object, payload: bytes, mask: bytes, rounds: int) -> float:
    assert callable(fn)
    start = time.perf_counter()
    for _ in range(rounds):
        fn(payload, mask)
    return len(payload) * rounds / (time.perf_counter() - start) / 1e6


async def pair() -> tuple[WebSocket, asyncio.StreamReader, asyncio.StreamWriter]:
    a, b = socket.socketpair()
    server_reader, server_writer = await asyncio.open_connection(sock=a)
    peer_reader, peer_writer = await asyncio.open_connection(sock=b)
    ws = WebSocket(server_reader, server_writer, None, 64 * 1024, 1.0)
    return ws, peer_reader, peer_writer


async def bench_recv(frames: int) -> float:
    ws, _, peer_writer = await pair()
    wire = b"".join(masked_frame(os.urandom(FRAME), os.urandom(4)) for _ in range(1000))

    async def feed() -> None:
        for _ in range(frames // 1000):
            peer_writer.write(wire)
            await peer_writer.drain()

    feeder = asyncio.create_task(feed())
    start = time.perf_counter()
    for _ in range(frames // 1000 * 1000):
        await ws.recv()
    elapsed = time.perf_counter() - start
    await feeder
    return elapsed / (frames // 1000 * 1000)


async def bench_send(frames: int) -> float:
    # Keep the peer's writer referenced until the end: collecting it closes the socket.
    ws, peer_reader, peer_writer = await pair()
    total = frames * (FRAME + 4)

    async def drain_peer() -> None:
        got = 0
        while got < total:
            got += len(await peer_reader.read(1 << 20))

    sink = asyncio.create_task(drain_peer())
    payload = os.urandom(FRAME)
    start = time.perf_counter()
    for _ in range(frames):
        await ws.send(payload)
    await sink
    elapsed = time.perf_counter() - start
    peer_writer.close()
    return elapsed / frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000)
    frames = parser.parse_args().frames
    mask, small, large = os.urandom(4), os.urandom(FRAME), os.urandom(64 * 1024)

    print(f"unmask {FRAME} B  int XOR : {rate(unmask, small, mask, 200_000):8.0f} MB/s")
    print(f"unmask {FRAME} B  per byte: {rate(per_byte, small, mask, 5_000):8.0f} MB/s")
    print(f"unmask 64 KiB int XOR : {rate(unmask, large, mask, 5_000):8.0f} MB/s")
    print(f"unmask 64 KiB per byte: {rate(per_byte, large, mask, 50):8.0f} MB/s")
    start = time.perf_counter()
    for _ in range(200_000):
        encode_frame(0x2, small)
    print(f"encode_frame {FRAME} B    : {(time.perf_counter() - start) / 0.2:8.2f} µs/frame")

    recv_s = asyncio.run(bench_recv(frames))
    send_s = asyncio.run(bench_send(frames))
    for name, seconds in (("recv", recv_s), ("send", send_s)):
        per_frame, mbps = seconds * 1e6, FRAME / seconds / 1e6
        print(f"{name} {FRAME} B frames      : {per_frame:8.2f} µs/frame {mbps:6.0f} MB/s")
    share = (recv_s + send_s) * 50 * 100
    print(f"one call, 50 frames/s each way: {share:.3f}% of one core")


if __name__ == "__main__":
    main()
