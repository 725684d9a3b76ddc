"""Embeddings, below facts and recall (which both embed): the provider interface and the
providers (`local` MiniLM on CPU, on ONNX Runtime or torch; an OpenAI-compatible server; the
deterministic `hashing` one for tests), the chooser (`get_embedder`, from settings), the query
cache, and their health. No models."""
