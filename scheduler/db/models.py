"""SQLAlchemy 2 typed models of every table Gantt keeps.

The schema is created only by the alembic migrations in ``migrations/``; a
test checks that these models and the migrations agree. Usage columns on
``compute_nodes`` (``*_used``) always equal the sum of the node's rows in
``allocations``: both are written in the same transaction by
:mod:`scheduler.db.claims`, and ``gantt-manage db check`` verifies it.
Resource classes beyond VCPU, MEMORY_MB and DISK_GB have a row per node
in ``compute_node_inventories`` whose ``used`` is, likewise, the sum of
the ``allocation_items`` of the node's allocations
(:mod:`scheduler.db.class_claims`); ``compute_node_traits`` holds the
traits computes report (:mod:`scheduler.db.inventories`).

``shadow_instances`` and ``shadow_migrations`` are Core tables copied
from ``instances`` and ``migrations`` (columns and primary key only):
where :mod:`scheduler.db.archive` moves deleted instances.
"""

import datetime
import json
from typing import Any
from typing import Optional

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql

NAMING_CONVENTION = {
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
    'ck': 'ck_%(table_name)s_%(constraint_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
}

# Microsecond timestamps on MariaDB/MySQL too (DATETIME defaults to seconds).
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def utcnow():
    """Naive UTC now, the form every timestamp column stores."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class JSONText(sa.types.TypeDecorator):
    """A JSON document stored as TEXT, identical on every database."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        return json.dumps(value, sort_keys=True)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return json.loads(value)


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, default=utcnow)
    updated_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(
        Timestamp, onupdate=utcnow)


class Service(TimestampMixin, Base):
    """One running service (binary on host) and its heartbeat."""

    __tablename__ = 'services'
    # updated_at: the host caches read the rows written since they last
    # looked (a heartbeat does not move it); last_seen_up: they find the
    # dead services.
    __table_args__ = (sa.UniqueConstraint('host', 'binary'),
                      sa.Index(None, 'updated_at'),
                      sa.Index(None, 'last_seen_up'))

    updated_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(
        Timestamp, default=utcnow, onupdate=utcnow)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    binary: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    topic: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    disabled: orm.Mapped[bool] = orm.mapped_column(default=False)
    disabled_reason: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    forced_down: orm.Mapped[bool] = orm.mapped_column(default=False)
    last_seen_up: orm.Mapped[Optional[datetime.datetime]] = (
        orm.mapped_column(Timestamp))
    report_count: orm.Mapped[int] = orm.mapped_column(default=0)
    # scheduler.version.SERVICE_VERSION of the code the service runs;
    # None: a release before services recorded one.
    version: orm.Mapped[Optional[int]] = orm.mapped_column()


class ComputeNode(TimestampMixin, Base):
    """One hypervisor node: inventory, usage, facts, and its generation.

    ``generation`` is bumped by every write to the row, and
    ``updated_at`` set by every write but the usual claim (inventory
    report, release, mapping, a claim that replaces or checks more),
    so a reader finds the rows written since a time (those, and the
    nodes of the allocations created since) and tells which changed by
    comparing generations. The usual claim changes no indexed column: on
    PostgreSQL its UPDATE is a heap-only tuple update (the table is
    filled to 80% to leave room for one on each page), which writes no
    index entry.
    """

    __tablename__ = 'compute_nodes'
    __table_args__ = (sa.UniqueConstraint('host', 'hypervisor_hostname'),
                      sa.Index(None, 'updated_at'))

    # Set on insert too: a new row is a change the host caches must read.
    updated_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(
        Timestamp, default=utcnow, onupdate=utcnow)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), index=True)
    hypervisor_hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    vcpus: orm.Mapped[int] = orm.mapped_column(default=0)
    memory_mb: orm.Mapped[int] = orm.mapped_column(default=0)
    local_gb: orm.Mapped[int] = orm.mapped_column(default=0)
    vcpus_used: orm.Mapped[int] = orm.mapped_column(default=0)
    memory_mb_used: orm.Mapped[int] = orm.mapped_column(default=0)
    local_gb_used: orm.Mapped[int] = orm.mapped_column(default=0)
    reserved_vcpus: orm.Mapped[int] = orm.mapped_column(default=0)
    reserved_memory_mb: orm.Mapped[int] = orm.mapped_column(default=0)
    reserved_disk_gb: orm.Mapped[int] = orm.mapped_column(default=0)
    cpu_allocation_ratio: orm.Mapped[Optional[float]] = orm.mapped_column(
        sa.Double)
    ram_allocation_ratio: orm.Mapped[Optional[float]] = orm.mapped_column(
        sa.Double)
    disk_allocation_ratio: orm.Mapped[Optional[float]] = orm.mapped_column(
        sa.Double)
    hypervisor_type: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    hypervisor_version: orm.Mapped[int] = orm.mapped_column(default=0)
    host_ip: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(39))
    supported_instances: orm.Mapped[Optional[Any]] = orm.mapped_column(
        JSONText)
    stats: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    metrics: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    num_instances: orm.Mapped[int] = orm.mapped_column(default=0)
    io_workload: orm.Mapped[int] = orm.mapped_column(default=0)
    mapped: orm.Mapped[bool] = orm.mapped_column(default=False)
    generation: orm.Mapped[int] = orm.mapped_column(default=0)
    # What the compute reports of its hardware (see
    # scheduler.host_cache.host_inputs for the shapes): the libvirt-style CPU
    # description, the free disk its images leave (GiB), its NUMA cells and its
    # PCI device pools. NULL: not reported.
    cpu_info: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    disk_available_least: orm.Mapped[Optional[int]] = orm.mapped_column()
    numa_topology: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    pci_device_pools: orm.Mapped[Optional[Any]] = orm.mapped_column(
        JSONText)
    # What claims took of the NUMA cells and PCI pools; never written by
    # an inventory report. NULL: nothing used.
    numa_usage: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    pci_usage: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)


