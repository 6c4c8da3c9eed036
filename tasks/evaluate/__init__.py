"""evaluate: scoring of model outputs against a dataset version (MMDocRAG quote selection)."""
