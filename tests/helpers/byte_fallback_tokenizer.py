"""A SentencePiece-style tokenizer with byte fallback (Llama-2, Gemma), built in memory.

No such tokenizer ships with the test model (SmolLM2 is byte-level BPE), so this one is made
from the `tokenizers` pieces Llama-2's tokenizer.json uses: a BPE model with byte_fallback,
"▁" for spaces, and the decoder Replace → ByteFallback → Fuse → Strip. A character outside
its small vocabulary becomes one <0xXX> token per UTF-8 byte.
"""

from tokenizers import Tokenizer, decoders, models, normalizers
from transformers import PreTrainedTokenizerFast

PIECES = ("▁", "안", "하", "세", "요", "▁만", "나", "서", ",", "!", "▁the", "t", "h", "e", "字", "▁學")
"""Whole pieces; everything else (most Hangul, Hanja and every emoji) falls back to bytes."""


def byte_fallback_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for piece in PIECES:
        vocab.setdefault(piece, len(vocab))
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=True, unk_token="<unk>",
                                     fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")
