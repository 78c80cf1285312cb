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


def test_a_profile_folder_that_cannot_be_written_runs_unguarded_not_already_running(tmp_path):
    """Trial 4: a read-only home said "Headroom is already running … but does not answer" of no
    process at all. A lock that cannot be created is not a lock held by someone else."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the profile folder would be")
    instance = SingleInstance(blocker / "headroom")  # neither the folder nor the lock can be made
    assert instance.acquire()
    instance.release()
    held = SingleInstance(tmp_path / "profile")
    assert held.acquire()
    assert not SingleInstance(tmp_path / "profile").acquire()  # a real holder still turns a second away
    held.release()


def test_a_second_launch_says_in_the_terminal_where_its_model_went(capsys, tmp_path, monkeypatch):
    """New-user trial: `headroom --model typo.gguf` beside a running window exited 0 with nothing said."""
    from app.ui import application

    class Answering:
        def hand_over(self, model):
            return True

    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    assert application._hand_over(Answering(), tmp_path / "typo.gguf") == 0
    assert capsys.readouterr().err == (f"headroom: Headroom is already open for this profile ({tmp_path}); "
                                       f"{tmp_path / 'typo.gguf'} goes to its window\n")
    assert application._hand_over(Answering(), None) == 0
    assert capsys.readouterr().err.endswith("; its window is brought forward\n")
