"""Prefect flows: wiring only. Each builds the settings once and calls tasks.

Importing this package turns vendor telemetry off (``ragprep.offline``): a deployment's flow run
and a library user import it before any flow module's body imports PyMuPDF (onnxruntime) or
starts Prefect's temporary server, so those runs cannot phone home either.
"""

from ragprep.offline import disable_vendor_telemetry

disable_vendor_telemetry()
