"""A small MCP server over streamable HTTP, for the `mcp` crate's end-to-end tests.

Built on the official Python `mcp` SDK's high-level server (`MCPServer`, the class that mcp 1.x
called `FastMCP`), pinned in `xtask/mcp/requirements.txt` and installed by
`cargo xtask mcp-servers` into `target/xtask-mcp/venv`.

Usage:

    python fastmcp_server.py --port-file PATH [--port N]

Listens on 127.0.0.1 (port N, or a free port when N is 0, the default), serves MCP at `/mcp`,
and writes the port it listens on to PATH once it accepts connections (written to a temporary
file and renamed, so a reader never sees half a number). When the environment variable
`SKEIN_TEST_MCP_TOKEN` is set, every request must carry `Authorization: Bearer <that token>`;
others get 401 with `WWW-Authenticate: Bearer`.

Tools (what the tests assert on):
- `add(a, b)`: the integer sum, as text (`"5"` for 2 and 3).
- `fail(message)`: raises `ToolError(message)`; the SDK answers `isError: true` with that text.
- `slow(seconds)`: sleeps, then returns `"slept <seconds>"` (cancellation, timeouts, kills).
- `image()`: a 1x1 red PNG (`image/png`).
- `cancellations()`: how many `slow` calls were cancelled by the client so far (`"0"`, `"1"`…),
  which shows that a client's `notifications/cancelled` arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import sys
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

TOKEN_ENV = "SKEIN_TEST_MCP_TOKEN"

# A 1x1 red pixel, as PNG.
RED_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)

server = MCPServer("skein-test-fastmcp")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@server.tool()
def fail(message: str = "the tool failed on purpose") -> str:
    """Always fails with `message`."""
    raise ToolError(message)


CANCELLED = 0


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps for `seconds`, then says so."""
    global CANCELLED
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED += 1
        raise
    return f"slept {seconds}"


@server.tool()
def cancellations() -> str:
    """How many `slow` calls were cancelled so far."""
    return str(CANCELLED)


@server.tool()
def image() -> Image:
    """Returns a 1x1 red PNG."""
    return Image(data=RED_PIXEL_PNG, format="png")


class BearerAuth:
    """ASGI middleware: HTTP requests must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != self.expected:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)


async def serve(port: int, port_file: Path) -> None:
    app = server.streamable_http_app()
    token = os.environ.get(TOKEN_ENV)
    if token:
        app = BearerAuth(app, token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn_server = uvicorn.Server(config)

    async def announce() -> None:
        while not uvicorn_server.started:
            await asyncio.sleep(0.02)
        tmp = port_file.with_name(port_file.name + ".tmp")
        tmp.write_text(str(sock.getsockname()[1]))
        tmp.replace(port_file)

    announcer = asyncio.create_task(announce())
    await uvicorn_server.serve(sockets=[sock])
    announcer.cancel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.port_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
