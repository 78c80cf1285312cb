"""Incremental detokenization: stream text without ever showing half a character.

Byte-level BPE splits one UTF-8 character (an emoji, CJK) over several tokens; decoding a
prefix then ends in U+FFFD. Following text-generation-inference's `decode_token`, we decode
a short window of recent ids and only emit once the window no longer ends in U+FFFD.
Stop strings (plain-transcript prompts) are held back until they can no longer match.
"""

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Feed token ids one by one with push(); read complete text from `text`.

    push(id) -> str: the newly completed text (may be "" while a character is incomplete
    or a stop string might be starting). flush() -> str: whatever remains at the end.
    """

    def __init__(self, tokenizer, stop_strings: tuple[str, ...] = ()):
        self.tokenizer = tokenizer
        self.stop_strings = tuple(s for s in stop_strings if s)
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0
        self.decoded = ""     # all complete text decoded so far
        self.emitted = 0      # how much of `decoded` has been handed out
        self.hit_stop_string = False

    @property
    def text(self) -> str:
        return self.decoded[: self.emitted]

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def push(self, token_id: int) -> str:
        if self.hit_stop_string:  # the reply is over; later tokens are ignored
            return ""
        self.ids.append(token_id)
        prefix = self._decode(self.ids[self.prefix_offset:self.read_offset])
        window = self._decode(self.ids[self.prefix_offset:])
        if len(window) > len(prefix) and not window.endswith(REPLACEMENT):
            self.decoded += window[len(prefix):]
            self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return self._release()

    def _release(self) -> str:
        end = len(self.decoded)
        for stop in self.stop_strings:
            found = self.decoded.find(stop, max(0, self.emitted - len(stop)))
            if found != -1:
                self.hit_stop_string = True
                self.decoded = self.decoded[:found]
                end = min(end, found)
        if not self.hit_stop_string:
            end = len(self.decoded) - self._held_back()
        end = max(end, self.emitted)
        piece = self.decoded[self.emitted:end]
        self.emitted = end
        return piece

    def _held_back(self) -> int:
        """Characters at the end that could be the start of a stop string."""
        longest = 0
        for stop in self.stop_strings:
            for k in range(min(len(stop) - 1, len(self.decoded)), 0, -1):
                if self.decoded.endswith(stop[:k]):
                    longest = max(longest, k)
                    break
        return longest

    def flush(self) -> str:
        """Emit held-back text at the end of the reply (no stop string followed it)."""
        if self.hit_stop_string:
            return ""
        self.decoded = self.decoded.rstrip(REPLACEMENT)
        piece = self.decoded[self.emitted:]
        self.emitted = len(self.decoded)
        return piece
