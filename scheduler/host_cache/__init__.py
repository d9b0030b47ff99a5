"""The host cache: every compute node the scheduler knows, in memory.

The :class:`HostManager` owns it: it loads the hosts from SQL (one
database, or every cell), keeps them fresh in the background, records
the scheduler's own claims and the computes' instance casts, and hands
requests a :class:`HostTable` (HostStates plus NumPy columns) to filter
and weigh. This module is the package's one door: code outside
``scheduler/host_cache/`` uses the names below and never the modules
behind them (``tests/unit/test_layering.py`` checks it), so that the
package may rearrange its insides freely::

    from scheduler import host_cache

    manager = host_cache.HostManager()
    table = manager.snapshot()
    fits = table.free_ram_mb >= 2048

What lies behind the door:

* the owner: ``host_manager`` (HostManager: requests, claims, the
  background thread), ``refreshing`` (its reads), ``applying`` (their
  merge into the table), ``instance_tracking`` (instances on the
  hosts), ``collector`` (the garbage collector around full reads),
  ``switching`` (the interpreter's switch interval beside the refresh
  thread),
  ``refresh_changes`` (what one refresh read);
* the reads: ``host_reads`` (SQL statements), ``cell_gather`` and
  ``cell_refresh`` (a refresh over cells), ``cell_reads`` (multiplexed
  reads of the cells on PostgreSQL);
* the view that filters and weighers read: ``host_state`` (one node),
  ``host_table`` with ``table_columns`` and ``table_lookups`` (all of
  them), ``table_stretch`` (a stretch of a table's rows, a zone's, as a
  table of its own), ``host_table_per_state`` (values computed per
  HostState),
  ``host_instances`` (the instances on each host), ``host_inputs`` (the
  hardware documents computes report, checked and parsed),
  ``private_tables`` (a request's own copy of the table, kept between
  requests), ``node_extras`` (each node's inventories beyond the classic
  classes and its traits, and their reads), ``host_placement`` (a table as
  Placement's providers: ``HostTable.placement``).
"""

from scheduler.host_cache import cell_gather
from scheduler.host_cache import cell_refresh
from scheduler.host_cache import collector
from scheduler.host_cache import host_inputs
from scheduler.host_cache import host_instances
from scheduler.host_cache import host_manager
from scheduler.host_cache import host_placement
from scheduler.host_cache import host_reads
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table
from scheduler.host_cache import host_table_per_state
from scheduler.host_cache import node_extras
from scheduler.host_cache import private_tables
from scheduler.host_cache import refresh_changes
from scheduler.host_cache import refreshing
from scheduler.host_cache import switching
from scheduler.host_cache import table_columns
from scheduler.host_cache import table_lookups
from scheduler.host_cache import table_stretch

# -- the cache and its owner --------------------------------------------------

HostManager = host_manager.HostManager
# For the scheduler daemon's main: full reads collect and freeze.
freeze_collector = collector.freeze_collector
# For the scheduler daemon's main: a refresh keeps requests from the
# interpreter for a short switch interval at most.
shorten_switch_interval = switching.shorten_switch_interval
# {cell name: hosts} of a table (the scheduler's gauges).
cell_counts = cell_refresh.cell_counts
# The database id of a node from its id in the cache (with cells, the
# cell's index is in its high bits).
node_id = cell_gather.node_id
# The binary of the services whose hosts the cache holds.
COMPUTE_BINARY = host_reads.COMPUTE_BINARY
# How far before the previous refresh an incremental read starts, and how
# often a refresh reads everything (what a benchmark waits for).
WRITE_SLACK = refresh_changes.WRITE_SLACK
FULL_READ_INTERVAL = refreshing.FULL_READ_INTERVAL

# -- the view filters, weighers and drivers read ------------------------------

HostTable = host_table.HostTable
# Rows lo..hi-1 of a table as a table of their own (a zone's, in a table
# built by zone), and whether a filter or weigher may be given one.
Stretch = table_stretch.Stretch
reads_stretches = table_stretch.reads_stretches
PrivateTables = private_tables.PrivateTables
HostState = host_state.HostState
ServiceInfo = host_state.ServiceInfo
# The HostState attributes a request may name (capabilities, JsonFilter).
PUBLIC_ATTRIBUTES = table_columns.PUBLIC_ATTRIBUTES
# resource -> (total, used, reserved, ratio) column names of a HostTable.
RESOURCE_COLUMNS = table_columns.RESOURCE_COLUMNS
# resource -> the HostState attributes of its total, used, reserved, ratio.
RESOURCE_ATTRS = host_state.RESOURCE_ATTRS
# The resources a claim takes, in claims.Resources' order.
RESOURCES = host_state.RESOURCES
# Per-state values a filter decides once per distinct value of.
StateMemo = host_table_per_state.StateMemo
# Aggregate metadata as a weight multiplier (None: not a finite number).
parse_multiplier = table_lookups.parse_multiplier
# Heartbeats in the ``heartbeat_us`` column: microseconds since EPOCH.
now_us_utc = table_lookups.now_us_utc
to_microseconds = host_state.to_microseconds
EPOCH = host_state.EPOCH
# The instances on the hosts: {uuid: InstanceInfo} per HostState.
InstanceInfo = host_instances.InstanceInfo
info_from_flavor_and_image = host_instances.info_from_flavor_and_image
with_instance = host_instances.with_instance
states_with_instance = host_instances.states_with_instance

# -- Placement's view (HostTable.placement: root t is row t) ----------------

# A HostState's ``inventories`` value per class beyond VCPU, MEMORY_MB
# and DISK_GB: (total, reserved, min_unit, max_unit, step_size,
# allocation_ratio, used).
ClassInventory = node_extras.ClassInventory
# The trait a node's provider has when its compute service is disabled.
COMPUTE_STATUS_DISABLED = host_placement.DISABLED_TRAIT

# -- what computes report of their hardware ----------------------------------

# {field: check(field, value)} of the hardware documents a compute reports.
REPORT_CHECKS = host_inputs.CHECKS
REPORTED_FIELDS = host_inputs.REPORTED_FIELDS
MAXPHYSADDR_MODES = host_inputs.MAXPHYSADDR_MODES
