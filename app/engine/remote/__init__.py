"""The remote backend: an OpenAI-compatible server (vLLM, `transformers serve`) answering turns
under the same history policy. Imports no torch."""
