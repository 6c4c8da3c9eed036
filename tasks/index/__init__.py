"""index: the search index over a dataset version — dense vectors in LanceDB, BM25, hybrid by RRF."""
