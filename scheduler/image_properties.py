"""Image properties read the way Nova's image-meta model reads them.

Glance (and Gantt's RPC payloads) carry image properties as raw strings:
``{'architecture': 'AMD64', 'hw_qemu_guest_agent': 'yes'}``. Nova never
compares those strings; it first builds its ``ImageMetaProps`` object,
which

* knows a fixed set of property names: anything else is dropped;
* reads the legacy names (``architecture``, ``vm_mode``,
  ``hypervisor_type``, ``vmware_ostype``, ...) as their current names,
  the current name winning when an image sets both;
* turns values into their types and canonical spellings: ``AMD64`` is
  ``x86_64``, ``xapi`` is ``xen``, ``pv`` is the vm mode ``xen``,
  ``Windows`` is ``windows``, ``yes`` is ``True``, ``'4'`` is ``4``;
* gathers ``hw_numa_cpus.N`` / ``hw_numa_mem.N`` into lists and
  ``trait:NAME=required`` into ``traits_required``.

:func:`normalise` does the same to a raw dict, and :func:`as_text` writes
a value back as Nova's filters and weighers do before they compare it
(Python's ``str``: ``True``, ``4``, ``[{0, 1}]``)::

    props = image_properties.normalise({'architecture': 'AMD64',
                                        'hw_qemu_guest_agent': 'yes'})
    # {'hw_architecture': 'x86_64', 'hw_qemu_guest_agent': True}
    image_properties.as_text(props['hw_qemu_guest_agent'])   # 'True'

Nova refuses, at its API, an image whose value its model cannot read
(an unknown architecture, ``hw_cpu_cores=two``); such a request never
reaches a scheduler. Gantt keeps such a value as given (lowercased where
Nova lowercases), so that it matches no canonical value rather than
vanishing. The block device mapping properties, which Nova never keeps
with an instance, are left out.
"""

import functools

from oslo_utils import strutils

# Legacy property name -> the current name Nova reads it as.
LEGACY_NAMES = {
    'architecture': 'hw_architecture',
    'auto_disk_config': 'hw_auto_disk_config',
    'bdm_v2': 'img_bdm_v2',
    'bittorrent': 'img_bittorrent',
    'cache_in_nova': 'img_cache_in_nova',
    'hypervisor_type': 'img_hv_type',
    'hypervisor_version_requires': 'img_hv_requested_version',
    'ipxe_boot': 'hw_ipxe_boot',
    'owner_id': 'img_owner_id',
    'root_device_name': 'img_root_device_name',
    'vm_mode': 'hw_vm_mode',
    'vmware_disktype': 'hw_disk_type',
    'vmware_image_version': 'img_version',
    'vmware_linked_clone': 'img_linked_clone',
    'vmware_ostype': 'os_distro',
    'xenapi_device_id': 'hw_device_id',
    'xenapi_image_compression_level': 'img_compression_level',
    'xenapi_skip_agent_inject_files_at_boot':
        'os_skip_agent_inject_files_at_boot',
    'xenapi_skip_agent_inject_ssh': 'os_skip_agent_inject_ssh',
    'xenapi_use_agent': 'img_use_agent',
}

ARCHITECTURES = frozenset((
    'alpha', 'armv6', 'armv7l', 'armv7b', 'aarch64', 'cris', 'i686', 'ia64',
    'lm32', 'm68k', 'microblaze', 'microblazeel', 'mips', 'mipsel',
    'mips64', 'mips64el', 'openrisc', 'parisc', 'parisc64', 'ppc', 'ppcle',
    'ppc64', 'ppc64le', 'ppcemb', 's390', 's390x', 'sh4', 'sh4eb', 'sparc',
    'sparc64', 'unicore32', 'x86_64', 'xtensa', 'xtensaeb'))
HV_TYPES = frozenset((
    'baremetal', 'bhyve', 'docker', 'fake', 'hyperv', 'ironic', 'kqemu',
    'kvm', 'lxc', 'lxd', 'openvz', 'parallels', 'phyp', 'qemu', 'test',
    'uml', 'vbox', 'vz', 'vmware', 'xen', 'zvm', 'prsm'))
VM_MODES = frozenset(('hvm', 'xen', 'uml', 'exe'))

_ARCH_ALIASES = {'i386': 'i686', 'i486': 'i686', 'i586': 'i686',
                 'x86_32': 'i686', 'x86_32p': 'i686', 'amd64': 'x86_64'}
