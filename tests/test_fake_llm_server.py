"""The fake LLM server, exercised through the real `openai` and `anthropic` SDKs over real
HTTP on loopback: no mocks, no monkeypatching."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import time

import pytest

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

PNG_1PX = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360606060000000050001a5f645400000000049454e44ae426082"
    )
).decode()


pytestmark = pytest.mark.usefixtures("server")  # tests/conftest.py: one server per module, reset around each test


def oa(server, **kw) -> "openai.OpenAI":
    kw.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.openai_base_url, api_key="test", **kw)


def an(server, **kw) -> "anthropic.Anthropic":
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test", **kw)


def ask(client, text: str = "ping"):
    """One request through either SDK; returns the assistant text."""
    if isinstance(client, openai.OpenAI):
        r = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": text}])
        return r.choices[0].message.content
    r = client.messages.create(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": text}])
    return r.content[0].text


SDKS = [pytest.param(oa, id="openai"), pytest.param(an, id="anthropic")]


# --------------------------------------------------------------------------- happy paths


def test_addresses_bind_loopback_only(server):
    assert server.openai_base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.anthropic_base_url == f"http://127.0.0.1:{server.port}"
    assert server._httpd.socket.getsockname()[0] == "127.0.0.1"
    with socket.create_connection(("127.0.0.1", server.port), timeout=2):
        pass


def test_openai_sync_echo_and_usage(server):
    client = oa(server)
    r = client.chat.completions.create(
        model="gpt-test",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "echo these four words"},
        ],
    )
    assert r.object == "chat.completion" and r.id and r.created > 0
    assert r.model == "gpt-test"
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == "echo these four words"
    assert r.choices[0].finish_reason == "stop"
    # words: "be brief" 2 + "first question" 2 + "ok" 1 + 4 = 9
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (9, 4, 13)

    [req] = server.requests
    assert server.request_count == 1
    assert req["path"] == "/v1/chat/completions" and req["api"] == "openai"
    assert req["json"]["model"] == "gpt-test"
    assert req["headers"]["authorization"] == "Bearer test"
    assert abs(req["time"] - time.time()) < 10


def test_openai_responder_and_keepalive(server):
    server.responder = lambda body, api: f"{api}:{body['model']}:{len(body['messages'])}"
    client = oa(server)
    before = server.connections_opened
    assert [ask(client) for _ in range(5)] == ["openai:gpt-test:1"] * 5
    assert server.connections_opened - before == 1  # one keep-alive connection reused
    assert len({r["peer"] for r in server.requests}) == 1


def test_openai_async_multimodal(server):
    async def go():
        async with openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0) as client:
            return await client.chat.completions.create(
                model="gpt-vision",
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "describe"},
                            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_1PX}"}},
                            {"type": "text", "text": "this slide"},
                            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_1PX}"}},
                        ],
                    }
                ],
            )

    r = asyncio.run(go())
    assert r.choices[0].message.content == "describe\nthis slide"
    assert r.usage.completion_tokens == 3
    assert server.images_seen == 2
    assert server.requests[0]["images"] == 2


def test_anthropic_sync_echo_usage_and_image(server):
    client = an(server)
    m = client.messages.create(
        model="claude-test",
        max_tokens=100,
        system="you are terse",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX}},
                    {"type": "text", "text": "what is shown here"},
                ],
            }
        ],
    )
    assert m.type == "message" and m.role == "assistant" and m.id
    assert m.model == "claude-test"
    assert m.content[0].type == "text" and m.content[0].text == "what is shown here"
    assert m.stop_reason == "end_turn" and m.stop_sequence is None
    assert (m.usage.input_tokens, m.usage.output_tokens) == (3 + 4, 4)
    assert server.images_seen == 1
    [req] = server.requests
    assert req["path"] == "/v1/messages" and req["api"] == "anthropic"
    # older SDKs send x-api-key; anthropic 2.x sends the key as a bearer token
    assert "test" in (req["headers"].get("x-api-key"), req["headers"].get("authorization", "").removeprefix("Bearer "))
    assert req["headers"]["anthropic-version"]


def test_streaming_both_sdks(server):
    text = "a reply long enough to arrive in several stream deltas"
    server.responder = lambda body, api: text
    chunks = list(
        oa(server).chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-1].usage.completion_tokens == len(text.split())

    with an(server).messages.stream(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "x"}]) as s:
        assert "".join(s.text_stream) == text
        final = s.get_final_message()
    assert final.content[0].text == text and final.usage.output_tokens == len(text.split())


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("make", SDKS)
def test_429_retry_after_is_honoured(server, make):
    server.enqueue_faults([("status", 429, {"Retry-After": "1"})])
    client = make(server, max_retries=1)
    t0 = time.monotonic()
    assert ask(client, "after the wait") == "after the wait"
    assert time.monotonic() - t0 >= 0.95
    assert server.request_count == 2
    first, second = server.requests
    assert first["fault"][:2] == ("status", 429) and second["fault"] is None
    assert second["time"] - first["time"] >= 0.95


def test_error_bodies_are_api_shaped(server):
    server.enqueue_faults([("status", 429, {"Retry-After": "1"}, "slow down")])
    with pytest.raises(openai.RateLimitError) as oe:
        ask(oa(server))
    assert oe.value.status_code == 429 and oe.value.response.headers["retry-after"] == "1"
    assert oe.value.body == {"message": "slow down", "type": "requests", "param": None, "code": "rate_limit_exceeded"}

    server.enqueue_faults([("status", 500, {})])
    with pytest.raises(openai.InternalServerError) as oe:
        ask(oa(server))
    assert oe.value.body["type"] == "server_error"

    server.enqueue_faults([("status", 429, {"Retry-After": "1"}), ("status", 500, {})])
    with pytest.raises(anthropic.RateLimitError) as ae:
        ask(an(server))
    assert ae.value.body["type"] == "error" and ae.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.InternalServerError) as ae:
        ask(an(server))
    assert ae.value.body["error"]["type"] == "api_error"
    assert server.request_count == 4


@pytest.mark.parametrize("make", SDKS)
def test_500_then_success_is_retried(server, make):
    server.enqueue_faults([("status", 500, {})])
    assert ask(make(server, max_retries=2), "recovered") == "recovered"
    assert server.request_count == 2
    assert server.pending_faults == []


@pytest.mark.parametrize(
    "make, timeout_error",
    [pytest.param(oa, openai.APITimeoutError, id="openai"), pytest.param(an, anthropic.APITimeoutError, id="anthropic")],
)
def test_hang_past_client_timeout_raises_timeout(server, make, timeout_error):
    server.enqueue_faults([("hang", 3.0)])
    client = make(server, max_retries=0, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(timeout_error):
        ask(client)
    assert time.monotonic() - t0 < 2.0
    assert server.request_count == 1
    # the server keeps serving other connections meanwhile
    assert ask(make(server), "still alive") == "still alive"


def test_short_hang_then_normal_answer(server):
    server.enqueue_faults([("hang", 0.2)])
    t0 = time.monotonic()
    assert ask(oa(server), "slow") == "slow"
    assert time.monotonic() - t0 >= 0.2


@pytest.mark.parametrize("make", SDKS)
def test_malformed_json_raises_jsondecodeerror_without_retry(server, make):
    # Both SDKs call response.json() on a 200 application/json body: the stdlib
    # json.JSONDecodeError escapes unwrapped, and is not retried.
    server.enqueue_faults([("malformed",)])
    with pytest.raises(json.JSONDecodeError):
        ask(make(server, max_retries=2))
    assert server.request_count == 1


@pytest.mark.parametrize("make", SDKS)
def test_content_fault_overrides_one_reply(server, make):
    server.enqueue_faults([("content", '{"title": "not closed'), ("content", "")])
    client = make(server)
    assert ask(client, "x") == '{"title": "not closed'
    assert ask(client, "y") == ""
    assert ask(client, "z") == "z"


@pytest.mark.parametrize(
    "make, error",
    [pytest.param(oa, openai.APIConnectionError, id="openai"), pytest.param(an, anthropic.APIConnectionError, id="anthropic")],
)
def test_disconnect_fault(server, make, error):
    server.enqueue_faults([("disconnect",)])
    with pytest.raises(error):
        ask(make(server, max_retries=0))
    server.enqueue_faults([("disconnect",)])
    assert ask(make(server, max_retries=1, timeout=5), "retried") == "retried"


def test_faults_are_fifo_and_validated(server):
    server.enqueue_faults([("content", "one"), ("content", "two")])
    server.enqueue_faults([["content", "three"]])
    client = oa(server)
    assert [ask(client) for _ in range(4)] == ["one", "two", "three", "ping"]
    for bad in [("nope",), ("status", "429", {}), ("hang",), ("content", 3), ("malformed", 1)]:
        with pytest.raises(ValueError):
            server.enqueue_faults([bad])
    assert server.pending_faults == []


def test_responder_errors_become_500(server):
    def boom(body, api):
        raise RuntimeError("responder bug")

    server.responder = boom
    with pytest.raises(openai.InternalServerError, match="responder bug"):
        ask(oa(server))
    assert [type(e) for e in server.errors] == [RuntimeError]


def test_reset_and_unknown_paths(server):
    ask(oa(server))
    server.latency = 0.05
    server.enqueue_faults([("malformed",)])
    server.reset()
    assert (server.request_count, server.images_seen, server.pending_faults, server.latency) == (0, 0, [], 0.05)
    server.reset(defaults=True)
    assert server.latency == 0.0

    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(server.url + "/v1/embeddings", data=b"{}", timeout=5)
    assert e.value.code == 404
    assert json.loads(e.value.read())["error"]["type"] == "not_found"
    e.value.close()
    assert server.request_count == 0  # only API calls are logged


# --------------------------------------------------------------------------- concurrency


def test_concurrent_requests_overlap_latency(server):
    """64 requests at concurrency 32 with 0.5 s latency: the server sees them overlap (many in their latency wait at
    once; 1 if serialised) and the batch takes far less than the 32 s it would take one by one. No absolute time
    bound: on a loaded machine the SDK's CPU per call varies, the overlap does not."""
    server.latency = 0.5
    n, concurrency = 64, 32

    async def go():
        async with openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0) as client:
            sem = asyncio.Semaphore(concurrency)

            async def one(i):
                async with sem:
                    r = await client.chat.completions.create(
                        model="gpt-test", messages=[{"role": "user", "content": f"q{i}"}]
                    )
                    return r.choices[0].message.content

            t0 = time.monotonic()
            out = await asyncio.gather(*(one(i) for i in range(n)))
            return out, time.monotonic() - t0

    before = server.connections_opened
    out, elapsed = asyncio.run(go())
    assert out == [f"q{i}" for i in range(n)]
    assert server.request_count == n
    assert server.peak_in_flight >= 8, server.peak_in_flight
    assert elapsed < n * server.latency / 4, elapsed  # serialised: n x latency = 32 s
    assert server.connections_opened - before <= concurrency
