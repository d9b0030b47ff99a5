"""gantt-compute: a fake-virt compute agent for the demo and the tests.

It reports nodes with configured capacity and "spawns" instances at once
(or after ``[fake_virt] spawn_time``), failing a configurable fraction of
builds so that reschedules can be exercised. It never opens the database:
everything goes through the conductor.
"""
