"""One instance per profile: the second launch hands over to the first and does not open the store."""

import socket

from app.ui.single_instance import SingleInstance


def test_second_instance_hands_its_model_to_the_first(qtbot, tmp_path):
    first, second = SingleInstance(tmp_path), SingleInstance(tmp_path)
    assert first.acquire()
    try:
        assert not second.acquire()  # the profile is taken
        model = tmp_path / "m.gguf"
        with qtbot.waitSignal(first.activation_requested, timeout=5000) as blocker:
            assert second.hand_over(model)
        assert blocker.args == [str(model.resolve())]
        with qtbot.waitSignal(first.activation_requested, timeout=5000) as blocker:
            assert second.hand_over(None)
        assert blocker.args == [""]
    finally:
        first.release()
    assert second.acquire()  # released: the next launch takes the profile
    second.release()


def test_other_profiles_are_independent(tmp_path):
    a, b = SingleInstance(tmp_path / "a"), SingleInstance(tmp_path / "b")
    assert a.acquire() and b.acquire()
    a.release()
    b.release()


def test_lock_left_by_a_crashed_process_is_taken_over(tmp_path):
    # QLockFile's format: pid, application name, host name; no process has this PID
    (tmp_path / "headroom.lock").write_text(f"999999\n\n{socket.gethostname()}\n")
    instance = SingleInstance(tmp_path)
    assert instance.acquire()
    instance.release()


def test_hand_over_without_a_running_instance_says_so(tmp_path):
    assert not SingleInstance(tmp_path).hand_over(None)