_HV_TYPE_ALIASES = {'xapi': 'xen'}
_VM_MODE_ALIASES = {'pv': 'xen', 'hv': 'hvm', 'baremetal': 'hvm'}
_SCSI_MODEL_ALIASES = {'lsilogicsas': 'lsisas1068',
                       'paravirtual': 'vmpvscsi'}
_VIF_MODEL_ALIASES = {
    'virtuale1000': 'e1000', 'virtuale1000e': 'e1000e',
    'virtualpcnet32': 'pcnet', 'virtualsriovethernetcard': 'sriov',
    'virtualvmxnet': 'vmxnet', 'virtualvmxnet3': 'vmxnet3'}

# The largest number of guest NUMA nodes hw_numa_cpus.N / _mem.N describe.
NUMA_NODES_MAX = 128


def _lowered(aliases):
    def coerce(value):
        value = value.lower()
        return aliases.get(value, value)
    return coerce


def canonical_architecture(name):
    """``AMD64`` -> ``x86_64``, ``i386`` -> ``i686``; None stays None."""
    return None if name is None else _lowered(_ARCH_ALIASES)(name)


def canonical_hv_type(name):
    """``XAPI`` -> ``xen``, ``KVM`` -> ``kvm``; None stays None."""
    return None if name is None else _lowered(_HV_TYPE_ALIASES)(name)


def canonical_vm_mode(name):
    """``pv`` -> ``xen``, ``hv`` and ``baremetal`` -> ``hvm``."""
    return None if name is None else _lowered(_VM_MODE_ALIASES)(name)


def _text(value):
    return value


def _boolean(value):
    return strutils.bool_from_string(value)


_INTEGER_FIELDS = (
    'hw_cpu_cores', 'hw_cpu_max_cores', 'hw_cpu_max_sockets',
    'hw_cpu_max_threads', 'hw_cpu_sockets', 'hw_cpu_threads',
    'hw_device_id', 'hw_maxphysaddr_bits', 'hw_numa_nodes',
    'hw_redirected_usb_ports', 'hw_serial_port_count', 'hw_video_ram',
    'img_compression_level', 'img_version')
_BOOLEAN_FIELDS = (
    'hw_boot_menu', 'hw_ephemeral_encryption', 'hw_firmware_stateless',
    'hw_ipxe_boot', 'hw_locked_memory', 'hw_mem_encryption', 'hw_pmu',
    'hw_qemu_guest_agent', 'hw_time_hpet', 'hw_vif_multiqueue_enabled',
    'hw_virtio_packed_ring', 'img_bdm_v2', 'img_bittorrent',
    'img_cache_in_nova', 'img_hide_hypervisor_id', 'img_linked_clone',
    'img_use_agent', 'os_require_quiesce',
    'os_skip_agent_inject_files_at_boot', 'os_skip_agent_inject_ssh')
# Free text, UUIDs, version predicates, and the enumerations whose values
# Nova takes as they are.
_TEXT_FIELDS = (
    'hw_auto_disk_config', 'hw_cdrom_bus', 'hw_cpu_policy',
    'hw_cpu_realtime_mask', 'hw_cpu_thread_policy', 'hw_disk_bus',
    'hw_disk_type', 'hw_ephemeral_encryption_format',
    'hw_ephemeral_encryption_secret_uuid', 'hw_firmware_type',
    'hw_floppy_bus', 'hw_input_bus', 'hw_machine_type',
    'hw_maxphysaddr_mode', 'hw_mem_encryption_model', 'hw_mem_page_size',
    'hw_pci_numa_affinity_policy', 'hw_pointer_model', 'hw_rescue_bus',
    'hw_rescue_device', 'hw_rng_model', 'hw_sound_model', 'hw_tpm_model',
    'hw_tpm_version', 'hw_usb_model', 'hw_video_model', 'hw_viommu_model',
    'hw_watchdog_action', 'img_config_drive', 'img_hv_requested_version',
    'img_owner_id', 'img_root_device_name', 'img_signature',
    'img_signature_certificate_uuid', 'img_signature_hash_method',
    'img_signature_key_type', 'os_admin_user', 'os_command_line',
    'os_distro', 'os_secure_boot')

