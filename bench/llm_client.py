"""LLM client throughput: 500 requests against a loopback OpenAI-compatible server with
100 ms latency at concurrency 32, through ragprep's Generator (SDK + cache lookup +
concurrency and rate limits + accounting), printed as a share of the ideal throughput
(concurrency / latency) and against the raw SDK with a bare semaphore in the same run.

Aim (issue 3): at least 80% of the ideal throughput.

    .venv/bin/python bench/llm_client.py [--requests 500] [--concurrency 32] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai  # noqa: E402

from ragprep.engines.generator import Generator  # noqa: E402
from ragprep.prompts import load_prompt  # noqa: E402
from ragprep.settings import Settings  # noqa: E402


async def through_generator(base_url: str, n: int, concurrency: int) -> float:
    settings = Settings(root=Path(tempfile.mkdtemp()), llm={"provider": "openai", "model": "bench", "base_url": base_url, "concurrency": concurrency, "requests_per_minute": 1e9, "max_retries": 0})
    generator = Generator(settings, "llm", cache_dir=None)
    prompt = load_prompt("correct_slide")
    try:
        started = time.perf_counter()
        await asyncio.gather(
            *(
                generator.generate(
                    "correct_slide", prompt, {"slide_number": i, "document": "bench", "slide_markdown": f"slide {i}"},
                    heuristic=lambda: "",
                )
                for i in range(n)
            )
        )
        elapsed = time.perf_counter() - started
    finally:
        await generator.aclose()
    assert generator.meter.calls == n, generator.meter.table()
    return elapsed


async def through_raw_sdk(base_url: str, n: int, concurrency: int) -> float:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, http_client=openai.DefaultAioHttpClient())
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            await client.chat.completions.create(model="bench", messages=[{"role": "user", "content": f"slide {i}"}])

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started
    finally:
        await client.close()


@contextlib.contextmanager
def served(latency: float):
    """The loopback server in its own process, so it does not share the client's GIL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "tests" / "fake_llm_server.py"),
         "--port", str(port), "--latency", str(latency)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("fake LLM server did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ideal = args.concurrency / args.latency
    results: dict[str, list[float]] = {"ragprep Generator": [], "raw openai SDK + semaphore": []}
    with served(args.latency) as base_url:
        asyncio.run(through_raw_sdk(base_url, 40, args.concurrency))  # warm-up
        for _ in range(args.repeat):
            results["raw openai SDK + semaphore"].append(
                args.requests / asyncio.run(through_raw_sdk(base_url, args.requests, args.concurrency))
            )
            results["ragprep Generator"].append(
                args.requests / asyncio.run(through_generator(base_url, args.requests, args.concurrency))
            )
    print(f"{args.requests} requests, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms; "
          f"ideal = concurrency / latency = {ideal:.0f} req/s; best of {args.repeat}")
    print(f"{'client':<30} {'req/s':>8} {'share of ideal':>15}")
    best = {}
    for name, values in results.items():
        best[name] = max(values)
        print(f"{name:<30} {best[name]:>8.1f} {best[name] / ideal:>14.0%}")
    share = best["ragprep Generator"] / ideal
    print(f"ragprep Generator vs raw SDK: {best['ragprep Generator'] / best['raw openai SDK + semaphore']:.2f}x")
    print(f"aim >= 80% of ideal: {share:.0%} {'MET' if share >= 0.8 else 'NOT MET'}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "llm_client.json").write_text(json.dumps({"ideal_rps": ideal, "best_rps": best, "share_of_ideal": share}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
