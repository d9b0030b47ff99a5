"""Time out builds stuck in BUILDING. (Being written.)"""


def reap_stuck_builds(ctxt):
    """Release the claims of instances building longer than
    ``[DEFAULT] instance_build_timeout`` and put them in ERROR."""
