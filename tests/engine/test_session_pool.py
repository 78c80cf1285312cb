"""Issue 12, item 5: switching chats keeps their KV caches (parked in host memory, LRU within a
budget), so the first turn after switching back prefills only the new message."""

import threading

import pytest
import torch

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.events import TurnCompleted
from app.engine.local.kv_session import KVSession
from app.engine.local.session_pool import SessionPool, park, parked_bytes, restore, swap, to_device, to_host
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe

CPU = torch.device("cpu")
PLENTY = 1 << 40


def turn(runner, messages, key, **settings):
    """One turn of conversation ``key``; returns its ReplyFinished (and appends the answer)."""
    events = runner.run_turn(messages, SummaryState(), GenerationSettings(max_new_tokens=8, temperature=0, **settings),
                             threading.Event(), conversation_key=key)
    finished = next(e.finished for e in events if isinstance(e, TurnCompleted))
    messages.append(Message(Role.ASSISTANT, finished.text))
    return finished


@pytest.fixture
def runner(tiny_loaded):
    runner = TurnRunner(tiny_loaded, pick_probe())
    runner.sessions._host_available = lambda: PLENTY
    return runner


def test_switching_back_prefills_only_the_new_message(runner, tiny_loaded):
    a = [Message(Role.USER, "Tell me about the river Seine and the bridges of Paris.")]
    turn(runner, a, "a")
    a.append(Message(Role.USER, "And the Loire?"))
    second = turn(runner, a, "a")
    assert second.reused_tokens > 20  # the same chat reuses its cache, as before
    # the same chat's third turn in a runner that never switches: what "no switch" reuses
    control, c = TurnRunner(tiny_loaded, pick_probe()), [a[0]]
    for text in ("And the Loire?", "Which one is longer?"):
        turn(control, c, "a")
        c.append(Message(Role.USER, text))
    expected = turn(control, c, "a")
    b = [Message(Role.USER, "Write a haiku about winter mornings in Seoul.")]
    other = turn(runner, b, "b")
    assert other.reused_tokens < 10  # only the template's first tokens are shared
    assert runner.sessions.is_parked("a") and runner.sessions.parked_count == 1
    a.append(Message(Role.USER, "Which one is longer?"))
    back = turn(runner, a, "a")
    # as much is reused as if the user had never left the chat: only the new message is prefilled
    assert back.reused_tokens == expected.reused_tokens > second.prompt_tokens - 3
    assert back.prefill_tokens == back.prompt_tokens - back.reused_tokens < 20
    assert runner.sessions.is_parked("b") and not runner.sessions.is_parked("a")


def test_no_budget_keeps_no_other_chat(runner):
    a = [Message(Role.USER, "Tell me about the river Seine and the bridges of Paris.")]
    turn(runner, a, "a", kept_chat_cache_mib=0)
    turn(runner, [Message(Role.USER, "Write a haiku about winter.")], "b", kept_chat_cache_mib=0)
    assert runner.sessions.parked_count == 0
    a.append(Message(Role.USER, "Which one is longer?"))
    assert turn(runner, a, "a", kept_chat_cache_mib=0).reused_tokens < 10  # re-prefilled


def test_activation_before_the_turn_is_what_the_turn_uses(runner):
    """The chat flow activates a conversation when it is opened (the copy back to the device
    happens then, not inside the next turn's TTFT)."""
    a = [Message(Role.USER, "Tell me about the river Seine and the bridges of Paris.")]
    first = turn(runner, a, "a")
    runner.activate("b", 4096)
    assert runner.sessions.is_parked("a") and runner.session.cached_tokens == 0
    restored = runner.activate("a", 4096)
    assert restored is runner.session and restored.cached_tokens > 20
    a.append(Message(Role.USER, "And the Loire?"))
    assert turn(runner, a, "a").reused_tokens >= first.prompt_tokens - 1


def _filled_session(config, tokens: int) -> KVSession:
    """A static session of the tiny model's shape holding ``tokens`` random tokens."""
    from app.engine.local.static_cache import new_static_cache

    heads, dim = config.num_key_value_heads, config.hidden_size // config.num_attention_heads
    session = KVSession(capacity_tokens=64, static=True)
    session.cache = new_static_cache(config, 64)
    for layer in session.cache.layers:
        k = torch.randn(1, heads, tokens, dim)
        layer.update(k, k + 1)
    session.token_ids = list(range(tokens))
    return session


def _fill(pool: SessionPool, config, tokens: int) -> None:
    filled = _filled_session(config, tokens)
    pool.active.cache, pool.active.token_ids = filled.cache, filled.token_ids


