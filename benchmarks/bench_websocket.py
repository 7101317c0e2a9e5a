"""Benchmark WebSocket framing on the gateway's server library; prints figures, asserts nothing.

    python -m benchmarks.bench_websocket [--frames 20000] [--calls 20]

The unit is one caller audio frame: 20 ms of 16 kHz PCM16, 640 bytes. A server process (aiohttp,
what the gateway runs on, and the `websockets` library's server as the baseline in the same run)
receives each masked client frame and sends one 640-byte frame back, as a call's audio does both
ways. The figure is the server process's own CPU time per frame pair, and what one call's 50
pairs a second cost as a share of one core. The client runs in this process, so its CPU is not
counted. The whole gateway per call (VAD, playback, control) is `benchmarks.bench_voice`'s.

Two ways to drive it: lock-step (the client waits for each answer, so every pair wakes the
server's event loop, as a live 20 ms stream does) and streamed (the client sends its frames
without waiting, so many arrive per wake-up): the framing and socket calls alone, what the
hand-written code's 0.07% of a core per call measured (its bench fed 1000 frames per write).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

from websockets.asyncio.client import connect

FRAME = bytes(640)
PAIRS_PER_CALL_SECOND = 50


async def serve_aiohttp() -> None:
    from aiohttp import WSMsgType, web

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=64 * 1024)
        await ws.prepare(request)
        async for message in ws:
            if message.type == WSMsgType.BINARY:
                await ws.send_bytes(FRAME)
        return ws

    app = web.Application()
    app.router.add_get("/", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    await _report_ready(int(runner.addresses[0][1]))


async def serve_websockets() -> None:
    from websockets.asyncio.server import ServerConnection, serve

    async def handle(ws: ServerConnection) -> None:
        async for _ in ws:
            await ws.send(FRAME)

    async with serve(handle, "127.0.0.1", 0, max_size=64 * 1024) as server:
        await _report_ready(next(iter(server.sockets)).getsockname()[1])


async def _report_ready(port: int) -> None:
    """Print the port; on a line from the client, print this process's CPU seconds so far."""
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    while True:
        await loop.run_in_executor(None, sys.stdin.readline)
        print(time.process_time(), flush=True)


async def drive(port: int, frames: int, calls: int, streamed: bool) -> None:
    async def one_call() -> None:
        async with connect(f"ws://127.0.0.1:{port}/", max_size=64 * 1024) as ws:
            if not streamed:
                for _ in range(frames // calls):
                    await ws.send(FRAME)
                    await ws.recv()
                return

            async def read_all() -> None:
                for _ in range(frames // calls):
                    await ws.recv()

            reader = asyncio.create_task(read_all())
            for _ in range(frames // calls):
                await ws.send(FRAME)
            await reader

    await asyncio.gather(*(one_call() for _ in range(calls)))


def measure(library: str, frames: int, calls: int, streamed: bool) -> float:
    """Server CPU microseconds per frame pair."""
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_websocket", "--serve", library],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        port = int(server.stdout.readline())

        def cpu() -> float:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write("\n")
            server.stdin.flush()
            return float(server.stdout.readline())

        asyncio.run(drive(port, frames // 10, calls, streamed))  # warm-up
        before = cpu()
        asyncio.run(drive(port, frames, calls, streamed))
        return (cpu() - before) / frames * 1e6
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--serve", choices=["aiohttp", "websockets"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve_aiohttp() if args.serve == "aiohttp" else serve_websockets())
        return
    print(f"server CPU per 640-byte frame in + 640-byte frame out, {args.frames} pairs:")
    for streamed in (False, True):
        print("  streamed (framing alone)" if streamed else "  lock-step (a wake-up per pair)")
        figures = {
            lib: measure(lib, args.frames, args.calls, streamed)
            for lib in ("aiohttp", "websockets")
        }
        for lib, us in figures.items():
            share = us * PAIRS_PER_CALL_SECOND / 1e4
            print(f"    {lib:<10} {us:6.1f} µs per pair = {share:.3f}% of a core per call")
        ratio = figures["aiohttp"] / figures["websockets"]
        print(f"    aiohttp / websockets: {ratio:.2f}")


if __name__ == "__main__":
    main()
