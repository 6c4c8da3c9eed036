"""LLM/VLM providers behind one protocol, and the machinery every provider gets.

- ``heuristic``: deterministic rules, offline (the default); every row says so.
- ``openai``: any OpenAI-compatible endpoint through the official SDK (vLLM, Ollama, TGI, ...).
- ``anthropic``: the official SDK, API or Bedrock.

``Generator`` (``ragprep.engines.generator``) adds the privacy guard, a content-addressed
response cache, a concurrency and a rate limit, one repair attempt for invalid structured
output, and token/cost accounting.
"""
