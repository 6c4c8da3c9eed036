"""ingest: discover documents, extract them (python-pptx, PyMuPDF, Tesseract OCR) and chunk them.

``extract/`` holds one backend per format, ``chunking`` the slide/chapter chunk rules and
``run`` the stage over a list of paths (per-document parts, reuse, table assembly).
"""
