"""The error of a wrong cloud file, shared by the modules that read one
(:mod:`scheduler.sim.cloud`, :mod:`scheduler.sim.providers`)."""


class CloudError(ValueError):
    """The cloud file is wrong; the message names the key."""
