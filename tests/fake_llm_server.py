"""A fake LLM HTTP server on loopback, for tests and benchmarks.

It speaks enough of two wire protocols for the official SDKs to talk to it
unmodified:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (``openai.OpenAI`` /
  ``openai.AsyncOpenAI`` with ``base_url=server.openai_base_url``);
* Anthropic Messages: ``POST /v1/messages`` (``anthropic.Anthropic`` /
  ``anthropic.AsyncAnthropic`` with ``base_url=server.anthropic_base_url``).

Both non-streaming and ``stream=True`` (server-sent events) requests are answered.

Only the standard library is used: a ``ThreadingHTTPServer`` (one daemon thread per
connection, HTTP/1.1 keep-alive, exact ``Content-Length``) serving from a background
thread, bound to 127.0.0.1 only, on an ephemeral port unless one is given::

    with FakeLLMServer(latency=0.05) as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="test")
        server.responder = lambda body, api: "hello"
        server.enqueue_faults([("status", 429, {"Retry-After": "1"})])
        ...
        assert server.request_count == 2

Replies come from ``server.responder(request_json, api) -> str`` (``api`` is
``"openai"`` or ``"anthropic"``); the default echoes the text of the last user
message. A responder may also return a dict or list, which is sent as its JSON text.

Faults (a FIFO, one consumed per API request, before normal handling):

* ``("status", code, headers)`` or ``("status", code, headers, message)``: that status,
  those extra headers, and an error body shaped like the API's own;
* ``("hang", seconds)``: wait that long, then answer normally;
* ``("malformed",)``: 200, ``Content-Type: application/json``, a body that is not JSON;
* ``("content", text)``: answer normally, but with exactly this assistant text;
* ``("disconnect",)``: close the connection without any response.

Structured-output formats: by default every ``response_format`` is accepted (and ignored).
``accepted_formats`` (constructor or property) lists the ``response_format`` types served; a
request with any other type gets ``format_status`` (500) and an error body naming it, as
llama.cpp's server answers ``json_schema``. ``LLAMA_CPP_FORMATS`` is that server's set
(``json_object``, with or without a ``schema``); ``()`` refuses every ``response_format``.

Run standalone (e.g. to point a benchmark at it): ``python tests/fake_llm_server.py
--port 8000 --latency 0.1`` (``--formats json_object`` to emulate llama.cpp).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

__all__ = ["FakeLLMServer", "default_responder", "last_user_text", "count_words", "LLAMA_CPP_FORMATS"]

HOST = "127.0.0.1"
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
MALFORMED_BODY = b'{"choices": ['
LLAMA_CPP_FORMATS = ("json_object",)
"""The ``response_format`` types llama-cpp-python's server takes (``json_schema`` gets a 500)."""

Responder = Callable[[dict, str], Any]

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}

# (type, code) of OpenAI error bodies, by status.
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}

# Anthropic error types, by status.
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- content helpers


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a parts list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return ""


def last_user_text(request_json: dict) -> str:
    """Text of the last ``role == "user"`` message (text parts joined by newlines), or ""."""
    messages = request_json.get("messages") if isinstance(request_json, dict) else None
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def default_responder(request_json: dict, api: str) -> str:
    """Echo the last user message's text, unchanged."""
    return last_user_text(request_json)


def count_words(text: str) -> int:
    """Deterministic stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


def _prompt_words(request_json: dict) -> int:
    total = 0
    system = request_json.get("system")  # Anthropic keeps the system prompt outside `messages`
    if system is not None:
        total += count_words(_text_of(system))
    for message in request_json.get("messages") or []:
        if isinstance(message, dict):
            total += count_words(_text_of(message.get("content")))
    return total


def _count_images(node: Any) -> int:
    """Image parts anywhere in a request's messages (OpenAI ``image_url``, Anthropic ``image``)."""
    if isinstance(node, list):
        return sum(_count_images(item) for item in node)
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "image_url" and "image_url" in node:
            return 1
        if kind == "image" and "source" in node:
            return 1
        return sum(_count_images(value) for value in node.values() if isinstance(value, (list, dict)))
    return 0