# Property name -> how its raw string becomes Nova's value.
_COERCE = dict(
    [(name, int) for name in _INTEGER_FIELDS]
    + [(name, _boolean) for name in _BOOLEAN_FIELDS]
    + [(name, _text) for name in _TEXT_FIELDS]
    + [('hw_architecture', _lowered(_ARCH_ALIASES)),
       ('hw_emulation_architecture', _lowered(_ARCH_ALIASES)),
       ('img_hv_type', _lowered(_HV_TYPE_ALIASES)),
       ('hw_vm_mode', _lowered(_VM_MODE_ALIASES)),
       ('os_type', _lowered({})),
       ('hw_scsi_model', _lowered(_SCSI_MODEL_ALIASES)),
       ('hw_vif_model', _lowered(_VIF_MODEL_ALIASES))])

# Every property name Nova's model knows.
FIELDS = frozenset(_COERCE) | {
    'hw_numa_cpus', 'hw_numa_mem', 'img_block_device_mapping',
    'img_mappings', 'traits_required'}


def _coerced(name, value):
    coerce = _COERCE[name]
    try:
        return coerce(value)
    except ValueError:
        # Nova would have refused the image; keep the value as given.
        return value


def parse_cpu_spec(spec):
    """``'0-3,^2,6'`` -> ``{0, 1, 3, 6}``; ValueError if unreadable."""
    wanted, refused = set(), set()
    for rule in spec.split(','):
        rule = rule.strip()
        if not rule:
            continue
        into = wanted
        if rule.startswith('^'):
            into, rule = refused, rule[1:]
        first, dash, last = rule.partition('-')
        start = int(first)
        end = int(last) if dash else start
        if start > end:
            raise ValueError('Invalid range expression %r' % rule)
        into.update(range(start, end + 1))
    return wanted - refused


def _numa_lists(raw):
    found = {}
    for name, parse in (('hw_numa_cpus', parse_cpu_spec),
                        ('hw_numa_mem', int)):
        values = []
        for cell in range(NUMA_NODES_MAX):
            value = raw.get('%s.%d' % (name, cell))
            if value is None:
                break
            try:
                values.append(parse(value))
            except ValueError:
                values = []
                break
        if values:
            found[name] = values
    return found


def _set_legacy(raw, props):
    for legacy, current in LEGACY_NAMES.items():
        if raw.get(legacy) is not None:
            props[current] = _coerced(current, raw[legacy])
    adapter = raw.get('vmware_adaptertype')
    if adapter == 'ide':
        props['hw_disk_bus'] = 'ide'
    elif adapter:
        props['hw_disk_bus'] = 'scsi'
        props['hw_scsi_model'] = _coerced('hw_scsi_model', adapter)


def _normalised(items):
    raw = dict(items)
    props = {}
    _set_legacy(raw, props)
    for name in _COERCE:
        if raw.get(name) is not None:
            props[name] = _coerced(name, raw[name])
    props.update(_numa_lists(raw))
    traits = [name[len('trait:'):] for name, value in items
              if name.startswith('trait:') and value == 'required']
    if traits:
        props['traits_required'] = traits
    return props


@functools.lru_cache(maxsize=4096)
def _cached(items):
    props = _normalised(items)
    return props, frozenset((name, as_text(value))
                            for name, value in props.items())


def _key(raw):
    # In the dict's order, as Nova lists traits_required in it.
    return tuple((str(name), value) for name, value in (raw or {}).items())


def _read(raw):
    key = _key(raw)
    try:
        return _cached(key)
    except TypeError:
        # A value that cannot be hashed (not a string): read it uncached.
        return _cached.__wrapped__(key)


def normalise(raw):
    """Nova's reading of the raw property dict ``raw`` (see the module
    docstring): ``{current name: typed, canonical value}``."""
    return dict(_read(raw)[0])


def text_pairs(raw):
    """``frozenset((name, as_text(value)))`` of :func:`normalise`'s
    answer: what Nova's ImagePropertiesWeigher compares."""
    return _read(raw)[1]


def as_text(value):
    """A normalised value as Nova writes it before comparing: ``True``,
    ``4``, ``x86_64``, ``['HW_CPU_X86_AVX2']``."""
    return str(value)


def of_spec(spec):
    """The normalised properties of the request spec's image ({} without
    one)."""
    image = spec.obj_get('image')
    return normalise(image.obj_get('properties') or {}) if image else {}
