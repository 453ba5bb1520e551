"""A scripted OpenAI-compatible chat-completions server on loopback, and its pytest fixture.

The real ``openai`` client talks real HTTP to it, so wiring, retries, timeouts and parsing are
what production runs; only the model is scripted. Each request takes the next entry of the
script:

- ``str``: the assistant message content (``'{"memories": []}'``, or malformed text);
- ``dict`` / ``list`` / pydantic model: JSON-encoded as the content;
- ``int``: that HTTP status with an OpenAI-shaped error body (429/5xx carry
  ``retry-after-ms: 1``, so the client's retry is immediate);
- ``Reply`` (``reply``, ``error``, ``slow``, ``raw``, ``refuse``, ``tool_call``): full control — a delay
  past the client timeout, a raw non-JSON body, a refusal, extra headers;
- a callable ``(Recorded) -> any of the above``: answers from the request itself (a judge
  answer naming the ids that the prompt shows, see ``Recorded.shown_ids``).

When the script runs out, ``fallback`` answers (if set); otherwise the server answers 500 with
``x-should-retry: false`` so a test that under-scripts fails loudly instead of retrying.

``POST /v1/embeddings`` has its own script (``script_embeddings``) and its own
``embedding_fallback`` (a callable, for when that script is empty), so a test may drive chat
and embeddings at once. Unscripted, it answers deterministic vectors of the requested
``dimensions`` (else ``embedding_dim``), in the requested ``encoding_format`` (the client asks
for base64 unless told otherwise). Entries: ``int`` / ``Reply`` as above, a list of vectors
(answered as given, whatever was asked), or a callable ``(Recorded) -> any of these``.

Other test modules use the ``fake_llm`` fixture by listing this module as a plugin in
``tests/conftest.py``: ``pytest_plugins = ["fake_openai"]``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel

from strata.foundation.config import Settings

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
PATHS = ("/v1/chat/completions", "/chat/completions")
EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
FAST_RETRY = {"retry-after-ms": "1", "retry-after": "0"}


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = "{}"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: bytes | None = None  # a raw HTTP body instead of a chat completion
    refusal: str | None = None
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None  # the assistant calls these functions


def reply(answer: Any, **kw: Any) -> Reply:
    """The assistant answers ``answer`` (a string as is, anything else as JSON)."""
    return Reply(content=_content(answer), **kw)


def error(status: int, message: str = "scripted error", *, headers: dict[str, str] | None = None,
          **kw: Any) -> Reply:
    """An OpenAI-shaped error response; 408/409/429/5xx get a near-zero Retry-After."""
    retryable = status in (408, 409, 429) or status >= 500
    body = json.dumps({"error": {"message": message, "type": "scripted", "code": str(status)}})
    return Reply(status=status, body=body.encode(),
                 headers={**(FAST_RETRY if retryable else {}), **(headers or {})}, **kw)


def slow(seconds: float, then: Any = "{}") -> Reply:
    """Answer ``then`` only after ``seconds``: past the client's timeout this is a timeout."""
    return Reply(content=_content(then), delay=seconds)


def raw(body: str | bytes, status: int = 200, content_type: str = "application/json") -> Reply:
    """A raw HTTP body (not a chat completion)."""
    data = body.encode() if isinstance(body, str) else body
    return Reply(status=status, body=data, headers={"content-type": content_type})


def tool_call(name: str, **arguments: Any) -> Reply:
    """The assistant calls function ``name`` with ``arguments`` (an agent's tool call)."""
    call = {"id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(content=None, tool_calls=[call], finish_reason="tool_calls")


def refuse(text: str = "I can't help with that.") -> Reply:
    return Reply(content=None, refusal=text)


def _content(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseModel):
        return answer.model_dump_json()
    return json.dumps(answer, default=str)


def _coerce(entry: Any) -> Reply:
    if isinstance(entry, Reply):
        return entry
    if isinstance(entry, bool):
        raise TypeError("a bool is not a script entry")
    if isinstance(entry, int):
        return error(entry)
    return reply(entry)


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lowercased names
    body: bytes
    at: float

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body or b"{}")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.json.get("messages", [])

    @property
    def prompt(self) -> str:
        """All message contents, joined: what the model was shown."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)

    @property
    def schema_name(self) -> str | None:
        """The structured-output schema asked for ("Extraction", "JudgeAnswer"): which step."""
        fmt = self.json.get("response_format") or {}
        return (fmt.get("json_schema") or {}).get("name")

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def retry_count(self) -> int:
        """The client's own count of retries before this attempt (x-stainless-retry-count)."""
        return int(self.headers.get("x-stainless-retry-count", "0"))

    @property
    def inputs(self) -> list[str]:
        """An embeddings request's texts (a single string counts as one)."""
        value = self.json.get("input", [])
        return [value] if isinstance(value, str) else list(value)

    def shown_ids(self) -> list[str]:
        """UUIDs in the non-system messages, in order of first appearance."""
        text = "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") != "system")
        return list(dict.fromkeys(UUID_RE.findall(text)))


Responder = Callable[[Recorded], Any]


