"""ragprep core: settings, ids, storage, OCR engine, progress and the CLI.

The core never imports Prefect; flows import tasks, tasks import the core.

Importing ``ragprep`` defers PyMuPDF's layout model to the first page laid out
(``ragprep.engines.layout_model``): a process that only reads PDF text does not load it. It also defers the
generated REST client of lance-namespace to its first use (``ragprep.engines.lance_client``): ``import lancedb``
then skips its API modules, which ragprep (local tables only) never runs.
"""

from ragprep.engines.lance_client import defer_lance_client
from ragprep.engines.layout_model import defer_layout_model

__version__ = "0.1.0"

defer_layout_model()
defer_lance_client()
