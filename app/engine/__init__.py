"""torch + transformers: loading, memory foresight, generation. No Qt."""