def _validate_fault(fault: Any) -> tuple:
    if not isinstance(fault, tuple) or not fault:
        raise ValueError(f"a fault is a non-empty tuple, got {fault!r}")
    kind = fault[0]
    if kind == "status":
        if len(fault) not in (2, 3, 4) or not isinstance(fault[1], int):
            raise ValueError(f"expected ('status', code, headers[, message]), got {fault!r}")
        headers = fault[2] if len(fault) > 2 else {}
        if not isinstance(headers, dict):
            raise ValueError(f"status fault headers must be a dict, got {headers!r}")
    elif kind == "hang":
        if len(fault) != 2 or not isinstance(fault[1], (int, float)) or fault[1] < 0:
            raise ValueError(f"expected ('hang', seconds), got {fault!r}")
    elif kind == "content":
        if len(fault) != 2 or not isinstance(fault[1], str):
            raise ValueError(f"expected ('content', text), got {fault!r}")
    elif kind in ("malformed", "disconnect"):
        if len(fault) != 1:
            raise ValueError(f"expected ({kind!r},), got {fault!r}")
    else:
        raise ValueError(f"unknown fault kind {kind!r}")
    return fault


# --------------------------------------------------------------------------- HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # the socketserver default (5) drops bursts of connects
    fake: "FakeLLMServer"

    def __init__(self, address, handler, fake: "FakeLLMServer") -> None:
        self.fake = fake
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server_version = "FakeLLM/1.0"
    sys_version = ""
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, add=False)

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionError, TimeoutError, OSError):
            pass  # the client went away (timeouts, disconnect faults, shutdown)

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr access logs
        pass

    # -- request handling

    def do_POST(self) -> None:
        body = self._read_body()
        self.server.fake._handle(self, body)

    def do_GET(self) -> None:
        self._read_body()
        self.server.fake._handle(self, b"")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_bytes(self, status: int, body: bytes, content_type: str, headers: dict | None = None) -> None:
        """Write status line, headers and body in one ``sendall`` (exact Content-Length)."""
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Server: {self.server_version}",
            f"Date: {self.date_time_string()}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
        ]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + body)


# --------------------------------------------------------------------------- the server