def test_lru_keeps_the_most_recent_chats_within_the_budget(tiny_loaded):
    config = tiny_loaded.model.config
    size = _filled_session(config, 5).cache_bytes
    pool = SessionPool(budget_bytes=2 * size, host_available=lambda: PLENTY)
    for key in "abc":
        pool.activate(key, CPU)
        _fill(pool, config, 5)
    pool.activate("d", CPU)  # parks c: a (least recently used) leaves
    assert [k for k in "abc" if pool.is_parked(k)] == ["b", "c"] and pool.parked_total == 2 * size
    assert any("a: dropped, least recently used" in n for n in pool.notes)
    assert pool.activate("b", CPU).cached_tokens == 5 and not pool.is_parked("b")


def test_a_cache_the_host_cannot_hold_is_not_kept(tiny_loaded):
    pool = SessionPool(budget_bytes=PLENTY, host_available=lambda: 2 * 2**30 + 10)
    pool.activate("a", CPU)
    _fill(pool, tiny_loaded.model.config, 5)
    pool.activate("b", CPU)
    assert pool.parked_count == 0 and "not kept" in pool.notes[-1]


def test_forget_drops_parked_and_active_caches(tiny_loaded):
    pool = SessionPool(host_available=lambda: PLENTY)
    for key in "ab":
        pool.activate(key, CPU)
        _fill(pool, tiny_loaded.model.config, 3)
    pool.forget("a")
    pool.forget("b")
    assert pool.parked_count == 0 and pool.active.cache is None and pool.active_key == ""


def test_park_and_restore_keep_every_value(tiny_loaded):
    session = _filled_session(tiny_loaded.model.config, 7)
    before = [layer.keys.clone() for layer in session.cache.layers]
    park(session)
    assert parked_bytes(session) == session.cache_bytes > 0
    restore(session, CPU)
    assert all(torch.equal(layer.keys, b) for layer, b in zip(session.cache.layers, before, strict=True))


def test_parked_and_restored_tensors_are_what_the_compiled_step_was_traced_with():
    """The cache is made under inference mode (prefill); its copies must be too, or the compiled
    decode step's guards fail and it recompiles (seen on the H200 as a 20 s stall)."""
    plain = torch.ones(2, 3)
    assert not plain.is_inference()
    host, back = to_host(plain, pinned=False), to_device(plain, CPU)
    assert host.is_inference() and back.is_inference() and back.data_ptr() != plain.data_ptr()
    assert torch.equal(host, plain) and torch.equal(back, plain)


def test_swap_refuses_what_does_not_pair_up_and_touches_nothing(tiny_loaded):
    """A CPU cache is never parked (it stays where it is), so swap has nothing to exchange."""
    config = tiny_loaded.model.config
    a, b = _filled_session(config, 5), _filled_session(config, 5)
    park(b)
    keys = [t.data_ptr() for _, _, t in a.tensors()]
    assert not swap(a, b) and not swap(a, KVSession())
    assert [t.data_ptr() for _, _, t in a.tensors()] == keys


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_switching_back_restores_into_the_same_device_memory(tiny_loaded):
    gpu = torch.device("cuda")
    config = tiny_loaded.model.config
    a, b = _filled_session(config, 5), _filled_session(config, 5)
    for session in (a, b):
        restore(session, gpu)
    park(b)
    b_values = [t.clone() for _, _, t in b.tensors()]
    a_values = [t.cpu() for _, _, t in a.tensors()]
    a_ptrs = [t.data_ptr() for _, _, t in a.tensors()]
    assert swap(a, b)
    assert [t.data_ptr() for _, _, t in b.tensors()] == a_ptrs  # b now lives where a lived
    assert all(torch.equal(t.cpu(), v) for (_, _, t), v in zip(b.tensors(), b_values, strict=True))
    assert all(t.device.type == "cpu" and torch.equal(t, v) for (_, _, t), v in zip(a.tensors(), a_values, strict=True))


def test_opening_a_parked_chat_records_its_decode_graph_then(runner):
    """The restored cache's CUDA graph is captured when the chat is opened (not in its next turn's
    TTFT); a chat that was not parked, or a new one, has nothing to capture."""
    prepared = []

    class Decoder:
        def prepare(self, cache):
            prepared.append(cache)
            return True

    a = [Message(Role.USER, "Tell me about the river Seine and the bridges of Paris.")]
    turn(runner, a, "a")
    runner.decoder = Decoder()
    runner.activate("b", 4096)
    runner.activate("b", 4096)
    assert prepared == []
    restored = runner.activate("a", 4096)
    assert prepared == [restored.cache] and restored.cached_tokens > 20
