"""Attached documents: extraction (text, Markdown, code, PDF, DOCX), BM25 ranking and fitting a
document into a turn's token budget. Torch-free and Qt-free."""
