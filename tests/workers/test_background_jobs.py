"""BackgroundJobs: functions run off the GUI thread, answered by ticket on the GUI thread."""

import threading
import time

from app.workers.background_jobs import BackgroundJobs


def test_a_job_runs_off_the_gui_thread_and_its_answer_arrives_on_it(qtbot):
    jobs = BackgroundJobs()
    ran_in, answered_in = [], []
    jobs.job_finished.connect(lambda ticket, result: answered_in.append((ticket, result, threading.get_ident())))

    def work(a, b):
        ran_in.append(threading.get_ident())
        return a * b

    first, second = jobs.submit(work, 6, 7), jobs.submit(work, 2, b=5)
    qtbot.waitUntil(lambda: len(answered_in) == 2)
    main = threading.get_ident()
    assert (first, second) == (1, 2)
    assert [(t, r) for t, r, _ in answered_in] == [(1, 42), (2, 10)]  # one thread: in order
    assert all(ident != main for ident in ran_in) and all(ident == main for *_, ident in answered_in)
    jobs.shutdown()


def test_a_failing_job_says_why_in_one_line_and_the_next_still_runs(qtbot):
    jobs = BackgroundJobs()
    failed, finished = [], []
    jobs.job_failed.connect(lambda ticket, reason: failed.append((ticket, reason)))
    jobs.job_finished.connect(lambda ticket, result: finished.append((ticket, result)))

    def broken():
        raise ValueError("cannot reshape array\nof size 3")

    jobs.submit(broken)
    jobs.submit(lambda: "fine")
    qtbot.waitUntil(lambda: bool(finished))
    assert failed == [(1, "ValueError: cannot reshape array")] and finished == [(2, "fine")]
    jobs.shutdown()


def test_progress_is_reported_with_the_jobs_ticket(qtbot):
    jobs = BackgroundJobs()
    seen = []
    jobs.job_progressed.connect(lambda ticket, fraction: seen.append((ticket, fraction)))

    def steps(n, progress):
        for i in range(1, n + 1):
            progress(i / n)
        return n

    with qtbot.waitSignal(jobs.job_finished) as done:
        ticket = jobs.submit(steps, 4, progress=True)
    assert done.args == [ticket, 4]
    qtbot.waitUntil(lambda: len(seen) == 2)
    assert seen == [(ticket, 0.25), (ticket, 1.0)]  # within PROGRESS_INTERVAL_S: the first and the end
    jobs.shutdown()


def test_progress_per_item_of_a_long_job_is_passed_on_at_most_10_times_a_second(qtbot):
    """New-user trial: a 1,200-page PDF reported each page, and the window froze 1.8 s under the
    queued signals and repaints; the first report, then one per PROGRESS_INTERVAL_S, the end always."""
    import time

    from app.workers.background_jobs import PROGRESS_INTERVAL_S

    jobs = BackgroundJobs()
    seen = []
    jobs.job_progressed.connect(lambda _ticket, fraction: seen.append(fraction))

    def pages(n, progress):
        for i in range(1, n + 1):
            time.sleep(0.001)
            progress(i / n)
        return n

    started = time.monotonic()
    with qtbot.waitSignal(jobs.job_finished, timeout=10_000):
        jobs.submit(pages, 300, progress=True)
    took = time.monotonic() - started
    qtbot.waitUntil(lambda: bool(seen) and seen[-1] == 1.0)
    assert seen[0] == 1 / 300 and seen == sorted(seen)
    assert 2 <= len(seen) <= took / PROGRESS_INTERVAL_S + 2 < 300
    jobs.shutdown()


def test_shutdown_waits_for_the_running_job_and_drops_the_queued_ones(qtbot):
    jobs = BackgroundJobs()
    ran = []

    def slow(name):
        time.sleep(0.2)
        ran.append(name)

    jobs.submit(slow, "running")
    qtbot.waitUntil(lambda: jobs._pool.activeThreadCount() == 1)
    jobs.submit(slow, "queued")
    jobs.shutdown()
    assert ran == ["running"]
