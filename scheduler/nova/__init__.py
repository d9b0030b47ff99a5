"""Nova mode (``[scheduler] backend = nova``): Gantt as the scheduler of an
unchanged Nova deployment.

The driver, filters and weighers do not know which mode they run in. What
differs sits behind the same doors as Gantt's own mode:

* the wire: Nova's scheduler RPC API 4.x on ``control_exchange = nova``,
  ``nova_object`` payloads in, Selection objects out;
* the host cache's source: Nova's API and cell databases (read only) and
  Placement's providers, copied into a private mirror in Gantt's schema
  that the HostManager reads as it reads Gantt's own database;
* the claimer: allocations in Placement over its REST API
  (:mod:`scheduler.nova.placement_client`);
* notifications with Nova's publisher, event types and payloads.

Gantt writes nothing into Nova's or Placement's tables, and no periodic
task of Gantt's touches what Nova owns.
"""