class Aggregate(TimestampMixin, Base):
    __tablename__ = 'aggregates'

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)


class AggregateHost(Base):
    __tablename__ = 'aggregate_hosts'
    __table_args__ = (sa.UniqueConstraint('aggregate_id', 'host'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    aggregate_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('aggregates.id', ondelete='CASCADE'))
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), index=True)


class AggregateMetadata(Base):
    __tablename__ = 'aggregate_metadata'
    __table_args__ = (sa.UniqueConstraint('aggregate_id', 'key'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    aggregate_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('aggregates.id', ondelete='CASCADE'))
    key: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    value: orm.Mapped[str] = orm.mapped_column(sa.String(255))


class Instance(TimestampMixin, Base):
    """A server as the conductor tracks it, from BUILDING to its end."""

    __tablename__ = 'instances'
    # Ids are never given twice, even on SQLite: an archived row keeps its
    # id in shadow_instances.
    __table_args__ = {'sqlite_autoincrement': True}

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    display_name: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    project_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    user_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    host: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255),
                                                        index=True)
    node: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    vm_state: orm.Mapped[str] = orm.mapped_column(sa.String(32),
                                                  index=True)
    task_state: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(32))
    availability_zone: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    flavor: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    request_spec: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    fault: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text)
    launched_at: orm.Mapped[Optional[datetime.datetime]] = (
        orm.mapped_column(Timestamp))
    # Nova's soft delete: the row's id once deleted, 0 while it exists.
    deleted_at: orm.Mapped[Optional[datetime.datetime]] = (
        orm.mapped_column(Timestamp))
    deleted: orm.Mapped[int] = orm.mapped_column(default=0,
                                                 server_default='0')
    # While building: the alternates the scheduler sent with the chosen
    # host and the hosts tried so far (``{'alternates': [Selection
    # primitives], 'tried': [[host, node], ...]}``), so that a build whose
    # message never reached its compute moves to the next alternate.
    build_alternates: orm.Mapped[Optional[Any]] = orm.mapped_column(
        JSONText)


class InstanceGroup(TimestampMixin, Base):
    """A server group and its placement policy."""

    __tablename__ = 'instance_groups'

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    project_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    user_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    policy: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    rules: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)


class InstanceGroupMember(Base):
    __tablename__ = 'instance_group_members'
    __table_args__ = (sa.UniqueConstraint('group_id', 'instance_uuid'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    group_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('instance_groups.id', ondelete='CASCADE'))
    instance_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                                       index=True)


class Allocation(Base):
    """Resources one consumer (an instance, or a migration) holds on a node.

    The only truth for usage: the ``*_used`` columns of compute_nodes are
    kept equal to the sum of these rows.
    """

    __tablename__ = 'allocations'
    # The unique constraint's index serves the lookups by consumer (its
    # first column): no index of consumer_uuid alone.
    __table_args__ = (
        sa.UniqueConstraint('consumer_uuid', 'compute_node_id'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    consumer_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    compute_node_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('compute_nodes.id', ondelete='CASCADE'), index=True)
    vcpus: orm.Mapped[int] = orm.mapped_column(default=0)
    memory_mb: orm.Mapped[int] = orm.mapped_column(default=0)
    disk_gb: orm.Mapped[int] = orm.mapped_column(default=0)
    # What the claim took of the node's NUMA cells and PCI devices
    # (scheduler.hardware's record); None: nothing.
    hardware: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    # Indexed: the host caches read the nodes claimed on since their last
    # refresh from here (a claim leaves the node's updated_at alone).
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, default=utcnow, index=True)


