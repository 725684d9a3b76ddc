"""Embeddings, below facts and recall (which both embed): the provider interface and the
providers (`local` MiniLM on CPU, an OpenAI-compatible server, the deterministic `hashing` one
for tests), the chooser (`get_embedder`, from settings), and their health. No models."""
