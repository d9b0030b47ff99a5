"""Rebuild in place and evacuation. (Being written.)"""


class RebuildTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def rebuild(self, ctxt, instance_uuid, image=None):
        raise NotImplementedError

    def evacuate(self, ctxt, instance_uuid, host=None, force=False):
        raise NotImplementedError