class FakeLLMServer:
    """Fake OpenAI / Anthropic endpoint on 127.0.0.1, served from a background thread.

    Settable at any time (thread-safe): ``latency`` (seconds added to every API
    response), ``responder`` (``fn(request_json, api) -> str``), and the fault queue
    (``enqueue_faults``). Read: ``requests`` (a snapshot list of dicts), ``request_count``,
    ``images_seen``, ``connections_opened``, ``peak_in_flight``, ``errors`` (exceptions raised by the responder).
    ``accepted_formats`` (None: all) and ``format_status`` emulate servers that refuse some
    ``response_format`` types (see the module docstring).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        latency: float = 0.0,
        responder: Responder | None = None,
        accepted_formats: Iterable[str] | None = None,
        format_status: int = 500,
    ) -> None:
        self._lock = threading.Lock()
        self._latency = float(latency)
        self._responder: Responder = responder or default_responder
        self._accepted_formats: frozenset[str] | None = None if accepted_formats is None else frozenset(accepted_formats)
        self._format_status = int(format_status)
        self._faults: collections.deque[tuple] = collections.deque()
        self._requests: list[dict] = []
        self._images_seen = 0
        self._errors: list[BaseException] = []
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._connections_opened = 0
        self._in_flight = 0
        self._peak_in_flight = 0
        self._stopping = threading.Event()
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> "FakeLLMServer":
        if self._httpd is not None:
            raise RuntimeError("FakeLLMServer already started (servers are single-use)")
        self._httpd = _HTTPServer((HOST, self._requested_port), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wakes hung/latent handlers, closes open connections. Idempotent."""
        httpd = self._httpd
        if httpd is None or self._stopping.is_set():
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- addresses

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the anthropic SDK appends /v1/messages

    # -- configuration

    @property
    def latency(self) -> float:
        with self._lock:
            return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        with self._lock:
            self._latency = float(seconds)

    @property
    def responder(self) -> Responder:
        with self._lock:
            return self._responder

    @responder.setter
    def responder(self, fn: Responder | None) -> None:
        with self._lock:
            self._responder = fn or default_responder

    @property
    def accepted_formats(self) -> frozenset[str] | None:
        """The ``response_format`` types served (None: every one)."""
        with self._lock:
            return self._accepted_formats

    @accepted_formats.setter
    def accepted_formats(self, formats: Iterable[str] | None) -> None:
        with self._lock:
            self._accepted_formats = None if formats is None else frozenset(formats)

    @property
    def format_status(self) -> int:
        """The status a refused ``response_format`` gets (llama.cpp: 500)."""
        with self._lock:
            return self._format_status

    @format_status.setter
    def format_status(self, status: int) -> None:
        with self._lock:
            self._format_status = int(status)

    def enqueue_faults(self, faults: Iterable[tuple]) -> None:
        """Append faults to the FIFO; each API request consumes (at most) one."""
        checked = [_validate_fault(tuple(f) if isinstance(f, list) else f) for f in faults]
        with self._lock:
            self._faults.extend(checked)

    @property
    def pending_faults(self) -> list[tuple]:
        with self._lock:
            return list(self._faults)

    def reset(self, *, defaults: bool = False) -> None:
        """Clear the request log, image count, responder errors and pending faults.

        ``latency``, ``responder``, ``accepted_formats`` and ``format_status`` are kept unless
        ``defaults=True``.
        """
        with self._lock:
            self._requests.clear()
            self._images_seen = 0
            self._errors.clear()
            self._faults.clear()
            if defaults:
                self._latency = 0.0
                self._responder = default_responder
                self._accepted_formats = None
                self._format_status = 500

    # -- observations

    @property
    def requests(self) -> list[dict]:
        """Snapshot of the request log: dicts with path, method, api, json, headers
        (lower-cased names), time (``time.time()`` on arrival), images (image parts in
        this request), fault (the fault it consumed, or None), peer ("host:port" of the
        client socket, which shows keep-alive reuse)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def images_seen(self) -> int:
        with self._lock:
            return self._images_seen

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted since start (keep-alive reuse keeps this low)."""
        with self._lock:
            return self._connections_opened

    @property
    def peak_in_flight(self) -> int:
        """The most API requests that were inside their latency wait at the same moment (1 when served one by one)."""
        with self._lock:
            return self._peak_in_flight

    @property
    def errors(self) -> list[BaseException]:
        with self._lock:
            return list(self._errors)

    # -- internals

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self._connections_opened += 1
            else:
                self._connections.discard(conn)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        api = {OPENAI_PATH: "openai", ANTHROPIC_PATH: "anthropic"}.get(path)
        if api is None or handler.command != "POST":
            status = 404 if api is None else 405
            body = {"error": {"message": f"{handler.command} {handler.path} is not served here", "type": "not_found"}}
            handler.send_bytes(status, json.dumps(body).encode(), "application/json")
            return

        try:
            request_json = json.loads(raw) if raw else None
        except ValueError:
            request_json = None
        images = _count_images(request_json.get("messages")) if isinstance(request_json, dict) else 0
        record = {
            "path": path,
            "method": handler.command,
            "api": api,
            "json": request_json,
            "headers": {name.lower(): value for name, value in handler.headers.items()},
            "time": time.time(),
            "images": images,
            "fault": None,
            "peer": "%s:%d" % handler.client_address[:2],
        }
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            record["fault"] = fault
            self._requests.append(record)
            self._images_seen += images
            latency = self._latency
            responder = self._responder
            accepted_formats = self._accepted_formats
            format_status = self._format_status
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)

        try:
            self._sleep(latency)
        finally:
            with self._lock:
                self._in_flight -= 1
        if not isinstance(request_json, dict):
            self._send_error(handler, api, 400, {}, "request body is not a JSON object")
            return

        content_override: str | None = None
        if fault is not None:
            kind = fault[0]
            if kind == "status":
                message = fault[3] if len(fault) > 3 else None
                self._send_error(handler, api, fault[1], fault[2] if len(fault) > 2 else {}, message)
                return
            if kind == "malformed":
                handler.send_bytes(200, MALFORMED_BODY, "application/json")
                return
            if kind == "disconnect":
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if kind == "hang":
                self._sleep(fault[1])
            elif kind == "content":
                content_override = fault[1]

        refused = _refused_format(request_json, accepted_formats) if api == "openai" else None
        if refused is not None:
            self._send_error(handler, api, format_status, {}, refused)
            return

        if content_override is not None:
            text = content_override
        else:
            try:
                reply = responder(request_json, api)
            except Exception as exc:  # surfaced to the client as a 500 and kept in .errors
                with self._lock:
                    self._errors.append(exc)
                self._send_error(handler, api, 500, {}, f"responder raised {type(exc).__name__}: {exc}")
                return
            text = reply if isinstance(reply, str) else json.dumps(reply)

        if api == "openai":
            self._send_openai(handler, request_json, text)
        else:
            self._send_anthropic(handler, request_json, text)

    def _send_error(self, handler: _Handler, api: str, status: int, headers: dict, message: str | None) -> None:
        message = message or f"fake {status} {_REASONS.get(status, 'error')}"
        seq = next(self._ids)
        if api == "openai":
            kind, code = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
            body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
            extra = {"x-request-id": f"req_fake_{seq:06d}"}
        else:
            kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
            body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": f"req_fake_{seq:06d}"}
            extra = {"request-id": f"req_fake_{seq:06d}"}
        extra.update(headers)
        handler.send_bytes(status, json.dumps(body).encode(), "application/json", extra)

    def _send_openai(self, handler: _Handler, request_json: dict, text: str) -> None:
        seq = next(self._ids)
        ident = f"chatcmpl-fake{seq:06d}"
        created = int(time.time())
        model = request_json.get("model") or "fake-model"
        prompt_tokens = _prompt_words(request_json)
        completion_tokens = count_words(text)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        headers = {"x-request-id": f"req_fake_{seq:06d}"}
        if not request_json.get("stream"):
            body = {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
                "system_fingerprint": None,
            }
            handler.send_bytes(200, json.dumps(body).encode(), "application/json", headers)
            return

        def chunk(delta: dict, finish: str | None, chunk_usage: dict | None = None, choices: bool = True) -> str:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
            }
            if chunk_usage is not None:
                data["usage"] = chunk_usage
            return f"data: {json.dumps(data)}\n\n"

        events = [chunk({"role": "assistant", "content": ""}, None)]
        events += [chunk({"content": piece}, None) for piece in _pieces(text)]
        events.append(chunk({}, "stop"))
        if (request_json.get("stream_options") or {}).get("include_usage"):
            events.append(chunk({}, None, usage, choices=False))
        events.append("data: [DONE]\n\n")
        handler.send_bytes(200, "".join(events).encode(), "text/event-stream; charset=utf-8", headers)

    def _send_anthropic(self, handler: _Handler, request_json: dict, text: str) -> None:
        seq = next(self._ids)
        ident = f"msg_fake{seq:06d}"
        model = request_json.get("model") or "fake-model"
        input_tokens = _prompt_words(request_json)
        output_tokens = count_words(text)
        headers = {"request-id": f"req_fake_{seq:06d}"}
        message = {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
        if not request_json.get("stream"):
            handler.send_bytes(200, json.dumps(message).encode(), "application/json", headers)
            return

        def event(name: str, data: dict) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        start = dict(message, content=[], stop_reason=None, usage={"input_tokens": input_tokens, "output_tokens": 0})
        events = [
            event("message_start", {"type": "message_start", "message": start}),
            event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ]
        events += [
            event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
            for piece in _pieces(text)
        ]
        events += [
            event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
            ),
            event("message_stop", {"type": "message_stop"}),
        ]
        handler.send_bytes(200, "".join(events).encode(), "text/event-stream; charset=utf-8", headers)


def _refused_format(request_json: dict, accepted: frozenset[str] | None) -> str | None:
    """The error message for a ``response_format`` this server does not take, or None."""
    fmt = request_json.get("response_format")
    if accepted is None or fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in accepted:
        return None
    return f"response_format type {kind!r} is not supported (served: {', '.join(sorted(accepted)) or 'none'})"


def _pieces(text: str, size: int = 16) -> list[str]:
    """Split text into stream deltas (they concatenate back to ``text`` exactly)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI/Anthropic server on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    parser.add_argument(
        "--formats", nargs="*", default=None,
        help="response_format types served (default: all); '--formats json_object' answers like llama.cpp",
    )
    args = parser.parse_args(argv)
    with FakeLLMServer(port=args.port, latency=args.latency, accepted_formats=args.formats) as server:
        print(f"openai base_url:    {server.openai_base_url}", flush=True)
        print(f"anthropic base_url: {server.anthropic_base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
