"""gantt-conductor: the conduit between computes and SQL, and the builder.

``manager.ConductorManager`` serves compute agents (heartbeats, inventory,
instance state) so that they never open the database;
``manager.ComputeTaskManager`` (namespace ``compute_task``) sees builds
through: record, schedule, cast to the chosen compute, reschedule.
"""
