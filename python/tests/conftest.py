"""Hooks of the package's tests (found by pytest beside them)."""

# Test modules whose job was started early (see below).
_started = []


def pytest_collection_finish(session):
    # The Ray job of test_ray.py takes about a minute to boot its cluster:
    # it starts as soon as the tests are collected, in the background, and
    # the tests that need it wait for it when their turn comes. Not when
    # the tests are only listed.
    if session.config.option.collectonly:
        return
    for item in session.items:
        module = getattr(item, "module", None)
        if "job" in getattr(item, "fixturenames", ()) and hasattr(module, "start_job_early"):
            module.start_job_early()
            _started.append(module)
            break


def pytest_sessionfinish(session):
    # A job started early whose tests never took it (the session stopped
    # first) is interrupted, and its cluster stopped.
    for module in _started:
        module.stop_job_early()
