"""``ragprep serve``: the Prefect server, work pool, deployments, a worker and the report page, until Ctrl-C."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

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
        Optional[int], typer.Option("--port", help="Prefect server port (default: a free one).", min=1, max=65535)
    ] = None,
    web_port: Annotated[
        Optional[int], typer.Option("--web-port", help="Web root port (default: a free one).", min=1, max=65535)
    ] = None,
) -> None:
    """Run ragprep as a service on this machine until Ctrl-C: a Prefect server (UI) on 127.0.0.1, the `ragprep`
    process work pool, every deployment of deploy/prefect.yaml, a worker, and a read-only web page of the root's
    review reports, quality pages and exports (artifact links point there), which also answers questions like
    `ragprep ask` on `POST /ask` (JSON `{"question": ...}`), with the index and model kept loaded between requests.

    While it runs, other ragprep commands on this machine report to its server instead of starting a temporary one.
    """
    chosen = root or (Path(os.environ["RAGPREP_ROOT"]) if os.environ.get("RAGPREP_ROOT") else Path.home() / "ragprep-data")
    quiet_prefect_environment()
    from flows.serve import Service
    from tasks.refmatch.endpoint import add_ask_endpoint

    service = Service(chosen, port, web_port)
    warm = add_ask_endpoint(service.web, settings_for(chosen))  # POST /ask on the report page
    service.start()
    warm.start()
    where = service.addresses()
    console.print(f"Prefect UI:   {where['ui']}")
    console.print(f"Prefect API:  {where['api']} (other ragprep commands here use it)")
    console.print(f"reports:      {where['web']} (review reports, quality pages, exports of {where['root']})")
    console.print(f"ask:          POST {where['web']}ask {{\"question\": ...}} (index and model kept loaded)")
    console.print("deployments:  work pool `ragprep`, one worker; Ctrl-C stops everything")
    service.wait()
