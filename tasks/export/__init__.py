"""export: files for other tools built from a dataset version (MMDocRAG JSONL + images)."""
