"""gantt-sim: a cloud's workload through the real scheduler, fast.

``cloud`` describes and writes the cloud (shared with ``gantt-demo`` and
the benchmarks), ``workload`` generates or reads the requests, ``engine``
replays them with a simulated clock (claiming through ``memory_claims``
unless asked for SQL claims), ``metrics`` measures and summarises,
``plots`` draws; ``scheduler/cmd/sim.py`` is the command.
"""
