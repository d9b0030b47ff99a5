"""Raw image properties read as Nova's ImageMetaProps reads them."""

from scheduler import image_properties


def test_legacy_names_map_to_current_ones():
    """Nova's legacy map: architecture, vm_mode and hypervisor_type become
    hw_architecture, hw_vm_mode and img_hv_type, canonicalised."""
    assert image_properties.normalise({
        'architecture': 'AMD64', 'vm_mode': 'pv', 'hypervisor_type': 'xapi',
        'vmware_ostype': 'windows7Guest'}) == {
        'hw_architecture': 'x86_64', 'hw_vm_mode': 'xen',
        'img_hv_type': 'xen', 'os_distro': 'windows7Guest'}


def test_current_name_wins_over_legacy():
    assert image_properties.normalise(
        {'architecture': 'i386', 'hw_architecture': 'aarch64'}) == {
        'hw_architecture': 'aarch64'}


def test_values_take_their_types():
    """FlexibleBoolean reads yes/1/true as True and anything else as
    False; integers are int(); os_type and the scsi and vif models are
    lowercased with Nova's legacy spellings."""
    assert image_properties.normalise({
        'hw_qemu_guest_agent': 'Yes', 'hw_pmu': 'maybe',
        'hw_cpu_cores': ' 4 ', 'os_type': 'Windows',
        'vmware_adaptertype': 'lsiLogicsas',
        'hw_vif_model': 'VirtualE1000'}) == {
        'hw_qemu_guest_agent': True, 'hw_pmu': False, 'hw_cpu_cores': 4,
        'os_type': 'windows', 'hw_disk_bus': 'scsi',
        'hw_scsi_model': 'lsisas1068', 'hw_vif_model': 'e1000'}


def test_unknown_names_are_dropped_and_bad_values_kept():
    """Nova's model has no field ``foo``; it would refuse ``two`` cores
    and the architecture ``z80``: Gantt keeps those values as given."""
    assert image_properties.normalise({
        'foo': 'bar', 'hw_cpu_cores': 'two', 'hw_architecture': 'Z80',
        'hw_disk_bus': None}) == {
        'hw_cpu_cores': 'two', 'hw_architecture': 'z80'}


def test_numa_lists_and_traits():
    """hw_numa_cpus.N / hw_numa_mem.N up to the first missing cell, and
    trait:NAME=required, in the image's order."""
    props = image_properties.normalise({
        'hw_numa_cpus.0': '0-3,^2', 'hw_numa_cpus.1': '4',
        'hw_numa_mem.0': '1024', 'hw_numa_mem.2': '2048',
        'trait:HW_CPU_X86_AVX2': 'required', 'trait:CUSTOM_A': 'required',
        'trait:CUSTOM_B': 'forbidden'})
    assert props == {'hw_numa_cpus': [{0, 1, 3}, {4}],
                     'hw_numa_mem': [1024],
                     'traits_required': ['HW_CPU_X86_AVX2', 'CUSTOM_A']}
    assert image_properties.as_text(props['hw_numa_cpus']) == \
        '[{0, 1, 3}, {4}]'


def test_text_pairs():
    assert image_properties.text_pairs(
        {'hw_boot_menu': 'on', 'img_version': '3', 'foo': 'x'}) == {
        ('hw_boot_menu', 'True'), ('img_version', '3')}


def test_normalise_returns_a_fresh_dict():
    first = image_properties.normalise({'os_distro': 'linux'})
    first['os_distro'] = 'changed'
    assert image_properties.normalise({'os_distro': 'linux'}) == {
        'os_distro': 'linux'}


def test_values_that_cannot_be_hashed_are_read_too():
    assert image_properties.normalise({'hw_cpu_cores': 2,
                                       'os_distro': ['odd']}) == {
        'hw_cpu_cores': 2, 'os_distro': ['odd']}
