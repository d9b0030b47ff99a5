import pytest

from scheduler import notifications


@pytest.fixture(autouse=True)
def notifications_off_after():
    """Whatever a test turned on is off for the next one."""
    yield
    notifications.cleanup(timeout=1)
