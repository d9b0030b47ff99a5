"""Shelve, offload and unshelve. (Being written.)"""


class ShelveTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def shelve(self, ctxt, instance_uuid):
        raise NotImplementedError

    def unshelve(self, ctxt, instance_uuid):
        raise NotImplementedError

    def offload_expired(self, ctxt):
        """Offload instances shelved longer than shelved_offload_time."""
