"""ragprep core: settings, ids, storage, OCR engine, progress and the CLI.

The core never imports Prefect; flows import tasks, tasks import the core.
"""

__version__ = "0.1.0"
