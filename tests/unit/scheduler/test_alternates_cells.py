"""Alternates stay in the cell of the host chosen, as Nova's do: a
reschedule is the cell conductor's, which claims in its own database."""

from scheduler.drivers import filter_scheduler
from tests.unit.scheduler import fakes
from tests.unit.scheduler.host_cache.test_host_manager_cells import add_node
from tests.unit.scheduler.host_cache.test_host_manager_cells import CELL1
from tests.unit.scheduler.host_cache.test_host_manager_cells import CELL2
from tests.unit.scheduler.host_cache.test_host_manager_cells import two_cells  # noqa


def test_alternates_are_in_the_chosen_hosts_cell(two_cells,  # noqa: F811
                                                 make_driver):
    # RAM spreads: b1 is chosen; a1 and a2 (cell1) rank next, then b2.
    add_node(two_cells[CELL2], 'b1', memory_mb=65536)
    add_node(two_cells[CELL1], 'a1', memory_mb=32768)
    add_node(two_cells[CELL1], 'a2', memory_mb=16384)
    add_node(two_cells[CELL2], 'b2', memory_mb=4096)
    driver = make_driver(filter_scheduler.FilterScheduler)

    [selections] = driver.select_destinations(
        None, fakes.spec(memory_mb=512), fakes.uuids(1), True)

    assert [s.service_host for s in selections] == ['b1', 'b2']
    assert {s.cell_uuid for s in selections} == {CELL2}


def test_each_instance_gets_alternates_of_its_own_cell(
        two_cells, make_driver):  # noqa: F811
    # Two instances of 4 vCPUs; each host (1 vCPU, ratio 4.0) takes one.
    # RAM spreads: the first lands on b1 (cell2), the second on a1
    # (cell1); a2 and b2 are left, one in each cell.
    add_node(two_cells[CELL2], 'b1', vcpus=1, memory_mb=65536)
    add_node(two_cells[CELL1], 'a1', vcpus=1, memory_mb=49152)
    add_node(two_cells[CELL1], 'a2', vcpus=1, memory_mb=4096)
    add_node(two_cells[CELL2], 'b2', vcpus=1, memory_mb=2048)
    driver = make_driver(filter_scheduler.FilterScheduler)

    first, second = driver.select_destinations(
        None, fakes.spec(vcpus=4, memory_mb=1024, num_instances=2),
        fakes.uuids(2), True)

    assert [s.service_host for s in first] == ['b1', 'b2']
    assert [s.service_host for s in second] == ['a1', 'a2']
