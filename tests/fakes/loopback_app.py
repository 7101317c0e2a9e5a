"""An aiohttp application served on 127.0.0.1 at a free port: the base of the platform fakes.

It stops when its `async with` block ends, or by itself after `lifetime` seconds, so a test
that hangs never leaves a server behind.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

from aiohttp import web


class LoopbackApp:
    """Subclasses add routes in `routes`; use as `async with`."""

    def __init__(self, *, lifetime: float = 120.0) -> None:
        self.lifetime = lifetime
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._stopper: asyncio.TimerHandle | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        assert self._port, "not started"
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> Self:
        app = web.Application()
        self.routes(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self._port = int(self._runner.addresses[0][1])
        self._stopper = asyncio.get_running_loop().call_later(
            self.lifetime, lambda: asyncio.ensure_future(self.stop())
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self._stopper is not None:
            self._stopper.cancel()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
