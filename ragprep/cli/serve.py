"""``ragprep serve``: the Prefect server, work pool, deployments, a worker and the report page, supervised until Ctrl-C."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from ragprep.cli.common import console, quiet_prefect_environment, settings_for, user_errors


@user_errors
def serve(
    root: Annotated[
        Optional[Path],
        typer.Option(
            "--root",
            help="Output root the deployments write (env RAGPREP_ROOT, default ~/ragprep-data; never inside the code checkout).",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        Optional[int],
        typer.Option("--port", help="Prefect server and UI port (default: serve.port of the settings, 4200).", min=1, max=65535,
                     show_default=False),
    ] = None,
    web_port: Annotated[
        Optional[int],
        typer.Option("--web-port", help="Report page port (default: serve.web_port of the settings, 8765).", min=1, max=65535,
                     show_default=False),
    ] = None,
) -> None:
    """Run ragprep as a service on this machine until Ctrl-C: a Prefect server (UI) on 127.0.0.1, the `ragprep`
    process work pool, the deployments of deploy/prefect.yaml (only those whose code changed are redeployed, so
    edits made in the UI stay), a worker, and a read-only web page of the root's review reports, quality pages and
    exports (artifact links point there), which also answers questions like `ragprep ask` on `POST /ask` (JSON
    `{"question": ...}`), with the index and model kept loaded between requests. Ports are fixed (4200 and 8765
    unless the serve section of ragprep.toml, RAGPREP_SERVE__PORT / RAGPREP_SERVE__WEB_PORT or the options say
    otherwise); a second serve on the same machine, root or port is refused.

    The worker, the page and the server are restarted with backoff when they die (reported here); Ctrl-C or SIGTERM
    ends the runs in flight (marked Cancelled, the build lock released) and then everything else. While it runs,
    other ragprep commands on this machine report to its server instead of starting a temporary one.
    """
    started = time.monotonic()

    def say(message: str) -> None:
        console.print(f"[{time.monotonic() - started:5.1f}s] {escape(message)}", highlight=False)

    chosen = root or (Path(os.environ["RAGPREP_ROOT"]) if os.environ.get("RAGPREP_ROOT") else Path.home() / "ragprep-data")
    given = {key: value for key, value in {"port": port, "web_port": web_port}.items() if value is not None}
    settings = settings_for(chosen)
    options = settings.serve.model_copy(update=given)
    say(f"ragprep serve: root {chosen.resolve()}, Prefect server on 127.0.0.1:{options.port}, report page on "
        f"127.0.0.1:{options.web_port}; loading Prefect ...")
    quiet_prefect_environment()
    from flows.serve import Service
    from tasks.refmatch.endpoint import add_ask_endpoint

    service = Service(chosen, options, say=say)
    service.start()
    warm = add_ask_endpoint(service.web, settings)  # POST /ask on the report page (kept when the page restarts)
    warm.start()
    where = service.addresses()
    console.print(f"Prefect UI:   {where['ui']}")
    console.print(f"Prefect API:  {where['api']} (other ragprep commands here use it)")
    console.print(f"reports:      {where['web']} (review reports, quality pages, exports of {where['root']})")
    console.print(f"ask:          POST {where['web']}ask {{\"question\": ...}} (index and model kept loaded)")
    console.print(f"deployments:  work pool `ragprep`, one worker, builds queued one at a time; ready in "
                  f"{time.monotonic() - started:.0f} s; Ctrl-C stops everything")
    service.wait()
