"""mmdoc: MMDocRAG quotes (layout, crops, OCR, VLM text), multi-quote questions and
hard-negative candidate sets; ``run`` holds the ``quotes`` and ``negatives`` stages.
"""
