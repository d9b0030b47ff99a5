"""Cold migration and resize; confirm and revert. (Being written.)"""


class MigrateTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def migrate(self, ctxt, instance_uuid, flavor=None):
        raise NotImplementedError

    def confirm(self, ctxt, instance_uuid):
        raise NotImplementedError

    def revert(self, ctxt, instance_uuid):
        raise NotImplementedError
