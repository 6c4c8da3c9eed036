"""No vendor telemetry: the switches that keep the libraries ragprep runs from phoning home.

ragprep makes no outbound connection or DNS lookup unless an operator configured one (an LLM
endpoint, object storage). Libraries it runs have analytics of their own; each is off:

- **onnxruntime** is loaded with the pymupdf-layout model: when the first PDF page is laid out
  (``ragprep/engines/layout_model.py``), or by ``import pymupdf`` itself where PyMuPDF is imported
  before ``ragprep`` (PyMuPDF 2 imports ``pymupdf.layout``, which imports onnxruntime). From 1.29
  its Linux wheels compile in Microsoft's 1DS telemetry uploader (``OneDsTelemetry``): it starts
  when the onnxruntime module initialises, keeps a device id and an event database under
  ``~/.cache/Microsoft/DeveloperTools/.onnxruntime`` and resolves ``mobile.events.data.microsoft.com``
  from background threads. ``onnxruntime.disable_telemetry_events()`` after the import is too late.
  The fix is the pin in ``pyproject.toml`` (``onnxruntime<1.29``: no uploader in the binary at all,
  whatever the import order; same layout output). ``ORT_DISABLE_TELEMETRY=1``, which onnxruntime >= 1.29
  reads once when it initialises, is set here too, so that the entry points stay silent should the pin
  be lifted.
- **Prefect**: ``DO_NOT_TRACK=1`` turns off its SDK events; ``PREFECT_SERVER_ANALYTICS_ENABLED=false``
  turns off the telemetry service of the temporary server a run starts (a subprocess that inherits
  this environment when the first flow is called).
- **Great Expectations**: ``GX_ANALYTICS_ENABLED=false`` (its context is also built with analytics
  off, ``tasks/dataset/quality.py``).
- **huggingface_hub** (sentence-transformers and datasets in the ``train`` extra):
  ``HF_HUB_DISABLE_TELEMETRY=1``.

:func:`disable_vendor_telemetry` runs at the entry points, before those libraries are imported or
their servers started: the CLI callback (every command) and the ``flows`` package (a deployment or
a library user imports it before any flow module's body). Nothing here runs at import. The values
are forced, not defaults: ragprep has no setting that turns vendor telemetry on.
``tests/reliability/test_no_outbound_network.py`` runs a whole pipeline under strace and fails on
any non-loopback connect or DNS query.
"""

from __future__ import annotations

import os

TELEMETRY_OFF: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}
"""Environment switches that turn each library's telemetry off (read by the libraries themselves)."""


def disable_vendor_telemetry() -> None:
    """Turn every known library's telemetry off for this process and its children (see the module docstring)."""
    os.environ.update(TELEMETRY_OFF)


LOCAL_MODELS_ONLY: dict[str, str] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""Switches that keep huggingface_hub / transformers from asking a hub: a model is a local folder or nothing."""


def use_local_models_only() -> None:
    """Before sentence-transformers loads a local model folder: never try a hub (defaults: an operator's value wins)."""
    for name, value in LOCAL_MODELS_ONLY.items():
        os.environ.setdefault(name, value)
