"""Prefect flows: wiring only. Each builds the settings once and calls tasks.

Importing this package turns vendor telemetry off (``ragprep.offline``): a deployment's flow run
and a library user import it before any flow module's body imports PyMuPDF (onnxruntime) or
starts Prefect's temporary server, so those runs cannot phone home either.

``CHECKOUT`` lives here, not in :mod:`flows.runtime`: ``ragprep serve`` (:mod:`flows.serve`,
:mod:`flows.deployments`) needs it before Prefect is imported (a refused second serve never loads Prefect).
"""

from pathlib import Path

from ragprep.offline import disable_vendor_telemetry
from ragprep.pygc import pace_collector

disable_vendor_telemetry()
pace_collector()  # a flow-run process's collector paced as the CLI's (ragprep.pygc)

CHECKOUT = Path(__file__).resolve().parents[1]
"""The code checkout these flows were imported from (a deployment's pull step makes it the working directory)."""
