"""The interpreter's switch interval beside the host cache's refresh.

A thread that waits for the GIL gets it from a thread that runs Python
code only once ``sys.getswitchinterval()`` passed (5 ms unless set). In
the scheduler daemon the host cache's refresh thread runs Python code
for ~15 ms every ``[scheduler] host_state_refresh_interval`` and for
about a second at each full read, while a request's claim gives the GIL
up at each SQL round trip: the refresh thread took it then, and the
claim waited out the interval to have it back, at each round trip.
In ``benchmarks/stalls.py`` (issue 53) that, not the manager's lock
(claims waited under 0.1 ms for it at p99), made the claims made during
a refresh slow: 3-4 ms more at p50 than the others, and on a loaded
machine a p99 of 130-770 ms (64-78 ms with the short interval). Most
of the rest of the claim's tail at 100,000 hosts is the heartbeats'
writes on the same CPUs (``benchmarks/README.md``).

:func:`shorten_switch_interval` makes the interval
:data:`SWITCH_INTERVAL`, so that a round trip costs a claim at most that
much more during a refresh. A switch costs a few microseconds, and only
when two threads want the GIL at once. The scheduler daemon's ``main``
calls it. (Session 39 held it back: with it,
``test_failed_spawns_with_the_broker_stopped_mid_load`` then found an
instance running on another host than its record, three times of
three. In session 58 it passed three times of three with it, as did
the other fault tests: the race is not found again.)
``benchmarks/stalls.py --switch-interval 0.005`` measures CPython's
interval instead.
"""

import sys

# The switch interval of the scheduler daemon (s): 10 times shorter
# than CPython's default.
SWITCH_INTERVAL = 0.0005


def shorten_switch_interval():
    """Make the interpreter's switch interval :data:`SWITCH_INTERVAL`
    (one already shorter is kept); return the one before."""
    before = sys.getswitchinterval()
    if before > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)
    return before