class FakeLLM:
    """The running server: ``base_url``, ``script(...)``, ``requests``, ``fallback``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Any] = deque()
        self._closing = threading.Event()
        self._conns: set[socket.socket] = set()
        self.requests: list[Recorded] = []
        self.fallback: Responder | None = None
        self._embedding_script: deque[Any] = deque()
        self.embedding_fallback: Responder | None = None
        self.embedding_dim = 8  # when a request names no ``dimensions``
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
            name="fake-openai", daemon=True,
        )
        self._thread.start()

    def script(self, *entries: Any) -> FakeLLM:
        """Append answers, consumed one per request in order."""
        with self._lock:
            self._script.extend(entries)
        return self

    def script_embeddings(self, *entries: Any) -> FakeLLM:
        """Append answers for ``/embeddings``, consumed one per request in order."""
        with self._lock:
            self._embedding_script.extend(entries)
        return self

    @property
    def pending(self) -> int:
        """Script entries not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def completions(self) -> list[Recorded]:
        return [r for r in self.requests if r.path in PATHS]

    @property
    def embedding_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path in EMBEDDING_PATHS]

    def embedding_settings(self, base: Settings | None = None, **overrides: Any) -> Settings:
        """Settings pointing the ``openai`` embedder at this server."""
        values: dict[str, Any] = {
            "embedder": "openai", "embedding_base_url": self.base_url,
            "embedding_model": "fake-embed", "embedding_api_key": "test-key",
            "embedding_timeout_s": 5.0, "embedding_max_retries": 2, **overrides,
        }
        if base is not None:
            return base.model_copy(update=values)
        return Settings(**values)

    def settings(self, base: Settings | None = None, **overrides: Any) -> Settings:
        """Settings pointing the model-backed providers at this server."""
        values: dict[str, Any] = {
            "llm_base_url": self.base_url, "llm_model": "fake-model", "llm_api_key": "test-key",
            "llm_timeout_s": 5.0, "llm_max_retries": 2, **overrides,
        }
        if base is not None:
            return base.model_copy(update=values)
        return Settings(**values)

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:  # idle keep-alive connections: let their threads end now
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=2)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            entry = self._script.popleft() if self._script else None
            fallback = self.fallback
        if entry is None:
            if fallback is None:
                return Reply(
                    status=500, headers={"x-should-retry": "false"},
                    body=json.dumps({"error": {"message": "fake_openai: script exhausted",
                                               "type": "scripted", "code": "exhausted"}}).encode(),
                )
            entry = fallback
        if callable(entry) and not isinstance(entry, Reply):
            entry = entry(request)
        return _coerce(entry)

    def _next_embedding(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            entry = self._embedding_script.popleft() if self._embedding_script else None
            if entry is None:
                entry = self.embedding_fallback
        if callable(entry) and not isinstance(entry, Reply):
            entry = entry(request)
        if entry is None:
            entry = [_vector(text, _requested_dim(request, self.embedding_dim))
                     for text in request.inputs]
        if isinstance(entry, list):
            return Reply(content=None, body=_embeddings_body(request, entry))
        if isinstance(entry, bool) or not isinstance(entry, (int, Reply)):
            raise TypeError(f"not an embeddings script entry: {entry!r}")
        return _coerce(entry)


def _requested_dim(request: Recorded, default: int) -> int:
    try:
        return int(request.json.get("dimensions") or default)
    except (TypeError, ValueError):
        return default


def _vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text`` (not a model: only stable and distinct)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    values = [((seed >> (i % 48)) & 0xFF) - 127.5 + i % 7 for i in range(dim)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def _embeddings_body(request: Recorded, vectors: list[list[float]]) -> bytes:
    try:
        body = request.json
    except ValueError:
        body = {}
    as_base64 = body.get("encoding_format") == "base64"

    def encode(vec: list[float]) -> Any:
        if not as_base64:
            return vec
        import array

        return base64.b64encode(array.array("f", vec).tobytes()).decode()

    return json.dumps({
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": encode(v)}
                 for i, v in enumerate(vectors)],
        "model": body.get("model", "fake-embed"),
        "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
    }).encode()


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # an idle keep-alive connection does not hold a thread for long

        def setup(self) -> None:
            super().setup()
            with fake._lock:
                fake._conns.add(self.connection)

        def finish(self) -> None:
            with fake._lock:
                fake._conns.discard(self.connection)
            with suppress(OSError):
                super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._record(b"")
            self._send(404, b'{"error": {"message": "not found"}}', {})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = self._record(self.rfile.read(length) if length else b"")
            path = self.path.split("?")[0]
            if path in EMBEDDING_PATHS:
                answer = fake._next_embedding(request)
            elif path in PATHS:
                answer = fake._next(request)
            else:
                self._send(404, b'{"error": {"message": "not found"}}', {})
                return
            if answer.delay and fake._closing.wait(answer.delay):
                return
            body = answer.body if answer.body is not None else self._completion(request, answer)
            self._send(answer.status, body, answer.headers)

        def _record(self, body: bytes) -> Recorded:
            return Recorded(
                method=self.command, path=self.path.split("?")[0],
                headers={k.lower(): v for k, v in self.headers.items()}, body=body,
                at=time.monotonic(),
            )

        @staticmethod
        def _completion(request: Recorded, answer: Reply) -> bytes:
            try:
                model = request.json.get("model", "fake-model")
            except ValueError:
                model = "fake-model"
            return json.dumps({
                "id": f"chatcmpl-fake-{len(fake.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.content,
                                "refusal": answer.refusal,
                                **({"tool_calls": answer.tool_calls} if answer.tool_calls else {})},
                    "finish_reason": answer.finish_reason,
                    "logprobs": None,
                }],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                if not any(k.lower() == "content-type" for k in headers):
                    self.send_header("content-type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (its timeout) before the scripted delay ended.
                self.close_connection = True

    return Handler


@contextmanager
def serve() -> Iterator[FakeLLM]:
    fake = FakeLLM()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A fresh scripted OpenAI-compatible server per test (starting one takes milliseconds)."""
    with serve() as fake:
        yield fake
