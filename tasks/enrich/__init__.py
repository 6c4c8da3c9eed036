"""enrich: the generative stages over the ingested tables — describe, correct, headers.

Each step module (``describe``, ``correct``, ``headers``) renders its prompt through the
shared ``Generator``; ``rules`` holds their offline (heuristic) rules; ``run`` reads and
writes the tables.
"""
