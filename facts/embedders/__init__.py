"""The embedding providers behind `facts.embedding.get_embedder()`: one module per provider."""
