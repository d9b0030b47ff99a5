"""Tests for the NUMA prescreen figures, on hand-worked hosts."""

from scheduler.numa import capacity
from scheduler.numa import prescreen
from scheduler.numa import request
from tests.unit.scheduler.numa import hosts

HOST = hosts.host(
    hosts.cell(0, [0, 1], [2, 3, 4, 5], memory_mb=4096,
               mempages={4: 786432, 2048: 512}),
    hosts.cell(1, [6, 7], [8, 9], memory_mb=4096,
               mempages={4: 1048576}))
USED = hosts.usage(
    {'id': 0, 'cpu_usage': 3, 'pinned_cpus': [2], 'memory_usage_mb': 512,
     'mempages_used': {'2048': 256}},
    {'id': 1, 'cpu_usage': 1, 'memory_usage_mb': 2048,
     'mempages_used': {'4': 524288}})


def test_host_summary_by_hand():
    have = prescreen.host_summary(HOST, USED, capacity.Limits(2.0, 1.0))
    assert have == {
        'cells': 2,
        'max_cell_free_pcpus': 3,           # 3, 4, 5 on cell 0
        'total_free_pcpus': 5,              # and 8, 9 on cell 1
        'max_cell_shared_vcpus': 2,         # cell 0: 4 - 3 = 1; cell 1: 2
        'max_cell_memory_mb': 4096,
        'max_cell_free_memory_mb': 3072,    # cell 0: 786432 small pages
        'free_pages': {4: 786432 + 524288, 2048: 256},
    }


def test_host_summary_without_limits_uses_the_cpuset_size():
    assert prescreen.host_summary(HOST, USED)['max_cell_shared_vcpus'] == 2


def test_host_without_numa_has_zero_figures_and_fails_any_request():
    have = prescreen.host_summary(None, None)
    assert have['cells'] == 0 and have['free_pages'] == {}
    need = prescreen.request_minimums(
        request.get_request(1, 512, {'hw:numa_nodes': '1'}))
    assert not prescreen.meets_minimums(have, need)


def test_request_minimums_by_hand():
    req = request.get_request(4, 4096, {
        'hw:numa_nodes': '2', 'hw:cpu_policy': 'mixed',
        'hw:cpu_dedicated_mask': '1-3', 'hw:mem_page_size': '2MB'})
    assert prescreen.request_minimums(req) == {
        'cells': 2, 'max_cell_free_pcpus': 2, 'total_free_pcpus': 3,
        'max_cell_shared_vcpus': 1, 'max_cell_memory_mb': 2048,
        'max_cell_free_memory_mb': 2048, 'free_pages': {2048: 2048}}


def test_shared_request_may_overcommit_free_memory():
    need = prescreen.request_minimums(
        request.get_request(2, 4096, {'hw:numa_nodes': '1'}))
    assert need['max_cell_free_memory_mb'] == 0
    assert need['max_cell_memory_mb'] == 4096


def test_meets_minimums_compares_every_figure():
    have = prescreen.host_summary(HOST, USED)
    fits = prescreen.request_minimums(request.get_request(
        3, 1024, {'hw:cpu_policy': 'dedicated'}))
    assert prescreen.meets_minimums(have, fits)
    too_many = prescreen.request_minimums(request.get_request(
        4, 1024, {'hw:cpu_policy': 'dedicated'}))
    assert not prescreen.meets_minimums(have, too_many)
    pages = prescreen.request_minimums(request.get_request(
        1, 1024, {'hw:mem_page_size': '2048'}))
    assert not prescreen.meets_minimums(have, pages)   # 512 needed, 256
    gig = prescreen.request_minimums(request.get_request(
        1, 1024, {'hw:mem_page_size': '1GB'}))
    assert not prescreen.meets_minimums(have, gig)     # no 1 GiB pages
