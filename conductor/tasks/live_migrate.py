"""Live migration. (Being written.)"""


class LiveMigrateTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def execute(self, ctxt, instance_uuid, host=None, force=False):
        raise NotImplementedError
