"""Aggregate: a host aggregate as the ``update_aggregates`` fanout carries it.

``gantt-manage aggregate ...`` changes an aggregate in SQL, then tells every
scheduler at once (scheduler RPC API 1.2) with the aggregate's whole new
state, so that no scheduler waits for its next host cache refresh::

    agg = aggregate.Aggregate.from_db(db_aggregate)
    scheduler_api.update_aggregates(ctxt, [agg])
    scheduler_api.delete_aggregate(ctxt, agg)
"""

from oslo_versionedobjects import fields

from scheduler.objects import base
from scheduler import placement_types


@base.GanttObjectRegistry.register
class Aggregate(base.GanttObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(),
        'uuid': base.UUIDField(),
        'name': fields.StringField(),
        'hosts': base.ListOfStringsField(default=[]),
        'metadata': base.DictOfStringsField(default={}),
    }

    @classmethod
    def from_db(cls, aggregate):
        """From a :class:`scheduler.placement_types.Aggregate`."""
        return cls(id=aggregate.id, uuid=aggregate.uuid, name=aggregate.name,
                   hosts=sorted(aggregate.hosts),
                   metadata=dict(aggregate.metadata))

    def to_db(self):
        """The read-only :class:`scheduler.placement_types.Aggregate` the
        host cache keeps."""
        return placement_types.Aggregate(
            id=self.id, uuid=self.uuid, name=self.name,
            hosts=frozenset(self.obj_get('hosts', [])),
            metadata=dict(self.obj_get('metadata', {})))
