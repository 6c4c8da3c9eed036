"""Pipeline steps: typed pure functions, plus thin Prefect task wrappers in ``tasks.prefect_tasks``."""

import ragprep  # noqa: F401  (first: it defers PyMuPDF's layout model, ragprep.engines.layout_model, before a step imports PyMuPDF)
