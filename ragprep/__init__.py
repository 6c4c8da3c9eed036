"""ragprep core: settings, ids, storage, OCR engine, progress and the CLI.

The core never imports Prefect; flows import tasks, tasks import the core.

Importing ``ragprep`` defers PyMuPDF's layout model to the first page laid out
(``ragprep.engines.layout_model``): a process that only reads PDF text does not load it.
"""

from ragprep.engines.layout_model import defer_layout_model

__version__ = "0.1.0"

defer_layout_model()