class ComputeNodeInventory(Base):
    """A node's inventory of one resource class beyond the classic three
    (``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` stay in their columns of
    ``compute_nodes``): ``PCPU``, a baremetal node's ``CUSTOM_*`` class,
    the additional inventories of provider config files.

    Placement's fields and meaning: an amount claimed must lie within
    ``min_unit``..``max_unit``, be a multiple of ``step_size``, and fit
    under ``(total - reserved) * allocation_ratio`` with ``used``, which
    claims keep equal to the sum of the node's allocation items of the
    class (:mod:`scheduler.db.inventories`).
    """

    __tablename__ = 'compute_node_inventories'
    # The unique constraint's index serves the lookups by node.
    __table_args__ = (
        sa.UniqueConstraint('compute_node_id', 'resource_class'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    compute_node_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('compute_nodes.id', ondelete='CASCADE'))
    resource_class: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    total: orm.Mapped[int] = orm.mapped_column()
    reserved: orm.Mapped[int] = orm.mapped_column(default=0)
    min_unit: orm.Mapped[int] = orm.mapped_column(default=1)
    max_unit: orm.Mapped[int] = orm.mapped_column()
    step_size: orm.Mapped[int] = orm.mapped_column(default=1)
    allocation_ratio: orm.Mapped[float] = orm.mapped_column(sa.Double,
                                                            default=1.0)
    used: orm.Mapped[int] = orm.mapped_column(default=0)


class ComputeNodeTrait(Base):
    """One trait of a node (``COMPUTE_NODE``, ``HW_CPU_X86_AVX2``,
    ``CUSTOM_GOLD``...), as its compute reported it."""

    __tablename__ = 'compute_node_traits'
    __table_args__ = (sa.UniqueConstraint('compute_node_id', 'trait'),
                      sa.Index(None, 'trait'))

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    compute_node_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('compute_nodes.id', ondelete='CASCADE'))
    trait: orm.Mapped[str] = orm.mapped_column(sa.String(255))


class AllocationItem(Base):
    """The amount of one resource class beyond the classic three that an
    allocation holds (the classic ones are the allocation's columns).
    The sum of a node's items of a class is its inventory's ``used``."""

    __tablename__ = 'allocation_items'
    __table_args__ = (
        sa.UniqueConstraint('allocation_id', 'resource_class'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    allocation_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('allocations.id', ondelete='CASCADE'))
    resource_class: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    amount: orm.Mapped[int] = orm.mapped_column()


class Migration(TimestampMixin, Base):
    """One move of an instance: cold migration, resize, live migration or
    evacuation, from its source to its destination.

    While a cold migration or resize waits for confirm or revert, the
    source's allocation is held under this migration's ``uuid`` (the
    instance's own consumer holds the destination's), as Nova does with
    Placement.
    """

    __tablename__ = 'migrations'
    __table_args__ = {'sqlite_autoincrement': True}

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                                       index=True)
    migration_type: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    status: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    source_host: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    source_node: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(255))
    dest_host: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    dest_node: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    old_flavor: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    new_flavor: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    error: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text)


class ComputeReport(Base):
    """What one compute said it runs, at its last instance sync: the
    record ``gantt-manage db check`` compares the instances with (an
    instance ACTIVE that its compute does not run, a compute running an
    instance placed elsewhere). One row per host, replaced by each sync."""

    __tablename__ = 'compute_reports'

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    reported_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, default=utcnow)
    # {uuid: node} of the instances that run there.
    running: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)
    # The uuids whose spawn was under way.
    spawning: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText)


# -- shadow tables ----------------------------------------------------------

SHADOW_PREFIX = 'shadow_'


def _shadow_table(table):
    """``shadow_<table>``: the columns and primary key of ``table``, and
    nothing else (no unique constraint, index or foreign key), as Nova's
    shadow tables; the rows keep the ids they had."""
    columns = []
    for column in table.columns:
        default = column.server_default
        columns.append(sa.Column(
            column.name, column.type, nullable=column.nullable,
            primary_key=column.primary_key, autoincrement=False,
            server_default=(None if default is None
                            else sa.DefaultClause(default.arg))))
    return sa.Table(SHADOW_PREFIX + table.name, Base.metadata, *columns)


# Where ``gantt-manage db archive_deleted_rows`` moves deleted instances
# and their migrations (scheduler.db.archive).
shadow_instances = _shadow_table(Instance.__table__)
shadow_migrations = _shadow_table(Migration.__table__)
