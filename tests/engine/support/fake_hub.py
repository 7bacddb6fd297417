"""A local stand-in for the Hugging Face Hub: real HTTP on 127.0.0.1, reached through HF_ENDPOINT.

Two stdlib `http.server`s in threads, laid out as the Hub is: the hub (``api/models`` search and
model info with siblings and LFS sha256/size; ``{repo}/resolve/{rev}/{file}`` answering HEAD and
GET with a 302 to a CDN on another origin, carrying ETag, X-Linked-Etag, X-Linked-Size and
X-Repo-Commit; the Hub's X-Error-Code headers for a missing repo, a gated repo and a missing
file) and the CDN (the bytes, with Range). Faults for tests: cut a transfer after N bytes (the
server drops the connection), serve a corrupted body under the true hash, advertise a size.
Every request and every body byte served is recorded.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubFileSpec:
    data: bytes
    advertised_size: int | None = None  # X-Linked-Size / lfs.size, when not len(data)
    corrupt: bool = False  # serve one flipped byte under the true sha256

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return self.advertised_size if self.advertised_size is not None else len(self.data)


@dataclass
class Served:
    server: str  # "hub" | "cdn"
    method: str
    path: str
    range: str | None
    authorization: bool


@dataclass
class FakeHub:
    repos: dict[str, dict[str, HubFileSpec]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    cut_after: dict[str, int] = field(default_factory=dict)  # filename -> drop once after N bytes
    # filename -> (N, pause_s): once, after N bytes, one byte per pause until the client leaves
    trickle_after: dict[str, tuple[int, float]] = field(default_factory=dict)
    requests: list[Served] = field(default_factory=list)
    body_bytes: dict[str, int] = field(default_factory=dict)  # filename -> bytes sent
    _servers: list[ThreadingHTTPServer] = field(default_factory=list)

    def add(self, repo_id: str, filename: str, data: bytes, **options: Any) -> HubFileSpec:
        spec = HubFileSpec(data, **options)
        self.repos.setdefault(repo_id, {})[filename] = spec
        return spec

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_port}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_port}"

    def __enter__(self) -> FakeHub:
        for handler in (_HubHandler, _CdnHandler):
            server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            server.daemon_threads = True
            server.hub = self  # type: ignore[attr-defined]
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def file_by_sha(self, sha: str) -> tuple[str, HubFileSpec] | None:
        for files in self.repos.values():
            for name, spec in files.items():
                if spec.sha256 == sha:
                    return name, spec
        return None

    def ranges(self, filename: str) -> list[str | None]:
        """The Range headers of the CDN GETs for ``filename``, in order."""
        return [
            r.range
            for r in self.requests
            if r.server == "cdn" and r.method == "GET" and r.path.endswith(f"name={filename}")
        ]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Handler(BaseHTTPRequestHandler):
    server_name_ = "hub"
    protocol_version = "HTTP/1.1"

    @property
    def hub(self) -> FakeHub:
        return self.server.hub  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _record(self) -> None:
        self.hub.requests.append(
            Served(
                self.server_name_,
                self.command,
                self.path,
                self.headers.get("Range"),
                "Authorization" in self.headers,
            )
        )

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._reply(status, json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def _error(self, status: int, code: str, message: str) -> None:
        headers = {"X-Error-Code": code, "X-Error-Message": message}
        self._reply(status, json.dumps({"error": message}).encode(), headers)


class _HubHandler(_Handler):
    def do_GET(self) -> None:
        self._record()
        url = urlparse(self.path)
        if url.path == "/api/models":
            return self._search(parse_qs(url.query))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?", url.path)
        if m:
            return self._model_info(unquote(m.group(1)))
        return self._resolve()

    def do_HEAD(self) -> None:
        self._record()
        self._resolve()

    def _search(self, query: dict[str, list[str]]) -> None:
        words = query.get("search", [""])[0].lower()
        hits = [r for r in self.hub.repos if words in r.lower()]
        self._json(
            [
                {
                    "id": r,
                    "modelId": r,
                    "downloads": 10 * len(r),
                    "likes": 1,
                    "lastModified": "2026-01-01T00:00:00.000Z",
                    "gated": r in self.hub.gated,
                    "tags": ["gguf"],
                    "private": False,
                }
                for r in hits
            ]
        )

    def _model_info(self, repo_id: str) -> None:
        files = self.hub.repos.get(repo_id)
        if files is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        siblings = [
            {
                "rfilename": name,
                "size": spec.size,
                "blobId": spec.sha256[:40],
                "lfs": {"size": spec.size, "sha256": spec.sha256, "pointerSize": 134},
            }
            for name, spec in files.items()
        ]
        siblings.append({"rfilename": "README.md", "size": 10, "blobId": "f" * 40})
        self._json(
            {
                "id": repo_id,
                "modelId": repo_id,
                "sha": COMMIT,
                "private": False,
                "gated": "manual" if repo_id in self.hub.gated else False,
                "siblings": siblings,
                "tags": ["gguf"],
                "downloads": 1,
                "likes": 1,
            }
        )

    def _resolve(self) -> None:
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", urlparse(self.path).path)
        if not m:
            return self._error(404, "EntryNotFound", "Not found")
        repo_id, filename = unquote(m.group(1)), unquote(m.group(3))
        files = self.hub.repos.get(repo_id)
        if files is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        if repo_id in self.hub.gated and "Authorization" not in self.headers:
            return self._error(
                401,
                "GatedRepo",
                f"Access to model {repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in.",
            )
        spec = files.get(filename)
        if spec is None:
            return self._error(404, "EntryNotFound", f"{filename} does not exist on main")
        self._reply(
            302,
            b"",
            {
                "Location": f"{self.hub.cdn}/blobs/{spec.sha256}?name={filename}",
                "ETag": f'"{spec.sha256[:40]}"',
                "X-Linked-Etag": f'"{spec.sha256}"',
                "X-Linked-Size": str(spec.size),
                "X-Repo-Commit": COMMIT,
            },
        )


class _CdnHandler(_Handler):
    server_name_ = "cdn"

    def do_HEAD(self) -> None:
        self._record()
        self._blob()

    def do_GET(self) -> None:
        self._record()
        self._blob()

    def _blob(self) -> None:
        m = re.fullmatch(r"/blobs/([0-9a-f]{64})", urlparse(self.path).path)
        found = self.hub.file_by_sha(m.group(1)) if m else None
        if found is None:
            return self._reply(404, b"NoSuchKey")
        name, spec = found
        data = bytearray(spec.data)
        if spec.corrupt:
            data[len(data) // 2] ^= 0xFF
        start, end, status = 0, len(data) - 1, 200
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
            end = min(int(ranged.group(2)), len(data) - 1) if ranged.group(2) else len(data) - 1
            if start >= len(data):
                return self._reply(416, b"", {"Content-Range": f"bytes */{len(data)}"})
            status = 206
        body = bytes(data[start : end + 1])
        self.send_response(status)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{spec.sha256}"')
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.end_headers()
        if self.command == "HEAD":
            return
        cut = self.hub.cut_after.pop(name, None)
        if cut is not None and start < cut <= end:
            body = body[: cut - start]
            self.close_connection = True
        trickle = self.hub.trickle_after.pop(name, None)
        if trickle is not None and start < trickle[0] <= end:
            return self._trickle(name, body, trickle[0] - start, trickle[1])
        self.wfile.write(body)
        self.wfile.flush()
        self.hub.body_bytes[name] = self.hub.body_bytes.get(name, 0) + len(body)

    def _trickle(self, name: str, body: bytes, fast: int, pause_s: float) -> None:
        import time

        self.close_connection = True
        try:
            self.wfile.write(body[:fast])
            for i in range(fast, len(body)):
                self.wfile.flush()
                time.sleep(pause_s)
                self.wfile.write(body[i : i + 1])
        except OSError:
            pass  # the client gave up on us: the point of the fault
        self.hub.body_bytes[name] = self.hub.body_bytes.get(name, 0) + fast
